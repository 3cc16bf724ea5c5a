//! Lexer and recursive-descent parser for the query language (grammar in [`super`]).
//!
//! Positions are counted in chars from the start of the query, so the TUI can put a caret
//! under the offending character whatever the text's encoding.

use crate::model::SpanKind;

use super::QueryError;

/// A parsed query: the expression tree the evaluator walks.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Term(Term),
}

/// Failure facets, as `is:` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IsFacet {
    /// Any of the failure facets below (span error, evaluator failure, gold mismatch).
    Failing,
    /// The run's root failed.
    Error,
    /// A span failed but the root did not.
    Degraded,
    EvalFailed,
    GoldMismatch,
    /// Healthy and not failing in any other way.
    Ok,
    /// The run has a triage note (a label or a note text).
    Noted,
    /// The run has no triage note.
    Unnoted,
    /// A limit stopped the run before it finished by itself (an Inspect sample's message,
    /// token or time limit).
    Limited,
}

impl IsFacet {
    pub const NAMES: [(&'static str, IsFacet); 9] = [
        ("failing", IsFacet::Failing),
        ("error", IsFacet::Error),
        ("degraded", IsFacet::Degraded),
        ("eval-failed", IsFacet::EvalFailed),
        ("gold-mismatch", IsFacet::GoldMismatch),
        ("ok", IsFacet::Ok),
        ("noted", IsFacet::Noted),
        ("unnoted", IsFacet::Unnoted),
        ("limited", IsFacet::Limited),
    ];
}

/// Numbers `field>value` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Milliseconds.
    Duration,
    /// Input plus output tokens.
    Tokens,
    /// Evaluator score.
    Score,
    Spans,
    /// Tool calls.
    Tools,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
}

impl CmpOp {
    pub fn holds(self, left: f64, right: f64) -> bool {
        match self {
            CmpOp::Gt => left > right,
            CmpOp::Ge => left >= right,
            CmpOp::Lt => left < right,
            CmpOp::Le => left <= right,
            CmpOp::Eq => (left - right).abs() < 1e-9,
        }
    }
}

/// One leaf of the query. Text values are stored lower-cased (matching is case-insensitive).
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    /// `"exact text"`: case-insensitive substring.
    Text(String),
    /// A bare word: fuzzy over names, tools, model and service.
    Fuzzy(String),
    Is(IsFacet),
    Kind(SpanKind),
    Tool(String),
    Model(String),
    Provider(String),
    Service(String),
    Name(String),
    Format(String),
    Source(String),
    /// Trace, span or tool-call id prefix.
    Id(String),
    Attr {
        key: String,
        value: Option<String>,
    },
    /// Conversation id prefix.
    Conv(String),
    /// Prefix of the id of the evaluation case the run is (`dump --json`'s `case.id`).
    Case(String),
    /// The case's index: an Inspect sample's epoch, an arksim turn.
    Epoch(u64),
    /// `scorer:NAME`: the scorer of that name gave a failing value (`I`, `0`, `false`);
    /// `scorer:NAME=VALUE`: it gave that value.
    Scorer {
        name: String,
        value: Option<String>,
    },
    /// `label:NAME`: the run's triage note carries that label.
    Label(String),
    /// `eval:LABEL`: the evaluator's label is LABEL (whole).
    Eval(String),
    /// `reason:TEXT`: the first line of the evaluator's reason is TEXT (whole).
    Reason(String),
    /// `case-id:ID`: the run's case id is ID (whole; `case:` takes a prefix).
    CaseId(String),
    /// `task:NAME`: the run is a sample of that Inspect task (whole).
    Task(String),
    /// `error:TYPE`: an agent span failed with that error type (`error:""`: with none).
    Error(String),
    /// `tool-failed:NAME`: a call of that tool (its whole name) failed;
    /// `tool-failed:NAME=TYPE`: failed with that error type (empty: with none).
    ToolFailed {
        tool: String,
        error_type: Option<String>,
    },
    Compare {
        metric: Metric,
        op: CmpOp,
        value: f64,
    },
}

/// Field names accepted before `:`, for error messages and the help text.
pub const FIELDS: &[&str] = &[
    "is",
    "kind",
    "tool",
    "model",
    "provider",
    "service",
    "name",
    "format",
    "source",
    "id",
    "attr",
    "conv",
    "case",
    "epoch",
    "scorer",
    "label",
    "eval",
    "reason",
    "case-id",
    "task",
    "error",
    "tool-failed",
];

/// Metric names accepted before a comparison operator.
pub const METRICS: &[(&str, Metric)] = &[
    ("dur", Metric::Duration),
    ("tokens", Metric::Tokens),
    ("score", Metric::Score),
    ("spans", Metric::Spans),
    ("tools", Metric::Tools),
];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    LParen,
    RParen,
    Or,
    Not,
    /// `"…"` standing alone.
    Quoted(String),
    /// Anything else up to whitespace or a paren; a quoted tail (`name:"a b"`) is unquoted
    /// into the word and flagged, so it is never read as an operator.
    Word {
        text: String,
        quoted_tail: bool,
    },
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    /// Char position of the token's first character.
    pos: usize,
}

/// Longest query accepted: queries are typed, so anything longer is a paste accident.
const MAX_QUERY_CHARS: usize = 4096;
/// Nesting bound so a pathological query cannot exhaust the stack.
const MAX_DEPTH: usize = 64;

fn lex(query: &str) -> Result<Vec<Token>, QueryError> {
    let chars: Vec<char> = query.chars().collect();
    if chars.len() > MAX_QUERY_CHARS {
        return Err(QueryError::new(
            MAX_QUERY_CHARS,
            format!("query longer than {MAX_QUERY_CHARS} characters"),
        ));
    }
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        match c {
            '(' => {
                tokens.push(Token {
                    tok: Tok::LParen,
                    pos: start,
                });
                i += 1;
            }
            ')' => {
                tokens.push(Token {
                    tok: Tok::RParen,
                    pos: start,
                });
                i += 1;
            }
            '|' => {
                tokens.push(Token {
                    tok: Tok::Or,
                    pos: start,
                });
                i += 1;
            }
            '-' if chars
                .get(i + 1)
                .is_some_and(|n| !n.is_whitespace() && *n != ')' && *n != '|') =>
            {
                tokens.push(Token {
                    tok: Tok::Not,
                    pos: start,
                });
                i += 1;
            }
            '-' => {
                return Err(QueryError::new(start, "`-` must be followed by a term"));
            }
            '"' => {
                let (text, next) = read_quoted(&chars, i)?;
                tokens.push(Token {
                    tok: Tok::Quoted(text),
                    pos: start,
                });
                i = next;
            }
            _ => {
                let mut text = String::new();
                let mut quoted_tail = false;
                while i < chars.len() {
                    let c = chars[i];
                    if c.is_whitespace() || c == '(' || c == ')' || c == '|' {
                        break;
                    }
                    if c == '"' {
                        // Only a value may be quoted: `field:"…"` or `attr:k="…"`.
                        if !(text.ends_with(':') || text.ends_with('=')) {
                            return Err(QueryError::new(
                                i,
                                "a quote may start a term or a field's value, not the middle of a word",
                            ));
                        }
                        let (value, next) = read_quoted(&chars, i)?;
                        text.push_str(&value);
                        quoted_tail = true;
                        i = next;
                        break;
                    }
                    text.push(c);
                    i += 1;
                }
                let tok = if text == "OR" && !quoted_tail {
                    Tok::Or
                } else {
                    Tok::Word { text, quoted_tail }
                };
                tokens.push(Token { tok, pos: start });
            }
        }
    }
    Ok(tokens)
}

/// Reads `"…"` starting at the opening quote; `\"` and `\\` escape. Returns the text and
/// the position after the closing quote.
fn read_quoted(chars: &[char], open: usize) -> Result<(String, usize), QueryError> {
    let mut text = String::new();
    let mut i = open + 1;
    while i < chars.len() {
        match chars[i] {
            '"' => return Ok((text, i + 1)),
            '\\' if matches!(chars.get(i + 1), Some('"') | Some('\\')) => {
                text.push(chars[i + 1]);
                i += 2;
            }
            c => {
                text.push(c);
                i += 1;
            }
        }
    }
    Err(QueryError::new(open, "unclosed quote"))
}

struct Parser {
    tokens: Vec<Token>,
    next: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.next)
    }

    fn pos(&self) -> usize {
        self.peek().map_or(self.end, |t| t.pos)
    }

    fn or_expr(&mut self, depth: usize) -> Result<Expr, QueryError> {
        if depth > MAX_DEPTH {
            return Err(QueryError::new(self.pos(), "too deeply nested"));
        }
        let mut alternatives = vec![self.and_expr(depth)?];
        while let Some(Token { tok: Tok::Or, pos }) = self.peek() {
            let pos = *pos;
            self.next += 1;
            if matches!(
                self.peek(),
                None | Some(Token {
                    tok: Tok::RParen,
                    ..
                })
            ) {
                return Err(QueryError::new(pos, "OR needs a term on both sides"));
            }
            alternatives.push(self.and_expr(depth)?);
        }
        Ok(if alternatives.len() == 1 {
            alternatives.pop().expect("one alternative")
        } else {
            Expr::Or(alternatives)
        })
    }

    fn and_expr(&mut self, depth: usize) -> Result<Expr, QueryError> {
        let mut terms = Vec::new();
        loop {
            match self.peek() {
                None
                | Some(Token {
                    tok: Tok::RParen, ..
                }) => break,
                Some(Token { tok: Tok::Or, pos }) => {
                    if terms.is_empty() {
                        return Err(QueryError::new(*pos, "OR needs a term on both sides"));
                    }
                    break;
                }
                Some(_) => terms.push(self.unary(depth)?),
            }
        }
        match terms.len() {
            0 => Err(QueryError::new(self.pos(), "expected a term")),
            1 => Ok(terms.pop().expect("one term")),
            _ => Ok(Expr::And(terms)),
        }
    }

    fn unary(&mut self, depth: usize) -> Result<Expr, QueryError> {
        let Some(token) = self.peek().cloned() else {
            return Err(QueryError::new(self.end, "expected a term"));
        };
        self.next += 1;
        match token.tok {
            Tok::Not => {
                if depth > MAX_DEPTH {
                    return Err(QueryError::new(token.pos, "too deeply nested"));
                }
                Ok(Expr::Not(Box::new(self.unary(depth + 1)?)))
            }
            Tok::LParen => {
                if matches!(
                    self.peek(),
                    Some(Token {
                        tok: Tok::RParen,
                        ..
                    })
                ) {
                    return Err(QueryError::new(token.pos, "empty parentheses"));
                }
                let inner = self.or_expr(depth + 1)?;
                match self.peek() {
                    Some(Token {
                        tok: Tok::RParen, ..
                    }) => {
                        self.next += 1;
                        Ok(inner)
                    }
                    _ => Err(QueryError::new(token.pos, "unclosed parenthesis")),
                }
            }
            Tok::RParen | Tok::Or => Err(QueryError::new(token.pos, "expected a term")),
            Tok::Quoted(text) => {
                if text.is_empty() {
                    return Err(QueryError::new(token.pos, "empty quotes"));
                }
                Ok(Expr::Term(Term::Text(text.to_lowercase())))
            }
            Tok::Word { text, quoted_tail } => {
                word_term(&text, token.pos, quoted_tail).map(Expr::Term)
            }
        }
    }
}

/// Parses a whole query. Empty (or blank) queries match everything and give `None`.
pub fn parse(query: &str) -> Result<Option<Expr>, QueryError> {
    let tokens = lex(query)?;
    if tokens.is_empty() {
        return Ok(None);
    }
    let mut parser = Parser {
        tokens,
        next: 0,
        end: query.chars().count(),
    };
    let expr = parser.or_expr(0)?;
    if let Some(extra) = parser.peek() {
        // Only a stray `)` can stop the top level early.
        return Err(QueryError::new(extra.pos, "unmatched closing parenthesis"));
    }
    Ok(Some(expr))
}

fn word_term(text: &str, pos: usize, quoted_tail: bool) -> Result<Term, QueryError> {
    // A comparison: metric name, operator, number.
    if let Some(op_at) = text.find(['>', '<', '=']) {
        let name = &text[..op_at];
        let colon = text.find(':');
        if colon.is_none_or(|c| c > op_at)
            && let Some(&(_, metric)) = METRICS.iter().find(|(m, _)| m.eq_ignore_ascii_case(name))
        {
            let rest = &text[op_at..];
            let (op, op_len) = if rest.starts_with(">=") {
                (CmpOp::Ge, 2)
            } else if rest.starts_with("<=") {
                (CmpOp::Le, 2)
            } else if rest.starts_with('>') {
                (CmpOp::Gt, 1)
            } else if rest.starts_with('<') {
                (CmpOp::Lt, 1)
            } else {
                (CmpOp::Eq, 1)
            };
            let value_text = &rest[op_len..];
            let value_pos = pos + text[..op_at + op_len].chars().count();
            let value = parse_metric_value(metric, value_text, value_pos)?;
            return Ok(Term::Compare { metric, op, value });
        }
    }
    let Some(colon) = text.find(':') else {
        return Ok(Term::Fuzzy(text.to_lowercase()));
    };
    let field = &text[..colon];
    let raw_value = &text[colon + 1..];
    let value_pos = pos + field.chars().count() + 1;
    let field_lower = field.to_ascii_lowercase();
    if !FIELDS.contains(&field_lower.as_str()) {
        if METRICS.iter().any(|(m, _)| *m == field_lower) {
            return Err(QueryError::new(
                value_pos - 1,
                format!("compare {field} with >, >=, <, <= or =, e.g. {field}>10"),
            ));
        }
        return Err(QueryError::new(
            pos,
            format!(
                "unknown field `{field}:` (fields: {}; quote text to search for it)",
                FIELDS.join(", ")
            ),
        ));
    }
    if raw_value.is_empty() && !quoted_tail {
        return Err(QueryError::new(
            value_pos,
            format!("`{field}:` needs a value"),
        ));
    }
    let value = raw_value.to_lowercase();
    let term = match field_lower.as_str() {
        "is" => {
            let facet = IsFacet::NAMES
                .iter()
                .find(|(n, _)| *n == value)
                .map(|(_, f)| *f)
                .ok_or_else(|| {
                    QueryError::new(
                        value_pos,
                        format!(
                            "unknown `is:` value `{raw_value}` (one of {})",
                            IsFacet::NAMES.map(|(n, _)| n).join(", ")
                        ),
                    )
                })?;
            Term::Is(facet)
        }
        "kind" => {
            let kind = SpanKind::ALL
                .iter()
                .find(|k| k.as_str() == value)
                .copied()
                .ok_or_else(|| {
                    QueryError::new(
                        value_pos,
                        format!(
                            "unknown kind `{raw_value}` (one of {})",
                            SpanKind::ALL.map(|k| k.as_str()).join(", ")
                        ),
                    )
                })?;
            Term::Kind(kind)
        }
        "tool" => Term::Tool(value),
        "model" => Term::Model(value),
        "provider" => Term::Provider(value),
        "service" => Term::Service(value),
        "name" => Term::Name(value),
        "format" => Term::Format(value),
        "source" => Term::Source(value),
        "id" => Term::Id(value),
        "conv" => Term::Conv(value),
        "case" => Term::Case(value),
        "epoch" => Term::Epoch(value.parse().map_err(|_| {
            QueryError::new(
                value_pos,
                format!("`epoch:` takes a whole number, not `{raw_value}`"),
            )
        })?),
        "scorer" => match value.split_once('=') {
            Some(("", _)) => {
                return Err(QueryError::new(
                    value_pos,
                    "`scorer:` needs a name before `=`",
                ));
            }
            Some((name, v)) => Term::Scorer {
                name: name.to_owned(),
                value: Some(v.to_owned()),
            },
            None => Term::Scorer {
                name: value,
                value: None,
            },
        },
        "label" => Term::Label(value),
        "eval" => Term::Eval(value),
        "reason" => Term::Reason(value),
        "case-id" => Term::CaseId(value),
        "task" => Term::Task(value),
        "error" => Term::Error(value),
        "tool-failed" => match value.split_once('=') {
            Some(("", _)) => {
                return Err(QueryError::new(
                    value_pos,
                    "`tool-failed:` needs a tool name before `=`",
                ));
            }
            Some((tool, error_type)) => Term::ToolFailed {
                tool: tool.to_owned(),
                error_type: Some(error_type.to_owned()),
            },
            None => Term::ToolFailed {
                tool: value,
                error_type: None,
            },
        },
        "attr" => match raw_value.split_once('=') {
            Some(("", _)) => {
                return Err(QueryError::new(value_pos, "`attr:` needs a key before `=`"));
            }
            Some((key, v)) => Term::Attr {
                key: key.to_lowercase(),
                value: Some(v.to_lowercase()),
            },
            None => Term::Attr {
                key: value,
                value: None,
            },
        },
        _ => unreachable!("FIELDS checked above"),
    };
    Ok(term)
}

fn parse_metric_value(metric: Metric, text: &str, pos: usize) -> Result<f64, QueryError> {
    if text.is_empty() {
        return Err(QueryError::new(pos, "expected a number after the operator"));
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad_number = || QueryError::new(pos, format!("`{text}` is not a number"));
    if number.is_empty() {
        return Err(bad_number());
    }
    let value: f64 = number.parse().map_err(|_| bad_number())?;
    let unit_pos = pos + number.chars().count();
    let scale = match metric {
        Metric::Duration => match unit.to_ascii_lowercase().as_str() {
            "" | "ms" => 1.0,
            "ns" => 1e-6,
            "us" | "µs" => 1e-3,
            "s" => 1e3,
            "m" | "min" => 60e3,
            "h" => 3600e3,
            _ => {
                return Err(QueryError::new(
                    unit_pos,
                    format!("unknown duration unit `{unit}` (ns, us, ms, s, m, h)"),
                ));
            }
        },
        Metric::Tokens | Metric::Spans | Metric::Tools => match unit {
            "" => 1.0,
            "k" | "K" => 1e3,
            "m" | "M" => 1e6,
            _ => {
                return Err(QueryError::new(
                    unit_pos,
                    format!("unexpected `{unit}` after the number (a k or M suffix is allowed)"),
                ));
            }
        },
        Metric::Score => {
            if !unit.is_empty() {
                return Err(QueryError::new(
                    unit_pos,
                    format!("unexpected `{unit}` after the score"),
                ));
            }
            1.0
        }
    };
    Ok(value * scale)
}
