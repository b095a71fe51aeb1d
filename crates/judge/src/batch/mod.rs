//! Judge work through providers' batch engines (`tvir eval --batch`) and offline
//! batch runners (`--batch-export` / `--batch-import`, e.g. vLLM's `run-batch`).
//!
//! The evaluation pipeline is unchanged: it runs every unit through one
//! [`Judge`]. In batch mode that judge is a [`BatchJudge`]: a cached answer is
//! returned as usual; a cache miss calls nothing, records the request in the
//! store (`batch_requests`, keyed by the cache key, which is also the line's
//! stable `custom_id`) and ends the unit as *pending*. Units that depend on a
//! pending unit are pending too (the pipeline knows the dependencies). After the
//! pass the recorded requests are the current wave: uploaded and submitted as
//! provider batches (split at the provider's limits), or exported as JSONL.
//! The next invocation first collects finished batches (or imports result
//! files): every line is validated like a live answer and written to the same
//! judge cache, so the next pass hits the cache and records the next wave (CS
//! after de-duplication, IA/MC after caption revision, re-asks of invalid
//! answers). A pass that records nothing is complete; its outputs are those of a
//! live run that received the same answers.

pub mod api;
pub mod lines;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{json, Value};

use crate::{ClientJudge, Judge};
use crate::{JudgeAnswer, JudgeClient, JudgeError, JudgeRequest};
use tvir_store::batch::{self as rows, BatchRequest, BatchRow, Upload};
use tvir_store::Store;

pub use api::{BatchApi, BatchStatus};
pub use lines::{IngestReport, LineSource};

/// How failed lines are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RetryMode {
    /// Failed or expired lines go into the next wave.
    Batch,
    /// Failed or expired lines are asked live (through the normal client).
    Live,
}

#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// `completion_window` of created batches.
    pub completion_window: String,
    /// Provider limits per input file.
    pub max_requests_per_file: usize,
    pub max_bytes_per_file: usize,
    /// Batch attempts per request before the unit fails with the provider's error.
    pub max_attempts: u32,
    pub retry: RetryMode,
    /// Invalid answers re-asked (next wave) before the unit fails.
    pub max_reasks: u32,
    /// Budget for this invocation's submissions, priced at the batch rate.
    pub max_cost_usd: Option<f64>,
    /// Polling backoff for `--batch-wait`: first wait and cap.
    pub poll_initial: Duration,
    pub poll_max: Duration,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self {
            completion_window: "24h".into(),
            max_requests_per_file: 50_000,
            max_bytes_per_file: 190_000_000,
            max_attempts: 3,
            retry: RetryMode::Batch,
            max_reasks: 5,
            max_cost_usd: None,
            poll_initial: Duration::from_secs(5),
            poll_max: Duration::from_secs(300),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error(transparent)]
    Api(#[from] api::ApiError),
    #[error(transparent)]
    Store(#[from] tvir_store::StoreError),
    #[error("{0}")]
    Other(String),
}

/// Shared state of one batch-mode invocation.
pub struct BatchEngine {
    pub client: JudgeClient,
    store: Store,
    api: Option<BatchApi>,
    pub options: BatchOptions,
    model: String,
    base_url: String,
    /// Keys this invocation's passes asked for and did not find (the wave).
    wanted: Mutex<HashSet<String>>,
    /// Estimated batch-priced dollars of requests accepted into waves this
    /// invocation (micro-dollars), against `max_cost_usd`.
    reserved_micro_usd: AtomicU64,
}

impl std::fmt::Debug for BatchEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchEngine")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// What is waiting, for the pending summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PendingSummary {
    pub open_batches: Vec<BatchStatus>,
    /// Requests per state (`queued`, `submitted`, `exported`, `answered`, `failed`).
    pub requests: BTreeMap<String, u64>,
    /// Estimated seconds until every open batch finishes, from the provider's counts.
    pub eta_secs: Option<u64>,
}

impl BatchEngine {
    /// `online`: talk to the server's Batch API (else export/import only).
    pub fn new(
        client: JudgeClient,
        options: BatchOptions,
        online: bool,
    ) -> Result<Arc<Self>, BatchError> {
        let store = client
            .store()
            .cloned()
            .ok_or_else(|| BatchError::Other("batch mode needs the cache store".into()))?;
        let config = client.config().clone();
        let api = if online {
            Some(BatchApi::new(&config.base_url, config.api_key.clone())?)
        } else {
            None
        };
        Ok(Arc::new(Self {
            model: config.model.clone(),
            base_url: config.base_url.trim().trim_end_matches('/').to_string(),
            client,
            store,
            api,
            options,
            wanted: Mutex::new(HashSet::new()),
            reserved_micro_usd: AtomicU64::new(0),
        }))
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// A fresh pass starts: forget the previous pass's wave.
    pub fn begin_pass(&self) {
        self.wanted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.reserved_micro_usd.store(0, Ordering::Relaxed);
    }

    fn api(&self) -> Result<&BatchApi, BatchError> {
        self.api
            .as_ref()
            .ok_or_else(|| BatchError::Other("no batch API in offline mode".into()))
    }

    /// Estimated batch-priced cost of one stored request body.
    fn estimate_batch_cost(&self, body: &Value) -> Option<f64> {
        let (prompt, completion) = lines::estimate_body_tokens(body);
        let usage = crate::Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: 0,
        };
        self.client.prices().cost_via(&self.model, &usage, true)
    }

    /// Accept a request into this invocation's wave (budget permitting).
    fn accept(&self, key: &str, body: &Value) -> Result<(), JudgeError> {
        let mut wanted = self.wanted.lock().unwrap_or_else(|p| p.into_inner());
        if wanted.contains(key) {
            return Ok(());
        }
        if let Some(max) = self.options.max_cost_usd {
            let cost = self.estimate_batch_cost(body).unwrap_or(0.0);
            let micro = (cost * 1e6).round() as u64;
            let before = self.reserved_micro_usd.load(Ordering::Relaxed);
            if (before + micro) as f64 / 1e6 > max {
                return Err(JudgeError::BudgetExhausted);
            }
            self.reserved_micro_usd.fetch_add(micro, Ordering::Relaxed);
        }
        wanted.insert(key.to_string());
        Ok(())
    }

    fn wanted(&self) -> HashSet<String> {
        self.wanted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn ask(&self, request: JudgeRequest) -> Result<JudgeAnswer, JudgeError> {
        let key = self.client.cache_key(&request);
        if self.client.cached_answer_by_key(&key, &request).is_some() {
            return self.client.ask(request).await;
        }
        let store_err = |e: tvir_store::StoreError| JudgeError::Failed(format!("batch store: {e}"));
        let row = self
            .store
            .with_conn(|c| rows::get(c, &key))
            .map_err(store_err)?;
        // Built only when a new line is needed: resolving images is CPU work.
        let make_body = || {
            self.client
                .request_body(&request)
                .map_err(|e| JudgeError::Failed(format!("cannot build the batch line: {e}")))
        };
        match row {
            None => {
                let body = make_body()?;
                self.accept(&key, &body)?;
                let schema = request.schema.to_string();
                self.store
                    .with_conn(|c| {
                        rows::insert_queued(
                            c,
                            &rows::NewRequest {
                                key: &key,
                                model: &self.model,
                                metric: &request.metric,
                                sample: request.sample,
                                body: &body.to_string(),
                                schema: &schema,
                            },
                        )
                    })
                    .map_err(store_err)?;
                Err(JudgeError::Pending)
            }
            Some(r) => match r.state.as_str() {
                "failed" => Err(JudgeError::Failed(
                    r.last_error.unwrap_or_else(|| "failed in batch".into()),
                )),
                "queued" if r.attempts > 0 && self.options.retry == RetryMode::Live => {
                    let answer = self.client.ask(request).await?;
                    let mut r = r;
                    r.state = "answered".into();
                    self.store
                        .with_conn(|c| rows::update(c, &r))
                        .map_err(store_err)?;
                    Ok(answer)
                }
                "queued" | "exported" => {
                    let body = match serde_json::from_str(&r.body) {
                        Ok(b) => b,
                        Err(_) => make_body()?,
                    };
                    self.accept(&key, &body)?;
                    Err(JudgeError::Pending)
                }
                "answered" => {
                    // The answer is gone from the cache (or no longer valid): ask again.
                    let body = make_body()?;
                    self.accept(&key, &body)?;
                    let mut r = r;
                    r.state = "queued".into();
                    r.body = body.to_string();
                    r.reasks = 0;
                    r.spent = rows::SpentTokens::default();
                    r.batch_id = None;
                    self.store
                        .with_conn(|c| rows::update(c, &r))
                        .map_err(store_err)?;
                    Err(JudgeError::Pending)
                }
                // In a provider batch: never submitted again.
                _ => Err(JudgeError::Pending),
            },
        }
    }

    /// Queued requests of this invocation's wave, ordered so that requests sharing
    /// a prompt prefix are adjacent (provider prefix caches).
    fn wave_rows(&self, states: &[&str]) -> Result<Vec<BatchRequest>, BatchError> {
        let wanted = self.wanted();
        let mut out = Vec::new();
        for state in states {
            let rs = self
                .store
                .with_conn(|c| rows::by_state(c, &self.model, state))?;
            out.extend(rs.into_iter().filter(|r| wanted.contains(&r.key)));
        }
        out.sort_by(|a, b| {
            lines::prefix_order(&a.body)
                .cmp(lines::prefix_order(&b.body))
                .then(a.key.cmp(&b.key))
        });
        Ok(out)
    }

    /// Split request lines into files within the limits.
    fn split(&self, rs: &[BatchRequest]) -> Vec<(Vec<String>, Vec<u8>)> {
        let mut files = Vec::new();
        let mut keys = Vec::new();
        let mut buf = Vec::new();
        for r in rs {
            let line = lines::request_line(r);
            let fits = keys.len() < self.options.max_requests_per_file.max(1)
                && buf.len() + line.len() < self.options.max_bytes_per_file;
            if !fits && !keys.is_empty() {
                files.push((std::mem::take(&mut keys), std::mem::take(&mut buf)));
            }
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
            keys.push(r.key.clone());
        }
        if !keys.is_empty() {
            files.push((keys, buf));
        }
        files
    }

    /// Write the current wave as Batch API request files into `dir`; returns the
    /// files written and the number of requests.
    pub fn export(&self, dir: &Path) -> Result<(Vec<PathBuf>, usize), BatchError> {
        let rs = self.wave_rows(&["queued", "exported"])?;
        if rs.is_empty() {
            return Ok((Vec::new(), 0));
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| BatchError::Other(format!("{}: {e}", dir.display())))?;
        let wave = self.store.with_conn(|c| rows::last_wave(c, &self.model))?
            + u32::from(rs.iter().any(|r| r.state == "queued"));
        let wave = wave.max(1);
        let mut paths = Vec::new();
        for (i, (_, bytes)) in self.split(&rs).into_iter().enumerate() {
            let path = dir.join(format!("wave-{wave}-part-{}.jsonl", i + 1));
            std::fs::write(&path, &bytes)
                .map_err(|e| BatchError::Other(format!("{}: {e}", path.display())))?;
            paths.push(path);
        }
        self.store.with_conn(|c| {
            let tx = c.unchecked_transaction()?;
            for r in &rs {
                let mut r = r.clone();
                r.state = "exported".into();
                r.wave = wave;
                rows::update(&tx, &r)?;
            }
            tx.commit()
        })?;
        Ok((paths, rs.len()))
    }

    /// Read result files (Batch API output or error files, vLLM `run-batch`
    /// output) into the cache. Bad lines are reported and skipped.
    pub fn import(&self, files: &[PathBuf]) -> Result<IngestReport, BatchError> {
        let mut total = IngestReport::default();
        for f in files {
            let bytes =
                std::fs::read(f).map_err(|e| BatchError::Other(format!("{}: {e}", f.display())))?;
            let report = self.ingest(&bytes, LineSource::Import, &f.display().to_string())?;
            total.merge(report);
        }
        Ok(total)
    }

    fn ingest(
        &self,
        bytes: &[u8],
        source: LineSource,
        origin: &str,
    ) -> Result<IngestReport, BatchError> {
        let opts = lines::IngestOptions {
            max_attempts: self.options.max_attempts,
            max_reasks: self.options.max_reasks,
            model: self.model.clone(),
        };
        Ok(self
            .store
            .with_conn(|c| lines::ingest(c, bytes, &source, origin, &opts))?)
    }

    /// Re-attach uploads whose batch row was never written (a kill between upload
    /// and creation), then collect every finished batch into the cache.
    pub async fn collect(&self) -> Result<IngestReport, BatchError> {
        let api = self.api()?;
        let mut total = IngestReport::default();
        let uploads = self
            .store
            .with_conn(|c| rows::uploads(c, &self.model, &self.base_url))?;
        for up in uploads {
            let found = api.find_by_input_file(&up.input_file_id).await?;
            let status = match found {
                Some(b) => b,
                // Never created: the requests were in no batch, so creating it now
                // submits nothing twice.
                None => self.create(&up).await?,
            };
            self.record(&status, &up)?;
        }
        let open = self
            .store
            .with_conn(|c| rows::open_batches(c, &self.model, &self.base_url))?;
        for b in open {
            let status = api.get(&b.id).await?;
            self.store.with_conn(|c| {
                rows::update_batch_status(c, &b.id, &status.status, status.completed, status.failed)
            })?;
            if !status.is_terminal() {
                continue;
            }
            let source = LineSource::Batch(b.id.clone());
            if let Some(id) = &status.output_file_id {
                let bytes = api.file_content(id).await?;
                total.merge(self.ingest(
                    &bytes,
                    source.clone(),
                    &format!("output file {id} of {}", b.id),
                )?);
            }
            if let Some(id) = &status.error_file_id {
                let bytes = api.file_content(id).await?;
                total.merge(self.ingest(
                    &bytes,
                    source.clone(),
                    &format!("error file {id} of {}", b.id),
                )?);
            }
            // Lines that came back in neither file (expired, failed or cancelled
            // batches) count as a failed attempt with the batch's reason.
            let reason = match &status.errors {
                Some(e) => format!("batch {} {}: {e}", b.id, status.status),
                None => format!(
                    "batch {} {} before answering this request",
                    b.id, status.status
                ),
            };
            let opts = lines::IngestOptions {
                max_attempts: self.options.max_attempts,
                max_reasks: self.options.max_reasks,
                model: self.model.clone(),
            };
            let left = self
                .store
                .with_conn(|c| lines::fail_unanswered(c, &b.id, &reason, &opts))?;
            total.requeued += left.0;
            total.failed += left.1;
            self.store.with_conn(|c| rows::mark_collected(c, &b.id))?;
        }
        Ok(total)
    }

    async fn create(&self, up: &Upload) -> Result<BatchStatus, BatchError> {
        let metadata =
            json!({"tool": "tvir-eval", "wave": up.wave.to_string(), "model": self.model});
        Ok(self
            .api()?
            .create(&up.input_file_id, &self.options.completion_window, metadata)
            .await?)
    }

    fn record(&self, status: &BatchStatus, up: &Upload) -> Result<(), BatchError> {
        let row = BatchRow {
            id: status.id.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            input_file_id: up.input_file_id.clone(),
            wave: up.wave,
            requests: up.keys.len() as u64,
            status: status.status.clone(),
            completed: status.completed,
            failed: status.failed,
            collected: false,
            created_at: String::new(),
        };
        Ok(self
            .store
            .with_conn(|c| rows::record_batch(c, &row, &up.keys))?)
    }

    /// Upload and create the current wave (split at the limits). Returns the
    /// batches created.
    pub async fn submit(&self) -> Result<Vec<BatchStatus>, BatchError> {
        // Exported requests too: a run may move from an offline runner to --batch.
        let rs = self.wave_rows(&["queued", "exported"])?;
        if rs.is_empty() {
            return Ok(Vec::new());
        }
        let api = self.api()?;
        let wave = self.store.with_conn(|c| rows::last_wave(c, &self.model))? + 1;
        let mut created = Vec::new();
        for (i, (keys, bytes)) in self.split(&rs).into_iter().enumerate() {
            let name = format!("tvir-wave-{wave}-part-{}.jsonl", i + 1);
            let file_id = api.upload(&name, &bytes).await?;
            let up = Upload {
                input_file_id: file_id,
                wave,
                keys,
            };
            // Written before creation: a kill from here on re-attaches by file id.
            self.store
                .with_conn(|c| rows::record_upload(c, &self.model, &self.base_url, &up))?;
            let status = self.create(&up).await?;
            self.record(&status, &up)?;
            created.push(status);
        }
        Ok(created)
    }

    /// Open batches and request counts, with an ETA from the provider's counts.
    pub async fn pending_summary(&self) -> Result<PendingSummary, BatchError> {
        let mut summary = PendingSummary::default();
        for (state, n) in self
            .store
            .with_conn(|c| rows::count_by_state(c, &self.model))?
        {
            summary.requests.insert(state, n);
        }
        if let Some(api) = &self.api {
            let open = self
                .store
                .with_conn(|c| rows::open_batches(c, &self.model, &self.base_url))?;
            let now = chrono::Utc::now().timestamp();
            let mut eta: Option<u64> = None;
            for b in open {
                let s = api.get(&b.id).await?;
                let done = s.completed + s.failed;
                if let (Some(start), true) = (s.in_progress_at, done > 0 && s.total > done) {
                    let elapsed = (now - start).max(1) as f64;
                    let left = (s.total - done) as f64 * elapsed / done as f64;
                    eta = Some(eta.unwrap_or(0).max(left.ceil() as u64));
                }
                summary.open_batches.push(s);
            }
            summary.eta_secs = eta;
        }
        Ok(summary)
    }

    /// Poll (with backoff) until some open batch has finished, or none is open.
    pub async fn wait_for_progress(&self) -> Result<(), BatchError> {
        let api = self.api()?;
        let mut delay = self.options.poll_initial;
        let started = Instant::now();
        loop {
            let open = self
                .store
                .with_conn(|c| rows::open_batches(c, &self.model, &self.base_url))?;
            if open.is_empty() {
                return Ok(());
            }
            for b in &open {
                if api.get(&b.id).await?.is_terminal() {
                    return Ok(());
                }
            }
            tracing::info!(
                open = open.len(),
                waited_secs = started.elapsed().as_secs(),
                "waiting for batches"
            );
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(self.options.poll_max);
        }
    }
}

/// The judge of a batch-mode pass (see the module docs).
pub struct BatchJudge {
    engine: Arc<BatchEngine>,
    priced: ClientJudge,
}

impl BatchJudge {
    pub fn new(engine: Arc<BatchEngine>) -> Result<Self, String> {
        let priced = ClientJudge::new(engine.client.clone())?;
        Ok(Self { engine, priced })
    }
}

impl Judge for BatchJudge {
    fn ask(&self, request: JudgeRequest) -> BoxFuture<'_, Result<JudgeAnswer, JudgeError>> {
        Box::pin(self.engine.ask(request))
    }
    fn estimate(&self, request: &JudgeRequest) -> Option<(u64, u64, Option<f64>)> {
        self.priced.estimate(request)
    }
    fn judgment_cost(&self, answer: &JudgeAnswer) -> Option<f64> {
        self.priced.judgment_cost(answer)
    }
    /// Its [`Judge::prompt_budget`] is always `None`.
    fn knows_context_window(&self) -> bool {
        false
    }
    /// Image references stay references in cache keys (as in a live run); the
    /// client resolves them when a batch line is written.
    fn set_image_resolver(&self, resolver: crate::ImageResolver) -> bool {
        self.engine.client.set_image_resolver(resolver);
        true
    }
    /// The client's vision check (a few live calls, remembered in the store), so a
    /// judge that cannot read images gets no vision request in any wave.
    fn blind_reason(&self) -> BoxFuture<'_, Option<String>> {
        self.priced.blind_reason()
    }
}
