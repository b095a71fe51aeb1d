//! The attempt loop of one unit: wait for limits and a slot, send, then retry,
//! adapt to a refused parameter, fit the context window, widen or shorten after a
//! cut-off, or re-ask after an answer that does not parse or validate.

use std::time::{Duration, Instant, SystemTime};

use rand::Rng;
use serde_json::Value;

use super::send::Reply;
use super::{CallError, CallReport, CallSuccess, Inner};
use crate::context::{context_overflow, FitDecision};
use crate::estimate::TokenEstimate;
use crate::limits::Slot;
use crate::protocol::{
    build_body, classify_rejection, error_message, parse_completion, Completion, OutputMode,
    WireMessage, WireParams,
};
use crate::retry::{is_retryable_status, server_requested_wait};
use crate::vision;
use crate::{repair, schema, JudgeRequest, Part, Usage};

/// Parameter adaptations allowed per unit (each changes what is sent, so a loop is
/// impossible, but a confused server must not keep us busy).
const MAX_ADAPTATIONS: u32 = 6;

impl Inner {
    /// The attempt loop for one unit.
    pub(super) async fn call(
        &self,
        request: &JudgeRequest,
        estimate: &TokenEstimate,
    ) -> CallReport {
        let mut conversation: Vec<WireMessage> =
            request.messages.iter().map(WireMessage::from).collect();
        let mut attempts = 0u32;
        let mut transient_failures = 0u32;
        let mut reasks = 0u32;
        let mut adaptations = 0u32;
        let mut length_reasks = 0u32;
        let mut usage = Usage::default();
        let max_attempts = self.config.max_attempts.max(1);
        let mut limit = self.token_limit(request);
        // Set once the limit was lowered to fit the server's context window.
        let mut fitted = false;
        // A slot of `concurrency` kept from an attempt that timed out: the server may
        // still be working on it, so the slot stays taken until the retry is sent.
        let mut kept_slot: Option<Slot<'_>> = None;
        let est_tokens = (estimate.prompt_tokens + estimate.completion_tokens) as f64;

        let done = |result, attempts, reasks, usage, mode| CallReport {
            result,
            attempts,
            reasks,
            usage,
            mode,
        };

        loop {
            self.pacer.wait_turn().await;
            if let Some(rpm) = &self.rpm {
                rpm.acquire(1.0).await;
            }
            if let Some(tpm) = &self.tpm {
                tpm.acquire(est_tokens).await;
            }
            attempts += 1;
            let timeout = self.attempt_timeout(&conversation);
            let slot = match kept_slot.take() {
                // The limit came down while this retry waited: give the slot back
                // and queue under the new limit like every other request.
                Some(slot) if self.slots.owes() => {
                    drop(slot);
                    self.slots.acquire().await
                }
                Some(mut slot) => {
                    slot.renew();
                    slot
                }
                None => self.slots.acquire().await,
            };
            // Read after the wait for a slot: what an earlier request learnt while
            // this one queued (a refused structured-output form, a key refused for
            // every request) applies already.
            if let Some(why) = self.unusable.get() {
                drop(slot);
                let err = CallError::Unusable(why.clone());
                let mode = self.adaptations.current().mode;
                return done(Err(err), attempts, reasks, usage, mode);
            }
            if let Some(why) = self.reach.gone() {
                drop(slot);
                let err = CallError::Unreachable(why.clone());
                let mode = self.adaptations.current().mode;
                return done(Err(err), attempts - 1, reasks, usage, mode);
            }
            let params = self.adaptations.current();
            let body = build_body(
                &self.config.model,
                &request.metric,
                &request.schema,
                &conversation,
                &params,
                self.config.seed,
                Some(limit),
                self.config.schema_place,
            );
            let sent_at = Instant::now();
            let reply = self.send(&body, timeout).await;

            // What went wrong on this attempt, if it is worth another.
            let (retry_reason, server_wait) = match reply {
                Reply::Transport {
                    reason,
                    timed_out,
                    refused,
                } => {
                    self.tpm_adjust(-est_tokens);
                    if refused {
                        if let Some(why) =
                            self.reach
                                .on_refused(&reason, Instant::now(), SystemTime::now())
                        {
                            tracing::error!("{why}; the remaining units fail without a call");
                        }
                        if let Some(why) = self.reach.gone() {
                            drop(slot);
                            let err = CallError::Unreachable(why.clone());
                            let mode = self.adaptations.current().mode;
                            return done(Err(err), attempts, reasks, usage, mode);
                        }
                    }
                    if timed_out {
                        if let Some(limit) = self.slots.on_timeout(&slot) {
                            tracing::warn!(
                                "the judge server did not answer within {timeout:?}; {limit} in flight at most from now on (raised again as answers come back)"
                            );
                        }
                        kept_slot = Some(slot);
                    } else {
                        drop(slot);
                    }
                    (reason, None)
                }
                Reply::Http {
                    status,
                    headers,
                    body,
                } if (200..300).contains(&status) => {
                    let epoch = slot.epoch();
                    drop(slot);
                    if let Some(limit) = self.slots.on_answer(epoch, sent_at.elapsed(), timeout) {
                        tracing::warn!(
                            "the judge server's answers come back queued (over half the {timeout:?} timeout); {limit} in flight at most from now on (raised again as answers come back)"
                        );
                    }
                    let completion = match parse_completion(&body) {
                        Ok(c) => c,
                        Err(reason) => {
                            self.tpm_adjust(-est_tokens);
                            transient_failures += 1;
                            if transient_failures >= max_attempts {
                                let err = CallError::Exhausted {
                                    attempts,
                                    last: reason,
                                };
                                return done(Err(err), attempts, reasks, usage, params.mode);
                            }
                            self.sleep_backoff(transient_failures, None).await;
                            continue;
                        }
                    };
                    let _ = headers;
                    self.pacer.on_success();
                    let used = completion.usage.prompt_tokens + completion.usage.completion_tokens;
                    self.tpm_adjust(if used > 0 {
                        used as f64 - est_tokens
                    } else {
                        0.0
                    });
                    usage.prompt_tokens += completion.usage.prompt_tokens;
                    usage.completion_tokens += completion.usage.completion_tokens;
                    usage.cached_tokens += completion.usage.cached_tokens;
                    if completion.reasoned && self.adaptations.set_reasoning(true) {
                        tracing::info!(
                            "the judge model reasons before it answers; its token limits get {} tokens of headroom from now on",
                            crate::tokens::REASONING_HEADROOM
                        );
                        self.save_learnt();
                    }

                    if completion.finish_reason.as_deref() == Some("length") {
                        // A reasoning model that thought through its limit: ask again
                        // with the headroom (not a re-ask: the question was fine).
                        let wider = self.token_limit(request);
                        if completion.reasoned && wider > limit {
                            limit = wider;
                            continue;
                        }
                        // Cut off by the limit: whatever came back is incomplete, even
                        // when repair could close it.
                        if length_reasks >= 1 {
                            let hint = if completion.reasoned {
                                format!(
                                    "; the model reasoned{} before answering: raise --max-tokens or a rubric's max_tokens",
                                    if completion.reasoning_tokens > 0 {
                                        format!(" for {} tokens", completion.reasoning_tokens)
                                    } else {
                                        String::new()
                                    }
                                )
                            } else {
                                String::new()
                            };
                            let err = CallError::CutOff {
                                param: params.token_param.name(),
                                limit,
                                hint,
                            };
                            return done(Err(err), attempts, reasks, usage, params.mode);
                        }
                        length_reasks += 1;
                        tracing::debug!(metric = %request.metric, unit = %request.unit, limit, "answer cut off by the token limit; asking for a shorter one");
                        if let Some(last) = conversation.iter_mut().rev().find(|m| m.role == "user")
                        {
                            last.parts.push(Part::Text {
                                text: shorter_text(limit),
                            });
                        }
                        continue;
                    }

                    let parsed = checked_answer(&completion, &request.schema);
                    match parsed {
                        Ok(value) => {
                            let success = CallSuccess {
                                value,
                                raw: completion.content,
                                server_model: if completion.model.is_empty() {
                                    self.config.model.clone()
                                } else {
                                    completion.model
                                },
                            };
                            return done(Ok(success), attempts, reasks, usage, params.mode);
                        }
                        Err(problem) => {
                            if reasks >= self.config.max_reasks {
                                let err = CallError::Invalid {
                                    reasks,
                                    last: problem,
                                };
                                return done(Err(err), attempts, reasks, usage, params.mode);
                            }
                            reasks += 1;
                            tracing::debug!(metric = %request.metric, unit = %request.unit, "re-asking: {problem}");
                            conversation.push(WireMessage {
                                role: "assistant",
                                parts: vec![Part::Text {
                                    text: completion.content,
                                }],
                            });
                            conversation.push(WireMessage {
                                role: "user",
                                parts: vec![Part::Text {
                                    text: reask_text(&problem, &params, &request.schema),
                                }],
                            });
                            continue;
                        }
                    }
                }
                Reply::Http {
                    status,
                    headers,
                    body,
                } => {
                    drop(slot);
                    self.tpm_adjust(-est_tokens);
                    let text = String::from_utf8_lossy(&body);
                    // Before adaptations: an overflow names the token parameter too.
                    if let Some(over) = context_overflow(status, &text) {
                        let message = error_message(&text);
                        match crate::context::decide(&over, limit, fitted, &message) {
                            FitDecision::Retry(fit) => {
                                tracing::info!(metric = %request.metric, unit = %request.unit, from = limit, to = fit, "the answer limit does not fit the judge's context window; lowering it");
                                fitted = true;
                                limit = fit;
                                continue;
                            }
                            FitDecision::Fail(reason) => {
                                let err = CallError::ContextOverflow {
                                    reason,
                                    prompt: over.prompt,
                                    window: over.window,
                                };
                                return done(Err(err), attempts, reasks, usage, params.mode);
                            }
                        }
                    }
                    if let Some(adaptation) = classify_rejection(status, &text, &params) {
                        let message = error_message(&text);
                        if adaptations < MAX_ADAPTATIONS
                            && self.adaptations.apply(adaptation, &params)
                        {
                            adaptations += 1;
                            self.save_learnt();
                            tracing::info!(
                                status,
                                ?adaptation,
                                "judge server rejected a parameter; adapting for the rest of the run: {message}"
                            );
                            continue;
                        }
                        let err =
                            if matches!(adaptation, crate::protocol::Adaptation::SchemaUnsupported)
                            {
                                CallError::NoOutputMode { status, message }
                            } else {
                                CallError::Rejected { status, message }
                            };
                        return done(Err(err), attempts, reasks, usage, params.mode);
                    }
                    if !is_retryable_status(status) {
                        let message = error_message(&text);
                        if refuses_every_request(status, &message, request) {
                            let mut why = format!("HTTP {status}: {message}");
                            if status == 404 && !self.endpoint.contains("/v1/") {
                                why.push_str(&format!(
                                    "; the request went to {}: does the base URL lack /v1?",
                                    self.endpoint.split('?').next().unwrap_or_default()
                                ));
                            }
                            if self.unusable.set(why.clone()).is_ok() {
                                tracing::error!(
                                    "the judge server refused a call ({why}); no further judge calls are made in this run"
                                );
                            }
                        }
                        let err = CallError::Rejected { status, message };
                        return done(Err(err), attempts, reasks, usage, params.mode);
                    }
                    if status == 429 {
                        self.pacer.on_rate_limited();
                    }
                    let wait = server_requested_wait(&headers, SystemTime::now());
                    (format!("HTTP {status}: {}", error_message(&text)), wait)
                }
            };

            transient_failures += 1;
            if transient_failures >= max_attempts {
                let err = CallError::Exhausted {
                    attempts,
                    last: retry_reason,
                };
                return done(Err(err), attempts, reasks, usage, params.mode);
            }
            tracing::debug!(metric = %request.metric, unit = %request.unit, attempt = attempts, "retrying: {retry_reason}");
            self.sleep_backoff(transient_failures, server_wait).await;
        }
    }

    pub(super) fn tpm_adjust(&self, delta: f64) {
        if let Some(tpm) = &self.tpm {
            if delta != 0.0 {
                tpm.adjust(delta);
            }
        }
    }

    pub(super) async fn sleep_backoff(&self, retry: u32, server_wait: Option<Duration>) {
        let jitter: f64 = rand::rng().random();
        let wait = match server_wait {
            // Honour the server, plus a little jitter so a burst of 429s does not
            // come back in lockstep.
            Some(w) => w + Duration::from_millis((jitter * 100.0) as u64),
            None => self.backoff.delay(retry, jitter),
        };
        // Cut short when the server is declared gone meanwhile.
        self.reach.sleep(wait).await;
    }
}

/// The answer of a complete reply, parsed (with repair) and validated against the
/// request's schema; the error is the problem a re-ask tells the model about.
fn checked_answer(completion: &Completion, schema: &Value) -> Result<Value, String> {
    if completion.content.trim().is_empty() {
        return match &completion.refusal {
            Some(r) => Err(format!("the model refused: {r}")),
            None => Err("the answer is empty".to_string()),
        };
    }
    repair::parse_answer(&completion.content)
        .map_err(|e| e.to_string())
        .and_then(|v| {
            schema::validate(schema, &v)
                .map(|()| v)
                .map_err(|e| format!("does not match the schema: {e}"))
        })
}

/// Appended to the question after an answer was cut off by the token limit.
fn shorter_text(limit: u32) -> String {
    format!(
        "Important: your previous reply was cut off at the limit of {limit} tokens before \
         the JSON object was complete. Reply with only the JSON object, and keep every \
         text field short (two sentences at most)."
    )
}

/// A refusal no other request of the run would get past: a wrong or missing key
/// (401), an unknown model, deployment or endpoint (404). Not 403: gateways also
/// answer it for one request's content.
/// Requests with images are left to the vision check (some routers answer 404 for
/// "no endpoint supports image input").
fn refuses_every_request(status: u16, message: &str, request: &JudgeRequest) -> bool {
    let has_image = request
        .messages
        .iter()
        .any(|m| m.parts.iter().any(|p| matches!(p, Part::Image { .. })));
    match status {
        401 => true,
        404 => !has_image && !vision::refuses_images(message),
        _ => false,
    }
}

pub(crate) fn reask_text(problem: &str, params: &WireParams, schema: &Value) -> String {
    let mut text = format!(
        "Your previous reply could not be used: {problem}. Reply again with only the \
         corrected JSON object."
    );
    if params.mode == OutputMode::JsonSchema {
        // The server enforces the schema in this mode; repeat it anyway for servers
        // that accept the parameter but ignore it.
        text.push_str(&format!(
            " It must satisfy this JSON schema:\n{}",
            serde_json::to_string(schema).unwrap_or_default()
        ));
    }
    text
}
