//! Fetching cited source pages and remote figure images: address safety rules,
//! readable-text extraction, blocked-page detection, persistent cache.
//!
//! Flow of [`Fetcher::page`]: normalise the URL -> safety rules (scheme, literal
//! addresses) -> `--sources` file -> cache -> (offline stops here) -> backend (direct
//! HTTP, Serper or Jina) -> text extraction -> blocked-page checks -> cache. Concurrent
//! calls for one normalised URL share a single fetch.
//!
//! Main types: [`Fetcher`], [`FetchConfig`], [`PageOutcome`] / [`PageStatus`], and
//! [`CitedSource`] (what a report cites, from [`select`]). Text extraction is pure:
//! [`extract`] dispatches by content type and uses [`html_scan`] for linear-time HTML
//! scanning, never the other way round.
//!
//! Depends on `tvir-report` (to read citations) and `tvir-store` (the page cache);
//! it must never depend on the judge, the rubrics or the engine.

pub mod address;
pub mod backends;
pub mod blocked;
pub mod extract;
pub mod html_scan;
pub mod http;
pub mod options;
mod resources;
pub mod select;
pub mod sources_file;
pub mod tally;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt, Shared};
use serde::{Deserialize, Serialize};
use url::Url;

use tvir_store::{pages as page_cache, Store};

pub use backends::ApiKey;
pub use options::FetchOptions;
pub use select::{cited_sources, cited_urls, remote_image_urls, CitedSource};
pub use tally::{reason_group, PageTally};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    #[default]
    Direct,
    Serper,
    Jina,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Direct => "direct",
            Backend::Serper => "serper",
            Backend::Jina => "jina",
        }
    }
}

#[derive(Debug, Clone)]
pub struct FetchConfig {
    pub backend: Backend,
    pub allow_private: bool,
    /// No network at all: only the cache and `sources_file`.
    pub offline: bool,
    /// Ignore cached pages and fetch again.
    pub refresh: bool,
    /// JSONL of pre-fetched pages `{"url", "text"}` (or `{"url", "error"}`: a fetch
    /// that failed), used instead of the network.
    pub sources_file: Option<std::path::PathBuf>,
    pub page_cap_bytes: u64,
    pub image_cap_bytes: u64,
    pub connect_timeout: std::time::Duration,
    pub total_timeout: std::time::Duration,
    pub concurrency: usize,
    pub per_host_concurrency: usize,
    pub max_attempts: u32,
    /// Redirects followed per request (each hop is checked by the safety rules).
    pub max_redirects: usize,
    pub user_agent: String,
    /// How long a cached failure or blocked page is trusted; pages with text are
    /// trusted until `refresh`.
    pub failure_ttl: Duration,
    /// Exact socket addresses exempt from the private-address rule when written as
    /// literal IPs (a test server), while every other private address stays refused.
    pub exempt_addrs: Vec<SocketAddr>,
    pub serper_api_key: Option<ApiKey>,
    /// Default [`backends::DEFAULT_SERPER_BASE_URL`].
    pub serper_base_url: Option<String>,
    pub jina_api_key: Option<ApiKey>,
    /// Default [`backends::DEFAULT_JINA_BASE_URL`].
    pub jina_base_url: Option<String>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        Self {
            backend: Backend::Direct,
            allow_private: false,
            offline: false,
            refresh: false,
            sources_file: None,
            page_cap_bytes: 10 * 1024 * 1024,
            image_cap_bytes: 20 * 1024 * 1024,
            connect_timeout: std::time::Duration::from_secs(10),
            total_timeout: std::time::Duration::from_secs(30),
            concurrency: 32,
            per_host_concurrency: 4,
            max_attempts: 3,
            max_redirects: 5,
            user_agent: http::BROWSER_USER_AGENT.to_string(),
            failure_ttl: Duration::from_secs(6 * 3600),
            exempt_addrs: Vec::new(),
            serper_api_key: None,
            serper_base_url: None,
            jina_api_key: None,
            jina_base_url: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageStatus {
    /// Readable text obtained.
    Ok,
    /// Captcha, bot check, login wall, paywall stub, soft 404: never judge evidence.
    Blocked,
    /// Address refused by the safety rules (private, loopback, link-local, scheme).
    Refused,
    /// Network error, HTTP error, timeout, size cap, unsupported content type.
    Failed,
    /// Offline and not in cache or sources file.
    Unavailable,
}

impl PageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PageStatus::Ok => "ok",
            PageStatus::Blocked => "blocked",
            PageStatus::Refused => "refused",
            PageStatus::Failed => "failed",
            PageStatus::Unavailable => "unavailable",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "ok" => PageStatus::Ok,
            "blocked" => PageStatus::Blocked,
            "refused" => PageStatus::Refused,
            "failed" => PageStatus::Failed,
            "unavailable" => PageStatus::Unavailable,
            _ => return None,
        })
    }
}

/// What a judge may read for one URL. `text` is empty unless `status` is `Ok`.
/// The reason of a sources-file entry whose text is empty: the page was read and
/// is empty (not a failed fetch), which the reference protocol shows as empty text.
pub const EMPTY_IN_SOURCES_FILE: &str = "empty text in the sources file";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageOutcome {
    pub url: String,
    pub final_url: Option<String>,
    pub status: PageStatus,
    pub text: String,
    pub content_type: Option<String>,
    pub reason: Option<String>,
    pub from_cache: bool,
    /// The HTTP status the server answered this fetch with (None: from the cache or a
    /// sources file, refused by the rules, or no answer).
    #[serde(default)]
    pub http_status: Option<u16>,
    /// The fetch failed before any HTTP status: no connection could be made (name
    /// not resolved, refused, no route, connect time-out). Such failures are not
    /// cached: they may say more about this machine's network than about the page.
    #[serde(default)]
    pub no_response: bool,
}

impl PageOutcome {
    /// A page read to `text`, fetched now (not from the cache), no redirect noted.
    pub fn with_text(url: &str, text: String) -> Self {
        Self {
            url: url.to_string(),
            final_url: None,
            status: PageStatus::Ok,
            text,
            content_type: None,
            reason: None,
            from_cache: false,
            http_status: None,
            no_response: false,
        }
    }

    fn without_text(url: &str, status: PageStatus, reason: String) -> Self {
        Self {
            url: url.to_string(),
            final_url: None,
            status,
            text: String::new(),
            content_type: None,
            reason: Some(reason),
            from_cache: false,
            http_status: None,
            no_response: false,
        }
    }
}

/// Where an outcome came from (for `tvir fetch` statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PageOrigin {
    /// Decided without any lookup: invalid URL or refused by the safety rules.
    Rules,
    SourcesFile,
    Cache,
    Network,
    /// Offline and nowhere to be found.
    Nowhere,
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{url}: {reason}")]
    Failed { url: String, reason: String },
    #[error("{url}: refused: {reason}")]
    Refused { url: String, reason: String },
    #[error("{url}: offline and not available")]
    Offline { url: String },
    #[error("fetcher configuration: {0}")]
    Config(String),
    #[error(transparent)]
    SourcesFile(#[from] sources_file::SourcesFileError),
    #[error(transparent)]
    Store(#[from] tvir_store::StoreError),
}

type SharedPage = Shared<BoxFuture<'static, (PageOutcome, PageOrigin)>>;

struct Inner {
    config: FetchConfig,
    store: Store,
    http: http::HttpLayer,
    reader: Option<backends::ReaderClient>,
    sources: HashMap<String, sources_file::SourcePage>,
    inflight: Mutex<HashMap<String, SharedPage>>,
    /// URLs fetched afresh during this run under `refresh` (refetch once, not per call).
    refreshed: Mutex<HashSet<String>>,
}

/// Shared by every stage that needs anything remote. Cheap to clone.
#[derive(Clone)]
pub struct Fetcher {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("config", &self.inner.config)
            .field("store", &self.inner.store)
            .field("sources", &self.inner.sources.len())
            .finish()
    }
}

/// What the direct fetcher asks for: pages, PDFs and text, HTML first.
const ACCEPT_PAGES: &str =
    "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5";
const ACCEPT_IMAGES: &str = "image/avif,image/webp,image/png,image/jpeg,image/*;q=0.8,*/*;q=0.5";

impl Fetcher {
    /// `raw` normalised (the cache key) and parsed, if the address rules allow it:
    /// else the failure or refusal naming `raw`.
    fn allowed_url(&self, raw: &str) -> Result<(String, Url), FetchError> {
        let key = normalize_url(raw);
        let parsed = Url::parse(&key).map_err(|e| FetchError::Failed {
            url: raw.to_string(),
            reason: format!("invalid URL: {e}"),
        })?;
        if let Err(refusal) = self.inner.http.check(&parsed) {
            return Err(FetchError::Refused {
                url: raw.to_string(),
                reason: refusal.to_string(),
            });
        }
        Ok((key, parsed))
    }

    /// GET `parsed` (written `raw`) within `cap` bytes: the body of a 2xx answer, or
    /// the refusal or failure naming `raw` (remote figures and page resources alike).
    async fn get_2xx(
        &self,
        raw: &str,
        parsed: &Url,
        cap: u64,
        accept: &str,
    ) -> Result<http::Fetched, FetchError> {
        let failed = |reason: String| FetchError::Failed {
            url: raw.to_string(),
            reason,
        };
        let fetched = match self.inner.http.get(parsed, cap, accept).await {
            Ok(fetched) => fetched,
            Err(http::HttpFailure::Refused(refusal)) => {
                return Err(FetchError::Refused {
                    url: raw.to_string(),
                    reason: refusal.to_string(),
                })
            }
            Err(failure) => return Err(failed(failure.to_string())),
        };
        if !(200..300).contains(&fetched.status) {
            return Err(failed(http_status_reason(fetched.status)));
        }
        Ok(fetched)
    }

    /// `store` None keeps the cache in memory for this process only. Fails on an
    /// unreadable `--sources` file; a backend's missing API key fails only the pages
    /// that are really fetched.
    pub fn new(config: FetchConfig, store: Option<Store>) -> Result<Self, FetchError> {
        let store = match store {
            Some(store) => store,
            None => Store::in_memory()?,
        };
        let sources = match &config.sources_file {
            Some(path) => sources_file::load(path)?,
            None => HashMap::new(),
        };
        let http = http::HttpLayer::new(&config)
            .map_err(|e| FetchError::Config(format!("HTTP client: {e}")))?;
        let reader = match config.backend {
            Backend::Direct => None,
            // The key is checked when a page is really to be fetched: a run from a
            // sources file or the cache never calls the service.
            Backend::Serper => Some(backends::Reader::Serper {
                base_url: config
                    .serper_base_url
                    .clone()
                    .unwrap_or_else(|| backends::DEFAULT_SERPER_BASE_URL.into()),
                key: config.serper_api_key.clone(),
            }),
            Backend::Jina => Some(backends::Reader::Jina {
                base_url: config
                    .jina_base_url
                    .clone()
                    .unwrap_or_else(|| backends::DEFAULT_JINA_BASE_URL.into()),
                key: config.jina_api_key.clone(),
            }),
        };
        let reader = reader
            .map(|r| {
                backends::ReaderClient::new(
                    r,
                    config.connect_timeout,
                    config.total_timeout,
                    config.page_cap_bytes,
                )
            })
            .transpose()
            .map_err(|e| FetchError::Config(format!("reader client: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                store,
                http,
                reader,
                sources,
                inflight: Mutex::new(HashMap::new()),
                refreshed: Mutex::new(HashSet::new()),
            }),
        })
    }

    pub fn config(&self) -> &FetchConfig {
        &self.inner.config
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Readable text of a cited page (cached; deduplicated by normalised URL).
    pub async fn page(&self, url: &str) -> PageOutcome {
        self.page_with_origin(url).await.0
    }

    /// [`Fetcher::page`] plus where the outcome came from.
    pub async fn page_with_origin(&self, url: &str) -> (PageOutcome, PageOrigin) {
        let raw = url.trim();
        let key = normalize_url(raw);
        let parsed = match Url::parse(&key) {
            Ok(parsed) => parsed,
            Err(e) => {
                return (
                    PageOutcome::without_text(raw, PageStatus::Failed, format!("invalid URL: {e}")),
                    PageOrigin::Rules,
                )
            }
        };
        // The rules run before anything else and are never cached: they depend on
        // --allow-private, not on the page.
        if let Err(refusal) = self.inner.http.check(&parsed) {
            return (
                PageOutcome::without_text(raw, PageStatus::Refused, refusal.to_string()),
                PageOrigin::Rules,
            );
        }
        if let Some(page) = self.inner.sources.get(&key) {
            let outcome = match page {
                sources_file::SourcePage::Text(text) if text.trim().is_empty() => {
                    PageOutcome::without_text(raw, PageStatus::Failed, EMPTY_IN_SOURCES_FILE.into())
                }
                sources_file::SourcePage::Text(text) => PageOutcome::with_text(raw, text.clone()),
                sources_file::SourcePage::Failed(error) => {
                    PageOutcome::without_text(raw, PageStatus::Failed, error.clone())
                }
            };
            return (outcome, PageOrigin::SourcesFile);
        }
        let shared = {
            let mut inflight = self
                .inner
                .inflight
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            match inflight.get(&key) {
                Some(existing) => existing.clone(),
                None => {
                    let this = self.clone();
                    let k = key.clone();
                    let fut = async move { this.resolve(k, parsed).await }
                        .boxed()
                        .shared();
                    inflight.insert(key.clone(), fut.clone());
                    fut
                }
            }
        };
        let (mut outcome, origin) = shared.clone().await;
        {
            let mut inflight = self
                .inner
                .inflight
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if inflight.get(&key).is_some_and(|f| f.ptr_eq(&shared)) {
                inflight.remove(&key);
            }
        }
        outcome.url = raw.to_string();
        (outcome, origin)
    }

    async fn resolve(self, key: String, url: Url) -> (PageOutcome, PageOrigin) {
        let config = &self.inner.config;
        let use_cache = config.offline
            || !config.refresh
            || self
                .inner
                .refreshed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&key);
        if use_cache {
            if let Some(row) = self.cache_get(&key).await {
                if config.offline || self.is_fresh(&row) {
                    if let Some(outcome) = outcome_from_row(&key, row) {
                        return (outcome, PageOrigin::Cache);
                    }
                }
            }
        }
        if config.offline {
            return (
                PageOutcome::without_text(
                    &key,
                    PageStatus::Unavailable,
                    "offline: not in the cache or the sources file".into(),
                ),
                PageOrigin::Nowhere,
            );
        }
        let (outcome, stored_text, size) = match &self.inner.reader {
            None => self.fetch_direct(&url).await,
            Some(reader) => self.fetch_reader(reader, &url).await,
        };
        if matches!(
            outcome.status,
            PageStatus::Ok | PageStatus::Blocked | PageStatus::Failed
        ) && !outcome.no_response
        {
            self.cache_put(&key, &outcome, stored_text, size).await;
        }
        if config.refresh {
            self.inner
                .refreshed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key);
        }
        (outcome, PageOrigin::Network)
    }

    fn is_fresh(&self, row: &page_cache::PageRow) -> bool {
        if row.status == PageStatus::Ok.as_str() {
            return true;
        }
        let age = now_unix().saturating_sub(row.fetched_at);
        age >= 0 && (age as u64) < self.inner.config.failure_ttl.as_secs()
    }

    async fn cache_get(&self, key: &str) -> Option<page_cache::PageRow> {
        let store = self.inner.store.clone();
        let key = key.to_string();
        let result = tokio::task::spawn_blocking(move || {
            store.with_conn(|conn| page_cache::get(conn, &key))
        })
        .await;
        match result {
            Ok(Ok(row)) => row,
            Ok(Err(e)) => {
                tracing::warn!("page cache read failed: {e}");
                None
            }
            Err(e) => {
                tracing::warn!("page cache read task failed: {e}");
                None
            }
        }
    }

    async fn cache_put(&self, key: &str, outcome: &PageOutcome, text: String, size: Option<u64>) {
        let row = page_cache::PageRow {
            url: key.to_string(),
            status: outcome.status.as_str().to_string(),
            final_url: outcome.final_url.clone(),
            content_type: outcome.content_type.clone(),
            size,
            text,
            fetched_at: now_unix(),
            error: outcome.reason.clone(),
            backend: Some(self.inner.config.backend.as_str().to_string()),
        };
        let store = self.inner.store.clone();
        let result = tokio::task::spawn_blocking(move || {
            store.with_conn(|conn| page_cache::put(conn, &row))
        })
        .await;
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("page cache write failed: {e}"),
            Err(e) => tracing::warn!("page cache write task failed: {e}"),
        }
    }

    /// Returns the outcome, the text to cache (a blocked page keeps its text there for
    /// inspection, never in the outcome) and the body size.
    async fn fetch_direct(&self, url: &Url) -> (PageOutcome, String, Option<u64>) {
        let key = url.as_str();
        let fetched = match self
            .inner
            .http
            .get(url, self.inner.config.page_cap_bytes, ACCEPT_PAGES)
            .await
        {
            Ok(fetched) => fetched,
            Err(http::HttpFailure::Refused(refusal)) => {
                return (
                    PageOutcome::without_text(key, PageStatus::Refused, refusal.to_string()),
                    String::new(),
                    None,
                )
            }
            Err(failure) => {
                let mut outcome =
                    PageOutcome::without_text(key, PageStatus::Failed, failure.to_string());
                outcome.no_response = matches!(failure, http::HttpFailure::Connect(_));
                return (outcome, String::new(), None);
            }
        };
        let size = fetched.body.len() as u64;
        let http_status = Some(fetched.status);
        // Parsers of untrusted PDFs and HTML can be slow on hostile input: bound the
        // wait (the worker thread finishes on its own).
        let limit = self.inner.config.total_timeout.max(Duration::from_secs(10));
        let judged = tokio::time::timeout(
            limit,
            tokio::task::spawn_blocking(move || judge_response(fetched)),
        )
        .await;
        match judged {
            Ok(Ok((mut outcome, stored))) => {
                outcome.url = key.to_string();
                outcome.http_status = http_status;
                (outcome, stored, Some(size))
            }
            Err(_) => {
                let mut outcome = PageOutcome::without_text(
                    key,
                    PageStatus::Failed,
                    format!("text extraction took longer than {limit:?}"),
                );
                outcome.http_status = http_status;
                (outcome, String::new(), Some(size))
            }
            Ok(Err(e)) => {
                let mut outcome = PageOutcome::without_text(
                    key,
                    PageStatus::Failed,
                    format!("text extraction crashed: {e}"),
                );
                outcome.http_status = http_status;
                (outcome, String::new(), Some(size))
            }
        }
    }

    async fn fetch_reader(
        &self,
        reader: &backends::ReaderClient,
        url: &Url,
    ) -> (PageOutcome, String, Option<u64>) {
        let key = url.as_str();
        // The service fetches for us, but a report citing an internal name is still
        // refused, so results do not depend on the backend.
        if !self.inner.config.allow_private {
            if let Some(host) = url.host_str() {
                let port = url.port_or_known_default().unwrap_or(80);
                if let Ok(found) = tokio::net::lookup_host((host, port)).await {
                    if let Err(refusal) = address::filter_resolved(host, found) {
                        return (
                            PageOutcome::without_text(
                                key,
                                PageStatus::Refused,
                                refusal.to_string(),
                            ),
                            String::new(),
                            None,
                        );
                    }
                }
            }
        }
        match reader.text(key).await {
            // Nothing was asked: the page is not available in this run (never
            // cached, not taken for a network outage), and its units fail naming
            // the key; a run with the key fetches it.
            Err(e @ backends::BackendError::MissingKey { .. }) => (
                PageOutcome::without_text(key, PageStatus::Unavailable, e.to_string()),
                String::new(),
                None,
            ),
            Err(e) => {
                let mut outcome = PageOutcome::without_text(key, PageStatus::Failed, e.to_string());
                match &e {
                    backends::BackendError::Request { .. } => outcome.no_response = true,
                    backends::BackendError::Status { status, .. } => {
                        outcome.http_status = Some(*status)
                    }
                    _ => outcome.http_status = Some(200),
                }
                (outcome, String::new(), None)
            }
            Ok(text) if reader.as_returned() => {
                // Serper: the page text as the service returned it, the reference's
                // page text (no blocked-page check; an empty text is an empty page).
                let size = Some(text.len() as u64);
                let mut outcome = PageOutcome::with_text(key, text.clone());
                outcome.content_type = Some("text/plain".into());
                outcome.http_status = Some(200);
                (outcome, text, size)
            }
            Ok(text) => {
                let size = Some(text.len() as u64);
                let mut outcome = classify_text(key, 200, None, text.clone(), None);
                outcome.content_type = Some("text/plain".into());
                outcome.http_status = Some(200);
                let stored = if outcome.status == PageStatus::Failed {
                    String::new()
                } else {
                    text
                };
                (outcome, stored, size)
            }
        }
    }

    /// Bytes of a remote figure image, capped at the image size limit.
    pub async fn image_bytes(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        let raw = url.trim();
        let (_, parsed) = self.allowed_url(raw)?;
        if self.inner.config.offline {
            return Err(FetchError::Offline {
                url: raw.to_string(),
            });
        }
        let fetched = self
            .get_2xx(
                raw,
                &parsed,
                self.inner.config.image_cap_bytes,
                ACCEPT_IMAGES,
            )
            .await?;
        let failed = |reason: String| FetchError::Failed {
            url: raw.to_string(),
            reason,
        };
        if let Some(ct) = &fetched.content_type {
            let media = extract::media_type(ct);
            if media.starts_with("text/") || media == "application/json" {
                return Err(failed(format!("not an image (content type {media})")));
            }
        }
        if fetched.body.is_empty() {
            return Err(failed("empty body".into()));
        }
        // Kept as fetched, so what the judges saw can be shown again offline (the
        // pictures of a `tvir rate export` study); a failed write only loses that.
        if let Err(e) = self.put_resource(raw, fetched.body.clone(), fetched.content_type.clone()) {
            tracing::warn!("remote figure cache write failed: {e}");
        }
        Ok(fetched.body)
    }

    /// The bytes stored for `url` (a remote figure a run downloaded, or a resource),
    /// without the network and without the address rules.
    pub fn cached_bytes(&self, url: &str) -> Result<Option<Vec<u8>>, FetchError> {
        let key = normalize_url(url.trim());
        Ok(self
            .inner
            .store
            .with_conn(|c| tvir_store::resources::get(c, &key))?
            .map(|row| row.body))
    }
}

fn now_unix() -> i64 {
    chrono::Utc::now().timestamp()
}

fn outcome_from_row(key: &str, row: page_cache::PageRow) -> Option<PageOutcome> {
    let status = PageStatus::parse(&row.status)?;
    Some(PageOutcome {
        url: key.to_string(),
        final_url: row.final_url,
        status,
        text: if status == PageStatus::Ok {
            row.text
        } else {
            String::new()
        },
        content_type: row.content_type,
        reason: row.error,
        from_cache: true,
        http_status: None,
        no_response: false,
    })
}

fn http_status_reason(status: u16) -> String {
    match reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
    {
        Some(reason) => format!("HTTP {status} {reason}"),
        None => format!("HTTP {status}"),
    }
}

/// Judge a complete direct response: status, content type, text, blocked checks.
/// Returns the outcome and the text to cache.
fn judge_response(fetched: http::Fetched) -> (PageOutcome, String) {
    let http::Fetched {
        final_url,
        status,
        content_type,
        body,
    } = fetched;
    let extracted = extract::extract(&body, content_type.as_deref(), Some(&final_url));
    let with_meta = |mut outcome: PageOutcome| {
        outcome.final_url = Some(final_url.clone());
        outcome.content_type = content_type.clone();
        outcome
    };
    if !(200..300).contains(&status) {
        let (title, text, markup) = match &extracted {
            Ok(x) => (x.title.as_deref(), x.text.as_str(), x.markup.as_deref()),
            Err(_) => (None, "", None),
        };
        if let Some(verdict) = blocked::detect(status, title, text, markup) {
            return (
                with_meta(PageOutcome::without_text(
                    &final_url,
                    PageStatus::Blocked,
                    format!("HTTP {status}: {}", verdict.reason()),
                )),
                text.to_string(),
            );
        }
        return (
            with_meta(PageOutcome::without_text(
                &final_url,
                PageStatus::Failed,
                http_status_reason(status),
            )),
            String::new(),
        );
    }
    match extracted {
        Err(e) => (
            with_meta(PageOutcome::without_text(
                &final_url,
                PageStatus::Failed,
                e.to_string(),
            )),
            String::new(),
        ),
        Ok(x) => {
            let outcome = classify_text(
                &final_url,
                status,
                x.title.as_deref(),
                x.text.clone(),
                x.markup.as_deref(),
            );
            let stored = if outcome.status == PageStatus::Failed {
                String::new()
            } else {
                x.text
            };
            (with_meta(outcome), stored)
        }
    }
}

/// Ok, Blocked or Failed (no text) for an extracted text.
fn classify_text(
    url: &str,
    status: u16,
    title: Option<&str>,
    text: String,
    markup: Option<&str>,
) -> PageOutcome {
    if let Some(verdict) = blocked::detect(status, title, &text, markup) {
        return PageOutcome::without_text(url, PageStatus::Blocked, verdict.reason());
    }
    if text.trim().is_empty() {
        return PageOutcome::without_text(
            url,
            PageStatus::Failed,
            "no readable text (the page may need JavaScript)".into(),
        );
    }
    PageOutcome::with_text(url, text)
}

/// Query parameters that only track clicks; dropping them merges citations of one page.
fn is_tracking_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("utm_")
        || matches!(
            name.as_str(),
            "gclid" | "fbclid" | "msclkid" | "mc_cid" | "mc_eid" | "spm" | "from_source"
        )
}

/// Normalised form of a URL used as the cache and deduplication key: scheme and host
/// lowercased, internationalised hosts in punycode, raw non-ASCII characters
/// percent-encoded, default port and `.`/`..` segments removed, fragment dropped (the
/// server never sees it, e.g. `#:~:text=` highlights), click-tracking parameters
/// (`utm_*`, `gclid`, ...) dropped. A string that does not parse as a URL is only
/// trimmed.
pub fn normalize_url(url: &str) -> String {
    let trimmed = url.trim();
    let Ok(mut parsed) = Url::parse(trimmed) else {
        return trimmed.to_string();
    };
    parsed.set_fragment(None);
    if parsed.query().is_some() {
        let kept: Vec<(String, String)> = parsed
            .query_pairs()
            .filter(|(k, _)| !is_tracking_param(k))
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let dropped_any = parsed.query_pairs().count() != kept.len();
        if kept.is_empty() {
            parsed.set_query(None);
        } else if dropped_any {
            parsed.query_pairs_mut().clear().extend_pairs(kept);
        }
    }
    parsed.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_urls() {
        assert_eq!(
            normalize_url("  HTTPS://Example.COM:443/a/./b/../c#:~:text=hello, world "),
            "https://example.com/a/c"
        );
        assert_eq!(normalize_url("http://example.com"), "http://example.com/");
        assert_eq!(
            normalize_url("https://example.com/p?id=3&utm_source=x&UTM_medium=y"),
            "https://example.com/p?id=3"
        );
        assert_eq!(
            normalize_url("https://example.com/p?utm_source=x"),
            "https://example.com/p"
        );
        // Untouched query strings keep their exact form.
        assert_eq!(
            normalize_url("https://example.com/s?q=a+b&x=%2F"),
            "https://example.com/s?q=a+b&x=%2F"
        );
        assert_eq!(
            normalize_url("https://例子.中国/新闻/一"),
            "https://xn--fsqu00a.xn--fiqs8s/%E6%96%B0%E9%97%BB/%E4%B8%80"
        );
        assert_eq!(normalize_url("not a url"), "not a url");
    }

    #[test]
    fn status_names_round_trip() {
        for status in [
            PageStatus::Ok,
            PageStatus::Blocked,
            PageStatus::Refused,
            PageStatus::Failed,
            PageStatus::Unavailable,
        ] {
            assert_eq!(PageStatus::parse(status.as_str()), Some(status));
            assert_eq!(
                serde_json::to_string(&status).unwrap(),
                format!("\"{}\"", status.as_str())
            );
        }
    }

    #[test]
    fn judged_responses() {
        let fetched = |status: u16, ct: &str, body: &str| http::Fetched {
            final_url: "https://example.com/final".into(),
            status,
            content_type: Some(ct.into()),
            body: body.as_bytes().to_vec(),
        };
        let (ok, stored) = judge_response(fetched(200, "text/plain", "Revenue grew 12%."));
        assert_eq!(ok.status, PageStatus::Ok);
        assert_eq!(ok.text, "Revenue grew 12%.");
        assert_eq!(stored, "Revenue grew 12%.");
        assert_eq!(ok.final_url.as_deref(), Some("https://example.com/final"));

        let (missing, _) = judge_response(fetched(404, "text/html", "<p>gone</p>"));
        assert_eq!(missing.status, PageStatus::Failed);
        assert_eq!(missing.reason.as_deref(), Some("HTTP 404 Not Found"));

        let (denied, _) = judge_response(fetched(403, "text/html", "<p>no</p>"));
        assert_eq!(denied.status, PageStatus::Blocked);
        assert!(denied.text.is_empty());

        let (binary, _) = judge_response(fetched(200, "application/zip", "PK"));
        assert_eq!(binary.status, PageStatus::Failed);
        assert_eq!(
            binary.reason.as_deref(),
            Some("unsupported content type `application/zip`")
        );

        let (empty, _) = judge_response(fetched(200, "text/html", "<html><body></body></html>"));
        assert_eq!(empty.status, PageStatus::Failed);
    }
}
