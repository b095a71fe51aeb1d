//! The client's engine: cache lookup, dry-run and budget gates, the attempt loop
//! (limits, send, adapt, retry, parse, validate, re-ask), then cache write,
//! accounting, journal and progress. Shared state lives in one `Inner` behind an
//! `Arc`, so clones of [`JudgeClient`](super::JudgeClient) are cheap.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rand::Rng;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::accounting::{Accounting, Event};
use super::context::{context_overflow, FitDecision};
use super::estimate::{estimate_request, TokenEstimate};
use super::journal::{self, journal_messages, EntryStatus, Journal, JournalEntry};
use super::limits::{InFlightLimit, Pacer, Slot, TokenBucket};
use super::prices::PriceTable;
use super::protocol::{
    build_body, classify_rejection, error_message, parse_completion, Adaptations, OutputMode,
    WireMessage, WireParams,
};
use super::retry::{is_retryable_status, server_requested_wait, Backoff};
use super::vision::{self, Vision};
use super::writer::{Job, Writer};
use super::{cache, repair, schema, JudgeAnswer, JudgeConfig, JudgeError, JudgeRequest, Part};
use super::{Usage, UsageTotals};
use tvir_store::{adaptations as stored, judge_cache, Store};

/// Called after every unit; see [`JudgeClient::with_progress`](super::JudgeClient::with_progress).
pub type ProgressHook = Arc<dyn Fn(&JudgeProgress) + Send + Sync>;

/// One finished unit, for progress displays.
#[derive(Debug, Clone)]
pub struct JudgeProgress {
    pub metric: String,
    pub report: String,
    pub unit: String,
    pub status: EntryStatus,
    pub error: Option<String>,
    /// Run totals after this unit.
    pub totals: UsageTotals,
}

/// Turns an image part that names its content (see
/// [`JudgeClient::set_image_resolver`](super::JudgeClient::set_image_resolver)) into the
/// data URI sent; `None` leaves the part as it is.
pub type ImageResolver = Arc<dyn Fn(&str) -> Option<Result<String, String>> + Send + Sync>;

/// Largest response body accepted from a judge server.
const MAX_RESPONSE_BYTES: usize = 16 << 20;
/// Prompts up to this many tokens (our estimate) get `--judge-timeout` per attempt;
/// longer ones get it in proportion.
pub const TIMEOUT_PROMPT_TOKENS: u64 = 4096;
/// Parameter adaptations allowed per unit (each changes what is sent, so a loop is
/// impossible, but a confused server must not keep us busy).
const MAX_ADAPTATIONS: u32 = 6;

pub(crate) struct Inner {
    pub(crate) config: JudgeConfig,
    store: Option<Store>,
    http: reqwest::Client,
    endpoint: String,
    /// Send the key as `api-key` (Azure) instead of `Authorization: Bearer`.
    api_key_header: bool,
    slots: InFlightLimit,
    rpm: Option<TokenBucket>,
    tpm: Option<TokenBucket>,
    pacer: Pacer,
    pub(crate) adaptations: Adaptations,
    pub(crate) accounting: Accounting,
    prices: PriceTable,
    has_journal: bool,
    writer: Writer,
    progress: Mutex<Option<ProgressHook>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// Estimated cost of calls in flight, counted against `--max-cost`.
    reserved_usd: Mutex<f64>,
    budget_announced: AtomicBool,
    backoff: Backoff,
    image_resolver: Mutex<Option<ImageResolver>>,
    /// The vision check's verdict, once known (from the store or a probe).
    vision: tokio::sync::OnceCell<Vision>,
    /// What the store says about this server's vision, carried into saved rows.
    vision_detail: Mutex<Option<(bool, String)>>,
    /// Base URL as the adaptations table keys it.
    server_key: String,
    /// Set by the first refusal that no request of this run can get past (a wrong
    /// key, an unknown model or endpoint): later units fail without a call.
    unusable: std::sync::OnceLock<String>,
}

/// Why a unit ended without an answer (becomes `JudgeError::Failed`'s reason).
#[derive(Debug, thiserror::Error)]
enum CallError {
    #[error("HTTP {status}: {message}")]
    Rejected { status: u16, message: String },
    #[error("no answer after {attempts} attempts; last error: {last}")]
    Exhausted { attempts: u32, last: String },
    #[error("invalid answer after {reasks} re-asks: {last}")]
    Invalid { reasks: u32, last: String },
    #[error("the figure could not be prepared for the judge: {0}")]
    Image(String),
    #[error("the server rejected every structured-output form (json_schema, json_object, plain prompt): HTTP {status}: {message}")]
    NoOutputMode { status: u16, message: String },
    #[error("answer cut off at the token limit (finish_reason: length, {param} {limit}), again after asking for a shorter answer{hint}")]
    CutOff {
        param: &'static str,
        limit: u32,
        hint: String,
    },
    #[error("not sent: the judge server refused an earlier call of this run ({0}); fix the key, model or base URL and run again")]
    Unusable(String),
    #[error("{reason}")]
    ContextOverflow {
        reason: String,
        prompt: Option<u32>,
        window: Option<u32>,
    },
}

struct CallSuccess {
    value: Value,
    raw: String,
    server_model: String,
}

struct CallReport {
    result: Result<CallSuccess, CallError>,
    attempts: u32,
    /// Attempts that re-asked because the answer did not validate (not counting
    /// retries after transport errors or server adaptations).
    reasks: u32,
    usage: Usage,
    mode: OutputMode,
}

enum Reply {
    Http {
        status: u16,
        headers: HeaderMap,
        body: Vec<u8>,
    },
    Transport {
        reason: String,
        timed_out: bool,
    },
}

fn failed(msg: impl Into<String>) -> JudgeError {
    JudgeError::Failed(msg.into())
}

impl Inner {
    pub(crate) fn new(config: JudgeConfig, store: Option<Store>) -> Result<Self, JudgeError> {
        let base = url::Url::parse(config.base_url.trim())
            .map_err(|e| failed(format!("judge base URL {:?}: {e}", config.base_url)))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(failed(format!(
                "judge base URL {:?}: only http and https are supported",
                config.base_url
            )));
        }
        if config.model.trim().is_empty() {
            return Err(failed(
                "no judge model: pass --judge-model or set TVIR_JUDGE_MODEL",
            ));
        }
        if config.concurrency == 0 {
            return Err(failed("--concurrency must be at least 1"));
        }
        if config.timeout.is_zero() {
            return Err(failed("the judge timeout must be longer than zero"));
        }
        if let Some(max) = config.max_cost_usd {
            if !max.is_finite() || max < 0.0 {
                return Err(failed(format!(
                    "--max-cost {max}: must be a non-negative number"
                )));
            }
        }
        let prices = PriceTable::shipped_with_override(config.price_table_path.as_deref())
            .map_err(|e| failed(e.to_string()))?;
        if config.max_cost_usd.is_some() && prices.lookup(&config.model).is_none() {
            return Err(failed(format!(
                "--max-cost needs a price for model {:?}, which the price table lacks; \
                 add it with --price-table FILE",
                config.model
            )));
        }
        let journal = match &config.journal_path {
            Some(path) => Some(Journal::open(path).map_err(|e| failed(e.to_string()))?),
            None => None,
        };
        let has_journal = journal.is_some();
        let writer = Writer::start(store.clone(), journal)
            .map_err(|e| failed(format!("judge writer thread: {e}")))?;
        let endpoint = super::protocol::endpoint_url(&config.base_url, "chat/completions");
        let api_key_header = super::protocol::uses_api_key_header(&config.base_url);
        let http = reqwest::Client::builder()
            .connect_timeout(config.timeout.min(Duration::from_secs(15)))
            .pool_max_idle_per_host(config.concurrency)
            .user_agent(concat!("tvir-eval/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| failed(format!("HTTP client: {e}")))?;
        let inner = Self {
            slots: InFlightLimit::slow_start(config.concurrency),
            rpm: config.rpm.map(TokenBucket::per_minute),
            tpm: config.tpm.map(TokenBucket::per_minute),
            pacer: Pacer::new(Duration::from_millis(25)),
            adaptations: Adaptations::default(),
            accounting: Accounting::new(),
            prices,
            has_journal,
            writer,
            progress: Mutex::new(None),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            reserved_usd: Mutex::new(0.0),
            budget_announced: AtomicBool::new(false),
            backoff: Backoff::default(),
            image_resolver: Mutex::new(None),
            vision: tokio::sync::OnceCell::new(),
            vision_detail: Mutex::new(None),
            server_key: server_key(&config.base_url),
            unusable: std::sync::OnceLock::new(),
            store,
            http,
            endpoint,
            api_key_header,
            config,
        };
        inner.restore_learnt();
        Ok(inner)
    }

    /// Start from what an earlier run learnt about this server and model.
    fn restore_learnt(&self) {
        let Some(store) = &self.store else { return };
        if self.config.relearn {
            match store.with_conn(|conn| stored::forget(conn, &self.server_key, &self.config.model))
            {
                Ok(()) => tracing::info!(
                    server = %self.server_key,
                    "--relearn-judge: what earlier runs learnt about this judge server is forgotten"
                ),
                Err(e) => tracing::warn!("forgetting the judge server's adaptations failed: {e}"),
            }
            return;
        }
        let row = match store
            .with_conn(|conn| stored::get(conn, &self.server_key, &self.config.model))
        {
            Ok(Some(row)) => row,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("reading the judge server's adaptations failed, relearning: {e}");
                return;
            }
        };
        let (Some(mode), Some(token_param)) = (
            OutputMode::from_name(&row.output_mode),
            super::protocol::TokenParam::from_name(&row.token_param),
        ) else {
            tracing::warn!(
                "stored adaptations of {} have unknown values; relearning",
                self.server_key
            );
            return;
        };
        self.adaptations.restore(&WireParams {
            mode,
            token_param,
            temperature: row.send_temperature,
            seed: row.send_seed,
        });
        self.adaptations.set_reasoning(row.reasoning);
        tracing::debug!(
            server = %self.server_key,
            mode = mode.name(),
            token_param = token_param.name(),
            "judge server adaptations restored from the store"
        );
        if let Some(sees) = row.vision {
            let detail = row.vision_detail.clone().unwrap_or_default();
            *self.vision_detail.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((sees, detail.clone()));
            if !self.config.assume_vision {
                let verdict = if sees {
                    Vision::Sees
                } else {
                    Vision::Blind(format!("remembered from an earlier run: {detail}"))
                };
                if !sees {
                    announce_blind(&self.config.model, &self.server_key, &detail, true);
                }
                let _ = self.vision.set(verdict);
            }
        }
    }

    /// Store what this run knows now (after an adaptation or a vision verdict).
    fn save_learnt(&self) {
        let Some(store) = &self.store else { return };
        let params = self.adaptations.current();
        let vision = self
            .vision_detail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let row = stored::StoredAdaptations {
            base_url: self.server_key.clone(),
            model: self.config.model.clone(),
            output_mode: params.mode.name().into(),
            token_param: params.token_param.name().into(),
            send_temperature: params.temperature,
            send_seed: params.seed,
            vision: vision.as_ref().map(|(sees, _)| *sees),
            vision_detail: vision.map(|(_, detail)| detail),
            updated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            reasoning: self.adaptations.reasoning(),
        };
        if let Err(e) = store.with_conn(|conn| stored::put(conn, &row)) {
            tracing::warn!("storing the judge server's adaptations failed: {e}");
        }
    }

    /// `--max-tokens`, else the rubric's limit for this metric, else none.
    fn explicit_limit(&self, request: &JudgeRequest) -> Option<u32> {
        self.config
            .max_tokens
            .or_else(|| self.config.metric_max_tokens.get(&request.metric).copied())
    }

    /// The limit every attempt of `request` is sent with: the explicit one, else
    /// the schema's, plus reasoning headroom once the model is seen reasoning.
    pub(crate) fn token_limit(&self, request: &JudgeRequest) -> u32 {
        self.explicit_limit(request).unwrap_or_else(|| {
            let derived = super::tokens::answer_token_limit(&request.schema);
            if self.adaptations.reasoning() {
                derived.saturating_add(super::tokens::REASONING_HEADROOM)
            } else {
                derived
            }
        })
    }

    /// See [`JudgeClient::check_vision`](super::JudgeClient::check_vision).
    pub(crate) async fn check_vision(&self) -> Vision {
        if self.config.assume_vision {
            return Vision::Sees;
        }
        self.vision
            .get_or_init(|| async {
                let verdict = self.probe_vision().await;
                let remembered = match &verdict {
                    Vision::Sees => Some((true, "named both probe digits".to_string())),
                    Vision::Blind(detail) => Some((false, detail.clone())),
                    Vision::Unknown(_) => None,
                };
                match &verdict {
                    Vision::Sees => tracing::info!("judge vision check passed"),
                    Vision::Blind(detail) => {
                        announce_blind(&self.config.model, &self.server_key, detail, false)
                    }
                    Vision::Unknown(detail) => tracing::warn!(
                        "judge vision check could not finish ({detail}); vision units are asked as usual"
                    ),
                }
                if let Some(r) = remembered {
                    *self.vision_detail.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                    self.save_learnt();
                }
                verdict
            })
            .await
            .clone()
    }

    async fn probe_vision(&self) -> Vision {
        let (first, second) = vision::probe_digits(|| {
            let mut rng = rand::rng();
            (rng.random(), rng.random())
        });
        for (round, digit) in [(1u32, first), (2, second)] {
            let request = vision::probe_request(digit, round);
            let report = self.call(&request, &TokenEstimate::default()).await;
            self.accounting.record(
                &request.metric,
                &request.report,
                &Event {
                    ok: report.result.is_ok(),
                    attempts: u64::from(report.attempts),
                    usage: report.usage.clone(),
                    cost: self.prices.cost(&self.config.model, &report.usage),
                    ..Default::default()
                },
            );
            match report.result {
                Ok(success) => {
                    let named = success.value["digit"].as_i64();
                    if named != Some(i64::from(digit)) {
                        return Vision::Blind(format!(
                            "shown a {digit}, the model answered {}",
                            success.raw.trim()
                        ));
                    }
                }
                Err(CallError::Rejected { status, message })
                    if matches!(status, 400 | 415 | 422) || vision::refuses_images(&message) =>
                {
                    return Vision::Blind(format!(
                        "the server refused an image part: HTTP {status}: {message}"
                    ));
                }
                Err(e @ (CallError::Invalid { .. } | CallError::CutOff { .. })) => {
                    return Vision::Blind(format!("no usable answer about the image: {e}"));
                }
                Err(e) => return Vision::Unknown(e.to_string()),
            }
        }
        Vision::Sees
    }

    pub(crate) fn set_progress(&self, hook: super::ProgressHook) {
        *self.progress.lock().unwrap_or_else(|p| p.into_inner()) = Some(hook);
    }

    pub(crate) fn set_image_resolver(&self, resolver: ImageResolver) {
        *self
            .image_resolver
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(resolver);
    }

    /// The request as sent: image parts that name their content get their data URI
    /// (the cache key was computed from the names, so a cache hit never encodes).
    pub(crate) fn resolve_images(
        &self,
        request: &JudgeRequest,
    ) -> Result<Option<JudgeRequest>, String> {
        let resolver = self
            .image_resolver
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(resolver) = resolver else {
            return Ok(None);
        };
        let mut resolved: Option<JudgeRequest> = None;
        for (m, message) in request.messages.iter().enumerate() {
            for (p, part) in message.parts.iter().enumerate() {
                if let Part::Image { data_uri } = part {
                    if let Some(uri) = resolver(data_uri) {
                        let r = resolved.get_or_insert_with(|| request.clone());
                        r.messages[m].parts[p] = Part::Image { data_uri: uri? };
                    }
                }
            }
        }
        Ok(resolved)
    }

    pub(crate) async fn flush(&self) {
        self.writer.flush().await;
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
    pub(crate) fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::Relaxed)
    }

    pub(crate) fn cache_key(&self, request: &JudgeRequest) -> String {
        // Only a limit the user set is part of the key: the derived one follows from
        // the schema, which the key already holds.
        cache::cache_key(
            &self.config.model,
            request,
            self.config.seed,
            self.explicit_limit(request),
        )
    }

    pub(crate) fn estimate_cost(&self, est: &TokenEstimate) -> Option<f64> {
        self.prices.cost(
            &self.config.model,
            &Usage {
                prompt_tokens: est.prompt_tokens,
                completion_tokens: est.completion_tokens,
                cached_tokens: 0,
            },
        )
    }

    pub(crate) fn budget_exhausted(&self) -> bool {
        match self.config.max_cost_usd {
            Some(max) => {
                let reserved = *self.reserved_usd.lock().unwrap_or_else(|p| p.into_inner());
                self.accounting.spent_usd() + reserved >= max
            }
            None => false,
        }
    }

    pub(crate) async fn ask(&self, request: JudgeRequest) -> Result<JudgeAnswer, JudgeError> {
        let started = Instant::now();
        let key = self.cache_key(&request);
        let mut outcome = Outcome::new(&request, &key);

        if let Err(e) = schema::check_schema(&request.schema) {
            let reason = format!("the request's schema is unusable: {e}");
            outcome.error = Some(reason.clone());
            self.finish(&request, outcome, EntryStatus::Failed, &Event::default());
            return Err(JudgeError::Failed(reason));
        }

        if let Some(hit) = self.cache_lookup(&key, &request) {
            outcome.answer = Some(hit.value.clone());
            outcome.raw = Some(hit.raw.clone());
            outcome.server_model = Some(hit.model.clone());
            outcome.usage = Some(hit.usage.clone());
            outcome.latency_ms = hit.latency_ms;
            let event = Event {
                ok: true,
                cache_hit: true,
                ..Default::default()
            };
            self.finish(&request, outcome, EntryStatus::CacheHit, &event);
            return Ok(hit);
        }

        if let Some(reason) = self.remembered_overflow(&key) {
            outcome.error = Some(reason.clone());
            self.finish(&request, outcome, EntryStatus::Failed, &Event::default());
            return Err(JudgeError::Failed(reason));
        }

        // Estimates are only needed by the token bucket, the dry run and the budget.
        let estimate =
            if self.tpm.is_some() || self.config.dry_run || self.config.max_cost_usd.is_some() {
                estimate_request(&request, Some(self.token_limit(&request)))
            } else {
                TokenEstimate::default()
            };
        let est_cost = self.estimate_cost(&estimate);

        if self.config.dry_run {
            let event = Event {
                estimate: Some((estimate, est_cost)),
                ..Default::default()
            };
            self.finish(&request, outcome, EntryStatus::DryRun, &event);
            return Err(JudgeError::DryRun);
        }

        if self.budget_exhausted() {
            if !self.budget_announced.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    max_cost_usd = self.config.max_cost_usd,
                    spent_usd = self.accounting.spent_usd(),
                    "--max-cost reached: no further judge calls are scheduled"
                );
            }
            outcome.error = Some(JudgeError::BudgetExhausted.to_string());
            let event = Event {
                budget_skipped: true,
                ..Default::default()
            };
            self.finish(&request, outcome, EntryStatus::BudgetExhausted, &event);
            return Err(JudgeError::BudgetExhausted);
        }
        let reservation = est_cost.unwrap_or(0.0);
        if self.config.max_cost_usd.is_some() {
            *self.reserved_usd.lock().unwrap_or_else(|p| p.into_inner()) += reservation;
        }

        // Encoding is CPU work: on a multi-threaded runtime, let the other tasks of
        // this worker move elsewhere meanwhile.
        let has_image = request
            .messages
            .iter()
            .any(|m| m.parts.iter().any(|p| matches!(p, Part::Image { .. })));
        let flavor = tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor());
        let resolved = match flavor {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) if has_image => {
                tokio::task::block_in_place(|| self.resolve_images(&request))
            }
            _ => self.resolve_images(&request),
        };
        let report = match resolved {
            Ok(Some(sent)) => self.call(&sent, &estimate).await,
            Ok(None) => self.call(&request, &estimate).await,
            Err(reason) => CallReport {
                result: Err(CallError::Image(reason)),
                attempts: 0,
                reasks: 0,
                usage: Usage::default(),
                mode: self.adaptations.current().mode,
            },
        };

        if self.config.max_cost_usd.is_some() {
            let mut reserved = self.reserved_usd.lock().unwrap_or_else(|p| p.into_inner());
            *reserved = (*reserved - reservation).max(0.0);
        }
        let latency_ms = started.elapsed().as_millis() as u64;
        outcome.latency_ms = latency_ms;
        outcome.attempts = report.attempts;
        outcome.reasks = report.reasks;
        outcome.mode = report.mode.name();
        outcome.usage = Some(report.usage.clone());

        match report.result {
            Ok(success) => {
                let price_model = if self.prices.lookup(&success.server_model).is_some() {
                    success.server_model.as_str()
                } else {
                    self.config.model.as_str()
                };
                let cost = self.prices.cost(price_model, &report.usage);
                let answer = JudgeAnswer {
                    value: success.value,
                    raw: success.raw,
                    usage: report.usage.clone(),
                    model: success.server_model,
                    cached: false,
                    latency_ms,
                    cost_usd: cost,
                    attempts: report.attempts,
                    batch: false,
                };
                self.cache_store(&key, &request, &answer);
                outcome.answer = Some(answer.value.clone());
                outcome.raw = Some(answer.raw.clone());
                outcome.server_model = Some(answer.model.clone());
                outcome.cost = cost;
                let event = Event {
                    ok: true,
                    attempts: u64::from(report.attempts),
                    usage: report.usage,
                    cost,
                    ..Default::default()
                };
                self.finish(&request, outcome, EntryStatus::Ok, &event);
                Ok(answer)
            }
            Err(err) => {
                let reason = err.to_string();
                if let CallError::ContextOverflow { prompt, window, .. } = &err {
                    self.remember_overflow(&key, *prompt, *window, &reason);
                }
                let cost = self.prices.cost(&self.config.model, &report.usage);
                outcome.error = Some(reason.clone());
                outcome.cost = cost;
                let event = Event {
                    ok: false,
                    attempts: u64::from(report.attempts),
                    usage: report.usage,
                    cost,
                    ..Default::default()
                };
                self.finish(&request, outcome, EntryStatus::Failed, &event);
                Err(JudgeError::Failed(reason))
            }
        }
    }

    /// The reason an earlier run recorded for a request the server said does not
    /// fit its context window (same server, model and request), unless relearning.
    fn remembered_overflow(&self, key: &str) -> Option<String> {
        if self.config.relearn || self.config.dry_run {
            return None;
        }
        let store = self.store.as_ref()?;
        let row = match store
            .with_conn(|conn| stored::get_overflow(conn, &self.server_key, &self.config.model, key))
        {
            Ok(row) => row?,
            Err(e) => {
                tracing::warn!("reading remembered context overflows failed, calling instead: {e}");
                return None;
            }
        };
        Some(format!(
            "{} (remembered from a run at {}; pass --relearn-judge if the server's context was raised since)",
            row.reason, row.updated_at
        ))
    }

    fn remember_overflow(&self, key: &str, prompt: Option<u32>, window: Option<u32>, reason: &str) {
        let Some(store) = &self.store else { return };
        let row = stored::StoredOverflow {
            base_url: self.server_key.clone(),
            model: self.config.model.clone(),
            key: key.to_string(),
            prompt_tokens: prompt,
            context_window: window,
            reason: reason.to_string(),
            updated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        if let Err(e) = store.with_conn(|conn| stored::put_overflow(conn, &row)) {
            tracing::warn!("storing a context overflow failed: {e}");
        }
    }

    /// The timeout of one attempt: `--judge-timeout` for prompts up to
    /// [`TIMEOUT_PROMPT_TOKENS`] (our estimate), in proportion above, because a
    /// server reads a long prompt before it writes a token and a 20k-token report is
    /// not a hung server.
    fn attempt_timeout(&self, conversation: &[WireMessage]) -> Duration {
        let tokens: u64 = conversation
            .iter()
            .flat_map(|m| &m.parts)
            .map(|p| match p {
                Part::Text { text } => super::estimate::text_tokens(text),
                Part::Image { .. } => 0,
            })
            .sum();
        let scale = (tokens as f64 / TIMEOUT_PROMPT_TOKENS as f64).max(1.0);
        self.config.timeout.mul_f64(scale)
    }

    /// A cached answer still valid against the request's schema, if any. Store
    /// errors are logged and treated as a miss (the call is simply made).
    pub(crate) fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    pub(crate) fn prices(&self) -> &PriceTable {
        &self.prices
    }

    pub(crate) fn cache_lookup(&self, key: &str, request: &JudgeRequest) -> Option<JudgeAnswer> {
        let store = self.store.as_ref()?;
        // Answers from this run still queued for the writer come first. Then the
        // file, inline rather than through `spawn_blocking`: a keyed lookup takes
        // microseconds (WAL readers never wait for the writer), and thousands of
        // concurrent units would otherwise each spawn a blocking thread.
        let row = match self.writer.pending(key) {
            Some(row) => row,
            None => match store.with_conn(|conn| judge_cache::get(conn, key)) {
                Ok(row) => row?,
                Err(e) => {
                    tracing::warn!("judge cache read failed, calling instead: {e}");
                    return None;
                }
            },
        };
        let value: Value = serde_json::from_str(&row.answer).ok()?;
        schema::validate(&request.schema, &value).ok()?;
        Some(JudgeAnswer {
            value,
            raw: row.raw,
            usage: Usage {
                prompt_tokens: row.prompt_tokens,
                completion_tokens: row.completion_tokens,
                cached_tokens: row.cached_tokens,
            },
            model: row.server_model,
            cached: true,
            latency_ms: row.latency_ms,
            cost_usd: Some(0.0),
            attempts: 0,
            batch: row.via == "batch",
        })
    }

    fn cache_store(&self, key: &str, request: &JudgeRequest, answer: &JudgeAnswer) {
        if self.store.is_none() {
            return;
        }
        let row = judge_cache::CachedAnswer {
            key: key.to_string(),
            model: self.config.model.clone(),
            metric: request.metric.clone(),
            sample: request.sample,
            answer: answer.value.to_string(),
            raw: answer.raw.clone(),
            prompt_tokens: answer.usage.prompt_tokens,
            completion_tokens: answer.usage.completion_tokens,
            cached_tokens: answer.usage.cached_tokens,
            latency_ms: answer.latency_ms,
            server_model: answer.model.clone(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            via: if answer.batch { "batch" } else { "live" }.into(),
        };
        self.writer.send(Job::Cache(Box::new(row)));
    }

    /// The attempt loop for one unit.
    async fn call(&self, request: &JudgeRequest, estimate: &TokenEstimate) -> CallReport {
        let mut conversation: Vec<WireMessage> =
            request.messages.iter().map(WireMessage::from).collect();
        let mut attempts = 0u32;
        let mut transient_failures = 0u32;
        let mut reasks = 0u32;
        let mut adaptations = 0u32;
        let mut length_reasks = 0u32;
        let mut usage = Usage::default();
        let max_attempts = self.config.max_attempts.max(1);
        let mut limit = self.token_limit(request);
        // Set once the limit was lowered to fit the server's context window.
        let mut fitted = false;
        // A slot of `concurrency` kept from an attempt that timed out: the server may
        // still be working on it, so the slot stays taken until the retry is sent.
        let mut kept_slot: Option<Slot<'_>> = None;
        let est_tokens = (estimate.prompt_tokens + estimate.completion_tokens) as f64;

        let done = |result, attempts, reasks, usage, mode| CallReport {
            result,
            attempts,
            reasks,
            usage,
            mode,
        };

        loop {
            self.pacer.wait_turn().await;
            if let Some(rpm) = &self.rpm {
                rpm.acquire(1.0).await;
            }
            if let Some(tpm) = &self.tpm {
                tpm.acquire(est_tokens).await;
            }
            attempts += 1;
            let timeout = self.attempt_timeout(&conversation);
            let slot = match kept_slot.take() {
                // The limit came down while this retry waited: give the slot back
                // and queue under the new limit like every other request.
                Some(slot) if self.slots.owes() => {
                    drop(slot);
                    self.slots.acquire().await
                }
                Some(mut slot) => {
                    slot.renew();
                    slot
                }
                None => self.slots.acquire().await,
            };
            // Read after the wait for a slot: what an earlier request learnt while
            // this one queued (a refused structured-output form, a key refused for
            // every request) applies already.
            if let Some(why) = self.unusable.get() {
                drop(slot);
                let err = CallError::Unusable(why.clone());
                let mode = self.adaptations.current().mode;
                return done(Err(err), attempts, reasks, usage, mode);
            }
            let params = self.adaptations.current();
            let body = build_body(
                &self.config.model,
                &request.metric,
                &request.schema,
                &conversation,
                &params,
                self.config.seed,
                Some(limit),
            );
            let sent_at = Instant::now();
            let reply = self.send(&body, timeout).await;

            // What went wrong on this attempt, if it is worth another.
            let (retry_reason, server_wait) = match reply {
                Reply::Transport { reason, timed_out } => {
                    self.tpm_adjust(-est_tokens);
                    if timed_out {
                        if let Some(limit) = self.slots.on_timeout(&slot) {
                            tracing::warn!(
                                "the judge server did not answer within {timeout:?}; {limit} in flight at most from now on (raised again as answers come back)"
                            );
                        }
                        kept_slot = Some(slot);
                    } else {
                        drop(slot);
                    }
                    (reason, None)
                }
                Reply::Http {
                    status,
                    headers,
                    body,
                } if (200..300).contains(&status) => {
                    let epoch = slot.epoch();
                    drop(slot);
                    if let Some(limit) = self.slots.on_answer(epoch, sent_at.elapsed(), timeout) {
                        tracing::warn!(
                            "the judge server's answers come back queued (over half the {timeout:?} timeout); {limit} in flight at most from now on (raised again as answers come back)"
                        );
                    }
                    let completion = match parse_completion(&body) {
                        Ok(c) => c,
                        Err(reason) => {
                            self.tpm_adjust(-est_tokens);
                            transient_failures += 1;
                            if transient_failures >= max_attempts {
                                let err = CallError::Exhausted {
                                    attempts,
                                    last: reason,
                                };
                                return done(Err(err), attempts, reasks, usage, params.mode);
                            }
                            self.sleep_backoff(transient_failures, None).await;
                            continue;
                        }
                    };
                    let _ = headers;
                    self.pacer.on_success();
                    let used = completion.usage.prompt_tokens + completion.usage.completion_tokens;
                    self.tpm_adjust(if used > 0 {
                        used as f64 - est_tokens
                    } else {
                        0.0
                    });
                    usage.prompt_tokens += completion.usage.prompt_tokens;
                    usage.completion_tokens += completion.usage.completion_tokens;
                    usage.cached_tokens += completion.usage.cached_tokens;
                    if completion.reasoned && self.adaptations.set_reasoning(true) {
                        tracing::info!(
                            "the judge model reasons before it answers; its token limits get {} tokens of headroom from now on",
                            super::tokens::REASONING_HEADROOM
                        );
                        self.save_learnt();
                    }

                    if completion.finish_reason.as_deref() == Some("length") {
                        // A reasoning model that thought through its limit: ask again
                        // with the headroom (not a re-ask: the question was fine).
                        let wider = self.token_limit(request);
                        if completion.reasoned && wider > limit {
                            limit = wider;
                            continue;
                        }
                        // Cut off by the limit: whatever came back is incomplete, even
                        // when repair could close it.
                        if length_reasks >= 1 {
                            let hint = if completion.reasoned {
                                format!(
                                    "; the model reasoned{} before answering: raise --max-tokens or a rubric's max_tokens",
                                    if completion.reasoning_tokens > 0 {
                                        format!(" for {} tokens", completion.reasoning_tokens)
                                    } else {
                                        String::new()
                                    }
                                )
                            } else {
                                String::new()
                            };
                            let err = CallError::CutOff {
                                param: params.token_param.name(),
                                limit,
                                hint,
                            };
                            return done(Err(err), attempts, reasks, usage, params.mode);
                        }
                        length_reasks += 1;
                        tracing::debug!(metric = %request.metric, unit = %request.unit, limit, "answer cut off by the token limit; asking for a shorter one");
                        if let Some(last) = conversation.iter_mut().rev().find(|m| m.role == "user")
                        {
                            last.parts.push(Part::Text {
                                text: shorter_text(limit),
                            });
                        }
                        continue;
                    }

                    let parsed = if completion.content.trim().is_empty() {
                        match &completion.refusal {
                            Some(r) => Err(format!("the model refused: {r}")),
                            None => Err("the answer is empty".to_string()),
                        }
                    } else {
                        repair::parse_answer(&completion.content)
                            .map_err(|e| e.to_string())
                            .and_then(|v| {
                                schema::validate(&request.schema, &v)
                                    .map(|()| v)
                                    .map_err(|e| format!("does not match the schema: {e}"))
                            })
                    };
                    match parsed {
                        Ok(value) => {
                            let success = CallSuccess {
                                value,
                                raw: completion.content,
                                server_model: if completion.model.is_empty() {
                                    self.config.model.clone()
                                } else {
                                    completion.model
                                },
                            };
                            return done(Ok(success), attempts, reasks, usage, params.mode);
                        }
                        Err(problem) => {
                            if reasks >= self.config.max_reasks {
                                let err = CallError::Invalid {
                                    reasks,
                                    last: problem,
                                };
                                return done(Err(err), attempts, reasks, usage, params.mode);
                            }
                            reasks += 1;
                            tracing::debug!(metric = %request.metric, unit = %request.unit, "re-asking: {problem}");
                            conversation.push(WireMessage {
                                role: "assistant",
                                parts: vec![Part::Text {
                                    text: completion.content,
                                }],
                            });
                            conversation.push(WireMessage {
                                role: "user",
                                parts: vec![Part::Text {
                                    text: reask_text(&problem, &params, &request.schema),
                                }],
                            });
                            continue;
                        }
                    }
                }
                Reply::Http {
                    status,
                    headers,
                    body,
                } => {
                    drop(slot);
                    self.tpm_adjust(-est_tokens);
                    let text = String::from_utf8_lossy(&body);
                    // Before adaptations: an overflow names the token parameter too.
                    if let Some(over) = context_overflow(status, &text) {
                        let message = error_message(&text);
                        match super::context::decide(&over, limit, fitted, &message) {
                            FitDecision::Retry(fit) => {
                                tracing::info!(metric = %request.metric, unit = %request.unit, from = limit, to = fit, "the answer limit does not fit the judge's context window; lowering it");
                                fitted = true;
                                limit = fit;
                                continue;
                            }
                            FitDecision::Fail(reason) => {
                                let err = CallError::ContextOverflow {
                                    reason,
                                    prompt: over.prompt,
                                    window: over.window,
                                };
                                return done(Err(err), attempts, reasks, usage, params.mode);
                            }
                        }
                    }
                    if let Some(adaptation) = classify_rejection(status, &text, &params) {
                        let message = error_message(&text);
                        if adaptations < MAX_ADAPTATIONS
                            && self.adaptations.apply(adaptation, &params)
                        {
                            adaptations += 1;
                            self.save_learnt();
                            tracing::info!(
                                status,
                                ?adaptation,
                                "judge server rejected a parameter; adapting for the rest of the run: {message}"
                            );
                            continue;
                        }
                        let err =
                            if matches!(adaptation, super::protocol::Adaptation::SchemaUnsupported)
                            {
                                CallError::NoOutputMode { status, message }
                            } else {
                                CallError::Rejected { status, message }
                            };
                        return done(Err(err), attempts, reasks, usage, params.mode);
                    }
                    if !is_retryable_status(status) {
                        let message = error_message(&text);
                        if refuses_every_request(status, &message, request) {
                            let mut why = format!("HTTP {status}: {message}");
                            if status == 404 && !self.endpoint.contains("/v1/") {
                                why.push_str(&format!(
                                    "; the request went to {}: does the base URL lack /v1?",
                                    self.endpoint.split('?').next().unwrap_or_default()
                                ));
                            }
                            if self.unusable.set(why.clone()).is_ok() {
                                tracing::error!(
                                    "the judge server refused a call ({why}); no further judge calls are made in this run"
                                );
                            }
                        }
                        let err = CallError::Rejected { status, message };
                        return done(Err(err), attempts, reasks, usage, params.mode);
                    }
                    if status == 429 {
                        self.pacer.on_rate_limited();
                    }
                    let wait = server_requested_wait(&headers, SystemTime::now());
                    (format!("HTTP {status}: {}", error_message(&text)), wait)
                }
            };

            transient_failures += 1;
            if transient_failures >= max_attempts {
                let err = CallError::Exhausted {
                    attempts,
                    last: retry_reason,
                };
                return done(Err(err), attempts, reasks, usage, params.mode);
            }
            tracing::debug!(metric = %request.metric, unit = %request.unit, attempt = attempts, "retrying: {retry_reason}");
            self.sleep_backoff(transient_failures, server_wait).await;
        }
    }

    fn tpm_adjust(&self, delta: f64) {
        if let Some(tpm) = &self.tpm {
            if delta != 0.0 {
                tpm.adjust(delta);
            }
        }
    }

    async fn sleep_backoff(&self, retry: u32, server_wait: Option<Duration>) {
        let jitter: f64 = rand::rng().random();
        let wait = match server_wait {
            // Honour the server, plus a little jitter so a burst of 429s does not
            // come back in lockstep.
            Some(w) => w + Duration::from_millis((jitter * 100.0) as u64),
            None => self.backoff.delay(retry, jitter),
        };
        tokio::time::sleep(wait).await;
    }

    /// One HTTP exchange; the caller holds a slot of `concurrency`.
    async fn send(&self, body: &Value, timeout: Duration) -> Reply {
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_in_flight.fetch_max(now, Ordering::Relaxed);
        let reply = self.send_inner(body, timeout).await;
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        reply
    }

    async fn send_inner(&self, body: &Value, timeout: Duration) -> Reply {
        let mut req = self.http.post(&self.endpoint).timeout(timeout).json(body);
        if let Some(key) = &self.config.api_key {
            req = if self.api_key_header {
                req.header("api-key", key)
            } else {
                req.bearer_auth(key)
            };
        }
        let describe = |e: reqwest::Error| {
            let timed_out = e.is_timeout();
            let reason = if timed_out {
                format!("timed out after {timeout:?}")
            } else if e.is_connect() {
                format!(
                    "could not connect to {}: {}",
                    self.endpoint,
                    e.without_url()
                )
            } else {
                format!("transport error: {}", e.without_url())
            };
            Reply::Transport { reason, timed_out }
        };
        let mut resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return describe(e),
        };
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_RESPONSE_BYTES as u64)
        {
            return Reply::Transport {
                reason: format!("response larger than {MAX_RESPONSE_BYTES} bytes"),
                timed_out: false,
            };
        }
        let mut bytes = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
                        return Reply::Transport {
                            reason: format!("response larger than {MAX_RESPONSE_BYTES} bytes"),
                            timed_out: false,
                        };
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return describe(e),
            }
        }
        Reply::Http {
            status,
            headers,
            body: bytes,
        }
    }

    fn finish(
        &self,
        request: &JudgeRequest,
        outcome: Outcome<'_>,
        status: EntryStatus,
        event: &Event,
    ) {
        self.accounting
            .record(&request.metric, &request.report, event);
        if self.has_journal {
            let entry = JournalEntry {
                time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                metric: &request.metric,
                report: &request.report,
                unit: &request.unit,
                sample: request.sample,
                model: &self.config.model,
                cache_key: outcome.key,
                status,
                cache_hit: status == EntryStatus::CacheHit,
                attempts: outcome.attempts,
                reasks: outcome.reasks,
                latency_ms: outcome.latency_ms,
                response_format: outcome.mode,
                request: journal_messages(&request.messages),
                answer: outcome.answer.as_ref(),
                raw: outcome.raw.as_deref(),
                server_model: outcome.server_model.as_deref(),
                usage: outcome.usage.as_ref(),
                cost_usd: outcome.cost,
                error: outcome.error.as_deref(),
            };
            self.writer.send(Job::Journal(journal::encode(&entry)));
        }
        let hook = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(hook) = hook {
            hook(&super::JudgeProgress {
                metric: request.metric.clone(),
                report: request.report.clone(),
                unit: request.unit.clone(),
                status,
                error: outcome.error.clone(),
                totals: self.accounting.total(),
            });
        }
    }
}

/// What the journal needs to know about a finished unit.
struct Outcome<'a> {
    key: &'a str,
    attempts: u32,
    reasks: u32,
    latency_ms: u64,
    mode: &'static str,
    answer: Option<Value>,
    raw: Option<String>,
    server_model: Option<String>,
    usage: Option<Usage>,
    cost: Option<f64>,
    error: Option<String>,
}

impl<'a> Outcome<'a> {
    fn new(_request: &JudgeRequest, key: &'a str) -> Self {
        Self {
            key,
            attempts: 0,
            reasks: 0,
            latency_ms: 0,
            mode: "none",
            answer: None,
            raw: None,
            server_model: None,
            usage: None,
            cost: None,
            error: None,
        }
    }
}

/// Appended to the question after an answer was cut off by the token limit.
fn shorter_text(limit: u32) -> String {
    format!(
        "Important: your previous reply was cut off at the limit of {limit} tokens before \
         the JSON object was complete. Reply with only the JSON object, and keep every \
         text field short (two sentences at most)."
    )
}

/// The start-up message of a judge that cannot read images (once per client).
fn announce_blind(model: &str, server: &str, detail: &str, remembered: bool) {
    let how = if remembered {
        " (remembered from an earlier run)"
    } else {
        ""
    };
    tracing::warn!(
        "{}: {model} at {server} failed the vision check{how}: {detail}. Every vision \
         metric (FCQ, FCI, CQ, CSC) is not evaluated; pass --assume-vision to skip the check",
        vision::BLIND_REASON
    );
}

/// The base URL as the adaptations table keys it.
/// A refusal no other request of the run would get past: a wrong or missing key
/// (401), an unknown model, deployment or endpoint (404). Not 403: gateways also
/// answer it for one request's content.
/// Requests with images are left to the vision check (some routers answer 404 for
/// "no endpoint supports image input").
fn refuses_every_request(status: u16, message: &str, request: &JudgeRequest) -> bool {
    let has_image = request
        .messages
        .iter()
        .any(|m| m.parts.iter().any(|p| matches!(p, Part::Image { .. })));
    match status {
        401 => true,
        404 => !has_image && !vision::refuses_images(message),
        _ => false,
    }
}

fn server_key(base_url: &str) -> String {
    base_url.trim().trim_end_matches('/').to_string()
}

pub(crate) fn reask_text(problem: &str, params: &WireParams, schema: &Value) -> String {
    let mut text = format!(
        "Your previous reply could not be used: {problem}. Reply again with only the \
         corrected JSON object."
    );
    if params.mode == OutputMode::JsonSchema {
        // The server enforces the schema in this mode; repeat it anyway for servers
        // that accept the parameter but ignore it.
        text.push_str(&format!(
            " It must satisfy this JSON schema:\n{}",
            serde_json::to_string(schema).unwrap_or_default()
        ));
    }
    text
}
