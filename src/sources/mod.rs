//! Fetching cited source pages and remote figure images: address safety rules,
//! readable-text extraction, blocked-page detection, persistent cache.

use serde::{Deserialize, Serialize};

use crate::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Direct,
    Serper,
    Jina,
}

#[derive(Debug, Clone)]
pub struct FetchConfig {
    pub backend: Backend,
    pub allow_private: bool,
    /// No network at all: only the cache and `sources_file`.
    pub offline: bool,
    /// Ignore cached pages and fetch again.
    pub refresh: bool,
    /// JSONL of pre-fetched pages `{"url", "text"}`, used instead of the network.
    pub sources_file: Option<std::path::PathBuf>,
    pub page_cap_bytes: u64,
    pub image_cap_bytes: u64,
    pub connect_timeout: std::time::Duration,
    pub total_timeout: std::time::Duration,
    pub concurrency: usize,
    pub per_host_concurrency: usize,
    pub max_attempts: u32,
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
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// What a judge may read for one URL. `text` is empty unless `status` is `Ok`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageOutcome {
    pub url: String,
    pub final_url: Option<String>,
    pub status: PageStatus,
    pub text: String,
    pub content_type: Option<String>,
    pub reason: Option<String>,
    pub from_cache: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{url}: {reason}")]
    Failed { url: String, reason: String },
}

/// Shared by every stage that needs anything remote. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Fetcher {
    _config: FetchConfig,
    _store: Option<Store>,
}

impl Fetcher {
    pub fn new(config: FetchConfig, store: Option<Store>) -> Result<Self, FetchError> {
        Ok(Self {
            _config: config,
            _store: store,
        })
    }

    /// Readable text of a cited page (cached; deduplicated by normalised URL).
    pub async fn page(&self, url: &str) -> PageOutcome {
        PageOutcome {
            url: url.into(),
            final_url: None,
            status: PageStatus::Failed,
            text: String::new(),
            content_type: None,
            reason: Some("fetcher not implemented yet".into()),
            from_cache: false,
        }
    }

    /// Bytes of a remote figure image, capped at the image size limit.
    pub async fn image_bytes(&self, url: &str) -> Result<Vec<u8>, FetchError> {
        Err(FetchError::Failed {
            url: url.into(),
            reason: "fetcher not implemented yet".into(),
        })
    }
}

/// Normalised form of a URL used as the cache and deduplication key.
pub fn normalize_url(url: &str) -> String {
    url.trim().to_string()
}
