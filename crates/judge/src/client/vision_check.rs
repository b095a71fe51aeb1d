//! The vision check (two probe digits, once per client, remembered in the store)
//! and the image resolver that turns named image parts into data URIs.

use rand::Rng;

use super::{CallError, ImageResolver, Inner};
use crate::accounting::Event;
use crate::estimate::TokenEstimate;
use crate::vision::{self, Vision};
use crate::{JudgeRequest, Part};

impl Inner {
    /// See [`JudgeClient::check_vision`](crate::JudgeClient::check_vision).
    pub(crate) async fn check_vision(&self) -> Vision {
        if self.config.assume_vision {
            return Vision::Sees;
        }
        self.vision
            .get_or_init(|| async {
                let verdict = self.probe_vision().await;
                let remembered = match &verdict {
                    Vision::Sees => Some((true, "named both probe digits".to_string())),
                    Vision::Blind(detail) => Some((false, detail.clone())),
                    Vision::Unknown(_) => None,
                };
                match &verdict {
                    Vision::Sees => tracing::info!("judge vision check passed"),
                    Vision::Blind(detail) => {
                        announce_blind(&self.config.model, &self.server_key, detail, false)
                    }
                    Vision::Unknown(detail) => tracing::warn!(
                        "judge vision check could not finish ({detail}); vision units are asked as usual"
                    ),
                }
                if let Some(r) = remembered {
                    *self.vision_detail.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                    self.save_learnt();
                }
                verdict
            })
            .await
            .clone()
    }

    async fn probe_vision(&self) -> Vision {
        let (first, second) = vision::probe_digits(|| {
            let mut rng = rand::rng();
            (rng.random(), rng.random())
        });
        for (round, digit) in [(1u32, first), (2, second)] {
            let request = vision::probe_request(digit, round);
            let report = self.call(&request, &TokenEstimate::default()).await;
            self.accounting.record(
                &request.metric,
                &request.report,
                &Event {
                    ok: report.result.is_ok(),
                    attempts: u64::from(report.attempts),
                    usage: report.usage.clone(),
                    cost: self.prices.cost(&self.config.model, &report.usage),
                    ..Default::default()
                },
            );
            match report.result {
                Ok(success) => {
                    let named = success.value["digit"].as_i64();
                    if named != Some(i64::from(digit)) {
                        return Vision::Blind(format!(
                            "shown a {digit}, the model answered {}",
                            success.raw.trim()
                        ));
                    }
                }
                Err(CallError::Rejected { status, message })
                    if matches!(status, 400 | 415 | 422) || vision::refuses_images(&message) =>
                {
                    return Vision::Blind(format!(
                        "the server refused an image part: HTTP {status}: {message}"
                    ));
                }
                Err(e @ (CallError::Invalid { .. } | CallError::CutOff { .. })) => {
                    return Vision::Blind(format!("no usable answer about the image: {e}"));
                }
                Err(e) => return Vision::Unknown(e.to_string()),
            }
        }
        Vision::Sees
    }

    pub(crate) fn set_image_resolver(&self, resolver: ImageResolver) {
        *self
            .image_resolver
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(resolver);
    }

    /// The request as sent: image parts that name their content get their data URI
    /// (the cache key was computed from the names, so a cache hit never encodes).
    pub(crate) fn resolve_images(
        &self,
        request: &JudgeRequest,
    ) -> Result<Option<JudgeRequest>, String> {
        let resolver = self
            .image_resolver
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(resolver) = resolver else {
            return Ok(None);
        };
        let mut resolved: Option<JudgeRequest> = None;
        for (m, message) in request.messages.iter().enumerate() {
            for (p, part) in message.parts.iter().enumerate() {
                if let Part::Image { data_uri } = part {
                    if let Some(uri) = resolver(data_uri) {
                        let r = resolved.get_or_insert_with(|| request.clone());
                        r.messages[m].parts[p] = Part::Image { data_uri: uri? };
                    }
                }
            }
        }
        Ok(resolved)
    }
}

/// The start-up message of a judge that cannot read images (once per client).
pub(super) fn announce_blind(model: &str, server: &str, detail: &str, remembered: bool) {
    let how = if remembered {
        " (remembered from an earlier run)"
    } else {
        ""
    };
    tracing::warn!(
        "{}: {model} at {server} failed the vision check{how}: {detail}. Every vision \
         metric (FCQ, FCI, CQ, CSC) is not evaluated; pass --assume-vision to skip the check",
        vision::BLIND_REASON
    );
}
