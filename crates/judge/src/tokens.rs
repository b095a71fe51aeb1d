//! Completion-length limits derived from an answer's JSON schema, so every request
//! carries a `max_tokens` that a complete, schema-valid answer fits in, and a model
//! that rambles is cut off instead of generating until the context window is full.
//!
//! The bound walks the schema: strings cost their `maxLength` (or
//! [`UNBOUNDED_STRING_TOKENS`] without one) at [`TOKENS_PER_CHAR`] tokens a character
//! (generous for English, about right for Chinese), enums their longest value,
//! numbers a few tokens, arrays `maxItems` (or [`UNBOUNDED_ARRAY_ITEMS`]) items,
//! objects every property with its key and punctuation. The sum gets
//! [`HEADROOM`] x plus [`FIXED_OVERHEAD`] tokens, and is clamped to
//! [`MIN_LIMIT`]..=[`MAX_LIMIT`].

use serde_json::Value;

/// Tokens per character of a bounded string (worst case over the scripts we see:
/// English runs about 0.25, Chinese about 0.7 with common tokenizers).
pub const TOKENS_PER_CHAR: f64 = 0.75;
/// A string without `maxLength`.
pub const UNBOUNDED_STRING_TOKENS: f64 = 512.0;
/// An array without `maxItems`.
pub const UNBOUNDED_ARRAY_ITEMS: f64 = 16.0;
/// Multiplier over the walked bound (whitespace, a model's extra spaces).
pub const HEADROOM: f64 = 1.25;
/// Added after the multiplier (reasoning-free chat templates still emit a few tokens).
pub const FIXED_OVERHEAD: f64 = 32.0;
pub const MIN_LIMIT: u32 = 64;
/// Added to the derived limit once the model is seen reasoning before it answers
/// (OpenAI's o-series and GPT-5, DeepSeek-R1, Qwen3 thinking): its thinking counts
/// against the same limit, and a judge verdict rarely needs more thought than this.
pub const REASONING_HEADROOM: u32 = 8192;
pub const MAX_LIMIT: u32 = 32_768;

/// The completion-token limit for an answer to `schema`.
pub fn answer_token_limit(schema: &Value) -> u32 {
    let walked = value_tokens(schema, 0);
    let limit = (walked * HEADROOM + FIXED_OVERHEAD).ceil();
    (limit.min(f64::from(MAX_LIMIT)) as u32).max(MIN_LIMIT)
}

fn text_tokens(chars: usize) -> f64 {
    // Quotes plus the characters; a short key or label never costs less than 1.
    2.0 + (chars as f64 * TOKENS_PER_CHAR).max(1.0)
}

fn value_tokens(schema: &Value, depth: u32) -> f64 {
    // Self-referencing or absurdly deep schemas: charge a flat amount.
    if depth > 32 {
        return UNBOUNDED_STRING_TOKENS;
    }
    let Some(s) = schema.as_object() else {
        // `true` (anything): as much as an unbounded string.
        return UNBOUNDED_STRING_TOKENS;
    };
    if let Some(c) = s.get("const") {
        return text_tokens(c.to_string().chars().count());
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        let longest = options
            .iter()
            .map(|o| o.to_string().chars().count())
            .max()
            .unwrap_or(1);
        return text_tokens(longest);
    }
    if let Some(alts) = s.get("anyOf").and_then(Value::as_array) {
        return alts
            .iter()
            .map(|a| value_tokens(a, depth + 1))
            .fold(0.0, f64::max);
    }
    match super::schema::schema_type(schema) {
        "object" => {
            let props = s.get("properties").and_then(Value::as_object);
            let mut total = 2.0;
            for (key, sub) in props.into_iter().flatten() {
                total += text_tokens(key.chars().count()) + 2.0 + value_tokens(sub, depth + 1);
            }
            total
        }
        "array" => {
            let items = s
                .get("maxItems")
                .and_then(Value::as_u64)
                .map(|n| n as f64)
                .unwrap_or(UNBOUNDED_ARRAY_ITEMS);
            let item = s
                .get("items")
                .map(|i| value_tokens(i, depth + 1))
                .unwrap_or(UNBOUNDED_STRING_TOKENS);
            2.0 + items * (item + 1.0)
        }
        "string" => match s.get("maxLength").and_then(Value::as_u64) {
            Some(n) => text_tokens(n as usize),
            None => UNBOUNDED_STRING_TOKENS,
        },
        "integer" | "number" => 8.0,
        "boolean" | "null" => 2.0,
        _ => UNBOUNDED_STRING_TOKENS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bounded_strings_cost_their_length() {
        let short = json!({"type": "object", "properties": {
            "why": {"type": "string", "maxLength": 100}}});
        let long = json!({"type": "object", "properties": {
            "why": {"type": "string", "maxLength": 2000}}});
        let a = answer_token_limit(&short);
        let b = answer_token_limit(&long);
        assert!((MIN_LIMIT..200).contains(&a), "{a}");
        // 2000 characters at 0.75 tokens each, with headroom.
        assert!((1875..2100).contains(&b), "{b}");
    }

    #[test]
    fn arrays_multiply_and_enums_are_cheap() {
        let list = |n: u64| {
            json!({"type": "object", "properties": {
                "issues": {"type": "array", "maxItems": n,
                           "items": {"type": "string", "maxLength": 200}},
                "n": {"type": "integer", "enum": [0, 1, 2, 3]}}})
        };
        let ten = answer_token_limit(&list(10));
        let twenty = answer_token_limit(&list(20));
        assert!(twenty > ten + 1500, "{ten} {twenty}");
        let tiny = json!({"type": "object", "properties": {
            "digit": {"type": "integer", "enum": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}}});
        assert_eq!(answer_token_limit(&tiny), MIN_LIMIT);
    }

    #[test]
    fn unbounded_schemas_still_get_a_finite_limit() {
        let any = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let n = answer_token_limit(&any);
        assert!(n > 512 && n < 1000, "{n}");
        assert!(answer_token_limit(&json!(true)) > 0);
        let huge = json!({"type": "array", "maxItems": 1_000_000,
                          "items": {"type": "string", "maxLength": 10_000}});
        assert_eq!(answer_token_limit(&huge), MAX_LIMIT);
    }
}
