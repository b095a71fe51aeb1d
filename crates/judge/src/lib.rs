//! The judge client: any OpenAI-compatible chat-completions server, structured
//! answers validated against a JSON schema, retries, rate limits, cache, accounting
//! and a JSONL journal. Every metric talks to a model through [`JudgeClient::ask`]
//! (or the [`Judge`] trait, which tests stub out).
//!
//! Main types: [`JudgeConfig`], [`JudgeClient`], [`JudgeRequest`] (messages of text
//! and image [`Part`]s plus the answer's schema), [`JudgeAnswer`], [`JudgeError`];
//! [`batch`] runs the same requests through a provider's Batch API.
//!
//! Depends only on `tvir-store` (its cache, adaptation and batch tables). It must
//! never depend on the report parser, the rubrics or the engine: it answers
//! requests, whatever asks them, and knows no metric.

pub mod accounting;
pub mod batch;
pub mod cache;
pub mod context;
pub mod estimate;
pub mod journal;
pub mod limits;
mod pluggable;
pub mod prices;
pub mod protocol;
pub mod repair;
pub mod retry;
pub mod schema;
pub mod tokens;
pub mod vision;
mod writer;

mod client;

pub use accounting::{AccountingSnapshot, UsageRecord, UsageTotals};
pub(crate) use client::reask_text as client_reask_text;
pub use client::{ImageResolver, JudgeProgress, ProgressHook};
pub use estimate::TokenEstimate;
pub use journal::EntryStatus;
pub use pluggable::{ClientJudge, Judge};

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use tvir_store::Store;

/// The base URL used when neither a flag, the environment nor `tvir.toml` names one.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Default [`JudgeConfig::unreachable_window`]: long enough for a local server to
/// restart, short enough that a dead one does not hold a run for minutes.
pub const DEFAULT_UNREACHABLE_WINDOW: std::time::Duration = std::time::Duration::from_secs(20);

#[derive(Clone)]
pub struct JudgeConfig {
    pub base_url: String,
    /// Never logged, cached or written anywhere.
    pub api_key: Option<String>,
    pub model: String,
    pub concurrency: usize,
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
    pub timeout: std::time::Duration,
    pub max_attempts: u32,
    /// How many times an invalid answer is re-asked with the validation error.
    pub max_reasks: u32,
    pub seed: Option<u64>,
    /// Completion-token limit of every request, replacing the per-rubric and the
    /// schema-derived ones (`--max-tokens`).
    pub max_tokens: Option<u32>,
    /// Per-metric limits (a rubric's `max_tokens`), used when `max_tokens` is unset.
    /// Without either, the limit is derived from the request's schema
    /// ([`tokens::answer_token_limit`]): every request carries one.
    pub metric_max_tokens: std::collections::BTreeMap<String, u32>,
    /// Skip the vision check and treat the judge as able to read images.
    pub assume_vision: bool,
    /// Ignore what earlier runs learnt about this server and model (parameters,
    /// vision, prompts that did not fit its context) and learn it again.
    pub relearn: bool,
    /// Count and estimate, call nothing.
    pub dry_run: bool,
    /// Stop scheduling new calls once this much has been spent.
    pub max_cost_usd: Option<f64>,
    /// JSONL journal of every call (no credentials).
    pub journal_path: Option<std::path::PathBuf>,
    /// Price table override (TOML); the shipped one is used otherwise.
    pub price_table_path: Option<std::path::PathBuf>,
    /// A server that refuses every connection for this long (and at least three
    /// attempts, with no reply in between) is declared gone: the run stops asking
    /// it and the remaining units fail with "judge server unreachable since TIME".
    /// A server back within the window loses nothing.
    pub unreachable_window: std::time::Duration,
    /// Ask for plain JSON (`response_format: json_object`, the schema in the
    /// prompt, the reply parsed and checked) instead of a schema-constrained answer,
    /// as the reference evaluator does (`tvir eval --answers json`). Nothing learnt
    /// under it is stored for the server, so a later run starts from the schema form.
    pub plain_json: bool,
    /// Where a schema that travels in the prompt goes: the end of the user message
    /// (the default) or of the system message (`--prompt-order reference`).
    pub schema_place: protocol::SchemaPlace,
}

impl std::fmt::Debug for JudgeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

impl Default for JudgeConfig {
    /// OpenAI's endpoint, no key, no model (callers must set one), 16 in flight,
    /// 120 s per attempt, 10 attempts, 5 re-asks, temperature 0 and no seed.
    fn default() -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: None,
            model: String::new(),
            concurrency: 16,
            rpm: None,
            tpm: None,
            timeout: std::time::Duration::from_secs(120),
            max_attempts: 10,
            max_reasks: 5,
            seed: None,
            max_tokens: None,
            metric_max_tokens: Default::default(),
            assume_vision: false,
            relearn: false,
            dry_run: false,
            max_cost_usd: None,
            journal_path: None,
            price_table_path: None,
            unreachable_window: DEFAULT_UNREACHABLE_WINDOW,
            plain_json: false,
            schema_place: protocol::SchemaPlace::EndOfUser,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// A `data:image/png;base64,...` URI.
    Image {
        data_uri: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

/// One judge question. `metric` names the schema (`citation_support`, ...,
/// `fact_dedup`); `schema` is the JSON schema the answer must satisfy.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JudgeRequest {
    pub metric: String,
    /// For accounting and the journal: which report and which unit.
    pub report: String,
    pub unit: String,
    pub messages: Vec<Message>,
    pub schema: serde_json::Value,
    /// Independent sample index for `--runs` (part of the cache key).
    pub sample: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JudgeAnswer {
    /// The parsed answer, valid against the request's schema.
    pub value: serde_json::Value,
    pub raw: String,
    pub usage: Usage,
    /// Model name the server reported.
    pub model: String,
    pub cached: bool,
    pub latency_ms: u64,
    pub cost_usd: Option<f64>,
    pub attempts: u32,
    /// Obtained through a provider batch or an offline batch runner (priced with
    /// the model's batch discount), not a live call.
    #[serde(default)]
    pub batch: bool,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum JudgeError {
    #[error("judge call failed: {0}")]
    Failed(String),
    #[error("dry run: not called")]
    DryRun,
    #[error("budget exhausted: --max-cost reached, call not scheduled")]
    BudgetExhausted,
    /// Batch mode: the request waits for a batch wave (queued or in a provider
    /// batch); the unit is neither scored nor failed yet.
    #[error("pending: waiting for a batch")]
    Pending,
}

/// The one way metrics talk to a model. Cheap to clone (one `Arc`); every clone
/// shares the HTTP pool, limits, adaptations, cache, accounting and journal, so use
/// it from as many tokio tasks as you like.
#[derive(Clone)]
pub struct JudgeClient {
    inner: Arc<client::Inner>,
}

impl std::fmt::Debug for JudgeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeClient")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl JudgeClient {
    /// Build a client. Fails (with a message naming the problem) on an unusable base
    /// URL, an empty model name, an unreadable price table or journal, or a
    /// `max_cost_usd` for a model the price table does not know (the budget could not
    /// be enforced).
    pub fn new(config: JudgeConfig, store: Option<Store>) -> Result<Self, JudgeError> {
        Ok(Self {
            inner: Arc::new(client::Inner::new(config, store)?),
        })
    }

    /// Ask one question. Returns an answer valid against `request.schema`, from the
    /// cache when the same question (model, messages, schema, parameters, sample) was
    /// answered before, or an error saying why the unit could not be scored.
    pub async fn ask(&self, request: JudgeRequest) -> Result<JudgeAnswer, JudgeError> {
        self.inner.ask(request).await
    }

    /// Call `hook` after every unit (answered, cached, failed, estimated, skipped).
    /// Used for progress bars; keep it fast.
    /// The hook is shared by every clone of this client.
    pub fn with_progress(self, hook: ProgressHook) -> Self {
        self.inner.set_progress(hook);
        self
    }

    /// Let image parts name their content instead of carrying it: before a request
    /// that missed the cache is sent, every image part is offered to `resolver`,
    /// which returns the data URI to send (or `None` for a part it does not know).
    /// The cache key is computed from the request as built, so a request whose image
    /// is named by content hash hits the cache without the image being encoded.
    pub fn set_image_resolver(&self, resolver: ImageResolver) {
        self.inner.set_image_resolver(resolver);
    }

    /// Prompt tokens `request` may take within the judge model's context window,
    /// once the window is known (an overflow reply of this run, or one an earlier
    /// run stored unless `relearn`); None before.
    pub fn prompt_budget(&self, request: &JudgeRequest) -> Option<u64> {
        self.inner.prompt_budget(request)
    }

    /// Whether the context window is known yet, i.e. whether
    /// [`JudgeClient::prompt_budget`] can answer `Some`.
    pub fn knows_context_window(&self) -> bool {
        self.inner.window.load(std::sync::atomic::Ordering::Relaxed) > 0
    }

    /// Wait until every cache row and journal line queued so far is on disk. Also
    /// done when the last clone is dropped; call it when you need the files earlier
    /// (e.g. before reading the journal while the client lives on).
    pub async fn flush(&self) {
        self.inner.flush().await;
    }

    /// Totals so far: the run, per metric, per report.
    pub fn accounting(&self) -> AccountingSnapshot {
        self.inner.accounting.snapshot()
    }

    /// Estimated tokens of one request (method in [`estimate`]).
    pub fn estimate_tokens(&self, request: &JudgeRequest) -> TokenEstimate {
        estimate::estimate_request(request, Some(self.inner.token_limit(request)))
    }

    /// The completion-token limit sent with `request`: `--max-tokens`, else the
    /// rubric's `max_tokens`, else derived from the request's schema.
    pub fn token_limit(&self, request: &JudgeRequest) -> u32 {
        self.inner.token_limit(request)
    }

    /// Whether this client was told to forget what earlier runs learnt about the
    /// server (`--relearn-judge`).
    pub fn relearns(&self) -> bool {
        self.inner.config.relearn
    }

    /// Can the judge read images? Checked once per client (two probe images, see
    /// [`vision`]) and remembered per (server, model) in the store; `assume_vision`
    /// skips it. Concurrent callers wait for the one check.
    pub async fn check_vision(&self) -> vision::Vision {
        self.inner.check_vision().await
    }

    /// The vision verdict known without a check in this run: assumed
    /// (`assume_vision`) or remembered by an earlier run for this server and model.
    /// `None` when only a check can tell.
    pub fn vision_known_at_start(&self) -> Option<vision::Vision> {
        if self.inner.config.assume_vision {
            return Some(vision::Vision::Sees);
        }
        self.inner.vision_at_start.get().cloned()
    }

    /// Estimated dollars of one request; `None` when the model has no price.
    pub fn estimate_cost(&self, request: &JudgeRequest) -> Option<f64> {
        self.inner.estimate_cost(&self.estimate_tokens(request))
    }

    /// The cache key of a request under this client's model and parameters.
    pub fn cache_key(&self, request: &JudgeRequest) -> String {
        self.inner.cache_key(request)
    }

    /// Requests currently in flight, and the most seen at once.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    pub fn max_in_flight(&self) -> usize {
        self.inner.max_in_flight()
    }

    /// True once `--max-cost` has been reached (no new calls are scheduled).
    pub fn budget_exhausted(&self) -> bool {
        self.inner.budget_exhausted()
    }

    /// How structured output is currently requested from this endpoint
    /// (`json_schema`, `json_object+schema`, `json_object`, `prompt_only`).
    pub fn output_mode(&self) -> &'static str {
        self.inner.adaptations.current().mode.name()
    }

    pub fn config(&self) -> &JudgeConfig {
        &self.inner.config
    }

    /// The cached answer to `request`, if any (still valid against its schema),
    /// without calling, accounting or journalling anything.
    pub fn cached_answer(&self, request: &JudgeRequest) -> Option<JudgeAnswer> {
        self.inner.cache_lookup(&self.cache_key(request), request)
    }

    /// [`Self::cached_answer`] with the key already computed.
    pub fn cached_answer_by_key(&self, key: &str, request: &JudgeRequest) -> Option<JudgeAnswer> {
        self.inner.cache_lookup(key, request)
    }

    /// The store this client caches in.
    pub fn store(&self) -> Option<&Store> {
        self.inner.store()
    }

    /// The price table in use (shipped plus `price_table_path`).
    pub fn prices(&self) -> &prices::PriceTable {
        self.inner.prices()
    }

    /// Chat-completions body of a request's first attempt with the default
    /// parameters (`json_schema` structured output), as a batch line carries it.
    /// Image references are resolved to data URIs first (see
    /// [`Self::set_image_resolver`]); `Err` names an image that cannot be encoded.
    pub fn request_body(&self, request: &JudgeRequest) -> Result<serde_json::Value, String> {
        let resolved = self.inner.resolve_images(request)?;
        let request = resolved.as_ref().unwrap_or(request);
        let conversation: Vec<protocol::WireMessage> = request
            .messages
            .iter()
            .map(protocol::WireMessage::from)
            .collect();
        Ok(protocol::build_body(
            &self.inner.config.model,
            &request.metric,
            &request.schema,
            &conversation,
            &protocol::Adaptations::starting_at(self.inner.config.plain_json).current(),
            self.inner.config.seed,
            Some(self.inner.token_limit(request)),
            self.inner.config.schema_place,
        ))
    }
}
