//! What a unit leaves behind: the cache row (read back on later asks), the
//! accounting event, the journal line and the progress callback.

use serde_json::Value;

use super::Inner;
use crate::accounting::Event;
use crate::journal::{self, journal_messages, EntryStatus, JournalEntry};
use crate::writer::Job;
use crate::{schema, JudgeAnswer, JudgeRequest, Usage};
use tvir_store::judge_cache;

impl Inner {
    /// A cached answer still valid against the request's schema, if any. Store
    /// errors are logged and treated as a miss (the call is simply made).
    pub(crate) fn cache_lookup(&self, key: &str, request: &JudgeRequest) -> Option<JudgeAnswer> {
        let store = self.store.as_ref()?;
        // Answers from this run still queued for the writer come first. Then the
        // file, inline rather than through `spawn_blocking`: a keyed lookup takes
        // microseconds (WAL readers never wait for the writer), and thousands of
        // concurrent units would otherwise each spawn a blocking thread.
        let row = match self.writer.pending(key) {
            Some(row) => row,
            None => match store.with_conn(|conn| judge_cache::get(conn, key)) {
                Ok(row) => row?,
                Err(e) => {
                    tracing::warn!("judge cache read failed, calling instead: {e}");
                    return None;
                }
            },
        };
        let value: Value = serde_json::from_str(&row.answer).ok()?;
        schema::validate(&request.schema, &value).ok()?;
        Some(JudgeAnswer {
            value,
            raw: row.raw,
            usage: Usage {
                prompt_tokens: row.prompt_tokens,
                completion_tokens: row.completion_tokens,
                cached_tokens: row.cached_tokens,
            },
            model: row.server_model,
            cached: true,
            latency_ms: row.latency_ms,
            cost_usd: Some(0.0),
            attempts: 0,
            batch: row.via == "batch",
        })
    }

    pub(super) fn cache_store(&self, key: &str, request: &JudgeRequest, answer: &JudgeAnswer) {
        if self.store.is_none() {
            return;
        }
        let row = judge_cache::CachedAnswer {
            key: key.to_string(),
            model: self.config.model.clone(),
            metric: request.metric.clone(),
            sample: request.sample,
            answer: answer.value.to_string(),
            raw: answer.raw.clone(),
            prompt_tokens: answer.usage.prompt_tokens,
            completion_tokens: answer.usage.completion_tokens,
            cached_tokens: answer.usage.cached_tokens,
            latency_ms: answer.latency_ms,
            server_model: answer.model.clone(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            via: if answer.batch { "batch" } else { "live" }.into(),
        };
        self.writer.send(Job::Cache(Box::new(row)));
    }

    pub(super) fn finish(
        &self,
        request: &JudgeRequest,
        outcome: Outcome<'_>,
        status: EntryStatus,
        event: &Event,
    ) {
        self.accounting
            .record(&request.metric, &request.report, event);
        if let Some(index) = &self.journal_texts {
            let (messages, texts) = journal_messages(&request.messages);
            let entry = JournalEntry {
                time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                metric: &request.metric,
                report: &request.report,
                unit: &request.unit,
                sample: request.sample,
                model: &self.config.model,
                cache_key: outcome.key,
                status,
                cache_hit: status == EntryStatus::CacheHit,
                attempts: outcome.attempts,
                reasks: outcome.reasks,
                latency_ms: outcome.latency_ms,
                response_format: outcome.mode,
                request: messages,
                answer: outcome.answer.as_ref(),
                raw: outcome.raw.as_deref(),
                server_model: outcome.server_model.as_deref(),
                usage: outcome.usage.as_ref(),
                cost_usd: outcome.cost,
                error: outcome.error.as_deref(),
            };
            let line = journal::encode(&entry);
            // The index stays locked until the line is queued, so the texts a line
            // refers to are always queued before it.
            let mut held = index.lock().unwrap_or_else(|p| p.into_inner());
            let new_texts = journal::new_texts(texts, &mut held);
            self.writer.send(Job::Journal(new_texts, line));
            drop(held);
        }
        let hook = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(hook) = hook {
            hook(&crate::JudgeProgress {
                metric: request.metric.clone(),
                report: request.report.clone(),
                unit: request.unit.clone(),
                status,
                error: outcome.error.clone(),
                totals: self.accounting.total(),
            });
        }
    }
}

/// What the journal needs to know about a finished unit.
pub(super) struct Outcome<'a> {
    pub(super) key: &'a str,
    pub(super) attempts: u32,
    pub(super) reasks: u32,
    pub(super) latency_ms: u64,
    pub(super) mode: &'static str,
    pub(super) answer: Option<Value>,
    pub(super) raw: Option<String>,
    pub(super) server_model: Option<String>,
    pub(super) usage: Option<Usage>,
    pub(super) cost: Option<f64>,
    pub(super) error: Option<String>,
}

impl<'a> Outcome<'a> {
    pub(super) fn new(_request: &JudgeRequest, key: &'a str) -> Self {
        Self {
            key,
            attempts: 0,
            reasks: 0,
            latency_ms: 0,
            mode: "none",
            answer: None,
            raw: None,
            server_model: None,
            usage: None,
            cost: None,
            error: None,
        }
    }
}
