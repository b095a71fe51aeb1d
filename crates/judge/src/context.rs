//! Replies saying that a request does not fit the model's context window, in the
//! dialects servers use, and what the client does about them.
//!
//! Such a reply is not a refused parameter (the request is fine, it is too long), so it
//! must never be taken for one: vLLM's "'max_tokens' or 'max_completion_tokens' is too
//! large" names the token parameter, and reading it as "unsupported" would switch the
//! parameter name and store the wrong adaptation. When the server says how much room
//! there is, the answer limit is lowered to fit and the request is sent once more;
//! when the prompt alone is too long, the unit fails with a reason that says so.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// Tokens kept free between prompt and answer when fitting a limit (servers count the
/// chat template's closing tokens differently).
pub const FIT_MARGIN: u32 = 16;
/// The smallest answer limit worth a retry: below it even a short verdict is cut off.
pub const MIN_ANSWER_TOKENS: u32 = 64;

/// What an overflow reply says, as far as it says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextOverflow {
    /// The model's context window in tokens.
    pub window: Option<u32>,
    /// The prompt's length by the server's count.
    pub prompt: Option<u32>,
    /// The most completion tokens the server accepts, when that is the complaint.
    pub completion_cap: Option<u32>,
}

/// What to do after an overflow reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FitDecision {
    /// Send again with this answer limit.
    Retry(u32),
    /// Give up; the text says why.
    Fail(String),
}

fn number(s: &str) -> Option<u32> {
    s.replace([',', '_'], "").parse().ok()
}

static WINDOW: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"maximum context length is ([\d,]+)",
        r"context (?:window|length|size) (?:of|is) ([\d,]+)",
        r#""n_ctx"\s*:\s*(\d+)"#,
        r"must be <= ([\d,]+)",
        r"must have less than ([\d,]+) tokens",
        r"tokens? > ([\d,]+) maximum",
        r"max(?:imum)?_?model_?len(?:gth)? (?:of |is |= )?([\d,]+)",
    ]
    .iter()
    .map(|p| Regex::new(&format!("(?i){p}")).expect("context window pattern"))
    .collect()
});

static PROMPT: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"\(([\d,]+) in the messages",
        r"\(([\d,]+) in your prompt",
        r"(?:messages|prompt) resulted in ([\d,]+) tokens",
        r"request has ([\d,]+) input tokens",
        r#""n_prompt_tokens"\s*:\s*(\d+)"#,
        r"given: ([\d,]+) `?inputs`? tokens",
        r"prompt is too long: ([\d,]+) tokens",
        r"requested tokens \(([\d,]+)\) exceed",
        r"input length of ([\d,]+) tokens",
    ]
    .iter()
    .map(|p| Regex::new(&format!("(?i){p}")).expect("prompt length pattern"))
    .collect()
});

static CAP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)supports at most ([\d,]+) (?:completion|output) tokens")
        .expect("completion cap pattern")
});

fn first(patterns: &[Regex], text: &str) -> Option<u32> {
    patterns
        .iter()
        .find_map(|re| re.captures(text).and_then(|c| number(&c[1])))
}

/// Reads an error reply as a context overflow, or `None` when it is something else.
/// Covers OpenAI and llama-cpp-python (`context_length_exceeded`, "maximum context
/// length is W tokens ... (P in the messages, C in the completion)"), vLLM (old and
/// new wording), llama.cpp's server (`exceed_context_size_error` with `n_ctx` and
/// `n_prompt_tokens`), Hugging Face TGI (422, "`inputs` tokens + `max_new_tokens` must
/// be <= W"), Anthropic-style "prompt is too long: P tokens > W maximum" and OpenAI's
/// "max_tokens is too large ... supports at most N completion tokens".
pub fn context_overflow(status: u16, body: &str) -> Option<ContextOverflow> {
    if !matches!(status, 400 | 413 | 422) {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    let code = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let e = v.get("error").unwrap_or(&v);
        ["code", "type"]
            .iter()
            .filter_map(|k| e.get(*k).and_then(Value::as_str))
            .map(str::to_ascii_lowercase)
            .find(|c| c.contains("context"))
    });
    let says_so = code.is_some()
        || [
            "maximum context length",
            "context window",
            "context length",
            "context size",
            "prompt is too long",
            "max_new_tokens",
            "input tokens",
            "completion tokens",
            "too many tokens",
        ]
        .iter()
        .any(|p| lower.contains(p));
    if !says_so {
        return None;
    }
    let found = ContextOverflow {
        window: first(&WINDOW, body),
        prompt: first(&PROMPT, body),
        completion_cap: CAP.captures(body).and_then(|c| number(&c[1])),
    };
    // Words alone ("completion tokens" appears in other errors) are not enough: an
    // overflow reply names a code or at least one of the numbers.
    if code.is_none() && found == ContextOverflow::default() {
        return None;
    }
    Some(found)
}

/// The decision after an overflow reply to a request sent with answer limit `limit`.
/// `fitted` says whether this request was already re-sent with a fitted limit (it is
/// fitted once; a second overflow fails).
pub fn decide(over: &ContextOverflow, limit: u32, fitted: bool, server_text: &str) -> FitDecision {
    let floor = (limit / 4).max(MIN_ANSWER_TOKENS).min(limit);
    let room = match (over.completion_cap, over.window, over.prompt) {
        (Some(cap), _, _) if cap < limit => Some(cap),
        (_, Some(w), Some(p)) => Some(w.saturating_sub(p.saturating_add(FIT_MARGIN))),
        _ => None,
    };
    if !fitted {
        if let Some(room) = room {
            if room >= floor && room < limit {
                return FitDecision::Retry(room);
            }
        }
    }
    let size = match (over.prompt, over.window) {
        (Some(p), Some(w)) => format!(
            "the prompt ({p} tokens by the server's count) leaves no room for an answer of \
             at least {floor} tokens in the judge model's context window of {w} tokens"
        ),
        (None, Some(w)) => {
            format!("the request does not fit the judge model's context window of {w} tokens")
        }
        _ => "the request does not fit the judge model's context window".to_string(),
    };
    FitDecision::Fail(format!(
        "{size}: use a judge with a longer context (llama.cpp: --ctx-size / n_ctx, vLLM: \
         --max-model-len); the server said: {server_text}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over(status: u16, body: &str) -> ContextOverflow {
        context_overflow(status, body).unwrap_or_else(|| panic!("not read as overflow: {body}"))
    }

    #[test]
    fn dialects_of_servers() {
        // llama-cpp-python / OpenAI (chat).
        let o = over(
            400,
            r#"{"error":{"message":"This model's maximum context length is 16384 tokens. However, you requested 22074 tokens (19516 in the messages, 2558 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        );
        assert_eq!((o.window, o.prompt), (Some(16384), Some(19516)));
        // OpenAI without a completion part.
        let o = over(
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130211 tokens. Please reduce the length of the messages.","code":"context_length_exceeded"}}"#,
        );
        assert_eq!((o.window, o.prompt), (Some(128000), Some(130211)));
        // vLLM, newer wording naming the token parameter.
        let o = over(
            400,
            r#"{"object":"error","message":"'max_tokens' or 'max_completion_tokens' is too large: 2558. This model's maximum context length is 8192 tokens and your request has 7000 input tokens (2558 > 8192 - 7000).","type":"BadRequestError","param":null,"code":400}"#,
        );
        assert_eq!((o.window, o.prompt), (Some(8192), Some(7000)));
        // llama.cpp's own server.
        let o = over(
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":4096}}"#,
        );
        assert_eq!((o.window, o.prompt), (Some(4096), Some(9000)));
        // TGI.
        let o = over(
            422,
            r#"{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 3900 `inputs` tokens and 1000 `max_new_tokens`","error_type":"validation"}"#,
        );
        assert_eq!((o.window, o.prompt), (Some(4096), Some(3900)));
        // Anthropic-style.
        let o = over(
            400,
            r#"{"error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
        );
        assert_eq!((o.window, o.prompt), (Some(200000), Some(210000)));
        // A completion cap rather than a window.
        let o = over(
            400,
            r#"{"error":{"message":"max_tokens is too large: 9388. This model supports at most 4096 completion tokens, whereas you provided 9388.","param":"max_tokens","code":"invalid_value"}}"#,
        );
        assert_eq!(o.completion_cap, Some(4096));
    }

    #[test]
    fn other_errors_are_not_overflows() {
        for (status, body) in [
            (
                400,
                r#"{"error":{"message":"Unrecognized request argument supplied: max_completion_tokens","param":"max_completion_tokens"}}"#,
            ),
            (
                400,
                r#"{"error":{"message":"response_format json_schema is not supported"}}"#,
            ),
            (
                500,
                r#"{"error":{"message":"This model's maximum context length is 4096 tokens"}}"#,
            ),
            (
                400,
                r#"{"error":{"message":"temperature is not supported with this model; completion tokens are billed"}}"#,
            ),
        ] {
            assert_eq!(context_overflow(status, body), None, "{body}");
        }
    }

    #[test]
    fn a_limit_is_fitted_once_when_there_is_room() {
        let o = ContextOverflow {
            window: Some(8192),
            prompt: Some(7000),
            completion_cap: None,
        };
        assert_eq!(decide(&o, 2558, false, "x"), FitDecision::Retry(1176));
        // Already fitted once: fail.
        assert!(matches!(decide(&o, 1176, true, "x"), FitDecision::Fail(_)));
        // A completion cap below the limit.
        let cap = ContextOverflow {
            completion_cap: Some(4096),
            ..Default::default()
        };
        assert_eq!(decide(&cap, 9388, false, "x"), FitDecision::Retry(4096));
    }

    #[test]
    fn a_prompt_that_leaves_no_room_fails_with_the_numbers() {
        let o = ContextOverflow {
            window: Some(16384),
            prompt: Some(19516),
            completion_cap: None,
        };
        let FitDecision::Fail(reason) = decide(&o, 2558, false, "server text") else {
            panic!("a prompt longer than the window cannot be fitted");
        };
        assert!(reason.contains("19516 tokens"), "{reason}");
        assert!(reason.contains("context window of 16384"), "{reason}");
        assert!(reason.contains("server text"), "{reason}");
        // Room below a quarter of the limit is not worth an answer.
        let tight = ContextOverflow {
            window: Some(8192),
            prompt: Some(8000),
            completion_cap: None,
        };
        assert!(matches!(
            decide(&tight, 2000, false, "x"),
            FitDecision::Fail(_)
        ));
        // Nothing to go on.
        assert!(matches!(
            decide(&ContextOverflow::default(), 500, false, "x"),
            FitDecision::Fail(_)
        ));
    }
}
