//! Canned answers: the schema a request carries, the deterministic answer derived
//! from it, a schema-breaking variant for [`Fault::InvalidAnswer`], and the digit a
//! vision model reads off the client's probe images.

use serde_json::{json, Value};

#[cfg(doc)]
use crate::mock_config::Fault;
use crate::mock_config::{MockConfig, MockVision};

/// The `data:` URIs of every image part of a request.
pub(crate) fn image_uris(request: &Value) -> Vec<String> {
    let Some(messages) = request.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    messages
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter_map(|p| p.pointer("/image_url/url").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// A vision model's answer to the client's vision probe: the digit it shows.
pub(crate) fn probe_digit(config: &MockConfig, request: &Value, schema: &Value) -> Option<u8> {
    if config.vision != MockVision::Sees || schema.pointer("/properties/digit").is_none() {
        return None;
    }
    image_uris(request)
        .iter()
        .find_map(|uri| tvir_judge::vision::read_probe_data_uri(uri))
}

/// The schema a request carries: `response_format.json_schema.schema`,
/// `response_format.schema`, or the first object schema in the message text.
pub fn request_schema(request: &Value) -> Option<Value> {
    if let Some(s) = request.pointer("/response_format/json_schema/schema") {
        return Some(s.clone());
    }
    if let Some(s) = request.pointer("/response_format/schema") {
        return Some(s.clone());
    }
    let messages = request.get("messages")?.as_array()?;
    for m in messages {
        let texts: Vec<&str> = match m.get("content") {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
            _ => vec![],
        };
        for text in texts {
            for (i, _) in text.match_indices('{') {
                let mut it = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
                if let Some(Ok(v)) = it.next() {
                    if v.get("type").and_then(Value::as_str) == Some("object")
                        && v.get("properties").is_some()
                    {
                        return Some(v);
                    }
                }
            }
        }
    }
    None
}

pub use tvir_judge::schema::schema_type;

/// The deterministic answer the mock gives for `schema` (see the [`crate::mock_judge`]
/// docs).
pub fn default_answer(schema: &Value) -> Value {
    let Some(s) = schema.as_object() else {
        return json!({});
    };
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(first) = s
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(first) = s
        .get("anyOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return default_answer(first);
    }
    match schema_type(schema) {
        "object" => {
            let mut out = serde_json::Map::new();
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    out.insert(k.clone(), default_answer(v));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let min = s.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let max = s
                .get("maxItems")
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX);
            let n = min.max(1).min(max);
            let item = s.get("items").map(default_answer).unwrap_or(json!("ok"));
            Value::Array((0..n).map(|_| item.clone()).collect())
        }
        "integer" => {
            let pick = s
                .get("maximum")
                .or_else(|| s.get("minimum"))
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            json!(pick as i64)
        }
        "number" => json!(s
            .get("maximum")
            .or_else(|| s.get("minimum"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => json!("ok"),
    }
}

/// `answer` changed so that it breaks `schema`: the first bounded number pushed past
/// its maximum, else the first required property removed, else a bare string.
pub(crate) fn violate(schema: &Value, answer: &Value) -> Value {
    fn bump(schema: &Value, value: &mut Value) -> bool {
        if let (Some(max), Value::Number(_)) =
            (schema.get("maximum").and_then(Value::as_f64), &*value)
        {
            *value = json!(max as i64 + 1000);
            return true;
        }
        if let (Some(props), Value::Object(map)) =
            (schema.get("properties").and_then(Value::as_object), value)
        {
            for (k, s) in props {
                if let Some(v) = map.get_mut(k) {
                    if bump(s, v) {
                        return true;
                    }
                }
            }
        }
        false
    }
    let mut broken = answer.clone();
    if bump(schema, &mut broken) {
        return broken;
    }
    if let (Some(first), Value::Object(map)) = (
        schema
            .get("required")
            .and_then(Value::as_array)
            .and_then(|r| r.first())
            .and_then(Value::as_str),
        &mut broken,
    ) {
        map.remove(first);
        return broken;
    }
    json!("not an object")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_answers_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "why": {"type": "string"},
            "verdict": {"type": "string", "enum": ["supported", "unsupported"]},
            "scores": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 1, "maximum": 10}}},
            "half": {"type": "number", "enum": [0, 0.5, 1]},
            "issues": {"type": "array", "items": {"type": "string"}, "maxItems": 0},
            "dup": {"type": "boolean"},
            "n": {"type": "integer", "minimum": 0}
        }, "required": ["why"]});
        let a = default_answer(&schema);
        assert_eq!(
            a,
            json!({"why": "ok", "verdict": "supported", "scores": {"a": 10}, "half": 0,
                   "issues": [], "dup": true, "n": 0})
        );
        assert!(tvir_judge::schema::validate(&schema, &a).is_ok());
        let broken = violate(&schema, &a);
        assert!(tvir_judge::schema::validate(&schema, &broken).is_err());
    }

    #[test]
    fn finds_the_schema_in_each_place() {
        let s = json!({"type": "object", "properties": {"x": {"type": "boolean"}}});
        let r = json!({"response_format": {"type": "json_schema", "json_schema": {"name": "m", "schema": s}}});
        assert_eq!(request_schema(&r), Some(s.clone()));
        let r = json!({"response_format": {"type": "json_object", "schema": s}});
        assert_eq!(request_schema(&r), Some(s.clone()));
        let text = format!(
            "Reply with JSON matching:\n{}",
            serde_json::to_string_pretty(&s).unwrap()
        );
        let r = json!({"messages": [{"role": "system", "content": "hi {not json"}, {"role": "user", "content": text}]});
        assert_eq!(request_schema(&r), Some(s));
        assert_eq!(request_schema(&json!({"messages": []})), None);
    }
}
