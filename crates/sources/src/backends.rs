//! Third-party page readers: Serper's scrape endpoint (what the reference evaluator
//! uses) and Jina Reader. Both return text they extracted themselves. Serper's
//! `text` is used as returned (the reference's page text: no blocked-page check, no
//! Markdown preferred); the fetcher still applies its blocked-page checks to Jina's.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};

pub const DEFAULT_SERPER_BASE_URL: &str = "https://scrape.serper.dev";
pub const DEFAULT_JINA_BASE_URL: &str = "https://r.jina.ai";

/// An API key: never printed, never stored.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Option<Self> {
        let key = key.into().trim().to_string();
        (!key.is_empty()).then_some(Self(key))
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BackendError {
    #[error("{service} answered HTTP {status}: {detail}")]
    Status {
        service: &'static str,
        status: u16,
        detail: String,
    },
    #[error("{service} request failed: {detail}")]
    Request {
        service: &'static str,
        detail: String,
    },
    #[error("{service} answer unreadable: {detail}")]
    Answer {
        service: &'static str,
        detail: String,
    },
    #[error("{service} answer larger than the {limit}-byte cap")]
    TooLarge { service: &'static str, limit: u64 },
    /// The service needs a key that was not given: only the pages really to be
    /// fetched fail (an offline or sources-file run never asks for it).
    #[error("--fetcher {service} needs {variable} to fetch this page (not set)")]
    MissingKey {
        service: &'static str,
        variable: &'static str,
    },
}

/// A configured reader service.
#[derive(Debug, Clone)]
pub enum Reader {
    Serper {
        base_url: String,
        /// None: no key was given; a page to fetch then fails naming the variable.
        key: Option<ApiKey>,
    },
    Jina {
        base_url: String,
        key: Option<ApiKey>,
    },
}

impl Reader {
    /// Whether the text is the page text as the service returns it, unchecked
    /// (Serper, as the reference evaluator reads it).
    pub fn as_returned(&self) -> bool {
        matches!(self, Reader::Serper { .. })
    }

    fn service(&self) -> &'static str {
        match self {
            Reader::Serper { .. } => "serper",
            Reader::Jina { .. } => "jina",
        }
    }
}

/// Client for a reader service. The service address is the operator's choice, so the
/// private-address rules (which guard the cited URLs) do not apply to it.
#[derive(Debug)]
pub struct ReaderClient {
    reader: Reader,
    client: reqwest::Client,
    cap: u64,
    /// The missing-key warning is said once per run, not once per page.
    missing_key_said: AtomicBool,
}

impl ReaderClient {
    pub fn new(
        reader: Reader,
        connect_timeout: Duration,
        total_timeout: Duration,
        cap: u64,
    ) -> Result<Self, reqwest::Error> {
        // Readers fetch, render and extract: allow them more time than a direct GET.
        let client = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .timeout(total_timeout * 2)
            .build()?;
        Ok(Self {
            reader,
            client,
            cap,
            missing_key_said: AtomicBool::new(false),
        })
    }

    /// Whether [`Self::text`] is used as returned (see [`Reader::as_returned`]).
    pub fn as_returned(&self) -> bool {
        self.reader.as_returned()
    }

    /// Text of `url` as the service extracted it.
    pub async fn text(&self, url: &str) -> Result<String, BackendError> {
        let service = self.reader.service();
        let request = match &self.reader {
            Reader::Serper { base_url, key } => {
                let Some(key) = key else {
                    if !self.missing_key_said.swap(true, Ordering::Relaxed) {
                        tracing::warn!(
                            "--fetcher serper: SERPER_API_KEY is not set; pages to fetch fail \
                             (pages from the cache or --sources are not affected)"
                        );
                    }
                    return Err(BackendError::MissingKey {
                        service,
                        variable: "SERPER_API_KEY",
                    });
                };
                let mut headers = HeaderMap::new();
                headers.insert(
                    "X-API-KEY",
                    HeaderValue::from_str(key.expose()).map_err(|_| BackendError::Request {
                        service,
                        detail: "SERPER_API_KEY holds characters not allowed in a header".into(),
                    })?,
                );
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                self.client
                    .post(base_url.as_str())
                    .headers(headers)
                    .body(serde_json::json!({ "url": url }).to_string())
            }
            Reader::Jina { base_url, key } => {
                let target = format!("{}/{}", base_url.trim_end_matches('/'), url);
                let mut request = self
                    .client
                    .get(target)
                    .header(ACCEPT, "text/plain")
                    .header("X-Return-Format", "text");
                if let Some(key) = key {
                    request = request.header(AUTHORIZATION, format!("Bearer {}", key.expose()));
                }
                request
            }
        };
        let mut response = request.send().await.map_err(|e| BackendError::Request {
            service,
            detail: super::http::root_cause(&e),
        })?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| BackendError::Request {
            service,
            detail: super::http::root_cause(&e),
        })? {
            if body.len() as u64 + chunk.len() as u64 > self.cap {
                return Err(BackendError::TooLarge {
                    service,
                    limit: self.cap,
                });
            }
            body.extend_from_slice(&chunk);
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        if !(200..300).contains(&status) {
            let detail: String = body.trim().chars().take(200).collect();
            return Err(BackendError::Status {
                service,
                status,
                detail,
            });
        }
        match &self.reader {
            Reader::Serper { .. } => serper_text(&body),
            Reader::Jina { .. } => Ok(body.trim().to_string()),
        }
    }
}

/// Serper's scrape answer is JSON with the page text in `text` (and sometimes
/// `markdown`): `text`, as returned, is what the reference evaluator shows its
/// judges (an answer without it gives an empty page, as there).
fn serper_text(body: &str) -> Result<String, BackendError> {
    let value: serde_json::Value =
        serde_json::from_str(body).map_err(|e| BackendError::Answer {
            service: "serper",
            detail: e.to_string(),
        })?;
    if !value.is_object() {
        return Err(BackendError::Answer {
            service: "serper",
            detail: "not a JSON object".into(),
        });
    }
    Ok(value
        .get("text")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_is_redacted() {
        let key = ApiKey::new("sk-secret-123").unwrap();
        assert!(!format!("{key:?}").contains("secret"));
        assert_eq!(ApiKey::new("  "), None);
    }

    #[test]
    fn serper_answers() {
        // `text` as returned, even beside `markdown` (the former rule preferred the
        // Markdown and trimmed): the reference's page text.
        assert_eq!(
            serper_text(r##"{"text": " plain\n", "markdown": "# Title\nbody"}"##).unwrap(),
            " plain\n"
        );
        assert_eq!(serper_text(r##"{"markdown": "# T"}"##).unwrap(), "");
        assert_eq!(serper_text(r#"{"metadata": {}}"#).unwrap(), "");
        assert!(serper_text("[1]").is_err());
        assert!(serper_text("not json").is_err());
    }
}
