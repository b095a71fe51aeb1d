//! The one image loader of the suite (bounded decoding, SVG, alpha on white), Image
//! Quality from pixels, the perceptual-hash duplicate penalty, Figure Quality, and
//! encoding of figures for vision judges.
//!
//! Main types: [`ImageLimits`], [`ImageInput`], [`ImageAnalysis`], [`IqResult`] /
//! [`IqParams`], [`PHash`]; entry points [`analyze`], [`score_images`] and
//! [`figure_quality`].
//!
//! Pure pixel work on top of `tvir-report` and `tvir-sources` (for figure inputs):
//! it never depends on the judge. Vision judges get a data URI from
//! [`to_png_data_uri`], and what they say is scored elsewhere.

pub mod contrast;
pub mod duplicates;
pub mod encode;
pub mod gray;
pub mod inputs;
pub mod load;
pub mod phash;
pub mod quality;
pub mod sharpness;
pub mod sweep;

use serde::{Deserialize, Serialize};

pub use contrast::ContrastStats;
pub use encode::{DEFAULT_MAX_SIDE, THUMBNAIL_JPEG_QUALITY, THUMBNAIL_MAX_SIDE};
pub use gray::GrayPlanes;
pub use load::{decode_dynamic, decode_file, png_rows, read_file_bounded, PngRows};
pub use phash::PHash;
pub use quality::{QualityComponents, QualityWeights};
pub use sharpness::LaplacianVariances;

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
    /// Corrupt, truncated or otherwise undecodable bytes.
    #[error("{name}: {message}")]
    Decode { name: String, message: String },
    /// Not an image format the suite reads.
    #[error("{name}: unsupported image: {message}")]
    Unsupported { name: String, message: String },
    /// Dimensions or decoded size past [`ImageLimits`] (decompression bombs).
    #[error("{name}: image too large: {message}")]
    TooLarge { name: String, message: String },
    #[error("{name}: file is {bytes} bytes, over the {max_bytes}-byte limit")]
    FileTooLarge {
        name: String,
        bytes: u64,
        max_bytes: u64,
    },
    #[error("{name}: cannot read: {message}")]
    Io { name: String, message: String },
    #[error("encoding failed: {message}")]
    Encode { message: String },
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
/// Alpha is kept; [`gray::composite_on_white`] or [`to_png_data_uri`] put it on white.
pub fn decode(
    bytes: &[u8],
    name: &str,
    limits: &ImageLimits,
) -> Result<image::RgbaImage, ImageError> {
    load::decode_dynamic(bytes, name, limits).map(|img| match img {
        image::DynamicImage::ImageRgba8(rgba) => rgba,
        other => other.to_rgba8(),
    })
}

/// PNG `data:` URI for a judge, alpha composited on white, long side <= `max_side`.
pub fn to_png_data_uri(img: &image::RgbaImage, max_side: u32) -> Result<String, ImageError> {
    encode::data_uri(img, max_side)
}

/// The JPEG thumbnail of an image file's bytes (decoded within `limits`), long side
/// at most [`THUMBNAIL_MAX_SIDE`]: what the HTML summary embeds for a figure.
pub fn thumbnail_of_bytes(
    bytes: &[u8],
    name: &str,
    limits: &ImageLimits,
) -> Result<Vec<u8>, ImageError> {
    let img = decode(bytes, name, limits)?;
    encode::thumbnail_jpeg(&img, THUMBNAIL_MAX_SIDE, THUMBNAIL_JPEG_QUALITY)
}

/// Everything IQ needs from one decoded image.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageAnalysis {
    pub width: u32,
    pub height: u32,
    pub components: QualityComponents,
    pub laplacian: LaplacianVariances,
    pub contrast: ContrastStats,
    pub phash: PHash,
}

/// Analyse a decoded image: alpha on white, both grays, R, A, S, C and the hash.
/// Large images are split across the rayon pool internally.
pub fn analyze(img: &image::DynamicImage) -> ImageAnalysis {
    analysis_from_stats(img.width(), img.height(), sweep::pixel_stats(img))
}

/// Analyse encoded bytes: PNGs that can be streamed are swept while they decode (the
/// decoded image never exists in full); everything else is decoded by
/// [`decode_dynamic`] first. The result is the same either way.
pub fn analyze_bytes(
    bytes: &[u8],
    name: &str,
    limits: &ImageLimits,
) -> Result<ImageAnalysis, ImageError> {
    if let Some((w, h, stats)) = sweep::png_pixel_stats(bytes, name, limits)? {
        return Ok(analysis_from_stats(w, h, stats));
    }
    Ok(analyze(&load::decode_dynamic(bytes, name, limits)?))
}

fn analysis_from_stats(w: u32, h: u32, stats: sweep::PixelStats) -> ImageAnalysis {
    let sweep::PixelStats {
        laplacian,
        contrast,
        phash,
    } = stats;
    let components = QualityComponents {
        resolution: quality::resolution_score(w, h),
        aspect: quality::aspect_score(w, h),
        sharpness: sharpness::sharpness_score(&laplacian, contrast.mean),
        contrast: contrast::contrast_score(&contrast),
    };
    ImageAnalysis {
        width: w,
        height: h,
        components,
        laplacian,
        contrast,
        phash,
    }
}

/// R, A, S and C of a decoded image.
pub fn quality_components(img: &image::DynamicImage) -> QualityComponents {
    analyze(img).components
}

/// imagehash-compatible `phash` hex string of a decoded image (alpha on white).
pub fn phash_hex(img: &image::DynamicImage) -> String {
    let planes = GrayPlanes::from_image(img);
    phash::phash_gray(&planes.pil, planes.width, planes.height).to_hex()
}

/// The constants of IQ, so ablations can re-weight. [`IqParams::paper`] is the
/// published configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IqParams {
    pub weights: QualityWeights,
    /// Hamming distance (inclusive) under which two hashes are duplicates.
    pub dup_threshold: u32,
    /// p_dup = min(dup_cap, dup_factor x duplicates / valid images).
    pub dup_factor: f64,
    pub dup_cap: f64,
}

impl IqParams {
    pub const fn paper() -> Self {
        Self {
            weights: QualityWeights::paper(),
            dup_threshold: 10,
            dup_factor: 0.8,
            dup_cap: 0.5,
        }
    }
}

impl Default for IqParams {
    fn default() -> Self {
        Self::paper()
    }
}

/// Score a report's images in order (IQ with the duplicate penalty), on rayon.
pub fn score_images(inputs: &[ImageInput], limits: &ImageLimits) -> IqResult {
    score_images_with(inputs, limits, &IqParams::paper())
}

/// [`score_images`] with explicit constants.
pub fn score_images_with(
    inputs: &[ImageInput],
    limits: &ImageLimits,
    params: &IqParams,
) -> IqResult {
    use rayon::prelude::*;
    let analyses: Vec<Result<ImageAnalysis, String>> = inputs
        .par_iter()
        .map(|input| {
            let bytes = input
                .bytes
                .as_ref()
                .map_err(|e| format!("{}: {e}", input.label))?;
            analyze_bytes(bytes, &input.label, limits).map_err(|e| e.to_string())
        })
        .collect();
    iq_from_analyses(inputs, &analyses, params)
}

/// Assemble the per-image scores, the duplicate groups and IQ from analyses (one per
/// input, in order; `Err` holds the failure reason).
pub fn iq_from_analyses(
    inputs: &[ImageInput],
    analyses: &[Result<ImageAnalysis, String>],
    params: &IqParams,
) -> IqResult {
    let hashes: Vec<Option<PHash>> = analyses
        .iter()
        .map(|a| a.as_ref().ok().map(|a| a.phash))
        .collect();
    let groups = duplicates::group_duplicates(&hashes, params.dup_threshold);
    let penalty = duplicates::duplicate_penalty(
        groups.duplicates,
        groups.valid,
        params.dup_factor,
        params.dup_cap,
    );
    let images: Vec<ImageScore> = inputs
        .iter()
        .zip(analyses)
        .zip(&groups.duplicate_of)
        .map(|((input, analysis), dup)| match analysis {
            Ok(a) => ImageScore {
                path: input.label.clone(),
                width: a.width,
                height: a.height,
                resolution: a.components.resolution,
                aspect: a.components.aspect,
                sharpness: a.components.sharpness,
                contrast: a.components.contrast,
                quality: a.components.quality(&params.weights),
                phash: Some(a.phash.to_hex()),
                duplicate_of: *dup,
                error: None,
            },
            Err(reason) => ImageScore {
                path: input.label.clone(),
                width: 0,
                height: 0,
                resolution: 0.0,
                aspect: 0.0,
                sharpness: 0.0,
                contrast: 0.0,
                quality: 0.0,
                phash: None,
                duplicate_of: None,
                error: Some(reason.clone()),
            },
        })
        .collect();
    let iq = if images.is_empty() {
        0.0
    } else {
        let mean = images.iter().map(|s| s.quality).sum::<f64>() / images.len() as f64;
        mean * (1.0 - penalty)
    };
    IqResult {
        images,
        duplicate_penalty: penalty,
        iq,
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
