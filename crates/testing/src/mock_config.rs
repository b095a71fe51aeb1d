//! The mock judge's settings: what it answers, which faults it injects and in what
//! order, and the persistent server behaviours it plays (schema support, rejected
//! parameters, vision, slots, context window, reasoning, Batch API trouble).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

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
    /// `None`: [`default_answer`](crate::mock_answer::default_answer) from the request's schema.
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
    pub batch: MockBatchConfig,
    /// Image handling: a vision model (default), a blind one, or image refusals.
    pub vision: MockVision,
    /// Keep every request body for [`MockJudge::bodies`](crate::mock_judge::MockJudge::bodies) (default). Off for long
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

#[derive(Debug, Clone)]
pub struct MockBatchConfig {
    /// Status reads spent in `validating` and again in `in_progress`.
    pub polls_per_stage: u32,
    /// The first N lines answered (across all batches) fail with HTTP 500.
    pub fail_first_lines: u64,
    /// The first N answers (across all batches) break the schema.
    pub invalid_first_answers: u64,
    /// Batches (1-based, in creation order) that expire half done.
    pub expire_batches: Vec<usize>,
    /// Batches (1-based) rejected at validation.
    pub fail_batches: Vec<usize>,
}

impl Default for MockBatchConfig {
    fn default() -> Self {
        Self {
            polls_per_stage: 1,
            fail_first_lines: 0,
            invalid_first_answers: 0,
            expire_batches: Vec::new(),
            fail_batches: Vec::new(),
        }
    }
}
