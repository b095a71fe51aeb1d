//! The image seam: decoding, judge encoding and IQ of figures behind
//! [`FigureOps`], with [`ImagePipeline`] (the `tvir_images` crate plus the figure
//! facts memo) as the real implementation.

use std::sync::Arc;

use crate::figures::{content_hash, FactsMemo, FigureFacts};
use tvir_images::{ImageInput, ImageLimits, IqResult};

/// Decoding, judge encoding and IQ of figures. [`ImagePipeline`] is the real one
/// (the `images` module); tests may substitute it.
pub trait FigureOps: Send + Sync {
    /// Decode `bytes`; `Err(reason)` when unusable. With `want_uri`, also the PNG data
    /// URI sent to vision judges.
    fn prepare(&self, bytes: &[u8], name: &str, want_uri: bool) -> Result<Option<String>, String>;
    /// IQ of a report's images, in order (failures count with Q = 0).
    fn score(&self, inputs: &[ImageInput]) -> IqResult;

    /// `prepare(bytes, name, false)` for bytes whose [`content_hash`] is `sha256`,
    /// which an implementation keyed by content uses instead of hashing them again.
    fn check_hashed(&self, bytes: &[u8], sha256: &str, name: &str) -> Result<(), String> {
        let _ = sha256;
        self.prepare(bytes, name, false).map(|_| ())
    }
    /// `score(inputs)` with each input's [`content_hash`] (`None` where it has no
    /// bytes), likewise.
    fn score_hashed(&self, inputs: &[ImageInput], sha256: &[Option<&str>]) -> IqResult {
        let _ = sha256;
        self.score(inputs)
    }
}

/// The `images` module behind [`FigureOps`]. Whether a figure decodes and its IQ
/// analysis come from `facts` (by content hash and decoding limits) when known, so an
/// unchanged image is decoded once, across runs when `facts` has a store.
pub struct ImagePipeline {
    pub limits: ImageLimits,
    pub max_side: u32,
    pub facts: Arc<FactsMemo>,
}

impl ImagePipeline {
    pub fn new(limits: ImageLimits, max_side: u32, store: Option<tvir_store::Store>) -> Self {
        Self {
            limits,
            max_side,
            facts: Arc::new(FactsMemo::new(store)),
        }
    }

    fn facts_of(&self, bytes: &[u8], name: &str) -> FigureFacts {
        self.facts_of_hashed(bytes, &content_hash(bytes), name)
    }

    /// [`Self::facts_of`] for bytes whose content hash is known.
    fn facts_of_hashed(&self, bytes: &[u8], sha256: &str, name: &str) -> FigureFacts {
        let key = FactsMemo::key_of_hash(sha256, &format!("{:?}", self.limits));
        self.facts.get_or_compute(&key, || {
            match tvir_images::analyze_bytes(bytes, name, &self.limits) {
                Ok(a) => FigureFacts {
                    error: None,
                    analysis: Some((&a).into()),
                },
                Err(e) => FigureFacts {
                    error: Some(e.to_string()),
                    analysis: None,
                },
            }
        })
    }
}

impl FigureOps for ImagePipeline {
    fn prepare(&self, bytes: &[u8], name: &str, want_uri: bool) -> Result<Option<String>, String> {
        if !want_uri {
            return match self.facts_of(bytes, name).error {
                Some(e) => Err(format!("does not decode as an image: {e}")),
                None => Ok(None),
            };
        }
        let img = tvir_images::decode(bytes, name, &self.limits)
            .map_err(|e| format!("does not decode as an image: {e}"))?;
        tvir_images::to_png_data_uri(&img, self.max_side)
            .map(Some)
            .map_err(|e| format!("cannot encode for the judge: {e}"))
    }
    fn score(&self, inputs: &[ImageInput]) -> IqResult {
        self.score_hashed(inputs, &[])
    }
    fn check_hashed(&self, bytes: &[u8], sha256: &str, name: &str) -> Result<(), String> {
        match self.facts_of_hashed(bytes, sha256, name).error {
            Some(e) => Err(format!("does not decode as an image: {e}")),
            None => Ok(()),
        }
    }
    fn score_hashed(&self, inputs: &[ImageInput], sha256: &[Option<&str>]) -> IqResult {
        use rayon::prelude::*;
        let analyses: Vec<Result<tvir_images::ImageAnalysis, String>> = inputs
            .par_iter()
            .enumerate()
            .map(|(i, input)| {
                let bytes = input
                    .bytes
                    .as_ref()
                    .map_err(|e| format!("{}: {e}", input.label))?;
                let facts = match sha256.get(i).copied().flatten() {
                    Some(hash) => self.facts_of_hashed(bytes, hash, &input.label),
                    None => self.facts_of(bytes, &input.label),
                };
                match (facts.error, facts.analysis.and_then(|a| a.to_analysis())) {
                    (Some(e), _) => Err(e),
                    (None, Some(a)) => Ok(a),
                    (None, None) => Err(format!("{}: no analysis", input.label)),
                }
            })
            .collect();
        tvir_images::iq_from_analyses(inputs, &analyses, &tvir_images::IqParams::paper())
    }
}
