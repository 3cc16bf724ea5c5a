//! `check --forbidden`: calls an agent must never make, with toolscore's semantics.
//!
//! A rule names a tool and optionally arguments; a call violates it when the tool name is equal
//! and every listed argument is present and matches. A rule argument is a plain value (compared
//! like gold arguments, leniently) or a one-key operator: `$regex` (found anywhere in the value;
//! a list is matched as its items joined by spaces), `$contains` (substring, list item or object
//! key), `$one_of` (equal to one of the listed values). Only the first rule a call matches is
//! reported. `--forbidden` takes a JSON rule file (toolscore's `--forbidden RULES.json`) or a
//! comma-separated list of tool names (`--forbidden run_shell,delete_repo`).

use serde_json::{Value, json};

use super::ActualCall;
use super::compare::lenient_eq;
use crate::Error;

#[derive(Debug, Clone)]
enum Matcher {
    Equal(Value),
    Regex(regex::Regex),
    Contains(Value),
    OneOf(Vec<Value>),
}

#[derive(Debug, Clone)]
pub struct Rule {
    pub tool: String,
    args: Vec<(String, Matcher)>,
    pub reason: Option<String>,
}

/// The rules of one `--forbidden` option.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    pub rules: Vec<Rule>,
}

/// One call that matched a rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// Position of the call in the actual trajectory (0-based, as toolscore reports it).
    pub index: usize,
    pub tool: String,
    /// Position of the first rule it matched.
    pub rule: usize,
    pub reason: Option<String>,
}

fn matcher(value: &Value) -> Result<Matcher, Error> {
    if let Value::Object(map) = value
        && map.len() == 1
        && let Some((key, operand)) = map.iter().next()
    {
        match key.as_str() {
            "$regex" => {
                let pattern = operand.as_str().ok_or_else(|| Error::RegexWithoutPattern {
                    operand: operand.clone(),
                })?;
                return regex::Regex::new(pattern)
                    .map(Matcher::Regex)
                    .map_err(|source| Error::Regex {
                        pattern: pattern.into(),
                        source,
                    });
            }
            "$contains" => return Ok(Matcher::Contains(operand.clone())),
            "$one_of" => {
                let options = operand.as_array().ok_or_else(|| Error::OneOfWithoutList {
                    operand: operand.clone(),
                })?;
                return Ok(Matcher::OneOf(options.clone()));
            }
            _ => {}
        }
    }
    Ok(Matcher::Equal(value.clone()))
}

/// Python's `str()` of a value, as toolscore's `$regex` searches non-string values.
fn py_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        other => other.to_string(),
    }
}

impl Matcher {
    fn matches(&self, value: &Value) -> bool {
        match self {
            Matcher::Equal(expected) => lenient_eq(expected, value),
            Matcher::Regex(re) => match value {
                Value::Null => false,
                Value::Array(items) => {
                    let joined: Vec<String> = items.iter().map(py_text).collect();
                    re.is_match(&joined.join(" "))
                }
                other => re.is_match(&py_text(other)),
            },
            Matcher::Contains(item) => match (value, item) {
                (Value::String(s), Value::String(needle)) => s.contains(needle.as_str()),
                (Value::Array(items), needle) => items.iter().any(|i| i == needle),
                (Value::Object(map), Value::String(key)) => map.contains_key(key),
                _ => false,
            },
            Matcher::OneOf(options) => options.iter().any(|o| o == value),
        }
    }
}

impl Policy {
    /// Rules from a toolscore rule document: `[{"tool", "args"?, "reason"?}, …]`.
    pub fn from_json(doc: &Value) -> Result<Self, Error> {
        let items = doc.as_array().ok_or(Error::RulesNotAList)?;
        let mut rules = Vec::with_capacity(items.len());
        for (position, item) in items.iter().enumerate() {
            let tool = item
                .get("tool")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .ok_or(Error::RuleWithoutTool { position })?;
            let args = match item.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Object(map)) => map
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), matcher(v)?)))
                    .collect::<Result<_, Error>>()
                    .map_err(|e| Error::InRule {
                        position,
                        error: Box::new(e),
                    })?,
                Some(_) => return Err(Error::RuleArgsNotAnObject { position }),
            };
            rules.push(Rule {
                tool: tool.to_string(),
                args,
                reason: item
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
        }
        Ok(Policy { rules })
    }

    /// `--forbidden VALUE`: an existing file holds JSON rules; otherwise VALUE is a
    /// comma-separated list of tool names, each forbidden outright.
    pub fn from_option(value: &str) -> Result<Self, Error> {
        let path = std::path::Path::new(value);
        if path.is_file() {
            let bytes = std::fs::read(path).map_err(|source| Error::Unreadable {
                path: path.to_path_buf(),
                source,
            })?;
            let doc: Value = serde_json::from_slice(&bytes).map_err(|source| Error::NotJson {
                path: path.to_path_buf(),
                source,
            })?;
            return Self::from_json(&doc).map_err(|e| e.in_place(value));
        }
        let rules: Vec<Rule> = value
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|tool| Rule {
                tool: tool.to_string(),
                args: Vec::new(),
                reason: None,
            })
            .collect();
        if rules.is_empty() {
            return Err(Error::NoForbiddenTools {
                value: value.into(),
            });
        }
        Ok(Policy { rules })
    }

    pub fn violations(&self, calls: &[ActualCall]) -> Vec<Violation> {
        calls
            .iter()
            .enumerate()
            .filter_map(|(index, call)| {
                let args = call.scored_args();
                let rule = self.rules.iter().position(|rule| {
                    rule.tool == call.name
                        && rule
                            .args
                            .iter()
                            .all(|(k, m)| args.get(k).is_some_and(|v| m.matches(v)))
                })?;
                Some(Violation {
                    index,
                    tool: call.name.clone(),
                    rule,
                    reason: self.rules[rule].reason.clone(),
                })
            })
            .collect()
    }

    /// toolscore's `policy_metrics` (argument values are left out: they may hold secrets).
    pub fn metrics_json(&self, violations: &[Violation]) -> Value {
        json!({
            "violation_count": violations.len(),
            "rule_count": self.rules.len(),
            "violations": violations.iter().map(|v| json!({
                "index": v.index, "tool": v.tool, "rule": v.rule, "reason": v.reason,
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> ActualCall {
        ActualCall::new(name, args.as_object().cloned().unwrap_or_default())
    }

    #[test]
    fn rules_match_like_toolscore() {
        let policy = Policy::from_json(&json!([
            {"tool": "run_shell", "args": {"command": {"$regex": "rm -rf"}}, "reason": "destructive"},
            {"tool": "read_file", "args": {"path": {"$contains": ".ssh"}}},
            {"tool": "deploy", "args": {"env": {"$one_of": ["prod", "live"]}}},
            {"tool": "pay", "args": {"amount": 100}},
            {"tool": "delete_repository"}
        ]))
        .expect("rules");
        let calls = [
            call("run_shell", json!({"command": ["sudo", "rm", "-rf", "/"]})),
            call("run_shell", json!({"command": "ls; rm -rf /tmp"})),
            call("read_file", json!({"path": "/home/u/.ssh/id_rsa"})),
            call("read_file", json!({"path": "notes.txt"})),
            call("deploy", json!({"env": "prod"})),
            call("pay", json!({"amount": 100.0})),
            call("pay", json!({})),
            call("delete_repository", json!({})),
        ];
        let hit: Vec<(usize, usize)> = policy
            .violations(&calls)
            .iter()
            .map(|v| (v.index, v.rule))
            .collect();
        assert_eq!(hit, vec![(0, 0), (1, 0), (2, 1), (4, 2), (5, 3), (7, 4)]);
    }

    #[test]
    fn a_comma_list_forbids_tools_outright() {
        let policy = Policy::from_option("run_shell, delete_repository").expect("list");
        let calls = [
            call("run_shell", json!({"command": "ls"})),
            call("ls", json!({})),
        ];
        assert_eq!(policy.violations(&calls).len(), 1);
        assert!(Policy::from_option(" , ").is_err());
        assert!(Policy::from_json(&json!([{"args": {}}])).is_err());
        assert!(
            Policy::from_json(&json!([{"tool": "x", "args": {"a": {"$regex": "("}}}])).is_err()
        );
    }
}
