//! Turning a model's text into a JSON value: strip `<think>` blocks and code fences,
//! take the outermost object, then repair near-JSON (single quotes, trailing commas,
//! unquoted keys, comments, truncation) with `llm_json`. The result is always validated
//! against the schema afterwards, so a "repair" that guesses wrong is caught there.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the answer is empty")]
    Empty,
    #[error("no JSON object found in the answer")]
    NoJson,
    #[error("the answer is not JSON and could not be repaired: {0}")]
    Unrepairable(String),
}

/// Longest answer we try to repair (repair is superlinear on pathological input and a
/// judge answer is a few KB).
const MAX_REPAIR_BYTES: usize = 256 * 1024;

/// Parse the judge's answer text into a JSON object.
pub fn parse_answer(raw: &str) -> Result<Value, ParseError> {
    let text = strip_think(raw);
    let text = text.trim();
    if text.is_empty() {
        return Err(ParseError::Empty);
    }
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
        return Ok(v);
    }
    let body = strip_fences(text);
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(body) {
        return Ok(v);
    }
    let Some(start) = body.find('{') else {
        return Err(ParseError::NoJson);
    };
    let candidate = match body.rfind('}') {
        Some(end) if end > start => &body[start..=end],
        // Truncated output: no closing brace; let the repairer close it.
        _ => &body[start..],
    };
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(candidate) {
        return Ok(v);
    }
    // Raw newlines/tabs inside strings are the one common defect `llm_json` misses.
    let escaped = escape_controls_in_strings(candidate);
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&escaped) {
        return Ok(v);
    }
    if escaped.len() > MAX_REPAIR_BYTES {
        return Err(ParseError::Unrepairable(format!(
            "answer longer than {MAX_REPAIR_BYTES} bytes"
        )));
    }
    match llm_json::loads(&escaped, &llm_json::RepairOptions::default()) {
        Ok(v @ Value::Object(_)) if !v.as_object().is_some_and(|m| m.is_empty()) => Ok(v),
        Ok(other) => Err(ParseError::Unrepairable(format!(
            "repair produced {} instead of an object with content",
            short(&other.to_string())
        ))),
        Err(e) => Err(ParseError::Unrepairable(e.to_string())),
    }
}

fn short(s: &str) -> String {
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Remove reasoning blocks some local models emit before the answer. An unclosed
/// `<think>` means the whole answer was reasoning; keep the text after it so the
/// caller reports "no JSON" rather than parsing the reasoning.
fn strip_think(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(open) = rest.find("<think>") {
        out.push_str(&rest[..open]);
        match rest[open..].find("</think>") {
            Some(close) => rest = &rest[open + close + "</think>".len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The body of the first ``` fenced block, if any (with or without a language tag).
fn strip_fences(text: &str) -> &str {
    let Some(open) = text.find("```") else {
        return text;
    };
    let after = &text[open + 3..];
    // Skip the info string (`json`, `JSON`, ...) up to the end of the line.
    let body_start = after.find('\n').map(|i| i + 1).unwrap_or(0);
    let body = &after[body_start..];
    match body.find("```") {
        Some(close) => &body[..close],
        None => body,
    }
}

/// Escape raw control characters that appear inside JSON string literals.
fn escape_controls_in_strings(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
                out.push(c);
                continue;
            }
            match c {
                '\\' => {
                    escaped = true;
                    out.push(c);
                }
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        } else {
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_json() {
        assert_eq!(parse_answer(r#"{"a": 1}"#).unwrap(), json!({"a": 1}));
    }

    #[test]
    fn fenced_and_prose() {
        let raw = "Here is my evaluation:\n```json\n{\"verdict\": \"supported\"}\n```\nThanks";
        assert_eq!(parse_answer(raw).unwrap(), json!({"verdict": "supported"}));
        let raw = "Answer: {\"x\": [1, 2]} -- done";
        assert_eq!(parse_answer(raw).unwrap(), json!({"x": [1, 2]}));
    }

    #[test]
    fn think_blocks_are_dropped() {
        let raw = "<think>maybe {\"x\": 0}</think>\n{\"x\": 1}";
        assert_eq!(parse_answer(raw).unwrap(), json!({"x": 1}));
        assert!(parse_answer("<think>still thinking {\"x\": 1}").is_err());
    }

    #[test]
    fn near_json_is_repaired() {
        let raw = "{'verdict': 'supported', 'scores': {'a': 3,},}";
        assert_eq!(
            parse_answer(raw).unwrap(),
            json!({"verdict": "supported", "scores": {"a": 3}})
        );
        let raw = "{\"why\": \"line one\nline two\", \"n\": 2}";
        assert_eq!(
            parse_answer(raw).unwrap(),
            json!({"why": "line one\nline two", "n": 2})
        );
        let truncated = "{\"verdict\": \"supported\", \"why\": \"because";
        let v = parse_answer(truncated).unwrap();
        assert_eq!(v["verdict"], "supported");
    }

    #[test]
    fn garbage_is_an_error() {
        assert_eq!(parse_answer("   "), Err(ParseError::Empty));
        assert_eq!(parse_answer("I cannot help"), Err(ParseError::NoJson));
        assert!(parse_answer("[1, 2, 3]").is_err());
    }
}
