//! The one image loader of the suite (bounded decoding, SVG, alpha on white), Image
//! Quality from pixels, the perceptual-hash duplicate penalty, Figure Quality, and
//! encoding of figures for vision judges.

use serde::{Deserialize, Serialize};

/// Decoding bounds: reports are untrusted input.
#[derive(Debug, Clone)]
pub struct ImageLimits {
    pub max_width: u32,
    pub max_height: u32,
    pub max_alloc: u64,
    pub max_file_bytes: u64,
}

impl Default for ImageLimits {
    fn default() -> Self {
        Self {
            max_width: 16384,
            max_height: 16384,
            max_alloc: 256 * 1024 * 1024,
            max_file_bytes: 20 * 1024 * 1024,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{name}: {message}")]
    Decode { name: String, message: String },
}

/// An image to score: a label (path or URL, as written) and its bytes, or the reason
/// they could not be had (missing file, failed fetch). Failures still count (Q = 0).
#[derive(Debug, Clone)]
pub struct ImageInput {
    pub label: String,
    pub bytes: Result<Vec<u8>, String>,
}

/// Per-image result, shaped as `tvir iq --json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageScore {
    pub path: String,
    pub width: u32,
    pub height: u32,
    pub resolution: f64,
    pub aspect: f64,
    pub sharpness: f64,
    pub contrast: f64,
    pub quality: f64,
    pub phash: Option<String>,
    pub duplicate_of: Option<usize>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IqResult {
    pub images: Vec<ImageScore>,
    pub duplicate_penalty: f64,
    /// mean(Q) x (1 - p_dup); 0 when there is no image.
    pub iq: f64,
}

/// Decode bytes into RGBA (first frame for animations; SVG rasterised), bounded.
pub fn decode(
    _bytes: &[u8],
    name: &str,
    _limits: &ImageLimits,
) -> Result<image::RgbaImage, ImageError> {
    Err(ImageError::Decode {
        name: name.into(),
        message: "image loader not implemented yet".into(),
    })
}

/// PNG `data:` URI for a judge, alpha composited on white, long side <= `max_side`.
pub fn to_png_data_uri(_img: &image::RgbaImage, _max_side: u32) -> Result<String, ImageError> {
    Err(ImageError::Decode {
        name: "data-uri".into(),
        message: "not implemented yet".into(),
    })
}

/// Score a report's images in order (IQ with the duplicate penalty), on rayon.
pub fn score_images(_inputs: &[ImageInput], _limits: &ImageLimits) -> IqResult {
    IqResult {
        images: Vec::new(),
        duplicate_penalty: 0.0,
        iq: 0.0,
    }
}

/// FQ = (N_img x IQ + N_chart x CQ) / (N_img + N_chart); 0 if no figure.
pub fn figure_quality(n_images: usize, iq: f64, n_charts: usize, cq: f64) -> f64 {
    let n = n_images + n_charts;
    if n == 0 {
        return 0.0;
    }
    (n_images as f64 * iq + n_charts as f64 * cq) / n as f64
}
