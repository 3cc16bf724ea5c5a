//! Which characters of a shown string a query matched, so views can highlight them.

use fuzzy_matcher::FuzzyMatcher;

use super::Query;
use super::eval::MATCHER;
use super::parse::{Expr, Term};

/// Text a positive term looks for, and how.
enum Needle<'a> {
    Substring(&'a str),
    Fuzzy(&'a str),
}

impl Query {
    /// Char indices of `shown` that the query's positive text terms match (exact text and
    /// field values as substrings, bare words fuzzily), ascending and unique. Negated terms
    /// highlight nothing: they matched by being absent.
    pub fn highlight(&self, shown: &str) -> Vec<usize> {
        let Some(expr) = &self.expr else {
            return Vec::new();
        };
        let mut needles = Vec::new();
        positive_needles(expr, &mut needles);
        let mut marked: Vec<usize> = Vec::new();
        for needle in needles {
            match needle {
                Needle::Substring(n) => substring_chars(shown, n, &mut marked),
                Needle::Fuzzy(n) => {
                    if let Some((_, indices)) = MATCHER.fuzzy_indices(shown, n) {
                        marked.extend(indices);
                    }
                }
            }
        }
        marked.sort_unstable();
        marked.dedup();
        marked
    }
}

fn positive_needles<'a>(expr: &'a Expr, out: &mut Vec<Needle<'a>>) {
    match expr {
        Expr::Not(_) => {}
        Expr::And(items) | Expr::Or(items) => items.iter().for_each(|e| positive_needles(e, out)),
        Expr::Term(term) => match term {
            Term::Text(t)
            | Term::Tool(t)
            | Term::Model(t)
            | Term::Provider(t)
            | Term::Service(t)
            | Term::Name(t) => out.push(Needle::Substring(t)),
            Term::Fuzzy(w) => out.push(Needle::Fuzzy(w)),
            _ => {}
        },
    }
}

/// Marks every case-insensitive occurrence of `needle` (lower-case) in `shown`.
fn substring_chars(shown: &str, needle: &str, marked: &mut Vec<usize>) {
    let needle: Vec<char> = needle.chars().collect();
    if needle.is_empty() {
        return;
    }
    let lowered: Vec<char> = shown
        .chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect();
    if lowered.len() < needle.len() {
        return;
    }
    for start in 0..=lowered.len() - needle.len() {
        if lowered[start..start + needle.len()] == needle[..] {
            marked.extend(start..start + needle.len());
        }
    }
}
