//! In-process stand-ins for the engine's seams, for tests and benches that run the
//! pipeline with no server at all: a judge answer made on the spot, and pages whose
//! text a function makes up.

use futures::future::BoxFuture;
use serde_json::Value;

use tvir_engine::Pages;
use tvir_judge::{JudgeAnswer, Usage};
use tvir_sources::PageOutcome;

/// An answer made in process: `value` (its raw text is the value's JSON) from
/// `model` after `latency_ms`, one attempt, no usage, no cost, neither cached nor
/// batched.
pub fn answer(value: Value, model: &str, latency_ms: u64) -> JudgeAnswer {
    JudgeAnswer {
        raw: value.to_string(),
        value,
        usage: Usage::default(),
        model: model.into(),
        cached: false,
        latency_ms,
        cost_usd: None,
        attempts: 1,
        batch: false,
    }
}

/// Pages whose text the function makes up from the address (status ok, never from
/// a cache, no network); every image fetch is refused, naming the address.
pub struct TextPages<F>(pub F);

impl<F: Fn(&str) -> String + Send + Sync> Pages for TextPages<F> {
    fn page<'a>(&'a self, url: &'a str) -> BoxFuture<'a, PageOutcome> {
        let text = (self.0)(url);
        Box::pin(async move { PageOutcome::with_text(url, text) })
    }
    fn image_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move { Err(format!("{url}: no network here")) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tvir_sources::PageStatus;

    #[tokio::test]
    async fn pages_serve_the_made_up_text_and_refuse_images() {
        let pages = TextPages(|url: &str| format!("text of {url}"));
        let p = pages.page("https://a.example/x").await;
        assert_eq!(p.status, PageStatus::Ok);
        assert_eq!(p.text, "text of https://a.example/x");
        let err = pages
            .image_bytes("https://a.example/i.png")
            .await
            .unwrap_err();
        assert!(err.contains("https://a.example/i.png"), "{err}");
    }

    #[test]
    fn answers_carry_their_value_as_raw_text() {
        let a = answer(serde_json::json!({"score": 3}), "m", 7);
        assert_eq!(a.raw, r#"{"score":3}"#);
        assert_eq!((a.model.as_str(), a.latency_ms, a.attempts), ("m", 7, 1));
        assert!(!a.cached && !a.batch && a.cost_usd.is_none());
    }
}
