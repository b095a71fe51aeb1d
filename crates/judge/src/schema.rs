//! Validation of judge answers against the JSON-schema subset our metric schemas use:
//! `type` (object, array, string, integer, number, boolean, null, or a list of them),
//! `properties`, `required`, `additionalProperties` (bool or schema), `enum`, `const`,
//! `minimum`/`maximum` (and the exclusive forms), `items`, `minItems`/`maxItems`,
//! `minLength`/`maxLength`, `anyOf`. Unknown keywords (`description`, `title`, ...)
//! are ignored, as a validator must. Pure functions, no I/O.

use serde_json::Value;

/// The first violation found, with a JSON-pointer-like path (`$.scores.clarity`) so
/// the re-ask message tells the model exactly what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SchemaViolation {
    pub path: String,
    pub message: String,
}

/// The JSON type a schema node asks for: its `type`, the first non-null one of a
/// list, `object` when it only lists properties, else `string`.
pub fn schema_type(schema: &Value) -> &str {
    match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    }
}

/// Check `value` against `schema`; `Ok(())` when valid.
pub fn validate(schema: &Value, value: &Value) -> Result<(), SchemaViolation> {
    check(schema, value, "$")
}

/// A schema that is itself unusable (e.g. `minimum` not a number) is reported here so
/// the caller learns about its own bug before asking any model.
pub fn check_schema(schema: &Value) -> Result<(), SchemaViolation> {
    check_schema_at(schema, "$schema")
}

fn violation(path: &str, message: impl Into<String>) -> SchemaViolation {
    SchemaViolation {
        path: path.to_string(),
        message: message.into(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn matches_type(expected: &str, value: &Value) -> bool {
    match expected {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        // 3.0 counts as an integer, as JSON Schema says (a number with zero fraction).
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        _ => false,
    }
}

fn check(schema: &Value, value: &Value, path: &str) -> Result<(), SchemaViolation> {
    let Some(schema) = schema.as_object() else {
        // `true` accepts everything, `false` nothing; anything else is treated as `true`.
        return match schema {
            Value::Bool(false) => Err(violation(path, "no value is allowed here")),
            _ => Ok(()),
        };
    };

    if let Some(any_of) = schema.get("anyOf").and_then(Value::as_array) {
        let mut first_err = None;
        let ok = any_of.iter().any(|alt| match check(alt, value, path) {
            Ok(()) => true,
            Err(e) => {
                first_err.get_or_insert(e);
                false
            }
        });
        if !ok {
            let detail = first_err.map(|e| e.message).unwrap_or_default();
            return Err(violation(
                path,
                format!("matches none of the allowed alternatives ({detail})"),
            ));
        }
    }

    if let Some(ty) = schema.get("type") {
        let allowed: Vec<&str> = match ty {
            Value::String(s) => vec![s.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| matches_type(t, value)) {
            return Err(violation(
                path,
                format!(
                    "expected {}, got {}",
                    allowed.join(" or "),
                    type_name(value)
                ),
            ));
        }
    }

    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.iter().any(|o| json_equal(o, value)) {
            let listed: Vec<String> = options.iter().map(Value::to_string).collect();
            return Err(violation(
                path,
                format!("{} is not one of [{}]", value, listed.join(", ")),
            ));
        }
    }
    if let Some(expected) = schema.get("const") {
        if !json_equal(expected, value) {
            return Err(violation(path, format!("must equal {expected}")));
        }
    }

    match value {
        Value::Number(n) => check_number(schema, n.as_f64().unwrap_or(f64::NAN), path)?,
        Value::String(s) => check_string(schema, s, path)?,
        Value::Array(items) => check_array(schema, items, path)?,
        Value::Object(map) => check_object(schema, map, path)?,
        _ => {}
    }
    Ok(())
}

/// Numbers compare by value (1 == 1.0), everything else structurally.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn check_number(
    schema: &serde_json::Map<String, Value>,
    n: f64,
    path: &str,
) -> Result<(), SchemaViolation> {
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    if let Some(min) = bound("minimum") {
        if n < min {
            return Err(violation(path, format!("{n} is below the minimum {min}")));
        }
    }
    if let Some(max) = bound("maximum") {
        if n > max {
            return Err(violation(path, format!("{n} is above the maximum {max}")));
        }
    }
    if let Some(min) = bound("exclusiveMinimum") {
        if n <= min {
            return Err(violation(path, format!("{n} must be greater than {min}")));
        }
    }
    if let Some(max) = bound("exclusiveMaximum") {
        if n >= max {
            return Err(violation(path, format!("{n} must be less than {max}")));
        }
    }
    Ok(())
}

fn check_string(
    schema: &serde_json::Map<String, Value>,
    s: &str,
    path: &str,
) -> Result<(), SchemaViolation> {
    let len = s.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
        if len < min {
            return Err(violation(
                path,
                format!("string shorter than {min} characters"),
            ));
        }
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        if len > max {
            return Err(violation(
                path,
                format!("string longer than {max} characters"),
            ));
        }
    }
    Ok(())
}

fn check_array(
    schema: &serde_json::Map<String, Value>,
    items: &[Value],
    path: &str,
) -> Result<(), SchemaViolation> {
    let len = items.len() as u64;
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
        if len < min {
            return Err(violation(
                path,
                format!("has {len} items, at least {min} required"),
            ));
        }
    }
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
        if len > max {
            return Err(violation(
                path,
                format!("has {len} items, at most {max} allowed"),
            ));
        }
    }
    if let Some(item_schema) = schema.get("items") {
        for (i, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{path}[{i}]"))?;
        }
    }
    Ok(())
}

fn check_object(
    schema: &serde_json::Map<String, Value>,
    map: &serde_json::Map<String, Value>,
    path: &str,
) -> Result<(), SchemaViolation> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(key) {
                return Err(violation(
                    path,
                    format!("missing required property \"{key}\""),
                ));
            }
        }
    }
    for (key, item) in map {
        let child = format!("{path}.{key}");
        match properties.and_then(|p| p.get(key)) {
            Some(prop_schema) => check(prop_schema, item, &child)?,
            None => match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    return Err(violation(path, format!("unexpected property \"{key}\"")))
                }
                Some(extra @ Value::Object(_)) => check(extra, item, &child)?,
                _ => {}
            },
        }
    }
    Ok(())
}

fn check_schema_at(schema: &Value, path: &str) -> Result<(), SchemaViolation> {
    let Some(obj) = schema.as_object() else {
        return match schema {
            Value::Bool(_) => Ok(()),
            _ => Err(violation(path, "a schema must be an object or a boolean")),
        };
    };
    for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
        if let Some(v) = obj.get(key) {
            if !v.is_number() {
                return Err(violation(path, format!("`{key}` must be a number")));
            }
        }
    }
    for key in ["minItems", "maxItems", "minLength", "maxLength"] {
        if let Some(v) = obj.get(key) {
            if v.as_u64().is_none() {
                return Err(violation(
                    path,
                    format!("`{key}` must be a non-negative integer"),
                ));
            }
        }
    }
    if let Some(e) = obj.get("enum") {
        if e.as_array().is_none_or(|a| a.is_empty()) {
            return Err(violation(path, "`enum` must be a non-empty array"));
        }
    }
    if let Some(ty) = obj.get("type") {
        const KNOWN: [&str; 7] = [
            "object", "array", "string", "integer", "number", "boolean", "null",
        ];
        let names: Vec<&Value> = match ty {
            Value::Array(list) => list.iter().collect(),
            other => vec![other],
        };
        for name in names {
            if !name.as_str().is_some_and(|n| KNOWN.contains(&n)) {
                return Err(violation(path, format!("unknown type {name}")));
            }
        }
    }
    if let Some(props) = obj.get("properties") {
        let Some(props) = props.as_object() else {
            return Err(violation(path, "`properties` must be an object"));
        };
        for (k, v) in props {
            check_schema_at(v, &format!("{path}.properties.{k}"))?;
        }
    }
    if let Some(required) = obj.get("required") {
        if !required
            .as_array()
            .is_some_and(|r| r.iter().all(Value::is_string))
        {
            return Err(violation(path, "`required` must be an array of strings"));
        }
    }
    if let Some(items) = obj.get("items") {
        check_schema_at(items, &format!("{path}.items"))?;
    }
    if let Some(extra @ Value::Object(_)) = obj.get("additionalProperties") {
        check_schema_at(extra, &format!("{path}.additionalProperties"))?;
    }
    if let Some(alts) = obj.get("anyOf") {
        let Some(alts) = alts.as_array() else {
            return Err(violation(path, "`anyOf` must be an array"));
        };
        for (i, alt) in alts.iter().enumerate() {
            check_schema_at(alt, &format!("{path}.anyOf[{i}]"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scores_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "justification": {"type": "string"},
                "verdict": {"type": "string", "enum": ["supported", "unsupported"]},
                "scores": {
                    "type": "object",
                    "properties": {
                        "clarity": {"type": "integer", "minimum": 1, "maximum": 10},
                        "half": {"type": "number", "enum": [0, 0.5, 1]}
                    },
                    "required": ["clarity", "half"],
                    "additionalProperties": false
                },
                "issues": {"type": "array", "items": {"type": "string"}, "minItems": 0, "maxItems": 2},
                "duplicate": {"type": "boolean"}
            },
            "required": ["justification", "verdict", "scores"],
            "additionalProperties": false
        })
    }

    #[test]
    fn accepts_a_valid_answer() {
        let v = json!({"justification": "fine", "verdict": "supported",
            "scores": {"clarity": 7, "half": 0.5}, "issues": ["a"], "duplicate": false});
        assert_eq!(validate(&scores_schema(), &v), Ok(()));
        assert_eq!(check_schema(&scores_schema()), Ok(()));
    }

    #[test]
    fn integer_accepts_whole_floats_and_rejects_fractions() {
        let s = json!({"type": "integer"});
        assert!(validate(&s, &json!(3.0)).is_ok());
        assert!(validate(&s, &json!(3.5)).is_err());
        assert!(validate(&s, &json!("3")).is_err());
    }

    #[test]
    fn rejects_out_of_range_with_path() {
        let v = json!({"justification": "x", "verdict": "supported",
            "scores": {"clarity": 11, "half": 1}});
        let err = validate(&scores_schema(), &v).unwrap_err();
        assert_eq!(err.path, "$.scores.clarity");
        assert!(err.message.contains("maximum 10"), "{err}");
        let v = json!({"justification": "x", "verdict": "supported",
            "scores": {"clarity": 0, "half": 1}});
        assert!(validate(&scores_schema(), &v)
            .unwrap_err()
            .message
            .contains("minimum"));
    }

    #[test]
    fn rejects_missing_required_extra_properties_and_bad_enum() {
        let v = json!({"justification": "x", "verdict": "supported", "scores": {"clarity": 3}});
        assert!(validate(&scores_schema(), &v)
            .unwrap_err()
            .message
            .contains("\"half\""));
        let v = json!({"justification": "x", "verdict": "supported",
            "scores": {"clarity": 3, "half": 1, "extra": 2}});
        assert!(validate(&scores_schema(), &v)
            .unwrap_err()
            .message
            .contains("unexpected property"));
        let v = json!({"justification": "x", "verdict": "maybe",
            "scores": {"clarity": 3, "half": 1}});
        assert_eq!(
            validate(&scores_schema(), &v).unwrap_err().path,
            "$.verdict"
        );
        let v = json!({"justification": "x", "verdict": "supported",
            "scores": {"clarity": 3, "half": 0.25}});
        assert!(validate(&scores_schema(), &v).is_err());
    }

    #[test]
    fn arrays_bounds_and_items() {
        let base = json!({"justification": "x", "verdict": "supported",
            "scores": {"clarity": 3, "half": 1}});
        let mut v = base.clone();
        v["issues"] = json!(["a", "b", "c"]);
        assert!(validate(&scores_schema(), &v)
            .unwrap_err()
            .message
            .contains("at most 2"));
        let mut v = base.clone();
        v["issues"] = json!(["a", 3]);
        assert_eq!(
            validate(&scores_schema(), &v).unwrap_err().path,
            "$.issues[1]"
        );
        let s = json!({"type": "array", "minItems": 1});
        assert!(validate(&s, &json!([])).is_err());
    }

    #[test]
    fn booleans_type_lists_and_any_of() {
        let s = json!({"type": ["string", "null"]});
        assert!(validate(&s, &json!(null)).is_ok());
        assert!(validate(&s, &json!(1)).is_err());
        let s = json!({"anyOf": [{"type": "integer"}, {"type": "boolean"}]});
        assert!(validate(&s, &json!(true)).is_ok());
        assert!(validate(&s, &json!("x")).is_err());
        assert!(validate(&json!(false), &json!(1)).is_err());
        assert!(validate(&json!(true), &json!(1)).is_ok());
    }

    #[test]
    fn flags_broken_schemas() {
        assert!(check_schema(&json!({"type": "integer", "minimum": "1"})).is_err());
        assert!(check_schema(&json!({"type": "float"})).is_err());
        assert!(check_schema(&json!({"enum": []})).is_err());
        assert!(check_schema(&json!({"properties": {"a": {"maxItems": -1}}})).is_err());
        assert!(check_schema(&json!("object")).is_err());
    }
}
