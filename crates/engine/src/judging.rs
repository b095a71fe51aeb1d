//! Unit judging: one request per unit through the shared bound on judge calls,
//! with the mode (judge, no judge, dry-run accounting), image resolution, answer
//! validation and usage; and the unit records made from an outcome or a rule.

use std::sync::atomic::Ordering;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::engine::Engine;
use crate::outcome::{AskUnit, Outcome, PENDING_REASON};
use crate::record::{UnitRecord, UnitStatus, UsageRecord};
use crate::settings::JudgeMode;
use tvir_judge::{JudgeError, JudgeRequest};
use tvir_rubric::{
    band_note, build_request, justification, validate_answer, RequestLabel, Rubric, UnitInputs,
};

impl Engine {
    /// Ask the judge about one unit, honouring the mode, the shared concurrency bound
    /// and answer validation.
    pub(crate) async fn ask(
        &self,
        rubric: &Rubric,
        inputs: &UnitInputs,
        report: &str,
        unit: &str,
        sample: u32,
    ) -> Outcome {
        let deferred = self.defers_vision_check();
        if rubric.is_vision() && !deferred {
            if let Some(reason) = self.blind_reason().await {
                return Outcome::Skipped(reason);
            }
        }
        let request = match self.settings.mode {
            JudgeMode::NoJudge => {
                return Outcome::Skipped("--no-judge: judged metric not evaluated".into())
            }
            _ => match build_request(
                &self.rubrics,
                rubric,
                inputs,
                RequestLabel {
                    report,
                    unit,
                    sample,
                },
            ) {
                Ok(r) => r,
                Err(e) => return Outcome::Failed(e.to_string()),
            },
        };
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        if self.settings.mode == JudgeMode::DryRun {
            if let Some((prompt, completion, cost)) =
                self.judge.as_ref().and_then(|j| j.estimate(&request))
            {
                self.stats
                    .est_prompt_tokens
                    .fetch_add(prompt, Ordering::Relaxed);
                self.stats
                    .est_completion_tokens
                    .fetch_add(completion, Ordering::Relaxed);
                if let Some(c) = cost {
                    self.stats
                        .est_cost_micro_usd
                        .fetch_add((c * 1e6).round() as u64, Ordering::Relaxed);
                }
            }
            for m in &request.messages {
                for p in &m.parts {
                    match p {
                        tvir_judge::Part::Text { text } => {
                            self.stats
                                .request_text_chars
                                .fetch_add(text.chars().count() as u64, Ordering::Relaxed);
                        }
                        tvir_judge::Part::Image { .. } => {
                            self.stats.request_images.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            self.stats.skipped_calls.fetch_add(1, Ordering::Relaxed);
            return Outcome::Skipped("dry run: not called".into());
        }
        let Some(judge) = &self.judge else {
            return Outcome::Skipped("no judge configured".into());
        };
        if rubric.is_vision() && deferred {
            if let Some(reason) = self.vision_unit_blind_reason(&request).await {
                return Outcome::Skipped(reason);
            }
        }
        let item_count = inputs.checklist.len();
        // A judge that cannot resolve image references gets the data URIs now.
        let request = if self.judge_resolves {
            request
        } else {
            match self.resolve_images(request) {
                Ok(r) => r,
                Err(e) => return Outcome::Failed(e),
            }
        };
        let answer = {
            let _slot = self.slots.acquire().await;
            let _busy = self.timing.call();
            judge.ask(request).await
        };
        if !matches!(&answer, Ok(a) if a.cached) {
            // This report sent (or tried to send) a request: its markers take the
            // vision check's verdict (see `blind_markers_reason`).
            self.sending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert((report.to_string(), sample));
        }
        match answer {
            Ok(a) => {
                self.stats.answers.fetch_add(1, Ordering::Relaxed);
                if a.cached {
                    self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                } else if let Some(c) = a.cost_usd {
                    self.stats
                        .spend_micro_usd
                        .fetch_add((c * 1e6).round() as u64, Ordering::Relaxed);
                }
                let cost = judge.judgment_cost(&a);
                if let Err(e) = validate_answer(rubric, &a.value, item_count) {
                    self.stats.failed_calls.fetch_add(1, Ordering::Relaxed);
                    return Outcome::Failed(e.to_string());
                }
                Outcome::Answer {
                    value: a.value,
                    usage: UsageRecord {
                        calls: 1,
                        cache_hits: 0,
                        failed_calls: 0,
                        prompt_tokens: a.usage.prompt_tokens,
                        completion_tokens: a.usage.completion_tokens,
                        cached_tokens: a.usage.cached_tokens,
                        cost_usd: cost,
                    },
                }
            }
            Err(JudgeError::DryRun) => Outcome::Skipped("dry run: not called".into()),
            Err(JudgeError::Pending) => {
                self.stats.pending.fetch_add(1, Ordering::Relaxed);
                Outcome::Skipped(PENDING_REASON.into())
            }
            Err(JudgeError::BudgetExhausted) => {
                self.stats.skipped_calls.fetch_add(1, Ordering::Relaxed);
                Outcome::Skipped("--max-cost reached: not judged".into())
            }
            Err(e) => {
                self.stats.failed_calls.fetch_add(1, Ordering::Relaxed);
                Outcome::Failed(e.to_string())
            }
        }
    }

    fn resolve_images(&self, mut request: JudgeRequest) -> Result<JudgeRequest, String> {
        for m in &mut request.messages {
            for p in &mut m.parts {
                if let tvir_judge::Part::Image { data_uri } = p {
                    if let Some(uri) = self.images.resolve(data_uri) {
                        *data_uri = uri.map_err(|e| {
                            format!("the figure could not be prepared for the judge: {e}")
                        })?;
                    }
                }
            }
        }
        Ok(request)
    }

    /// Turn an outcome into a unit record (answer kept for re-scoring).
    pub(crate) fn unit_from(
        &self,
        metric: &str,
        unit: String,
        outcome: Outcome,
        detail: Value,
    ) -> (UnitRecord, Option<UsageRecord>) {
        let mut rec = UnitRecord {
            metric: metric.into(),
            unit,
            status: UnitStatus::Scored,
            reason: None,
            score: None,
            answer: None,
            justification: None,
            detail,
        };
        let usage = match outcome {
            Outcome::Answer { value, usage } => {
                // A banded score outside its band (MC variety) is scored at the band's
                // nearest end; the unit says so.
                let note = self
                    .rubrics
                    .get(metric)
                    .ok()
                    .and_then(|r| band_note(r, &value));
                if let Some(note) = note {
                    if rec.detail.is_null() {
                        rec.detail = Value::Object(Default::default());
                    }
                    if let Value::Object(m) = &mut rec.detail {
                        m.insert("band".into(), Value::String(note));
                    }
                }
                rec.justification = justification(&value);
                rec.answer = Some(value);
                Some(usage)
            }
            Outcome::Failed(reason) => {
                rec.status = UnitStatus::Failed;
                rec.reason = Some(reason);
                None
            }
            Outcome::Skipped(reason) => {
                rec.status = UnitStatus::Skipped;
                rec.reason = Some(reason);
                None
            }
        };
        (rec, usage)
    }

    pub(crate) fn rule_unit(
        &self,
        metric: &str,
        unit: String,
        rule: &str,
        reason: String,
        mut detail: Value,
    ) -> (UnitRecord, Option<UsageRecord>) {
        if let Value::Object(m) = &mut detail {
            m.insert("rule".into(), Value::String(rule.into()));
        }
        (
            UnitRecord {
                metric: metric.into(),
                unit,
                status: UnitStatus::Scored,
                reason: Some(reason),
                score: None,
                answer: None,
                justification: None,
                detail,
            },
            None,
        )
    }
}

impl AskUnit for Engine {
    fn ask_unit<'a>(
        &'a self,
        rubric: &'a Rubric,
        inputs: &'a UnitInputs,
        report: &'a str,
        unit: &'a str,
        sample: u32,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(self.ask(rubric, inputs, report, unit, sample))
    }
}
