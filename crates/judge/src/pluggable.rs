//! The judge as an evaluation run sees it: the [`Judge`] trait that anything
//! answering requests implements (the live client, the batch engines, test stubs),
//! and [`ClientJudge`], the live client with its price table.

use futures::future::BoxFuture;

use crate::{JudgeAnswer, JudgeClient, JudgeError, JudgeRequest};

/// The judge as the pipeline sees it. `JudgeClient` is the real one; tests may plug
/// in anything that answers requests.
pub trait Judge: Send + Sync {
    fn ask(&self, request: JudgeRequest) -> BoxFuture<'_, Result<JudgeAnswer, JudgeError>>;

    /// Estimated (prompt tokens, completion tokens, dollars) of a request, for
    /// `--dry-run`; None when the judge cannot estimate.
    fn estimate(&self, _request: &JudgeRequest) -> Option<(u64, u64, Option<f64>)> {
        None
    }

    /// What an answer cost when it was first produced. Must not depend on whether
    /// it came from the cache (results are reproducible byte for byte).
    fn judgment_cost(&self, answer: &JudgeAnswer) -> Option<f64> {
        (!answer.cached).then_some(answer.cost_usd).flatten()
    }

    /// Take over turning image references into data URIs for requests that are
    /// sent (so cache hits never encode). Returns false when the judge cannot; the
    /// pipeline then resolves every reference before asking.
    fn set_image_resolver(&self, _resolver: crate::ImageResolver) -> bool {
        false
    }

    /// Prompt tokens `request` may take to fit the judge model's context window
    /// (the window less the request's answer limit), when the window is known: an
    /// overflow reply of this run or a stored one of an earlier run named it.
    /// `None` when it is not known.
    fn prompt_budget(&self, _request: &JudgeRequest) -> Option<u64> {
        None
    }

    /// False when [`Judge::prompt_budget`] is certain to answer `None` now, whatever
    /// the request: the pipeline then skips building the request it would measure
    /// (a render per unit that shows pages). True by default, which only costs that
    /// render.
    fn knows_context_window(&self) -> bool {
        true
    }

    /// `Some(reason)` when the judge cannot read images: every vision metric is then
    /// not evaluated with that reason. `None` when it can (or cannot tell).
    fn blind_reason(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }

    /// Whether this judge lets the vision check wait until a request must be sent:
    /// then [`Judge::known_blind_reason`] and [`Judge::answers_from_cache`] say what
    /// is known without asking, and a run whose answers all come from the cache
    /// sends nothing (not even the check). False by default: the check is made
    /// before the first vision unit and before a report's markers, as always.
    fn defers_vision_check(&self) -> bool {
        false
    }

    /// [`Judge::blind_reason`] when it is known without a check in this run
    /// (assumed, or remembered by an earlier run): `Some(None)` the judge sees,
    /// `Some(Some(reason))` it is blind; `None` when only a check can tell.
    fn known_blind_reason(&self) -> Option<Option<String>> {
        None
    }

    /// Whether `request` would be answered from the cache, sending nothing.
    fn answers_from_cache(&self, _request: &JudgeRequest) -> bool {
        false
    }
}

/// The real judge: [`JudgeClient`] plus its price table, so a cached answer is
/// costed from its stored token counts exactly like a fresh one.
pub struct ClientJudge {
    pub client: JudgeClient,
    prices: crate::prices::PriceTable,
}

impl ClientJudge {
    pub fn new(client: JudgeClient) -> Result<Self, String> {
        let prices = crate::prices::PriceTable::shipped_with_override(
            client.config().price_table_path.as_deref(),
        )
        .map_err(|e| e.to_string())?;
        Ok(Self { client, prices })
    }
}

impl Judge for ClientJudge {
    fn ask(&self, request: JudgeRequest) -> BoxFuture<'_, Result<JudgeAnswer, JudgeError>> {
        Box::pin(self.client.ask(request))
    }

    fn estimate(&self, request: &JudgeRequest) -> Option<(u64, u64, Option<f64>)> {
        let t = self.client.estimate_tokens(request);
        Some((
            t.prompt_tokens,
            t.completion_tokens,
            self.client.estimate_cost(request),
        ))
    }

    fn set_image_resolver(&self, resolver: crate::ImageResolver) -> bool {
        self.client.set_image_resolver(resolver);
        true
    }

    fn prompt_budget(&self, request: &JudgeRequest) -> Option<u64> {
        JudgeClient::prompt_budget(&self.client, request)
    }

    fn knows_context_window(&self) -> bool {
        self.client.knows_context_window()
    }

    fn judgment_cost(&self, answer: &JudgeAnswer) -> Option<f64> {
        // The server's model name when priced, else the configured one (as the client
        // does for fresh answers).
        let model = if self.prices.lookup(&answer.model).is_some() {
            answer.model.as_str()
        } else {
            self.client.config().model.as_str()
        };
        self.prices.cost_via(model, &answer.usage, answer.batch)
    }

    fn blind_reason(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            match self.client.check_vision().await {
                crate::vision::Vision::Blind(_) => Some(crate::vision::BLIND_REASON.to_string()),
                _ => None,
            }
        })
    }

    fn defers_vision_check(&self) -> bool {
        // `--relearn-judge` asks for the check itself: made as always, up front.
        !self.client.relearns()
    }

    fn known_blind_reason(&self) -> Option<Option<String>> {
        match self.client.vision_known_at_start()? {
            crate::vision::Vision::Blind(_) => Some(Some(crate::vision::BLIND_REASON.to_string())),
            crate::vision::Vision::Sees => Some(None),
            crate::vision::Vision::Unknown(_) => None,
        }
    }

    fn answers_from_cache(&self, request: &JudgeRequest) -> bool {
        self.client.cached_answer(request).is_some()
    }
}
