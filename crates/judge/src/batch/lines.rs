//! The Batch API's JSONL lines: request lines (what `--batch-export` writes and
//! what is uploaded) and result lines (what a provider's output and error files,
//! or vLLM's `run-batch`, contain), validated into the judge cache.
//!
//! `custom_id` is the request's cache key (64 hex digits), stable across runs;
//! a re-ask of an invalid answer carries `{key}.{n}` (n-th re-ask), so a result
//! line for an earlier form of the request is recognised as stale.

use rusqlite::Connection;
use serde_json::{json, Value};

use crate::estimate::{image_tokens, text_tokens};
use crate::protocol::{parse_completion, OutputMode, TokenParam, WireParams};
use crate::{repair, schema};
use tvir_store::batch::{self as rows, BatchRequest};
use tvir_store::judge_cache::{self, CachedAnswer};

/// Where result lines come from: a provider batch (only requests submitted in it
/// are taken) or an imported file (only exported requests are taken).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineSource {
    Batch(String),
    Import,
}

#[derive(Debug, Clone)]
pub struct IngestOptions {
    pub max_attempts: u32,
    pub max_reasks: u32,
    pub model: String,
}

/// What a set of result lines did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngestReport {
    /// Valid answers written to the judge cache.
    pub answered: u64,
    /// Failed or expired lines queued for the next wave.
    pub requeued: u64,
    /// Requests given up (attempts exhausted; invalid after every re-ask).
    pub failed: u64,
    /// Invalid answers whose re-ask goes into the next wave.
    pub reasked: u64,
    /// Lines for requests already settled or re-asked since (ignored).
    pub stale: u64,
    /// Lines reported and skipped: "FILE line N: problem".
    pub bad_lines: Vec<String>,
}

impl IngestReport {
    pub fn merge(&mut self, other: IngestReport) {
        self.answered += other.answered;
        self.requeued += other.requeued;
        self.failed += other.failed;
        self.reasked += other.reasked;
        self.stale += other.stale;
        self.bad_lines.extend(other.bad_lines);
    }
}

pub fn custom_id(r: &BatchRequest) -> String {
    if r.reasks == 0 {
        r.key.clone()
    } else {
        format!("{}.{}", r.key, r.reasks)
    }
}

fn parse_custom_id(id: &str) -> Option<(&str, u32)> {
    let (key, reask) = match id.split_once('.') {
        Some((k, n)) => (k, n.parse().ok()?),
        None => (id, 0),
    };
    (key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit())).then_some((key, reask))
}

/// One request line of the Batch API input format.
pub fn request_line(r: &BatchRequest) -> String {
    // The stored body is JSON written by us; embed it without re-parsing.
    format!(
        "{{\"custom_id\":{},\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":{}}}",
        Value::String(custom_id(r)),
        r.body
    )
}

/// Sort key putting requests with a shared prompt prefix next to each other: the
/// body's `messages` array comes first in the stored JSON (after `model`), so the
/// text from there on is the prompt in order.
pub fn prefix_order(body: &str) -> &str {
    match body.find("\"messages\"") {
        Some(i) => &body[i..],
        None => body,
    }
}

/// Estimated (prompt, completion) tokens of a request body (same method as the
/// client's estimate: text, images, framing; completion capped at 400).
pub fn estimate_body_tokens(body: &Value) -> (u64, u64) {
    let mut prompt = 3u64;
    for m in body["messages"].as_array().into_iter().flatten() {
        prompt += 4;
        match &m["content"] {
            Value::String(s) => prompt += text_tokens(s),
            Value::Array(parts) => {
                for p in parts {
                    if let Some(t) = p["text"].as_str() {
                        prompt += text_tokens(t);
                    } else if let Some(u) = p.pointer("/image_url/url").and_then(Value::as_str) {
                        prompt += image_tokens(u);
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(s) = body.pointer("/response_format/json_schema/schema") {
        prompt += text_tokens(&s.to_string());
    }
    let cap = body["max_tokens"]
        .as_u64()
        .or_else(|| body["max_completion_tokens"].as_u64())
        .unwrap_or(400);
    (prompt, cap.min(400))
}

fn error_of(line: &Value) -> Option<String> {
    let describe = |e: &Value| {
        let code = e["code"].as_str().or_else(|| e["type"].as_str());
        let msg = e["message"].as_str().unwrap_or("no message");
        match code {
            Some(c) => format!("{c}: {msg}"),
            None => msg.to_string(),
        }
    };
    if let Some(e) = line.get("error").filter(|e| !e.is_null()) {
        return Some(describe(e));
    }
    let status = line
        .pointer("/response/status_code")
        .and_then(Value::as_u64);
    if let Some(s) = status.filter(|s| !(200..300).contains(s)) {
        let inner = line
            .pointer("/response/body/error")
            .map(describe)
            .unwrap_or_else(|| "no error message".into());
        return Some(format!("HTTP {s}: {inner}"));
    }
    None
}

/// Validate `bytes` (JSONL result lines) into the cache, in one transaction (a
/// kill mid-file loses nothing: the file is read again next time).
pub fn ingest(
    conn: &Connection,
    bytes: &[u8],
    source: &LineSource,
    origin: &str,
    opts: &IngestOptions,
) -> rusqlite::Result<IngestReport> {
    let tx = conn.unchecked_transaction()?;
    let mut report = IngestReport::default();
    let created_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for (i, raw_line) in bytes.split(|&b| b == b'\n').enumerate() {
        let lineno = i + 1;
        let text = String::from_utf8_lossy(raw_line);
        if text.trim().is_empty() {
            continue;
        }
        let mut bad = |problem: String| {
            report
                .bad_lines
                .push(format!("{origin} line {lineno}: {problem}"))
        };
        let line: Value = match serde_json::from_str(text.trim()) {
            Ok(v) => v,
            Err(e) => {
                bad(format!("not JSON ({e})"));
                continue;
            }
        };
        let Some(id) = line["custom_id"].as_str() else {
            bad("no custom_id".into());
            continue;
        };
        let Some((key, reask)) = parse_custom_id(id) else {
            bad(format!("unknown custom_id {id:?}"));
            continue;
        };
        let Some(mut row) = rows::get(&tx, key)? else {
            bad(format!("unknown custom_id {id:?}"));
            continue;
        };
        if row.model != opts.model {
            bad(format!(
                "custom_id {id:?} belongs to judge model {:?}",
                row.model
            ));
            continue;
        }
        let applicable = match source {
            LineSource::Batch(b) => {
                row.state == "submitted" && row.batch_id.as_deref() == Some(b.as_str())
            }
            LineSource::Import => row.state == "exported",
        } && row.reasks == reask;
        if !applicable {
            report.stale += 1;
            continue;
        }
        if let Some(err) = error_of(&line) {
            row.attempts += 1;
            row.batch_id = None;
            if row.attempts >= opts.max_attempts {
                row.state = "failed".into();
                row.last_error = Some(format!(
                    "batch: no answer after {} attempts; last error: {err}",
                    row.attempts
                ));
                report.failed += 1;
            } else {
                row.state = "queued".into();
                row.last_error = Some(err);
                report.requeued += 1;
            }
            rows::update(&tx, &row)?;
            continue;
        }
        let Some(body) = line.pointer("/response/body") else {
            bad("no response body".into());
            continue;
        };
        let completion = match parse_completion(body.to_string().as_bytes()) {
            Ok(c) => c,
            Err(e) => {
                bad(format!("response body is not a chat completion: {e}"));
                continue;
            }
        };
        let answer_schema: Value = match serde_json::from_str(&row.schema) {
            Ok(s) => s,
            Err(e) => {
                bad(format!("stored schema unreadable: {e}"));
                continue;
            }
        };
        let parsed = if completion.content.trim().is_empty() {
            Err(match &completion.refusal {
                Some(r) => format!("the model refused: {r}"),
                None => "the answer is empty".to_string(),
            })
        } else {
            repair::parse_answer(&completion.content)
                .map_err(|e| e.to_string())
                .and_then(|v| {
                    schema::validate(&answer_schema, &v)
                        .map(|()| v)
                        .map_err(|e| format!("does not match the schema: {e}"))
                })
        };
        match parsed {
            Ok(value) => {
                judge_cache::put(
                    &tx,
                    &CachedAnswer {
                        key: row.key.clone(),
                        model: row.model.clone(),
                        metric: row.metric.clone(),
                        sample: row.sample,
                        answer: value.to_string(),
                        raw: completion.content.clone(),
                        // Every attempt is priced: earlier invalid answers too.
                        prompt_tokens: row.spent.prompt_tokens + completion.usage.prompt_tokens,
                        completion_tokens: row.spent.completion_tokens
                            + completion.usage.completion_tokens,
                        cached_tokens: row.spent.cached_tokens + completion.usage.cached_tokens,
                        latency_ms: 0,
                        server_model: if completion.model.is_empty() {
                            row.model.clone()
                        } else {
                            completion.model.clone()
                        },
                        created_at: created_at.clone(),
                        via: "batch".into(),
                    },
                )?;
                row.state = "answered".into();
                row.batch_id = None;
                report.answered += 1;
            }
            Err(problem) => {
                bad(format!("answer does not validate: {problem}"));
                row.batch_id = None;
                row.spent.prompt_tokens += completion.usage.prompt_tokens;
                row.spent.completion_tokens += completion.usage.completion_tokens;
                row.spent.cached_tokens += completion.usage.cached_tokens;
                if row.reasks >= opts.max_reasks {
                    row.state = "failed".into();
                    row.last_error = Some(format!(
                        "invalid answer after {} re-asks: {problem}",
                        row.reasks
                    ));
                    report.failed += 1;
                } else {
                    row.reasks += 1;
                    row.state = "queued".into();
                    row.body = reask_body(&row.body, &completion.content, &problem, &answer_schema);
                    report.reasked += 1;
                }
            }
        }
        rows::update(&tx, &row)?;
    }
    tx.commit()?;
    Ok(report)
}

/// The request body plus the model's invalid reply and the correction request, as
/// the live client re-asks.
fn reask_body(body: &str, reply: &str, problem: &str, answer_schema: &Value) -> String {
    let mut v: Value = serde_json::from_str(body).unwrap_or_else(|_| json!({"messages": []}));
    let params = WireParams {
        mode: OutputMode::JsonSchema,
        token_param: TokenParam::MaxTokens,
        temperature: true,
        seed: true,
    };
    let text = crate::client_reask_text(problem, &params, answer_schema);
    if let Some(m) = v.get_mut("messages").and_then(Value::as_array_mut) {
        m.push(json!({"role": "assistant", "content": reply}));
        m.push(json!({"role": "user", "content": text}));
    }
    v.to_string()
}

/// Requests still `submitted` in `batch_id` after its files were read: one failed
/// attempt each. Returns (re-queued, failed).
pub fn fail_unanswered(
    conn: &Connection,
    batch_id: &str,
    reason: &str,
    opts: &IngestOptions,
) -> rusqlite::Result<(u64, u64)> {
    let tx = conn.unchecked_transaction()?;
    let left: Vec<BatchRequest> = rows::by_state(&tx, &opts.model, "submitted")?
        .into_iter()
        .filter(|r| r.batch_id.as_deref() == Some(batch_id))
        .collect();
    let (mut requeued, mut failed) = (0, 0);
    for mut r in left {
        r.attempts += 1;
        r.batch_id = None;
        if r.attempts >= opts.max_attempts {
            r.state = "failed".into();
            r.last_error = Some(format!(
                "batch: no answer after {} attempts; last error: {reason}",
                r.attempts
            ));
            failed += 1;
        } else {
            r.state = "queued".into();
            r.last_error = Some(reason.to_string());
            requeued += 1;
        }
        rows::update(&tx, &r)?;
    }
    tx.commit()?;
    Ok((requeued, failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_ids_round_trip_and_reject_garbage() {
        let key = "a".repeat(64);
        assert_eq!(parse_custom_id(&key), Some((key.as_str(), 0)));
        let re = format!("{key}.2");
        assert_eq!(parse_custom_id(&re), Some((key.as_str(), 2)));
        assert_eq!(parse_custom_id("request-1"), None);
        assert_eq!(parse_custom_id(&format!("{key}.x")), None);
        assert_eq!(parse_custom_id(&"g".repeat(64)), None);
    }

    /// A result line for `custom_id` whose answer is `content`, with this usage.
    fn result_line(custom_id: &str, content: &str, usage: (u64, u64, u64)) -> String {
        json!({"custom_id": custom_id, "error": null, "response": {"status_code": 200, "body": {
            "id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage.0, "completion_tokens": usage.1,
                      "total_tokens": usage.0 + usage.1,
                      "prompt_tokens_details": {"cached_tokens": usage.2}}}}})
        .to_string()
    }

    #[test]
    fn every_attempt_of_a_reasked_request_is_in_the_answers_usage() {
        let store = tvir_store::Store::in_memory().unwrap();
        let key = "b".repeat(64);
        let schema = json!({"type": "object", "properties": {"verdict": {"type": "string",
            "enum": ["yes", "no"]}}, "required": ["verdict"], "additionalProperties": false});
        let opts = IngestOptions {
            max_attempts: 3,
            max_reasks: 2,
            model: "m".into(),
        };
        store
            .with_conn(|c| {
                rows::insert_queued(
                    c,
                    &rows::NewRequest {
                        key: &key,
                        model: "m",
                        metric: "citation_support",
                        sample: 0,
                        body: r#"{"model":"m","messages":[{"role":"user","content":"q"}]}"#,
                        schema: &schema.to_string(),
                    },
                )?;
                let mut r = rows::get(c, &key)?.unwrap();
                r.state = "exported".into();
                rows::update(c, &r)
            })
            .unwrap();
        // First answer breaks the schema: re-asked, its tokens kept.
        let bad = result_line(&key, r#"{"verdict": "maybe"}"#, (1000, 40, 0));
        let rep = store
            .with_conn(|c| ingest(c, bad.as_bytes(), &LineSource::Import, "f", &opts))
            .unwrap();
        assert_eq!(rep.reasked, 1, "{rep:?}");
        let mut r = store.with_conn(|c| rows::get(c, &key)).unwrap().unwrap();
        assert_eq!(
            (r.spent.prompt_tokens, r.spent.completion_tokens),
            (1000, 40)
        );
        r.state = "exported".into();
        store.with_conn(|c| rows::update(c, &r)).unwrap();
        // The re-ask's valid answer: the cached usage covers both attempts.
        let good = result_line(
            &format!("{key}.1"),
            r#"{"verdict": "yes"}"#,
            (1100, 30, 1024),
        );
        let rep = store
            .with_conn(|c| ingest(c, good.as_bytes(), &LineSource::Import, "f", &opts))
            .unwrap();
        assert_eq!(rep.answered, 1, "{rep:?}");
        let cached = store
            .with_conn(|c| judge_cache::get(c, &key))
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                cached.prompt_tokens,
                cached.completion_tokens,
                cached.cached_tokens
            ),
            (2100, 70, 1024)
        );
        assert_eq!(cached.via, "batch");
    }

    #[test]
    fn errors_from_either_field() {
        assert_eq!(
            error_of(&json!({"error": {"code": "batch_expired", "message": "too late"}}))
                .as_deref(),
            Some("batch_expired: too late")
        );
        assert_eq!(
            error_of(&json!({"response": {"status_code": 500, "body": {"error": {"message": "boom", "type": "server_error"}}}, "error": null})).as_deref(),
            Some("HTTP 500: server_error: boom")
        );
        assert_eq!(
            error_of(&json!({"response": {"status_code": 200, "body": {}}, "error": null})),
            None
        );
    }
}
