//! Comparing one argument value with its gold, with the verdict and the reason.
//!
//! Lenient mode is toolscore's CLI comparison: Python `==` (so `1 == 1.0`, `true == 1`, and
//! containers compare with `==` all the way down), then int/float as floats, then strings with
//! surrounding whitespace stripped. Strict mode is toolscore's `strict=True`: same JSON type
//! everywhere, recursing into objects and arrays, no coercion. Scoring is per top-level key,
//! but a differing nested value also reports the leaf paths where it differs.

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use super::Args;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompareMode {
    #[default]
    Lenient,
    Strict,
}

impl CompareMode {
    pub fn as_str(self) -> &'static str {
        match self {
            CompareMode::Lenient => "lenient",
            CompareMode::Strict => "strict",
        }
    }
}

/// Why two values that are not identical still count as equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coercion {
    IntFloat,
    BoolNumber,
    Whitespace,
}

impl Coercion {
    pub fn as_str(self) -> &'static str {
        match self {
            Coercion::IntFloat => "int↔float",
            Coercion::BoolNumber => "bool↔number",
            Coercion::Whitespace => "surrounding whitespace",
        }
    }
}

/// One place where a nested value differs. `gold`/`actual` are `None` when the key or
/// element is absent on that side.
#[derive(Debug, Clone, PartialEq)]
pub struct LeafDiff {
    pub path: String,
    pub gold: Option<Value>,
    pub actual: Option<Value>,
    /// Why the difference may be invisible (normalization, whitespace, case).
    pub note: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ArgVerdict {
    Equal,
    /// Equal under the active comparator after a coercion, at `path` inside the value.
    Coerced {
        coercion: Coercion,
        path: String,
    },
    Differs(Vec<LeafDiff>),
    Missing,
    Unexpected,
    /// The gold says "don't check arguments" (`args` absent or null).
    NotChecked,
}

impl ArgVerdict {
    /// Whether the key counts as correct in argument precision/recall.
    pub fn counts_correct(&self) -> bool {
        matches!(self, ArgVerdict::Equal | ArgVerdict::Coerced { .. })
    }
    pub fn label(&self) -> String {
        match self {
            ArgVerdict::Equal => "equal".into(),
            ArgVerdict::Coerced { coercion, .. } => {
                format!("equal after coercion ({})", coercion.as_str())
            }
            ArgVerdict::Differs(_) => "differs".into(),
            ArgVerdict::Missing => "missing".into(),
            ArgVerdict::Unexpected => "unexpected".into(),
            ArgVerdict::NotChecked => "not checked".into(),
        }
    }
}

/// The verdict for one argument key of one paired call. `gold`/`actual` hold the values
/// except for plainly equal keys (look those up in the calls).
#[derive(Debug, Clone, PartialEq)]
pub struct ArgDiff {
    pub key: String,
    pub verdict: ArgVerdict,
    pub gold: Option<Value>,
    pub actual: Option<Value>,
}

/// Most leaf differences reported for one argument; the rest are summarized by the count.
const MAX_LEAVES: usize = 16;

fn is_numeric(v: &Value) -> bool {
    matches!(v, Value::Number(_) | Value::Bool(_))
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

fn as_i128(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        Value::Bool(b) => Some(i128::from(*b)),
        _ => None,
    }
}

/// Python's exact comparison of an int with a float.
fn int_equals_float(i: i128, f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0 && f.abs() < 1.7e38 && f as i128 == i
}

fn py_numeric_eq(a: &Value, b: &Value) -> bool {
    match (as_i128(a), as_i128(b)) {
        (Some(x), Some(y)) => x == y,
        (Some(x), None) => as_f64(b).is_some_and(|f| int_equals_float(x, f)),
        (None, Some(y)) => as_f64(a).is_some_and(|f| int_equals_float(y, f)),
        (None, None) => matches!((as_f64(a), as_f64(b)), (Some(x), Some(y)) if x == y),
    }
}

/// Python `==` on JSON values.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ if is_numeric(a) && is_numeric(b) => py_numeric_eq(a, b),
        _ => false,
    }
}

/// Python's `str.isspace()` for one character (Rust's set plus the ASCII separators).
fn py_is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

pub fn py_strip(s: &str) -> &str {
    s.trim_matches(py_is_space)
}

/// toolscore's lenient `_compare_values`.
pub fn lenient_eq(gold: &Value, actual: &Value) -> bool {
    if py_eq(gold, actual) {
        return true;
    }
    match (gold, actual) {
        (Value::String(g), Value::String(a)) => py_strip(g) == py_strip(a),
        _ if is_numeric(gold) && is_numeric(actual) => {
            matches!((as_f64(gold), as_f64(actual)), (Some(x), Some(y)) if x == y)
        }
        _ => false,
    }
}

/// Same JSON type (int and float distinct) and value, all the way down.
pub fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x.is_f64() != y.is_f64() {
                return false;
            }
            if x.is_f64() {
                x.as_f64() == y.as_f64()
            } else {
                as_i128(a) == as_i128(b)
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| strict_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| strict_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Whether one value matches its gold in this mode (what the metric counts).
pub fn values_match(gold: &Value, actual: &Value, mode: CompareMode) -> bool {
    match mode {
        CompareMode::Lenient => lenient_eq(gold, actual),
        CompareMode::Strict => strict_eq(gold, actual),
    }
}

/// The verdict for a value present on both sides.
pub fn compare_values(gold: &Value, actual: &Value, mode: CompareMode) -> ArgVerdict {
    if strict_eq(gold, actual) {
        return ArgVerdict::Equal;
    }
    if mode == CompareMode::Lenient && lenient_eq(gold, actual) {
        let (coercion, path) = find_coercion(gold, actual, String::new())
            .unwrap_or((Coercion::IntFloat, String::new()));
        return ArgVerdict::Coerced { coercion, path };
    }
    let mut leaves = Vec::new();
    let child_eq: fn(&Value, &Value) -> bool = match mode {
        CompareMode::Lenient => py_eq,
        CompareMode::Strict => strict_eq,
    };
    collect_leaves(gold, actual, String::new(), child_eq, &mut leaves);
    if leaves.is_empty() {
        // Only reachable for top-level values that differ as a whole.
        leaves.push(leaf(String::new(), Some(gold), Some(actual)));
    }
    ArgVerdict::Differs(leaves)
}

/// Where a lenient match needed a coercion, and which one.
fn find_coercion(gold: &Value, actual: &Value, path: String) -> Option<(Coercion, String)> {
    if strict_eq(gold, actual) {
        return None;
    }
    match (gold, actual) {
        (Value::String(_), Value::String(_)) => Some((Coercion::Whitespace, path)),
        (Value::Bool(_), _) | (_, Value::Bool(_)) => Some((Coercion::BoolNumber, path)),
        (Value::Number(_), Value::Number(_)) => Some((Coercion::IntFloat, path)),
        (Value::Object(g), Value::Object(a)) => g.iter().find_map(|(k, gv)| {
            a.get(k)
                .and_then(|av| find_coercion(gv, av, join_key(&path, k)))
        }),
        (Value::Array(g), Value::Array(a)) => g
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (gv, av))| find_coercion(gv, av, format!("{path}[{i}]"))),
        _ => None,
    }
}

fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn leaf(path: String, gold: Option<&Value>, actual: Option<&Value>) -> LeafDiff {
    let note = match (gold, actual) {
        (Some(Value::String(g)), Some(Value::String(a))) => invisible_difference(g, a),
        _ => None,
    };
    LeafDiff {
        path,
        gold: gold.cloned(),
        actual: actual.cloned(),
        note,
    }
}

fn collect_leaves(
    gold: &Value,
    actual: &Value,
    path: String,
    child_eq: fn(&Value, &Value) -> bool,
    out: &mut Vec<LeafDiff>,
) {
    if out.len() >= MAX_LEAVES {
        return;
    }
    match (gold, actual) {
        (Value::Object(g), Value::Object(a)) => {
            for (k, gv) in g {
                match a.get(k) {
                    None => out.push(leaf(join_key(&path, k), Some(gv), None)),
                    Some(av) if !child_eq(gv, av) => {
                        collect_leaves(gv, av, join_key(&path, k), child_eq, out)
                    }
                    Some(_) => {}
                }
            }
            for (k, av) in a {
                if !g.contains_key(k) {
                    out.push(leaf(join_key(&path, k), None, Some(av)));
                }
            }
        }
        (Value::Array(g), Value::Array(a)) => {
            for i in 0..g.len().max(a.len()) {
                let at = format!("{path}[{i}]");
                match (g.get(i), a.get(i)) {
                    (Some(gv), Some(av)) if !child_eq(gv, av) => {
                        collect_leaves(gv, av, at, child_eq, out)
                    }
                    (Some(_), Some(_)) => {}
                    (gv, av) => out.push(leaf(at, gv, av)),
                }
            }
        }
        _ => out.push(leaf(path, Some(gold), Some(actual))),
    }
    out.truncate(MAX_LEAVES);
}

/// Names a difference a reader could not see in the plain text.
pub fn invisible_difference(gold: &str, actual: &str) -> Option<&'static str> {
    if gold.nfc().eq(actual.nfc()) {
        Some("same text, different Unicode normalization (NFC vs NFD)")
    } else if py_strip(gold) == py_strip(actual) {
        Some("differs only in surrounding whitespace")
    } else if gold.to_lowercase() == actual.to_lowercase() {
        Some("differs only in letter case")
    } else {
        None
    }
}

/// Per-key verdicts for one paired call. `gold` is `None` for "don't check arguments".
pub fn compare_args(gold: Option<&Args>, actual: &Args, mode: CompareMode) -> Vec<ArgDiff> {
    let Some(gold) = gold else {
        return actual
            .iter()
            .map(|(k, v)| ArgDiff {
                key: k.clone(),
                verdict: ArgVerdict::NotChecked,
                gold: None,
                actual: Some(v.clone()),
            })
            .collect();
    };
    let mut out = Vec::with_capacity(gold.len().max(actual.len()));
    for (key, gv) in gold {
        let (verdict, av) = match actual.get(key) {
            None => (ArgVerdict::Missing, None),
            Some(av) => (compare_values(gv, av, mode), Some(av)),
        };
        // Equal keys are the common case; their values are not copied.
        let keep = verdict != ArgVerdict::Equal;
        out.push(ArgDiff {
            key: key.clone(),
            gold: keep.then(|| gv.clone()),
            actual: av.filter(|_| keep).cloned(),
            verdict,
        });
    }
    for (key, av) in actual {
        if !gold.contains_key(key) {
            out.push(ArgDiff {
                key: key.clone(),
                verdict: ArgVerdict::Unexpected,
                gold: None,
                actual: Some(av.clone()),
            });
        }
    }
    out
}

/// Whether every argument of a paired call is acceptable: no differing, missing or
/// unexpected key (a "not checked" gold accepts anything).
pub fn args_all_ok(diffs: &[ArgDiff]) -> bool {
    diffs.iter().all(|d| {
        matches!(
            d.verdict,
            ArgVerdict::Equal | ArgVerdict::Coerced { .. } | ArgVerdict::NotChecked
        )
    })
}

/// A JSON value as one line, with characters that would hide a difference escaped:
/// non-ASCII spaces (U+3000, NBSP), combining marks (so NFD shows), zero-width and control
/// characters. Ordinary spaces stay, inside the quotes that make them visible.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => render_str(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(render_value).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", render_str(k), render_value(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        other => other.to_string(),
    }
}

fn render_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            ' ' => out.push(' '),
            c if c.is_control()
                || (c.is_whitespace() && c != ' ')
                || unicode_normalization::char::is_combining_mark(c)
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{206f}' | '\u{feff}') =>
            {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A value's type and size, for redacted displays.
pub fn describe_shape(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => "float".into(),
        Value::Number(_) => "int".into(),
        Value::String(s) => format!("str({})", s.chars().count()),
        Value::Array(a) => format!("list({})", a.len()),
        Value::Object(o) => format!("object({})", o.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lenient_follows_python() {
        assert!(lenient_eq(&json!(1), &json!(1.0)));
        assert!(lenient_eq(&json!(1), &json!(true)));
        assert!(lenient_eq(&json!("NYC"), &json!(" NYC ")));
        assert!(lenient_eq(&json!("x"), &json!("x\u{3000}")));
        assert!(lenient_eq(&json!({"n": 2}), &json!({"n": 2.0})));
        assert!(!lenient_eq(&json!({"n": "a"}), &json!({"n": " a"})));
        assert!(!lenient_eq(&json!(5), &json!("5")));
        assert!(!lenient_eq(&json!(0.3), &json!(0.30000000000000004)));
        assert!(!lenient_eq(&json!("café"), &json!("cafe\u{301}")));
        assert!(!lenient_eq(&json!([1, 2]), &json!([2, 1])));
    }

    #[test]
    fn strict_separates_types() {
        assert!(!strict_eq(&json!(1), &json!(1.0)));
        assert!(!strict_eq(&json!(1), &json!(true)));
        assert!(strict_eq(&json!({"a": [1, "x"]}), &json!({"a": [1, "x"]})));
    }

    #[test]
    fn coercion_reasons_are_named() {
        let v = compare_values(&json!(1), &json!(1.0), CompareMode::Lenient);
        assert_eq!(
            v,
            ArgVerdict::Coerced {
                coercion: Coercion::IntFloat,
                path: String::new()
            }
        );
        let v = compare_values(&json!(1), &json!(true), CompareMode::Lenient);
        assert!(matches!(
            v,
            ArgVerdict::Coerced {
                coercion: Coercion::BoolNumber,
                ..
            }
        ));
        let v = compare_values(
            &json!({"m": {"n": 2}}),
            &json!({"m": {"n": 2.0}}),
            CompareMode::Lenient,
        );
        assert_eq!(
            v,
            ArgVerdict::Coerced {
                coercion: Coercion::IntFloat,
                path: "m.n".into()
            }
        );
        let v = compare_values(&json!("NYC"), &json!(" NYC "), CompareMode::Strict);
        assert!(matches!(v, ArgVerdict::Differs(_)));
    }

    #[test]
    fn nested_difference_names_the_leaf() {
        let g = json!({"meta": {"prio": 1, "tag": "a"}, "x": [1, 2]});
        let a = json!({"meta": {"prio": 2, "tag": "a"}, "x": [1, 2, 3]});
        let ArgVerdict::Differs(leaves) = compare_values(&g, &a, CompareMode::Lenient) else {
            panic!("expected a difference");
        };
        let paths: Vec<&str> = leaves.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(paths, vec!["meta.prio", "x[2]"]);
        assert_eq!(leaves[0].gold, Some(json!(1)));
        assert_eq!(leaves[0].actual, Some(json!(2)));
        assert_eq!(leaves[1].gold, None);
    }

    #[test]
    fn invisible_differences_are_escaped_and_named() {
        assert_eq!(render_value(&json!("cafe\u{301}")), "\"cafe\\u{301}\"");
        assert_eq!(render_value(&json!("x\u{3000}")), "\"x\\u{3000}\"");
        assert_eq!(
            invisible_difference("café", "cafe\u{301}"),
            Some("same text, different Unicode normalization (NFC vs NFD)")
        );
        assert_eq!(
            invisible_difference("NYC", "NYC "),
            Some("differs only in surrounding whitespace")
        );
    }
}
