//! The OpenAI-compatible Files and Batch API: upload an input file (purpose
//! `batch`), create a batch, read its status, list batches (to re-attach after a
//! kill between upload and creation), download result and error files. Transient
//! failures (transport errors, 408/409/429/5xx) are retried with backoff.

use std::time::Duration;

use serde_json::{json, Value};

use crate::retry::{is_retryable_status, Backoff};

/// Attempts per API call before giving up on a transient failure.
const API_ATTEMPTS: u32 = 6;
/// Largest file accepted from the server (result files of a 50,000-request batch).
const MAX_DOWNLOAD_BYTES: usize = 1 << 30;

#[derive(Debug, Clone, thiserror::Error)]
#[error("batch API {what}: {message}")]
pub struct ApiError {
    pub what: String,
    pub message: String,
}

/// A provider batch as the API reports it (fields tvir uses).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BatchStatus {
    pub id: String,
    pub status: String,
    pub input_file_id: String,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
    /// Unix seconds.
    pub created_at: Option<i64>,
    pub in_progress_at: Option<i64>,
    /// Batch-level errors (e.g. a rejected input file), joined.
    pub errors: Option<String>,
}

impl BatchStatus {
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let n = |k: &str| {
            v.pointer(&format!("/request_counts/{k}"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let errors = v
            .pointer("/errors/data")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|e| {
                        let code = e.get("code").and_then(Value::as_str).unwrap_or("error");
                        let msg = e.get("message").and_then(Value::as_str).unwrap_or("");
                        format!("{code}: {msg}")
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            })
            .filter(|s| !s.is_empty());
        Ok(Self {
            id: s("id").ok_or("batch object without an id")?,
            status: s("status").ok_or("batch object without a status")?,
            input_file_id: s("input_file_id").unwrap_or_default(),
            output_file_id: s("output_file_id"),
            error_file_id: s("error_file_id"),
            total: n("total"),
            completed: n("completed"),
            failed: n("failed"),
            created_at: v.get("created_at").and_then(Value::as_i64),
            in_progress_at: v.get("in_progress_at").and_then(Value::as_i64),
            errors,
        })
    }

    /// No further change will happen: results (if any) can be collected.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.status.as_str(),
            "completed" | "failed" | "expired" | "cancelled"
        )
    }
}

/// A client of one server's Files and Batch endpoints.
#[derive(Clone)]
pub struct BatchApi {
    http: reqwest::Client,
    base: String,
    api_key: Option<String>,
    /// Azure takes the key as `api-key`.
    api_key_header: bool,
}

impl std::fmt::Debug for BatchApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchApi")
            .field("base", &self.base)
            .finish()
    }
}

enum Body {
    None,
    Json(Value),
    Multipart { boundary: String, bytes: Vec<u8> },
}

impl BatchApi {
    pub fn new(base_url: &str, api_key: Option<String>) -> Result<Self, ApiError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .timeout(Duration::from_secs(600))
            .user_agent(concat!("tvir-eval/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ApiError {
                what: "client".into(),
                message: e.to_string(),
            })?;
        Ok(Self {
            http,
            api_key_header: crate::protocol::uses_api_key_header(base_url),
            base: base_url.trim().trim_end_matches('/').to_string(),
            api_key,
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Body,
        what: &str,
    ) -> Result<Vec<u8>, ApiError> {
        let url = crate::protocol::endpoint_url(&self.base, path);
        let backoff = Backoff::default();
        let mut last = String::new();
        for attempt in 1..=API_ATTEMPTS {
            let mut req = self.http.request(method.clone(), &url);
            if let Some(key) = &self.api_key {
                req = if self.api_key_header {
                    req.header("api-key", key)
                } else {
                    req.bearer_auth(key)
                };
            }
            req = match &body {
                Body::None => req,
                Body::Json(v) => req.json(v),
                Body::Multipart { boundary, bytes } => req
                    .header(
                        "content-type",
                        format!("multipart/form-data; boundary={boundary}"),
                    )
                    .body(bytes.clone()),
            };
            match req.send().await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let bytes = resp.bytes().await.map(|b| b.to_vec());
                    match bytes {
                        Ok(b) if (200..300).contains(&status) => {
                            if b.len() > MAX_DOWNLOAD_BYTES {
                                return Err(ApiError {
                                    what: what.into(),
                                    message: format!(
                                        "response larger than {MAX_DOWNLOAD_BYTES} bytes"
                                    ),
                                });
                            }
                            return Ok(b);
                        }
                        Ok(b) => {
                            let text = String::from_utf8_lossy(&b);
                            last =
                                format!("HTTP {status}: {}", crate::protocol::error_message(&text));
                            if !is_retryable_status(status) {
                                break;
                            }
                        }
                        Err(e) => last = format!("reading the response: {}", e.without_url()),
                    }
                }
                Err(e) => last = format!("{}: {}", url, e.without_url()),
            }
            if attempt < API_ATTEMPTS {
                tokio::time::sleep(backoff.delay(attempt, rand::random())).await;
            }
        }
        Err(ApiError {
            what: what.into(),
            message: last,
        })
    }

    async fn call_json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Body,
        what: &str,
    ) -> Result<Value, ApiError> {
        let bytes = self.call(method, path, body, what).await?;
        serde_json::from_slice(&bytes).map_err(|e| ApiError {
            what: what.into(),
            message: format!("response is not JSON: {e}"),
        })
    }

    /// `POST /files` (multipart, purpose `batch`): the new file's id.
    pub async fn upload(&self, filename: &str, jsonl: &[u8]) -> Result<String, ApiError> {
        let boundary = format!("tvir-{:016x}", rand::random::<u64>());
        let mut bytes = Vec::with_capacity(jsonl.len() + 512);
        bytes.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
                 --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
                 Content-Type: application/jsonl\r\n\r\n"
            )
            .as_bytes(),
        );
        bytes.extend_from_slice(jsonl);
        bytes.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let v = self
            .call_json(
                reqwest::Method::POST,
                "/files",
                Body::Multipart { boundary, bytes },
                "file upload",
            )
            .await?;
        v.get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ApiError {
                what: "file upload".into(),
                message: "the response has no file id".into(),
            })
    }

    /// `POST /batches`.
    pub async fn create(
        &self,
        input_file_id: &str,
        completion_window: &str,
        metadata: Value,
    ) -> Result<BatchStatus, ApiError> {
        let v = self
            .call_json(
                reqwest::Method::POST,
                "/batches",
                Body::Json(json!({
                    "input_file_id": input_file_id,
                    "endpoint": "/v1/chat/completions",
                    "completion_window": completion_window,
                    "metadata": metadata,
                })),
                "batch creation",
            )
            .await?;
        BatchStatus::from_json(&v).map_err(|message| ApiError {
            what: "batch creation".into(),
            message,
        })
    }

    /// `GET /batches/{id}`.
    pub async fn get(&self, id: &str) -> Result<BatchStatus, ApiError> {
        let what = format!("batch {id}");
        let v = self
            .call_json(
                reqwest::Method::GET,
                &format!("/batches/{id}"),
                Body::None,
                &what,
            )
            .await?;
        BatchStatus::from_json(&v).map_err(|message| ApiError { what, message })
    }

    /// The batch created from `input_file_id`, if any (`GET /batches`, paged).
    pub async fn find_by_input_file(
        &self,
        input_file_id: &str,
    ) -> Result<Option<BatchStatus>, ApiError> {
        let mut after: Option<String> = None;
        for _ in 0..100 {
            let path = match &after {
                Some(a) => format!("/batches?limit=100&after={a}"),
                None => "/batches?limit=100".to_string(),
            };
            let v = self
                .call_json(reqwest::Method::GET, &path, Body::None, "batch list")
                .await?;
            let data = v
                .get("data")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for item in &data {
                if item.get("input_file_id").and_then(Value::as_str) == Some(input_file_id) {
                    return BatchStatus::from_json(item)
                        .map(Some)
                        .map_err(|message| ApiError {
                            what: "batch list".into(),
                            message,
                        });
                }
            }
            let more = v.get("has_more").and_then(Value::as_bool).unwrap_or(false);
            after = data
                .last()
                .and_then(|d| d.get("id"))
                .and_then(Value::as_str)
                .map(str::to_string);
            if !more || after.is_none() {
                break;
            }
        }
        Ok(None)
    }

    /// `GET /files/{id}/content`.
    pub async fn file_content(&self, id: &str) -> Result<Vec<u8>, ApiError> {
        self.call(
            reqwest::Method::GET,
            &format!("/files/{id}/content"),
            Body::None,
            &format!("file {id}"),
        )
        .await
    }
}
