//! An in-process, OpenAI-compatible mock judge for tests, benches and demos.
//!
//! It serves `POST /v1/chat/completions` on `127.0.0.1` (a free port) and answers
//! every request with a JSON object built from the request's schema, after a
//! configurable latency, with optional fault injection. Typical use:
//!
//! ```no_run
//! # async fn demo() {
//! use tvir_testing::mock_judge::{MockConfig, MockJudge};
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
//! /v1/batches` (see [`crate::mock_batch`] and
//! [`MockBatchConfig`](crate::mock_config::MockBatchConfig)): every
//! status read moves a batch one step along validating -> in_progress -> completed,
//! and lines are answered like live requests, with scripted partial failures,
//! expired batches and an error file.
//!
//! **Stats.** [`MockJudge::requests`], [`MockJudge::max_in_flight`],
//! [`MockJudge::metric_counts`] (keyed by the `json_schema` name, `"unknown"` when
//! absent), [`MockJudge::bodies`] (every request body received),
//! [`MockJudge::token_limits`] (the `max_tokens` of each), [`MockJudge::image_requests`]
//! and [`MockJudge::authorization_headers`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::post;
use axum::Router;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use crate::mock_answer::image_uris;
use crate::mock_batch::{BatchState, BatchStats};
use crate::mock_chat::{handle, MockState, Stats};

// The settings and canned answers live in their own modules; this is where tests
// have always found them.
pub use crate::mock_answer::{default_answer, request_schema, schema_type};
pub use crate::mock_config::{
    ContextStyle, Fault, MockConfig, MockVision, ReasoningStyle, Responder, SchemaSupport,
};

/// A running mock judge. Dropping it stops the server too; [`MockJudge::shutdown`]
/// waits for it.
pub struct MockJudge {
    addr: SocketAddr,
    stats: Arc<Stats>,
    batch: Arc<BatchState>,
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
        Self::start_at("127.0.0.1:0".parse().expect("socket address"), config).await
    }

    /// Serve on `addr`: a judge server restarted on the port of one that was
    /// [shut down](MockJudge::shutdown) (its counters start again from zero).
    ///
    /// # Panics
    /// When `addr` cannot be bound.
    pub async fn start_at(addr: SocketAddr, config: MockConfig) -> MockJudge {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| panic!("bind {addr} for the mock judge: {e}"));
        let addr = listener.local_addr().expect("local address");
        let stats = Arc::new(Stats::default());
        let state = Arc::new(MockState {
            script: Mutex::new(config.script.iter().cloned().collect()),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(config.seed)),
            stats: stats.clone(),
            seen_prompts: Mutex::new(Vec::new()),
            slots: config
                .slots
                .map(|n| Arc::new(tokio::sync::Semaphore::new(n.max(1)))),
            config,
        });
        // The Files and Batch endpoints keep their own state beside the chat one.
        let batch = Arc::new(BatchState::default());
        let chat = Router::new()
            .route("/v1/chat/completions", post(handle))
            // Azure OpenAI's deployment paths (with `?api-version=...`).
            .route(
                "/openai/deployments/{deployment}/chat/completions",
                post(handle),
            )
            .with_state(state.clone());
        let app = chat.merge(crate::mock_batch::routes(state, batch.clone()));
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
    pub fn batch_stats(&self) -> BatchStats {
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
