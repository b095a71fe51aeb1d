//! Figures by content. Two things make a re-run cheap:
//!
//! * [`FactsMemo`]: whether a figure decodes and its IQ analysis, keyed by the SHA-256
//!   of its bytes plus the decoding limits, kept in memory for the run and in the
//!   store's `figure_facts` table across runs, so an unchanged image is decoded once.
//! * [`ImageRegistry`]: vision requests carry an image *reference* (content hash and
//!   preparation settings, see [`image_ref`]) instead of the PNG. The judge cache key
//!   is computed from the request as built, so a cached request never decodes,
//!   resizes or encodes anything; only a request that is actually sent has its
//!   reference turned into a data URI, once per figure while its report is in flight.
//! * [`ThumbnailMemo`]: the JPEG thumbnail the output folder shows for a figure, by
//!   content hash in the store's `thumbnails` table, so a re-run into a new output
//!   folder copies it instead of decoding the figure again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use tvir_images::{ContrastStats, ImageAnalysis, LaplacianVariances, PHash, QualityComponents};
use tvir_store::{figure_facts, thumbnails, Store};

/// Prefix of an image reference in a judge request's image part.
pub const IMAGE_REF_PREFIX: &str = "tvir-image:";

/// Bump when the analysis or the encoding changes, so stale facts are never used.
const FACTS_VERSION: &str = "facts-v1";
const ENCODING_VERSION: &str = "png-v1";

/// Hex SHA-256 of a figure's bytes.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The reference a vision request carries for a figure: its content hash and every
/// setting of the preparation (longest side, encoding version).
pub fn image_ref(hash: &str, max_side: u32) -> String {
    format!("{IMAGE_REF_PREFIX}sha256={hash};max_side={max_side};{ENCODING_VERSION}")
}

/// What is known about one figure's bytes under given decoding limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureFacts {
    /// Why the bytes do not decode (None when they do).
    pub error: Option<String>,
    pub analysis: Option<StoredAnalysis>,
}

/// An [`ImageAnalysis`] as stored (every field, so IQ from stored facts equals IQ
/// from a fresh decode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredAnalysis {
    pub width: u32,
    pub height: u32,
    pub components: QualityComponents,
    pub laplacian: [f64; 3],
    pub contrast_mean: f64,
    pub contrast_global_std: f64,
    pub contrast_block_median_std: Option<f64>,
    pub contrast_block_count: usize,
    pub phash: String,
}

impl From<&ImageAnalysis> for StoredAnalysis {
    fn from(a: &ImageAnalysis) -> Self {
        Self {
            width: a.width,
            height: a.height,
            components: a.components,
            laplacian: [
                a.laplacian.aperture1,
                a.laplacian.aperture3,
                a.laplacian.aperture5,
            ],
            contrast_mean: a.contrast.mean,
            contrast_global_std: a.contrast.global_std,
            contrast_block_median_std: a.contrast.block_median_std,
            contrast_block_count: a.contrast.block_count,
            phash: a.phash.to_hex(),
        }
    }
}

impl StoredAnalysis {
    pub fn to_analysis(&self) -> Option<ImageAnalysis> {
        Some(ImageAnalysis {
            width: self.width,
            height: self.height,
            components: self.components,
            laplacian: LaplacianVariances {
                aperture1: self.laplacian[0],
                aperture3: self.laplacian[1],
                aperture5: self.laplacian[2],
            },
            contrast: ContrastStats {
                mean: self.contrast_mean,
                global_std: self.contrast_global_std,
                block_median_std: self.contrast_block_median_std,
                block_count: self.contrast_block_count,
            },
            phash: PHash::from_hex(&self.phash)?,
        })
    }
}

/// Figure facts by content key, in memory for the run and in the store across runs.
#[derive(Default)]
pub struct FactsMemo {
    store: Option<Store>,
    memory: Mutex<HashMap<String, FigureFacts>>,
    /// Facts found (memory or store) and facts computed by decoding.
    pub hits: AtomicU64,
    pub computed: AtomicU64,
}

impl FactsMemo {
    pub fn new(store: Option<Store>) -> Self {
        Self {
            store,
            ..Self::default()
        }
    }

    /// The key of `bytes` under `settings` (the decoding limits).
    pub fn key(bytes: &[u8], settings: &str) -> String {
        Self::key_of_hash(&content_hash(bytes), settings)
    }

    /// [`Self::key`] of bytes whose [`content_hash`] is `hash` (already computed).
    pub fn key_of_hash(hash: &str, settings: &str) -> String {
        format!("{hash};{settings};{FACTS_VERSION}")
    }

    /// Facts of `key`, computing (and remembering) them with `compute` when unknown.
    pub fn get_or_compute(&self, key: &str, compute: impl FnOnce() -> FigureFacts) -> FigureFacts {
        if let Some(f) = self.lookup(key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return f;
        }
        let facts = compute();
        self.computed.fetch_add(1, Ordering::Relaxed);
        self.remember(key, &facts);
        facts
    }

    fn lookup(&self, key: &str) -> Option<FigureFacts> {
        if let Some(f) = self
            .memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            return Some(f.clone());
        }
        let store = self.store.as_ref()?;
        let json = match store.with_conn(|c| figure_facts::get(c, key)) {
            Ok(row) => row?,
            Err(e) => {
                tracing::warn!("figure facts read failed, decoding instead: {e}");
                return None;
            }
        };
        let facts: FigureFacts = serde_json::from_str(&json).ok()?;
        // A stored analysis that no longer reads back is recomputed.
        if facts
            .analysis
            .as_ref()
            .is_some_and(|a| a.to_analysis().is_none())
        {
            return None;
        }
        self.memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), facts.clone());
        Some(facts)
    }

    fn remember(&self, key: &str, facts: &FigureFacts) {
        self.memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), facts.clone());
        if let Some(store) = &self.store {
            let json = serde_json::to_string(facts).unwrap_or_default();
            if let Err(e) = store.with_conn(|c| figure_facts::put(c, key, &json)) {
                tracing::warn!("figure facts write failed: {e}");
            }
        }
    }
}

/// Bump when the thumbnail's size, quality or encoder changes.
const THUMBNAIL_VERSION: &str = "thumb-v1";

/// Figure thumbnails by content key, in the store across runs (not kept in memory:
/// a lookup is one indexed row, and the output stage asks once per figure).
#[derive(Default)]
pub struct ThumbnailMemo {
    store: Option<Store>,
    /// Thumbnails copied from the store, and thumbnails made by decoding the figure.
    pub reused: AtomicU64,
    pub decoded: AtomicU64,
}

impl ThumbnailMemo {
    pub fn new(store: Option<Store>) -> Self {
        Self {
            store,
            ..Self::default()
        }
    }

    /// The JPEG thumbnail of a figure whose bytes hash to `hash` (computed when
    /// `None`): from the store when known, else decoded from `bytes` within `limits`
    /// and remembered.
    pub fn jpeg(
        &self,
        hash: Option<&str>,
        bytes: &[u8],
        name: &str,
        limits: &tvir_images::ImageLimits,
    ) -> Result<Vec<u8>, String> {
        let hash = match hash {
            Some(h) => h.to_string(),
            None => content_hash(bytes),
        };
        let key = format!(
            "{hash};{}px;q{};{limits:?};{THUMBNAIL_VERSION}",
            tvir_images::THUMBNAIL_MAX_SIDE,
            tvir_images::THUMBNAIL_JPEG_QUALITY
        );
        if let Some(store) = &self.store {
            match store.with_conn(|c| thumbnails::get(c, &key)) {
                Ok(Some(jpeg)) => {
                    self.reused.fetch_add(1, Ordering::Relaxed);
                    return Ok(jpeg);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("thumbnail read failed, decoding instead: {e}"),
            }
        }
        let jpeg =
            tvir_images::thumbnail_of_bytes(bytes, name, limits).map_err(|e| e.to_string())?;
        self.decoded.fetch_add(1, Ordering::Relaxed);
        if let Some(store) = &self.store {
            if let Err(e) = store.with_conn(|c| thumbnails::put(c, &key, &jpeg)) {
                tracing::warn!("thumbnail write failed: {e}");
            }
        }
        Ok(jpeg)
    }
}

/// Encodes a figure's bytes into the data URI a vision judge receives.
pub type Encoder = Arc<dyn Fn(&[u8], &str) -> Result<String, String> + Send + Sync>;

struct Entry {
    bytes: Arc<Vec<u8>>,
    name: String,
    encode: Encoder,
    uri: OnceLock<Result<String, String>>,
}

/// Figures of the reports in flight, by reference; each entry lives while some report
/// holding it is being judged.
#[derive(Default)]
pub struct ImageRegistry {
    entries: Mutex<HashMap<String, (Arc<Entry>, usize)>>,
    /// Figures encoded for a request actually sent.
    pub encoded: AtomicU64,
}

impl ImageRegistry {
    /// Hold `bytes` under `reference` until the matching [`release`](Self::release).
    pub fn register(&self, reference: &str, bytes: Arc<Vec<u8>>, name: &str, encode: Encoder) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .entry(reference.to_string())
            .or_insert_with(|| {
                (
                    Arc::new(Entry {
                        bytes,
                        name: name.to_string(),
                        encode,
                        uri: OnceLock::new(),
                    }),
                    0,
                )
            })
            .1 += 1;
    }

    pub fn release(&self, reference: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, users)) = entries.get_mut(reference) {
            *users -= 1;
            if *users == 0 {
                entries.remove(reference);
            }
        }
    }

    /// The data URI of a reference (`None` when `part` is not a reference at all).
    pub fn resolve(&self, part: &str) -> Option<Result<String, String>> {
        if !part.starts_with(IMAGE_REF_PREFIX) {
            return None;
        }
        let entry = self
            .entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(part)
            .map(|(e, _)| e.clone());
        let Some(entry) = entry else {
            return Some(Err(format!("{part}: figure no longer held")));
        };
        Some(
            entry
                .uri
                .get_or_init(|| {
                    self.encoded.fetch_add(1, Ordering::Relaxed);
                    (entry.encode)(&entry.bytes, &entry.name)
                })
                .clone(),
        )
    }

    /// Figures held right now (for tests).
    pub fn held(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_content_and_settings() {
        let h = content_hash(b"abc");
        assert_ne!(image_ref(&h, 1024), image_ref(&h, 512));
        assert_ne!(image_ref(&h, 1024), image_ref(&content_hash(b"abd"), 1024));
        assert!(image_ref(&h, 1024).starts_with(IMAGE_REF_PREFIX));
    }

    #[test]
    fn registry_encodes_once_and_forgets_released_figures() {
        let reg = ImageRegistry::default();
        let calls = Arc::new(AtomicU64::new(0));
        let c = calls.clone();
        let enc: Encoder = Arc::new(move |b: &[u8], _: &str| {
            c.fetch_add(1, Ordering::Relaxed);
            Ok(format!("data:image/png;base64,{}", b.len()))
        });
        let r = image_ref(&content_hash(b"xyz"), 1024);
        reg.register(&r, Arc::new(b"xyz".to_vec()), "a.png", enc.clone());
        reg.register(&r, Arc::new(b"xyz".to_vec()), "a.png", enc);
        assert_eq!(reg.resolve("data:image/png;base64,AA"), None);
        assert_eq!(reg.resolve(&r), Some(Ok("data:image/png;base64,3".into())));
        assert_eq!(reg.resolve(&r), Some(Ok("data:image/png;base64,3".into())));
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        reg.release(&r);
        assert_eq!(reg.held(), 1);
        reg.release(&r);
        assert_eq!(reg.held(), 0);
        assert!(matches!(reg.resolve(&r), Some(Err(_))));
    }

    #[test]
    fn facts_survive_the_store_and_are_computed_once() {
        let store = Store::in_memory().unwrap();
        let key = FactsMemo::key(b"bytes", "limits");
        let facts = FigureFacts {
            error: Some("not an image".into()),
            analysis: None,
        };
        let memo = FactsMemo::new(Some(store.clone()));
        assert_eq!(memo.get_or_compute(&key, || facts.clone()), facts);
        let again = FactsMemo::new(Some(store));
        let got = again.get_or_compute(&key, || panic!("must come from the store"));
        assert_eq!(got, facts);
        assert_eq!(again.hits.load(Ordering::Relaxed), 1);
        assert_eq!(again.computed.load(Ordering::Relaxed), 0);
    }
}
