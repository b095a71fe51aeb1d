//! The network seam: remote pages and figure bytes as the engine asks for them,
//! with [`Fetcher`] as the real implementation and tests free to substitute one.

use futures::future::BoxFuture;
use futures::FutureExt;

use tvir_sources::{Fetcher, PageOutcome};

/// Remote pages and images as the pipeline sees them (`Fetcher` is the real one).
pub trait Pages: Send + Sync {
    fn page<'a>(&'a self, url: &'a str) -> BoxFuture<'a, PageOutcome>;
    fn image_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>>;

    /// Bytes of a remote figure, telling a broken figure (refused address, HTTP
    /// 404, not an image) from one that was simply not fetched (`--offline`, a
    /// transient network failure). By default every failure is a broken figure.
    fn figure_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, FigureFailure>> {
        Box::pin(
            self.image_bytes(url)
                .map(|r| r.map_err(|e| FigureFailure::Broken(format!("broken link: {e}")))),
        )
    }

    /// Raw bytes and content type of a script, style sheet or font a rendered page
    /// loads. By default none is available.
    fn resource<'a>(
        &'a self,
        url: &'a str,
        accept: &'a str,
    ) -> BoxFuture<'a, Result<ResourceBytes, ResourceFailure>> {
        let _ = accept;
        Box::pin(async move {
            Err(ResourceFailure::Failed(format!(
                "{url}: no resource fetcher in this run"
            )))
        })
    }
}

/// A resource's bytes and content type.
pub type ResourceBytes = (Vec<u8>, Option<String>);

/// Why a page's script, style sheet or font was not given to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceFailure {
    /// Offline and not in the cache: the remedy is `tvir cache put URL FILE`.
    Missing(String),
    /// Refused by the address rules (loopback, private, link-local, bad scheme).
    Refused(String),
    /// The fetch failed (HTTP error, too large, network).
    Failed(String),
}

impl ResourceFailure {
    pub fn reason(&self) -> &str {
        match self {
            ResourceFailure::Missing(r)
            | ResourceFailure::Refused(r)
            | ResourceFailure::Failed(r) => r,
        }
    }
}

/// Why a figure has no usable bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FigureFailure {
    /// A property of the report: missing file, refused or dead link, not an image.
    /// Scores 0 where METRICS.md says so.
    Broken(String),
    /// Not fetched in this run (`--offline`, a transient failure): its units are
    /// skipped and the metrics they feed are not evaluated.
    Unavailable(String),
}

impl Pages for Fetcher {
    fn page<'a>(&'a self, url: &'a str) -> BoxFuture<'a, PageOutcome> {
        Box::pin(Fetcher::page(self, url))
    }
    fn resource<'a>(
        &'a self,
        url: &'a str,
        accept: &'a str,
    ) -> BoxFuture<'a, Result<ResourceBytes, ResourceFailure>> {
        Box::pin(Fetcher::resource(self, url, accept).map(|r| {
            r.map_err(|e| match &e {
                tvir_sources::FetchError::Offline { .. } => ResourceFailure::Missing(e.to_string()),
                tvir_sources::FetchError::Refused { .. } => ResourceFailure::Refused(e.to_string()),
                _ => ResourceFailure::Failed(e.to_string()),
            })
        }))
    }
    fn image_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(Fetcher::image_bytes(self, url).map(|r| r.map_err(|e| e.to_string())))
    }
    fn figure_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, FigureFailure>> {
        Box::pin(Fetcher::image_bytes(self, url).map(|r| {
            r.map_err(|e| match &e {
                tvir_sources::FetchError::Offline { .. } => {
                    FigureFailure::Unavailable(format!("remote figure not fetched: {e}"))
                }
                tvir_sources::FetchError::Failed { reason, .. } if transient(reason) => {
                    FigureFailure::Unavailable(format!(
                        "remote figure not fetched (transient failure): {e}"
                    ))
                }
                _ => FigureFailure::Broken(format!("broken link: {e}")),
            })
        }))
    }
}

/// Failures that say nothing about the figure: timeouts, connection errors, server
/// errors and rate limits (the fetcher's own wording).
fn transient(reason: &str) -> bool {
    reason.starts_with("timed out")
        || reason.starts_with("connection failed")
        || reason.starts_with("request failed")
        || reason.starts_with("HTTP 5")
        || reason.starts_with("HTTP 429")
        || reason.starts_with("HTTP 408")
}
