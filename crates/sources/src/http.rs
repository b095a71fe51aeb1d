//! The direct HTTP layer: one reqwest client with the safety rules wired in (DNS
//! resolver, redirect policy, literal-IP checks), a global and a per-host concurrency
//! limit, bounded bodies and retries for transient errors.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, ACCEPT_LANGUAGE, CONTENT_TYPE, RETRY_AFTER};
use tokio::sync::Semaphore;
use url::Url;

use super::address::{check_url, find_refusal, Refusal, SafeResolver};
use super::FetchConfig;

/// A desktop browser's User-Agent: many sites serve bots a stub or a challenge.
pub const BROWSER_USER_AGENT: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) \
AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// Longest server-requested wait (`Retry-After`) we honour before giving up.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// A complete response (any status), body within the cap.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub final_url: String,
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HttpFailure {
    #[error("{0}")]
    Refused(Refusal),
    #[error("body larger than the {limit}-byte cap")]
    TooLarge { limit: u64 },
    #[error("too many redirects (more than {0})")]
    TooManyRedirects(usize),
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("connection failed: {0}")]
    Connect(String),
    #[error("request failed: {0}")]
    Other(String),
}

impl HttpFailure {
    fn is_transient(&self) -> bool {
        matches!(
            self,
            HttpFailure::Timeout(_) | HttpFailure::Connect(_) | HttpFailure::Other(_)
        )
    }
}

/// The redirect policy's own error, so it can be told apart from other failures.
#[derive(Debug, thiserror::Error)]
#[error("more than {0} redirects")]
struct RedirectLimit(usize);

#[derive(Debug)]
pub struct HttpLayer {
    client: reqwest::Client,
    global: Arc<Semaphore>,
    per_host: Mutex<HashMap<String, Arc<Semaphore>>>,
    per_host_limit: usize,
    max_attempts: u32,
    total_timeout: Duration,
    allow_private: bool,
    exempt: Vec<SocketAddr>,
    max_redirects: usize,
}

impl HttpLayer {
    pub fn new(config: &FetchConfig) -> Result<Self, reqwest::Error> {
        let allow_private = config.allow_private;
        let exempt = config.exempt_addrs.clone();
        let max_redirects = config.max_redirects;
        let policy_exempt = exempt.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            // `previous` starts with the original URL, so it holds one entry per hop.
            if attempt.previous().len() > max_redirects {
                return attempt.error(RedirectLimit(max_redirects));
            }
            match check_url(attempt.url(), allow_private, &policy_exempt) {
                Ok(()) => attempt.follow(),
                Err(refusal) => attempt.error(refusal),
            }
        });
        let mut headers = HeaderMap::new();
        headers.insert(
            ACCEPT_LANGUAGE,
            HeaderValue::from_static("en-US,en;q=0.9,zh-CN;q=0.8,zh;q=0.7"),
        );
        let mut builder = reqwest::Client::builder()
            .user_agent(config.user_agent.clone())
            .default_headers(headers)
            .connect_timeout(config.connect_timeout)
            .timeout(config.total_timeout)
            .redirect(policy)
            .gzip(true)
            .brotli(true)
            .pool_max_idle_per_host(config.per_host_concurrency.max(1));
        if !allow_private {
            // Every lookup goes through the rules; a proxy would resolve and connect
            // on our behalf, beyond their reach, so none is used.
            builder = builder.dns_resolver(SafeResolver).no_proxy();
        }
        Ok(Self {
            client: builder.build()?,
            global: Arc::new(Semaphore::new(config.concurrency.max(1))),
            per_host: Mutex::new(HashMap::new()),
            per_host_limit: config.per_host_concurrency.max(1),
            max_attempts: config.max_attempts.max(1),
            total_timeout: config.total_timeout,
            allow_private,
            exempt,
            max_redirects,
        })
    }

    /// Pre-request check (scheme and literal addresses) with this layer's rules.
    pub fn check(&self, url: &Url) -> Result<(), Refusal> {
        check_url(url, self.allow_private, &self.exempt)
    }

    fn host_limit(&self, host: &str) -> Arc<Semaphore> {
        let mut map = self.per_host.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(host.to_ascii_lowercase())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_host_limit)))
            .clone()
    }

    /// GET `url` with retries for timeouts, connection errors, 429 and 5xx.
    /// Any final HTTP status is returned as `Ok`; the caller judges it.
    pub async fn get(&self, url: &Url, cap: u64, accept: &str) -> Result<Fetched, HttpFailure> {
        self.check(url).map_err(HttpFailure::Refused)?;
        // One limit per origin (host and port): what a server sees as one client.
        let origin = format!(
            "{}:{}",
            url.host_str().unwrap_or(""),
            url.port_or_known_default().unwrap_or(0)
        );
        let host_limit = self.host_limit(&origin);
        // Host first: a request queued behind a busy host must not hold one of the
        // global slots other hosts could use. Semaphores are never closed, so
        // acquire cannot fail.
        let _host = host_limit.acquire().await.ok();
        let _global = self.global.acquire().await.ok();
        let mut attempt = 1;
        loop {
            let last = attempt >= self.max_attempts;
            match self.once(url, cap, accept).await {
                Ok((fetched, retry_after)) => {
                    let retryable =
                        fetched.status == 429 || matches!(fetched.status, 500 | 502 | 503 | 504);
                    if !retryable || last {
                        return Ok(fetched);
                    }
                    match retry_after {
                        Some(wait) if wait > MAX_RETRY_AFTER => return Ok(fetched),
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => tokio::time::sleep(backoff(attempt)).await,
                    }
                }
                Err(failure) => {
                    if last || !failure.is_transient() {
                        return Err(failure);
                    }
                    tokio::time::sleep(backoff(attempt)).await;
                }
            }
            attempt += 1;
        }
    }

    async fn once(
        &self,
        url: &Url,
        cap: u64,
        accept: &str,
    ) -> Result<(Fetched, Option<Duration>), HttpFailure> {
        let mut response = self
            .client
            .get(url.clone())
            .header(ACCEPT, accept)
            .send()
            .await
            .map_err(|e| self.classify(&e))?;
        let final_url = response.url().to_string();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        if let Some(len) = response.content_length() {
            if len > cap {
                return Err(HttpFailure::TooLarge { limit: cap });
            }
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.classify(&e))? {
            if body.len() as u64 + chunk.len() as u64 > cap {
                return Err(HttpFailure::TooLarge { limit: cap });
            }
            body.extend_from_slice(&chunk);
        }
        Ok((
            Fetched {
                final_url,
                status,
                content_type,
                body,
            },
            retry_after,
        ))
    }

    fn classify(&self, err: &reqwest::Error) -> HttpFailure {
        if let Some(refusal) = find_refusal(err) {
            return HttpFailure::Refused(refusal);
        }
        if has_source::<RedirectLimit>(err) {
            return HttpFailure::TooManyRedirects(self.max_redirects);
        }
        // A connect time-out is a connection failure (no host answered), not a slow
        // page.
        if err.is_connect() {
            return HttpFailure::Connect(root_cause(err));
        }
        if err.is_timeout() {
            return HttpFailure::Timeout(self.total_timeout);
        }
        HttpFailure::Other(root_cause(err))
    }
}

fn has_source<E: std::error::Error + 'static>(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(err);
    while let Some(e) = current {
        if e.is::<E>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// The innermost error's message: it names the cause ("Connection refused") without
/// the URL, so failures group by reason across pages.
pub fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// Exponential backoff with jitter: about 0.5 s, 1 s, 2 s, ... capped at 8 s.
fn backoff(attempt: u32) -> Duration {
    let base = 500u64.saturating_mul(1 << attempt.saturating_sub(1).min(4));
    let jitter = rand::random_range(0..=base / 4);
    Duration::from_millis(base + jitter)
}

/// `Retry-After` as seconds or an HTTP date.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        assert_eq!(parse_retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(
            backoff(1) >= Duration::from_millis(500) && backoff(1) <= Duration::from_millis(625)
        );
        assert!(backoff(3) >= Duration::from_millis(2000));
        assert!(backoff(30) <= Duration::from_millis(10_000));
    }
}
