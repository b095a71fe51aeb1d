//! What a run reports while it goes: process counters ([`RunStats`]) and the
//! [`Progress`] seam the command line hangs its bar on.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of this process (not written into per-report results, which must not
/// depend on what the cache already held).
#[derive(Debug, Default)]
pub struct RunStats {
    pub requests: AtomicU64,
    pub answers: AtomicU64,
    pub cache_hits: AtomicU64,
    pub failed_calls: AtomicU64,
    pub skipped_calls: AtomicU64,
    /// Dry run: characters of text and number of images the requests carry.
    pub request_text_chars: AtomicU64,
    pub request_images: AtomicU64,
    pub spend_micro_usd: AtomicU64,
    /// Dry run: the judge client's own estimates (tokens and dollars).
    pub est_prompt_tokens: AtomicU64,
    pub est_completion_tokens: AtomicU64,
    pub est_cost_micro_usd: AtomicU64,
    /// Cited pages shown to a judge cut (by `--source-chars`, a rubric's
    /// `max_source_chars` or the judge's context window); each cut is recorded in
    /// its unit's `detail.source_cuts`.
    pub source_cuts: AtomicU64,
    /// Batch mode: units waiting for a batch wave (their own request, or one they
    /// depend on). A run with pending units is not complete.
    pub pending: AtomicU64,
}

impl RunStats {
    pub fn spend_usd(&self) -> f64 {
        self.spend_micro_usd.load(Ordering::Relaxed) as f64 / 1e6
    }
    /// Prompt tokens of the requests built, for `--dry-run`: the judge's estimate
    /// when it gives one, else 4 characters a token and ~1000 tokens an image.
    pub fn estimated_prompt_tokens(&self) -> u64 {
        match self.est_prompt_tokens.load(Ordering::Relaxed) {
            0 => {
                self.request_text_chars.load(Ordering::Relaxed) / 4
                    + 1000 * self.request_images.load(Ordering::Relaxed)
            }
            n => n,
        }
    }

    /// Estimated dollars of a dry run (None when the judge has no price).
    pub fn estimated_cost_usd(&self) -> Option<f64> {
        match self.est_cost_micro_usd.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n as f64 / 1e6),
        }
    }
}

/// Progress reporting seam (the CLI shows a bar; tests ignore it).
pub trait Progress: Send + Sync {
    fn planned(&self, _units: u64) {}
    fn finished(&self, _units: u64, _failed: u64) {}
    fn report_done(&self, _label: &str) {}
}

pub struct NoProgress;
impl Progress for NoProgress {}
