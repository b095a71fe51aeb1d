//! An in-process, OpenAI-compatible mock judge for tests, benches and demos.
//!
//! It serves `POST /v1/chat/completions` on `127.0.0.1` (a free port) and answers
//! every request with a JSON object built from the request's schema, after a
//! configurable latency, with optional fault injection. Typical use:
//!
//! ```no_run
//! # async fn demo() {
//! use crate::mock_judge::{MockConfig, MockJudge};
//! let mock = MockJudge::start(MockConfig {
//!     latency: std::time::Duration::from_millis(50),
//!     ..MockConfig::default()
//! })
//! .await;
//! let base_url = mock.base_url(); // "http://127.0.0.1:PORT/v1": give it to JudgeConfig
//! // ... run the code under test ...
//! assert_eq!(mock.requests(), 3);
//! assert_eq!(mock.metric_count("citation_support"), 2);
//! mock.shutdown().await;
//! # }
//! ```
//!
//! **Answers.** By default [`default_answer`] derives one deterministically from the
//! schema the request carries (in `response_format.json_schema.schema`, in
//! `response_format.schema`, or, for prompt-only requests, the first JSON schema
//! found in the message text): every property present, integers and numbers at
//! their `maximum` (else `minimum`, else 0), the first `enum` value, strings `"ok"`,
//! booleans `true`, arrays with `max(minItems, 1)` items (capped by `maxItems`).
//! Set [`MockConfig::responder`] to compute the answer yourself from the request
//! body.
//!
//! **Faults.** [`MockConfig::script`] lists faults applied to the first requests in
//! arrival order (deterministic); [`MockConfig::fault_rates`] then injects faults at
//! random with the seeded generator ([`MockConfig::seed`]). See [`Fault`] for the
//! kinds: 429 with `Retry-After`, 500, a malformed body, answers that need repair,
//! answers that break the schema, non-JSON answers, slow answers, and one-off schema
//! rejections as 400 or as llama-cpp-python's 500, and answers cut off by the token
//! limit (`finish_reason: "length"`). Persistent server behaviours (never accepting
//! `json_schema`, rejecting `temperature` or `max_tokens`, requiring an API key, and
//! how images are treated: [`MockVision`]) are separate switches.
//!
//! **Vision.** By default the mock plays a vision model: it names the digit of the
//! client's vision-check images. [`MockVision::Blind`] plays a text-only model behind
//! a server that drops images (it answers the check from the schema alone, wrongly
//! for at least one of its two digits); [`MockVision::RefuseImages`] refuses any
//! request with an image part.
//!
//! **Prompt caching.** With [`MockConfig::prefix_cache`], `usage.prompt_tokens_details
//! .cached_tokens` reports what OpenAI's prefix cache would serve: the longest prefix
//! of the request's prompt (its `json_schema` schema, which OpenAI places before the
//! system message, then its messages) shared with a request already answered when
//! this one arrived (requests in flight together warm nothing for each other; batch
//! lines are answered one after another), counted at 4 characters a token, nothing
//! below 1,024 tokens, rounded down to 128-token steps.
//!
//! **Batch API.** `POST /v1/files` (multipart, purpose `batch`), `GET
//! /v1/files/{id}/content`, `POST /v1/batches`, `GET /v1/batches/{id}` and `GET
//! /v1/batches` (see [`crate::mock_batch`] and [`MockBatchConfig`]): every
//! status read moves a batch one step along validating -> in_progress -> completed,
//! and lines are answered like live requests, with scripted partial failures,
//! expired batches and an error file.
//!
//! **Stats.** [`MockJudge::requests`], [`MockJudge::max_in_flight`],
//! [`MockJudge::metric_counts`] (keyed by the `json_schema` name, `"unknown"` when
//! absent), [`MockJudge::bodies`] (every request body received),
//! [`MockJudge::token_limits`] (the `max_tokens` of each), [`MockJudge::image_requests`]
//! and [`MockJudge::authorization_headers`].

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use crate::prefix_cache::{cacheable_tokens, longest_shared_prefix};

/// Computes the answer object from the request body.
pub type Responder = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

/// One injected misbehaviour.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// HTTP 429; `retry_after` is sent verbatim as the `Retry-After` header
    /// (seconds or an HTTP date) when given.
    RateLimited { retry_after: Option<String> },
    /// HTTP 500 with a generic error (a real server fault: retry it).
    ServerError,
    /// HTTP 503.
    Unavailable,
    /// HTTP 200 whose body is truncated JSON.
    MalformedBody,
    /// HTTP 200; the answer is wrapped in prose and a code fence with a trailing comma
    /// (repairable; the repaired value equals the normal answer).
    FencedAnswer,
    /// HTTP 200; the answer breaks the schema (a number above its maximum, or a
    /// required property missing).
    InvalidAnswer,
    /// HTTP 200; the answer is prose without any JSON.
    NotJson,
    /// Answer normally after this extra delay (beyond a client timeout, say).
    Slow(Duration),
    /// HTTP 400 naming `response_format` (a schema rejection, once).
    RejectSchema400,
    /// HTTP 500 naming `response_format`, as llama-cpp-python's server sends it.
    RejectSchema500,
    /// HTTP 200 with the answer cut in half and `finish_reason: "length"`, as a server
    /// sends it when the token limit is reached.
    CutOff,
    /// HTTP 400 about this request's content (a moderation refusal, say).
    ContentRejected,
    /// HTTP 404: the model does not exist on this server.
    ModelNotFound,
}

/// How the mock treats image parts (persistently).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MockVision {
    /// A vision model: it names the digit of the client's vision probe images
    /// (read back with [`tvir_judge::vision::read_probe_data_uri`]).
    #[default]
    Sees,
    /// A text-only model behind a server that drops images: it answers anyway,
    /// probes included, from the schema alone (so it misreads at least one of the
    /// two different probe digits).
    Blind,
    /// A server that refuses any request with an image part (HTTP 400).
    RefuseImages,
}

/// Which structured-output forms the server accepts (persistently).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaSupport {
    /// Everything, like OpenAI.
    #[default]
    Full,
    /// `json_schema` gets a 400 naming `response_format`; `json_object` (with or
    /// without a `schema` field) works.
    Reject400,
    /// llama-cpp-python: `json_schema` gets a 500 "Input should be 'text' or
    /// 'json_object'"; `{"type": "json_object", "schema": ...}` works.
    LlamaCpp500,
    /// Only a bare `{"type": "json_object"}`: `json_schema` and a `schema` field are
    /// rejected with 400.
    JsonObjectOnly,
    /// No `response_format` at all (400 for any).
    None,
}

#[derive(Clone)]
pub struct MockConfig {
    /// Delay before every answer.
    pub latency: Duration,
    /// `None`: [`default_answer`] from the request's schema.
    pub responder: Option<Responder>,
    /// Faults for the first requests, in arrival order.
    pub script: Vec<Fault>,
    /// Random faults afterwards: each request draws once; `(fault, probability)`
    /// pairs are tried in order (probabilities should sum to at most 1).
    pub fault_rates: Vec<(Fault, f64)>,
    pub seed: u64,
    pub schema_support: SchemaSupport,
    /// Reject any request carrying `temperature` (400 naming it), like some
    /// reasoning models.
    pub reject_temperature: bool,
    /// Reject `max_tokens` (400 asking for `max_completion_tokens`).
    pub require_max_completion_tokens: bool,
    /// When set, requests without `Authorization: Bearer <key>` get a 401.
    pub api_key: Option<String>,
    /// Model name reported in answers (default: the requested model).
    pub model_name: Option<String>,
    /// Reported `usage.prompt_tokens_details.cached_tokens` per answer.
    pub cached_tokens: u64,
    /// Report cached prefix tokens like OpenAI's prompt cache (see the module docs).
    pub prefix_cache: bool,
    /// Behaviour of the Files and Batch endpoints.
    pub batch: crate::mock_batch::MockBatchConfig,
    /// Image handling: a vision model (default), a blind one, or image refusals.
    pub vision: MockVision,
    /// Keep every request body for [`MockJudge::bodies`] (default). Off for long
    /// runs (benches), where tens of thousands of bodies would pile up in memory.
    pub keep_bodies: bool,
    /// Serve at most this many requests at once, the rest waiting in line, like a
    /// local server with one slot. A request whose client gave up is still served
    /// when its turn comes (the server does not notice), as real ones do.
    pub slots: Option<usize>,
    /// A context window in tokens (prompt tokens are counted as in `usage`: a
    /// quarter of the body's bytes), enforced as [`MockConfig::context_style`] says.
    pub context_window: Option<u64>,
    pub context_style: ContextStyle,
    /// A reasoning model: it thinks this many tokens before answering, and the
    /// thinking counts against the token limit (an answer that does not fit after
    /// it comes back empty with `finish_reason: length`), reported as
    /// [`MockConfig::reasoning_style`] says.
    pub reasoning_tokens: Option<u64>,
    pub reasoning_style: ReasoningStyle,
}

/// How a reasoning model's thinking shows in its replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningStyle {
    /// OpenAI: `usage.completion_tokens_details.reasoning_tokens` only.
    #[default]
    UsageCount,
    /// vLLM / DeepSeek with a reasoning parser: the thinking text in
    /// `message.reasoning_content`, no count.
    ReasoningContent,
    /// A local model without a parser: `<think>...</think>` before the answer.
    ThinkTags,
}

/// How a server with a context window answers a request that does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ContextStyle {
    /// llama-cpp-python: a prompt longer than the window gets a 400
    /// `context_length_exceeded` (OpenAI's wording); a token limit that does not fit
    /// beside the prompt is lowered by the server.
    #[default]
    LlamaCppPython,
    /// vLLM: prompt plus token limit must fit, else a 400 naming `max_tokens`.
    Vllm,
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            latency: Duration::ZERO,
            responder: None,
            script: Vec::new(),
            fault_rates: Vec::new(),
            seed: 0,
            schema_support: SchemaSupport::Full,
            reject_temperature: false,
            require_max_completion_tokens: false,
            api_key: None,
            model_name: None,
            cached_tokens: 0,
            prefix_cache: false,
            batch: Default::default(),
            vision: MockVision::Sees,
            keep_bodies: true,
            slots: None,
            context_window: None,
            context_style: ContextStyle::LlamaCppPython,
            reasoning_tokens: None,
            reasoning_style: ReasoningStyle::UsageCount,
        }
    }
}

impl std::fmt::Debug for MockConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockConfig")
            .field("latency", &self.latency)
            .field("custom_responder", &self.responder.is_some())
            .field("script", &self.script)
            .field("fault_rates", &self.fault_rates)
            .field("seed", &self.seed)
            .field("schema_support", &self.schema_support)
            .finish_non_exhaustive()
    }
}

impl MockConfig {
    /// Faults at random: `rate_429` (with `Retry-After: 0`), `rate_500` and
    /// `rate_malformed` (truncated body), seeded.
    pub fn with_random_faults(mut self, rate_429: f64, rate_500: f64, rate_malformed: f64) -> Self {
        self.fault_rates = vec![
            (
                Fault::RateLimited {
                    retry_after: Some("0".into()),
                },
                rate_429,
            ),
            (Fault::ServerError, rate_500),
            (Fault::MalformedBody, rate_malformed),
        ];
        self
    }
}

#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    faults: AtomicU64,
    answered: AtomicU64,
    per_metric: Mutex<BTreeMap<String, u64>>,
    bodies: Mutex<Vec<Value>>,
    auth: Mutex<Vec<Option<String>>>,
    /// Path and query of every chat request.
    paths: Mutex<Vec<String>>,
}

pub(crate) struct MockState {
    pub(crate) config: MockConfig,
    script: Mutex<VecDeque<Fault>>,
    rng: Mutex<ChaCha8Rng>,
    stats: Arc<Stats>,
    /// Prompts seen, for the prefix cache.
    seen_prompts: Mutex<Vec<String>>,
    pub(crate) batch: Arc<crate::mock_batch::BatchState>,
    /// The server's slots when `config.slots` is set.
    slots: Option<Arc<tokio::sync::Semaphore>>,
}

/// A running mock judge. Dropping it stops the server too; [`MockJudge::shutdown`]
/// waits for it.
pub struct MockJudge {
    addr: SocketAddr,
    stats: Arc<Stats>,
    batch: Arc<crate::mock_batch::BatchState>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for MockJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockJudge")
            .field("addr", &self.addr)
            .finish()
    }
}

impl MockJudge {
    /// Bind 127.0.0.1 on a free port and serve in a background task.
    ///
    /// # Panics
    /// When no local port can be bound (a broken test environment).
    pub async fn start(config: MockConfig) -> MockJudge {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0 for the mock judge");
        let addr = listener.local_addr().expect("local address");
        let stats = Arc::new(Stats::default());
        let state = Arc::new(MockState {
            script: Mutex::new(config.script.iter().cloned().collect()),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
            stats: stats.clone(),
            seen_prompts: Mutex::new(Vec::new()),
            batch: Arc::new(Default::default()),
            slots: config
                .slots
                .map(|n| Arc::new(tokio::sync::Semaphore::new(n.max(1)))),
            config,
        });
        let batch = state.batch.clone();
        let app = crate::mock_batch::routes(
            Router::new()
                .route("/v1/chat/completions", post(handle))
                // Azure OpenAI's deployment paths (with `?api-version=...`).
                .route(
                    "/openai/deployments/{deployment}/chat/completions",
                    post(handle),
                ),
        )
        .with_state(state);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        MockJudge {
            addr,
            stats,
            batch,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Requests received (every attempt, faulty or not).
    pub fn requests(&self) -> u64 {
        self.stats.requests.load(Ordering::SeqCst)
    }

    /// Requests answered with a normal (non-fault) answer.
    pub fn answered(&self) -> u64 {
        self.stats.answered.load(Ordering::SeqCst)
    }

    /// Faults injected (scripted or random).
    pub fn faults_injected(&self) -> u64 {
        self.stats.faults.load(Ordering::SeqCst)
    }

    pub fn in_flight(&self) -> usize {
        self.stats.in_flight.load(Ordering::SeqCst)
    }

    /// Most requests being handled at once.
    pub fn max_in_flight(&self) -> usize {
        self.stats.max_in_flight.load(Ordering::SeqCst)
    }

    /// Requests per `json_schema` name (`"unknown"` when the request had none).
    pub fn metric_counts(&self) -> BTreeMap<String, u64> {
        self.stats
            .per_metric
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The completion-token limit of every request, in arrival order
    /// (`max_tokens`, else `max_completion_tokens`; `None` when it had neither).
    pub fn token_limits(&self) -> Vec<Option<u64>> {
        self.bodies()
            .iter()
            .map(|b| {
                b.get("max_tokens")
                    .or_else(|| b.get("max_completion_tokens"))
                    .and_then(Value::as_u64)
            })
            .collect()
    }

    /// Requests that carried an image part.
    pub fn image_requests(&self) -> usize {
        self.bodies()
            .iter()
            .filter(|b| !image_uris(b).is_empty())
            .count()
    }

    pub fn metric_count(&self, metric: &str) -> u64 {
        self.metric_counts().get(metric).copied().unwrap_or(0)
    }

    /// Every request body received, in arrival order (none when
    /// [`MockConfig::keep_bodies`] is off).
    pub fn bodies(&self) -> Vec<Value> {
        self.stats
            .bodies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The `Authorization` header of every request (None when absent).
    /// Path and query of every chat request, in arrival order.
    pub fn request_paths(&self) -> Vec<String> {
        self.stats
            .paths
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// `Authorization` header of every chat request; an Azure-style `api-key`
    /// header is recorded as `api-key <key>`.
    pub fn authorization_headers(&self) -> Vec<Option<String>> {
        self.stats
            .auth
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// What the Batch API endpoints saw (uploads, batches, lines submitted, polls).
    pub fn batch_stats(&self) -> crate::mock_batch::BatchStats {
        self.batch.stats()
    }

    /// Stop serving and wait for the server task to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            // In-flight slow responses must not keep a test waiting.
            if tokio::time::timeout(Duration::from_secs(2), task)
                .await
                .is_err()
            {
                tracing::debug!("mock judge did not stop within 2 s");
            }
        }
    }
}

impl Drop for MockJudge {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
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

async fn handle(
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

/// The `data:` URIs of every image part of a request.
fn image_uris(request: &Value) -> Vec<String> {
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
fn probe_digit(config: &MockConfig, request: &Value, schema: &Value) -> Option<u8> {
    if config.vision != MockVision::Sees || schema.pointer("/properties/digit").is_none() {
        return None;
    }
    image_uris(request)
        .iter()
        .find_map(|uri| tvir_judge::vision::read_probe_data_uri(uri))
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

/// The deterministic answer the mock gives for `schema` (see the module docs).
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
fn violate(schema: &Value, answer: &Value) -> Value {
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
