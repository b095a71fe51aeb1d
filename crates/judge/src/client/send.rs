//! One HTTP exchange with the judge server: auth header, timeout, a bounded
//! response body, and transport failures described for the retry log.

use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::Inner;

/// Largest response body accepted from a judge server.
const MAX_RESPONSE_BYTES: usize = 16 << 20;

pub(super) enum Reply {
    Http {
        status: u16,
        headers: HeaderMap,
        body: Vec<u8>,
    },
    Transport {
        reason: String,
        timed_out: bool,
        /// No connection was made (refused, no route, name not resolved, connect
        /// time-out): the server never saw the request.
        refused: bool,
    },
}

impl Inner {
    /// One HTTP exchange; the caller holds a slot of `concurrency`.
    pub(super) async fn send(&self, body: &Value, timeout: Duration) -> Reply {
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_in_flight.fetch_max(now, Ordering::Relaxed);
        let reply = self.send_inner(body, timeout).await;
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        reply
    }

    pub(super) async fn send_inner(&self, body: &Value, timeout: Duration) -> Reply {
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
            let refused = e.is_connect();
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
            Reply::Transport {
                reason,
                timed_out,
                refused,
            }
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
                refused: false,
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
                            refused: false,
                        };
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return describe(e),
            }
        }
        self.reach.on_reply();
        Reply::Http {
            status,
            headers,
            body: bytes,
        }
    }
}
