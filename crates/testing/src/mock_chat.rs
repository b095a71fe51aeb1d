//! Serving `POST /v1/chat/completions`: the shared server state, the order in which
//! a request meets auth, faults, latency, slots and persistent rejections, and the
//! completion body (token counts, prefix cache, reasoning) that batch lines reuse.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::mock_answer::{default_answer, image_uris, probe_digit, request_schema, violate};
use crate::mock_config::{
    ContextStyle, Fault, MockConfig, MockVision, ReasoningStyle, SchemaSupport,
};
use crate::prefix_cache::{cacheable_tokens, longest_shared_prefix};

#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) requests: AtomicU64,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) max_in_flight: AtomicUsize,
    pub(crate) faults: AtomicU64,
    pub(crate) answered: AtomicU64,
    pub(crate) per_metric: Mutex<BTreeMap<String, u64>>,
    pub(crate) bodies: Mutex<Vec<Value>>,
    pub(crate) auth: Mutex<Vec<Option<String>>>,
    /// Path and query of every chat request.
    pub(crate) paths: Mutex<Vec<String>>,
}

pub(crate) struct MockState {
    pub(crate) config: MockConfig,
    pub(crate) script: Mutex<VecDeque<Fault>>,
    pub(crate) rng: Mutex<ChaCha8Rng>,
    pub(crate) stats: Arc<Stats>,
    /// Prompts seen, for the prefix cache.
    pub(crate) seen_prompts: Mutex<Vec<String>>,
    /// The server's slots when `config.slots` is set.
    pub(crate) slots: Option<Arc<tokio::sync::Semaphore>>,
}

/// Decrements the in-flight count even when the client gives up mid-request.
struct InFlight(Arc<Stats>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

fn error_response(status: StatusCode, message: &str, param: Option<&str>) -> Response {
    (
        status,
        axum::Json(
            json!({"error": {"message": message, "type": "invalid_request_error",
            "param": param, "code": null}}),
        ),
    )
        .into_response()
}

pub(crate) async fn handle(
    State(state): State<Arc<MockState>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let stats = &state.stats;
    stats.requests.fetch_add(1, Ordering::SeqCst);
    let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let _guard = InFlight(stats.clone());

    stats.paths.lock().unwrap_or_else(|p| p.into_inner()).push(
        uri.path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_default(),
    );
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let auth = header("authorization")
        .map(str::to_string)
        .or_else(|| header("api-key").map(|k| format!("api-key {k}")));
    stats
        .auth
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(auth.clone());

    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return error_response(StatusCode::BAD_REQUEST, "request body is not JSON", None);
    };
    if state.config.keep_bodies {
        stats
            .bodies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request.clone());
    }
    let metric = request
        .pointer("/response_format/json_schema/name")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    *stats
        .per_metric
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(metric)
        .or_insert(0) += 1;

    let config = &state.config;
    if let Some(key) = &config.api_key {
        let given = auth.as_deref();
        if given != Some(format!("Bearer {key}").as_str())
            && given != Some(format!("api-key {key}").as_str())
        {
            return error_response(StatusCode::UNAUTHORIZED, "Incorrect API key provided", None);
        }
    }

    let fault = next_fault(&state);
    if fault.is_some() {
        stats.faults.fetch_add(1, Ordering::SeqCst);
    }
    // A prefix is warm only once a request carrying it has been answered: what
    // this request can be served from is decided on arrival.
    let warm = config
        .prefix_cache
        .then(|| prefix_cached_tokens(&state, &prompt_of(&request)));
    let mut delay = config.latency;
    if let Some(Fault::Slow(extra)) = &fault {
        delay += *extra;
    }
    if let Some(slots) = &state.slots {
        // The work runs apart from this connection: a client that hangs up does
        // not free the slot earlier.
        let slots = slots.clone();
        let work = tokio::spawn(async move {
            let _slot = slots.acquire_owned().await;
            tokio::time::sleep(delay).await;
        });
        let _ = work.await;
    } else if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }

    if let Some(rejection) = persistent_rejection(config, &request, body.len()) {
        return rejection;
    }

    match &fault {
        Some(Fault::RateLimited { retry_after }) => {
            let mut resp = error_response(
                StatusCode::TOO_MANY_REQUESTS,
                "Rate limit reached for requests",
                None,
            );
            if let Some(value) = retry_after {
                if let Ok(v) = value.parse() {
                    resp.headers_mut().insert("retry-after", v);
                }
            }
            return resp;
        }
        Some(Fault::ServerError) => {
            return error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server had an error while processing your request",
                None,
            )
        }
        Some(Fault::Unavailable) => {
            return error_response(StatusCode::SERVICE_UNAVAILABLE, "overloaded", None)
        }
        Some(Fault::MalformedBody) => {
            return (
                StatusCode::OK,
                [("content-type", "application/json")],
                "{\"id\": \"mock\", \"choices\": [{\"message\": {\"content\": \"{\\\"ver",
            )
                .into_response();
        }
        Some(Fault::RejectSchema400) => return schema_rejection_400(),
        Some(Fault::ContentRejected) => return error_response(
            StatusCode::BAD_REQUEST,
            "Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
            None,
        ),
        Some(Fault::ModelNotFound) => {
            return error_response(
                StatusCode::NOT_FOUND,
                "The model `no-such-model` does not exist or you do not have access to it.",
                Some("model"),
            )
        }
        Some(Fault::RejectSchema500) => return schema_rejection_500(),
        _ => {}
    }

    stats.answered.fetch_add(1, Ordering::SeqCst);
    axum::Json(completion_with(
        &state,
        &request,
        body.len(),
        fault.as_ref(),
        warm,
    ))
    .into_response()
}

/// The chat completion answering `request` (`body_len`: its size in bytes, for the
/// token counts), with `fault` applied to the content. Shared by live requests and
/// batch lines.
pub(crate) fn completion(
    state: &MockState,
    request: &Value,
    body_len: usize,
    fault: Option<&Fault>,
) -> Value {
    // Batch lines are answered one after another: each sees the ones before it.
    let warm = state
        .config
        .prefix_cache
        .then(|| prefix_cached_tokens(state, &prompt_of(request)));
    completion_with(state, request, body_len, fault, warm)
}

/// [`completion`] with the prefix-cached tokens decided beforehand (`None`: no
/// prefix cache); the request's prompt is remembered as answered.
fn completion_with(
    state: &MockState,
    request: &Value,
    body_len: usize,
    fault: Option<&Fault>,
    warm: Option<u64>,
) -> Value {
    let config = &state.config;
    let schema = request_schema(request).unwrap_or(Value::Bool(true));
    let answer = match &config.responder {
        Some(responder) => responder(request),
        None => match probe_digit(config, request, &schema) {
            Some(digit) => json!({ "digit": digit }),
            None => default_answer(&schema),
        },
    };
    let content = match fault {
        Some(Fault::FencedAnswer) => {
            let compact = answer.to_string();
            // A trailing comma inside the object, prose and a fence around it.
            let broken = match compact.strip_suffix('}') {
                Some(head) if compact.len() > 2 => format!("{head},}}"),
                _ => compact,
            };
            format!("Here is my assessment.\n```json\n{broken}\n```\nLet me know.")
        }
        Some(Fault::InvalidAnswer) => violate(&schema, &answer).to_string(),
        Some(Fault::NotJson) => "I am unable to give a rating in that format.".to_string(),
        Some(Fault::CutOff) => {
            let full = answer.to_string();
            full.chars().take(full.chars().count() / 2).collect()
        }
        _ => answer.to_string(),
    };
    let mut finish_reason = if matches!(fault, Some(Fault::CutOff)) {
        "length"
    } else {
        "stop"
    };
    // A reasoning model thinks first; what is left of the limit is for the answer.
    let mut content = content;
    let mut thought = 0u64;
    let mut reasoning_text: Option<String> = None;
    if let Some(reasoning) = config.reasoning_tokens {
        let limit = request
            .get("max_tokens")
            .or_else(|| request.get("max_completion_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX);
        let answer_tokens = (content.len() as u64 / 4).max(1);
        thought = reasoning.min(limit);
        let thinking = "Let me weigh this. ".repeat((thought as usize / 5).max(1));
        if reasoning + answer_tokens > limit {
            finish_reason = "length";
            content = String::new();
        }
        match config.reasoning_style {
            ReasoningStyle::UsageCount => {}
            ReasoningStyle::ReasoningContent => reasoning_text = Some(thinking),
            ReasoningStyle::ThinkTags => {
                content = if finish_reason == "length" {
                    format!("<think>{thinking}")
                } else {
                    format!("<think>{thinking}</think>\n{content}")
                };
            }
        }
    }
    let model = config
        .model_name
        .clone()
        .or_else(|| {
            request
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "mock".into());
    let prompt_tokens = (body_len as u64 / 4).max(1);
    let completion_tokens = (content.len() as u64 / 4).max(1) + thought;
    let mut cached = config.cached_tokens;
    if let Some(warm) = warm {
        cached = cached.max(warm);
        state
            .seen_prompts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(prompt_of(request));
    }
    let mut reply = json!({
        "id": format!("mock-{}", state.stats.requests.load(Ordering::SeqCst)),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens,
                  "prompt_tokens_details": {"cached_tokens": cached.min(prompt_tokens)}}
    });
    if config.reasoning_tokens.is_some() {
        match config.reasoning_style {
            ReasoningStyle::UsageCount => {
                reply["usage"]["completion_tokens_details"] = json!({"reasoning_tokens": thought});
            }
            ReasoningStyle::ReasoningContent => {
                reply["choices"][0]["message"]["reasoning_content"] = json!(reasoning_text);
                if finish_reason == "length" {
                    reply["choices"][0]["message"]["content"] = Value::Null;
                }
            }
            ReasoningStyle::ThinkTags => {}
        }
    }
    reply
}

/// The text a prefix cache sees: the structured-output schema (OpenAI puts it
/// before the system message, so two requests with different schemas share
/// nothing) followed by the messages, as JSON text.
fn prompt_of(request: &Value) -> String {
    let schema = request
        .pointer("/response_format/json_schema/schema")
        .map(Value::to_string)
        .unwrap_or_default();
    format!(
        "{schema}{}",
        request
            .get("messages")
            .map(Value::to_string)
            .unwrap_or_default()
    )
}

/// Tokens OpenAI's prefix cache would serve for `prompt`: the longest prefix shared
/// with a request already answered, 4 characters a token, 0 below 1,024 tokens,
/// else rounded down to a multiple of 128.
fn prefix_cached_tokens(state: &MockState, prompt: &str) -> u64 {
    let seen = state.seen_prompts.lock().unwrap_or_else(|p| p.into_inner());
    let longest = longest_shared_prefix(seen.iter().map(String::as_str), prompt);
    cacheable_tokens(longest as u64 / 4)
}

fn next_fault(state: &MockState) -> Option<Fault> {
    if let Some(f) = state
        .script
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .pop_front()
    {
        return Some(f);
    }
    if state.config.fault_rates.is_empty() {
        return None;
    }
    let draw: f64 = state.rng.lock().unwrap_or_else(|p| p.into_inner()).random();
    let mut acc = 0.0;
    for (fault, rate) in &state.config.fault_rates {
        acc += rate;
        if draw < acc {
            return Some(fault.clone());
        }
    }
    None
}

fn schema_rejection_400() -> Response {
    error_response(
        StatusCode::BAD_REQUEST,
        "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
        Some("response_format"),
    )
}

fn schema_rejection_500() -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        axum::Json(json!({"error": {"message": "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be 'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]", "type": "internal_server_error", "param": null, "code": null}})),
    )
        .into_response()
}

fn persistent_rejection(config: &MockConfig, request: &Value, body_len: usize) -> Option<Response> {
    if let Some(window) = config.context_window {
        let prompt = (body_len as u64 / 4).max(1);
        let limit = request
            .get("max_tokens")
            .or_else(|| request.get("max_completion_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match config.context_style {
            ContextStyle::LlamaCppPython if prompt > window => {
                let message = format!(
                    "This model's maximum context length is {window} tokens. However, you requested {} tokens ({prompt} in the messages, {limit} in the completion). Please reduce the length of the messages or completion.",
                    prompt + limit
                );
                return Some(
                    (
                        StatusCode::BAD_REQUEST,
                        axum::Json(json!({"error": {"message": message,
                            "type": "invalid_request_error", "param": "messages",
                            "code": "context_length_exceeded"}})),
                    )
                        .into_response(),
                );
            }
            ContextStyle::Vllm if prompt + limit > window => {
                return Some(
                    (
                        StatusCode::BAD_REQUEST,
                        axum::Json(json!({
                            "object": "error",
                            "message": format!("'max_tokens' or 'max_completion_tokens' is too large: {limit}. This model's maximum context length is {window} tokens and your request has {prompt} input tokens ({limit} > {window} - {prompt})."),
                            "type": "BadRequestError",
                            "param": null,
                            "code": 400
                        })),
                    )
                        .into_response(),
                );
            }
            _ => {}
        }
    }
    if config.vision == MockVision::RefuseImages && !image_uris(request).is_empty() {
        return Some(error_response(
            StatusCode::BAD_REQUEST,
            "Invalid content type. image_url is only supported by certain models.",
            Some("messages"),
        ));
    }
    if config.reject_temperature && request.get("temperature").is_some() {
        return Some(error_response(
            StatusCode::BAD_REQUEST,
            "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
            Some("temperature"),
        ));
    }
    if config.require_max_completion_tokens && request.get("max_tokens").is_some() {
        return Some(error_response(
            StatusCode::BAD_REQUEST,
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            Some("max_tokens"),
        ));
    }
    let rf = request.get("response_format")?;
    let kind = rf.get("type").and_then(Value::as_str).unwrap_or("");
    let has_schema_field = rf.get("schema").is_some();
    match config.schema_support {
        SchemaSupport::Full => None,
        SchemaSupport::Reject400 if kind == "json_schema" => Some(schema_rejection_400()),
        SchemaSupport::LlamaCpp500 if kind == "json_schema" => Some(schema_rejection_500()),
        SchemaSupport::JsonObjectOnly if kind == "json_schema" || has_schema_field => {
            Some(error_response(
                StatusCode::BAD_REQUEST,
                "Unknown parameter: 'response_format.schema' / type 'json_schema' not supported.",
                Some("response_format"),
            ))
        }
        SchemaSupport::None => Some(error_response(
            StatusCode::BAD_REQUEST,
            "Unrecognized request argument supplied: response_format",
            Some("response_format"),
        )),
        _ => None,
    }
}
