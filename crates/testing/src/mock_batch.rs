//! The mock judge's Files and Batch API (OpenAI-compatible): uploads, batch
//! creation, status progression, result and error files. Lines are answered with
//! the same logic as live chat completions (responder, token counts, prefix cache).
//!
//! Every `GET /v1/batches/{id}` moves a batch along `validating` ->
//! `in_progress` -> `completed` ([`MockBatchConfig::polls_per_stage`] reads per
//! stage); the lines are answered when it completes. Scripted trouble:
//! [`MockBatchConfig::fail_first_lines`] (HTTP 500 lines in the error file),
//! [`MockBatchConfig::invalid_first_answers`] (answers that break the schema),
//! [`MockBatchConfig::expire_batches`] (the batch expires with half its lines
//! answered; the rest go to the error file as `batch_expired`) and
//! [`MockBatchConfig::fail_batches`] (rejected at validation, no files).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use crate::mock_chat::{completion, MockState};
// The settings moved to `mock_config`; kept reachable under their old path.
use crate::mock_config::Fault;
pub use crate::mock_config::MockBatchConfig;

/// What the batch endpoints saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchStats {
    pub uploads: u64,
    pub batches_created: u64,
    pub status_reads: u64,
    /// `custom_id` of every line of every created batch, in order (a request
    /// submitted twice appears twice).
    pub submitted: Vec<String>,
    /// Lines answered normally (valid or not), failed, expired.
    pub answered_lines: u64,
    pub failed_lines: u64,
    pub expired_lines: u64,
}

struct MockBatch {
    object: Value,
    lines: Vec<Value>,
    reads: u32,
    ordinal: usize,
}

#[derive(Default)]
pub struct BatchState {
    files: Mutex<HashMap<String, Vec<u8>>>,
    batches: Mutex<BTreeMap<String, MockBatch>>,
    stats: Mutex<BatchStats>,
    /// Lines processed so far (for the scripted failures).
    line_counter: Mutex<(u64, u64)>,
}

impl BatchState {
    pub fn stats(&self) -> BatchStats {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    fn store_file(&self, bytes: Vec<u8>) -> String {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let id = format!("file-mock{:04}", files.len() + 1);
        files.insert(id.clone(), bytes);
        id
    }
}

/// What the batch handlers share: the chat side's state (config, answers, stats)
/// and the files and batches created so far.
pub(crate) struct BatchServer {
    judge: Arc<MockState>,
    batch: Arc<BatchState>,
}

/// The Files and Batch routes, served beside the chat route.
pub(crate) fn routes(judge: Arc<MockState>, batch: Arc<BatchState>) -> Router {
    Router::new()
        // Input files are large (OpenAI accepts up to 200 MB).
        .route(
            "/v1/files",
            post(upload).layer(axum::extract::DefaultBodyLimit::max(256 << 20)),
        )
        .route("/v1/files/{id}/content", get(file_content))
        .route("/v1/batches", post(create).get(list))
        .route("/v1/batches/{id}", get(retrieve))
        .with_state(Arc::new(BatchServer { judge, batch }))
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}})),
    )
        .into_response()
}

fn unauthorized(state: &BatchServer, headers: &HeaderMap) -> Option<Response> {
    let key = state.judge.config.api_key.as_ref()?;
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
    (auth != Some(format!("Bearer {key}").as_str()))
        .then(|| error(StatusCode::UNAUTHORIZED, "Incorrect API key provided"))
}

/// The `file` part of a multipart body (and whether `purpose` was `batch`).
fn multipart_file(headers: &HeaderMap, body: &[u8]) -> Result<Vec<u8>, String> {
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = ct
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))
        .ok_or("not multipart/form-data")?
        .trim_matches('"');
    let delim = format!("--{boundary}");
    let text = body;
    let mut file = None;
    let mut purpose = None;
    let find = |hay: &[u8], needle: &[u8], from: usize| {
        hay[from..]
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    };
    let mut pos = find(text, delim.as_bytes(), 0).ok_or("no multipart boundary")?;
    loop {
        let start = pos + delim.len();
        if text[start..].starts_with(b"--") {
            break;
        }
        let head_end = find(text, b"\r\n\r\n", start).ok_or("malformed part")?;
        let head = String::from_utf8_lossy(&text[start..head_end]).to_string();
        let next =
            find(text, format!("\r\n{delim}").as_bytes(), head_end).ok_or("unterminated part")?;
        let content = &text[head_end + 4..next];
        if head.contains("name=\"file\"") {
            file = Some(content.to_vec());
        } else if head.contains("name=\"purpose\"") {
            purpose = Some(String::from_utf8_lossy(content).to_string());
        }
        pos = next + 2;
    }
    if purpose.as_deref() != Some("batch") {
        return Err("purpose must be \"batch\"".into());
    }
    file.ok_or_else(|| "no file part".into())
}

async fn upload(
    State(state): State<Arc<BatchServer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = unauthorized(&state, &headers) {
        return r;
    }
    let bytes = match multipart_file(&headers, &body) {
        Ok(b) => b,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e),
    };
    let size = bytes.len();
    let id = state.batch.store_file(bytes);
    state
        .batch
        .stats
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .uploads += 1;
    axum::Json(
        json!({"id": id, "object": "file", "bytes": size, "purpose": "batch",
                      "filename": "input.jsonl", "created_at": 0}),
    )
    .into_response()
}

async fn file_content(
    State(state): State<Arc<BatchServer>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = unauthorized(&state, &headers) {
        return r;
    }
    match state
        .batch
        .files
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&id)
    {
        Some(b) => (StatusCode::OK, b.clone()).into_response(),
        None => error(StatusCode::NOT_FOUND, &format!("No such File object: {id}")),
    }
}

async fn create(
    State(state): State<Arc<BatchServer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(r) = unauthorized(&state, &headers) {
        return r;
    }
    let Ok(req) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "request body is not JSON");
    };
    let file_id = req["input_file_id"].as_str().unwrap_or("");
    if req["endpoint"] != "/v1/chat/completions" {
        return error(
            StatusCode::BAD_REQUEST,
            "endpoint must be /v1/chat/completions",
        );
    }
    let window = req["completion_window"].as_str().unwrap_or("");
    if window.is_empty() {
        return error(StatusCode::BAD_REQUEST, "completion_window is required");
    }
    let Some(bytes) = state
        .batch
        .files
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(file_id)
        .cloned()
    else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("No such File object: {file_id}"),
        );
    };
    let mut lines = Vec::new();
    let mut problems = Vec::new();
    for (i, l) in bytes.split(|&b| b == b'\n').enumerate() {
        if l.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(l) {
            Ok(v) if v["custom_id"].is_string() && v["method"] == "POST" && v["url"] == "/v1/chat/completions" && v["body"].is_object() => lines.push(v),
            _ => problems.push(json!({"code": "invalid_request", "line": i + 1, "message": "not a valid batch request line"})),
        }
    }
    let mut batches = state
        .batch
        .batches
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let ordinal = batches.len() + 1;
    let id = format!("batch_mock{ordinal:04}");
    let rejected = !problems.is_empty() || state.judge.config.batch.fail_batches.contains(&ordinal);
    if rejected && problems.is_empty() {
        problems.push(json!({"code": "invalid_request", "line": null, "message": "scripted rejection of this batch"}));
    }
    let object = json!({
        "id": id, "object": "batch", "endpoint": "/v1/chat/completions",
        "input_file_id": file_id, "completion_window": window,
        "status": if rejected { "failed" } else { "validating" },
        "output_file_id": null, "error_file_id": null,
        "errors": if rejected { json!({"object": "list", "data": problems}) } else { Value::Null },
        "created_at": chrono::Utc::now().timestamp(), "in_progress_at": null,
        "request_counts": {"total": lines.len(), "completed": 0, "failed": 0},
        "metadata": req.get("metadata").cloned().unwrap_or(Value::Null),
    });
    {
        let mut stats = state.batch.stats.lock().unwrap_or_else(|p| p.into_inner());
        stats.batches_created += 1;
        if !rejected {
            stats.submitted.extend(
                lines
                    .iter()
                    .filter_map(|l| l["custom_id"].as_str().map(str::to_string)),
            );
        }
    }
    batches.insert(
        id,
        MockBatch {
            object: object.clone(),
            lines,
            reads: 0,
            ordinal,
        },
    );
    axum::Json(object).into_response()
}

async fn retrieve(
    State(state): State<Arc<BatchServer>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = unauthorized(&state, &headers) {
        return r;
    }
    state
        .batch
        .stats
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .status_reads += 1;
    let mut batches = state
        .batch
        .batches
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let Some(b) = batches.get_mut(&id) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("No such Batch object: {id}"),
        );
    };
    advance(&state, b);
    axum::Json(b.object.clone()).into_response()
}

#[derive(serde::Deserialize)]
struct ListQuery {
    limit: Option<usize>,
    after: Option<String>,
}

async fn list(
    State(state): State<Arc<BatchServer>>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Response {
    if let Some(r) = unauthorized(&state, &headers) {
        return r;
    }
    let batches = state
        .batch
        .batches
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    // Most recent first, like OpenAI.
    let all: Vec<&MockBatch> = batches.values().rev().collect();
    let start = match &q.after {
        Some(a) => all
            .iter()
            .position(|b| b.object["id"] == a.as_str())
            .map_or(all.len(), |p| p + 1),
        None => 0,
    };
    let limit = q.limit.unwrap_or(20).clamp(1, 100);
    let page: Vec<Value> = all
        .iter()
        .skip(start)
        .take(limit)
        .map(|b| b.object.clone())
        .collect();
    let has_more = start + page.len() < all.len();
    axum::Json(json!({"object": "list", "data": page, "has_more": has_more})).into_response()
}

fn advance(state: &BatchServer, b: &mut MockBatch) {
    let status = b.object["status"].as_str().unwrap_or("").to_string();
    if !matches!(status.as_str(), "validating" | "in_progress") {
        return;
    }
    b.reads += 1;
    let per = state.judge.config.batch.polls_per_stage.max(1);
    if b.reads < per {
        return;
    }
    if status == "validating" {
        b.object["status"] = json!("in_progress");
        b.object["in_progress_at"] = json!(chrono::Utc::now().timestamp());
        b.reads = 0;
        return;
    }
    finish(state, b);
}

fn finish(state: &BatchServer, b: &mut MockBatch) {
    let cfg = &state.judge.config.batch;
    let expire = cfg.expire_batches.contains(&b.ordinal);
    let cut = if expire {
        b.lines.len() / 2
    } else {
        b.lines.len()
    };
    let mut out = Vec::new();
    let mut errs = Vec::new();
    let (mut answered, mut failed, mut expired) = (0u64, 0u64, 0u64);
    for (i, line) in b.lines.iter().enumerate() {
        let custom_id = line["custom_id"].clone();
        let req_id = format!(
            "{}_req_{}",
            b.object["id"].as_str().unwrap_or("batch"),
            i + 1
        );
        if i >= cut {
            expired += 1;
            errs.push(json!({"id": req_id, "custom_id": custom_id, "response": null,
                "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}}));
            continue;
        }
        let (fail, invalid) = {
            let mut c = state
                .batch
                .line_counter
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            c.0 += 1;
            let fail = c.0 <= cfg.fail_first_lines;
            if !fail {
                c.1 += 1;
            }
            (fail, !fail && c.1 <= cfg.invalid_first_answers)
        };
        if fail {
            failed += 1;
            errs.push(json!({"id": req_id, "custom_id": custom_id,
                "response": {"status_code": 500, "request_id": req_id,
                             "body": {"error": {"message": "The server had an error while processing your request", "type": "server_error"}}},
                "error": null}));
            continue;
        }
        answered += 1;
        let body = &line["body"];
        let fault = invalid.then_some(Fault::InvalidAnswer);
        let completion = completion(&state.judge, body, body.to_string().len(), fault.as_ref());
        out.push(json!({"id": req_id, "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": req_id, "body": completion}, "error": null}));
    }
    let to_file = |lines: Vec<Value>| -> Option<String> {
        if lines.is_empty() {
            return None;
        }
        let mut bytes = Vec::new();
        for l in lines {
            bytes.extend_from_slice(l.to_string().as_bytes());
            bytes.push(b'\n');
        }
        Some(state.batch.store_file(bytes))
    };
    b.object["output_file_id"] = json!(to_file(out));
    b.object["error_file_id"] = json!(to_file(errs));
    b.object["status"] = json!(if expire { "expired" } else { "completed" });
    b.object["request_counts"] =
        json!({"total": b.lines.len(), "completed": answered, "failed": failed + expired});
    let mut stats = state.batch.stats.lock().unwrap_or_else(|p| p.into_inner());
    stats.answered_lines += answered;
    stats.failed_lines += failed;
    stats.expired_lines += expired;
}
