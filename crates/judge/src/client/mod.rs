//! The client's engine: cache lookup, dry-run and budget gates, the attempt loop
//! (limits, send, adapt, retry, parse, validate, re-ask), then cache write,
//! accounting, journal and progress. Shared state lives in one `Inner` behind an
//! `Arc`, so clones of [`JudgeClient`](super::JudgeClient) are cheap.
//!
//! `Inner`'s methods are spread over the submodules by stage: [`attempt`] (the
//! attempt loop and the texts it adds to a conversation), [`send`] (one HTTP
//! exchange), [`record`] (cache rows, journal lines, progress), [`learnt`] (what
//! the store remembers about a server between runs) and [`vision_check`].

mod attempt;
mod learnt;
mod reach;
mod record;
mod send;
mod vision_check;

pub(crate) use attempt::reask_text;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::accounting::{Accounting, Event};
use super::estimate::{estimate_request, TokenEstimate};
use super::journal::{EntryStatus, Journal};
use super::limits::{InFlightLimit, Pacer, TokenBucket};
use super::prices::PriceTable;
use super::protocol::{Adaptations, OutputMode, WireMessage};
use super::retry::Backoff;
use super::vision::Vision;
use super::writer::Writer;
use super::{cache, schema, JudgeAnswer, JudgeConfig, JudgeError, JudgeRequest, Part};
use super::{Usage, UsageTotals};
use record::Outcome;
use tvir_store::Store;

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

/// Prompts up to this many tokens (our estimate) get `--judge-timeout` per attempt;
/// longer ones get it in proportion.
pub const TIMEOUT_PROMPT_TOKENS: u64 = 4096;

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
    /// The journal's text index (`None`: no journal).
    journal_texts: Option<super::journal::TextIndex>,
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
    /// The vision verdict known when the client was made (remembered by an earlier
    /// run), before any check of this run.
    pub(crate) vision_at_start: std::sync::OnceLock<Vision>,
    /// What the store says about this server's vision, carried into saved rows.
    vision_detail: Mutex<Option<(bool, String)>>,
    /// Base URL as the adaptations table keys it.
    server_key: String,
    /// The model's context window in tokens (0: unknown), as an overflow reply of
    /// this run or a stored one of an earlier run named it.
    pub(crate) window: std::sync::atomic::AtomicU32,
    /// Set by the first refusal that no request of this run can get past (a wrong
    /// key, an unknown model or endpoint): later units fail without a call.
    unusable: std::sync::OnceLock<String>,
    /// Connection-level refusals in a row; declares the server gone after
    /// `unreachable_window` of nothing else.
    pub(crate) reach: reach::Reachability,
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
    /// The server refused connections for the whole window (see [`reach`]).
    #[error("{0}")]
    Unreachable(String),
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
        let journal_texts = journal.as_ref().map(Journal::index);
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
            adaptations: Adaptations::starting_at(config.plain_json),
            accounting: Accounting::new(),
            prices,
            journal_texts,
            writer,
            progress: Mutex::new(None),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            reserved_usd: Mutex::new(0.0),
            budget_announced: AtomicBool::new(false),
            backoff: Backoff::default(),
            image_resolver: Mutex::new(None),
            vision: tokio::sync::OnceCell::new(),
            vision_at_start: std::sync::OnceLock::new(),
            vision_detail: Mutex::new(None),
            server_key: server_key(&config.base_url),
            unusable: std::sync::OnceLock::new(),
            window: std::sync::atomic::AtomicU32::new(0),
            reach: reach::Reachability::new(config.unreachable_window),
            store,
            http,
            endpoint,
            api_key_header,
            config,
        };
        inner.restore_learnt();
        Ok(inner)
    }

    /// Remember the context window an overflow reply named (the smallest seen).
    pub(crate) fn learn_window(&self, window: u32) {
        use std::sync::atomic::Ordering;
        let _ = self
            .window
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                (w == 0 || window < w).then_some(window)
            });
    }

    /// Prompt tokens a request may take: the known context window less its answer
    /// limit and the fitting margin; None while the window is unknown.
    pub(crate) fn prompt_budget(&self, request: &JudgeRequest) -> Option<u64> {
        let window = self.window.load(std::sync::atomic::Ordering::Relaxed);
        (window > 0).then(|| {
            u64::from(window)
                .saturating_sub(u64::from(self.token_limit(request)))
                .saturating_sub(u64::from(super::context::FIT_MARGIN))
        })
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

    pub(crate) fn set_progress(&self, hook: super::ProgressHook) {
        *self.progress.lock().unwrap_or_else(|p| p.into_inner()) = Some(hook);
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
                    if let Some(w) = window {
                        self.learn_window(*w);
                    }
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

    pub(crate) fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    pub(crate) fn prices(&self) -> &PriceTable {
        &self.prices
    }
}

/// The base URL as the adaptations table keys it.
fn server_key(base_url: &str) -> String {
    base_url.trim().trim_end_matches('/').to_string()
}
