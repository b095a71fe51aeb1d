//! Figures as vision judges receive them: alpha on white, long side bounded, PNG
//! `data:` URI.

use std::io::Cursor;

use base64::Engine;
use image::{imageops::FilterType, ImageFormat, RgbImage, RgbaImage};

use super::gray::composite_on_white;
use super::ImageError;

/// Default bound on the long side of an image sent to a judge.
pub const DEFAULT_MAX_SIDE: u32 = 2048;

/// Size that fits `(w, h)` into a `max_side` square, keeping the aspect ratio (never
/// upscales, never reaches 0).
pub fn fit_within(width: u32, height: u32, max_side: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= max_side || max_side == 0 {
        return (width, height);
    }
    let scale = f64::from(max_side) / f64::from(long);
    let w = ((f64::from(width) * scale).round() as u32).clamp(1, max_side);
    let h = ((f64::from(height) * scale).round() as u32).clamp(1, max_side);
    (w, h)
}

/// RGB on white, downscaled (Lanczos3) so the long side is at most `max_side`.
pub fn prepare_for_judge(img: &RgbaImage, max_side: u32) -> RgbImage {
    let rgb = composite_on_white(img);
    let (w, h) = fit_within(rgb.width(), rgb.height(), max_side);
    if (w, h) == rgb.dimensions() {
        rgb
    } else {
        image::imageops::resize(&rgb, w, h, FilterType::Lanczos3)
    }
}

/// PNG bytes of an RGB image.
pub fn png_bytes(img: &RgbImage) -> Result<Vec<u8>, ImageError> {
    let mut out = Vec::new();
    img.write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
        .map_err(|e| ImageError::Encode {
            message: format!("PNG encoding failed: {e}"),
        })?;
    Ok(out)
}

pub fn data_uri(img: &RgbaImage, max_side: u32) -> Result<String, ImageError> {
    if img.width() == 0 || img.height() == 0 {
        return Err(ImageError::Encode {
            message: "cannot encode an empty image".into(),
        });
    }
    let png = png_bytes(&prepare_for_judge(img, max_side))?;
    Ok(format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_keeps_aspect_and_bounds() {
        assert_eq!(fit_within(100, 50, 2048), (100, 50));
        assert_eq!(fit_within(5370, 3570, 2048), (2048, 1362));
        assert_eq!(fit_within(3570, 5370, 2048), (1362, 2048));
        assert_eq!(fit_within(10000, 1, 100), (100, 1));
    }

    #[test]
    fn data_uri_is_bounded_png_on_white() {
        let img = RgbaImage::from_fn(300, 100, |x, _| image::Rgba([0, 0, 0, (x % 2 * 255) as u8]));
        let uri = data_uri(&img, 150).unwrap();
        let b64 = uri.strip_prefix("data:image/png;base64,").unwrap();
        let png = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let back = image::load_from_memory(&png).unwrap();
        assert_eq!((back.width(), back.height()), (150, 50));
        assert!(matches!(back, image::DynamicImage::ImageRgb8(_)));
        let small = data_uri(&RgbaImage::new(3, 3), 2048).unwrap();
        let png = base64::engine::general_purpose::STANDARD
            .decode(small.strip_prefix("data:image/png;base64,").unwrap())
            .unwrap();
        let back = image::load_from_memory(&png).unwrap().to_rgb8();
        assert_eq!(
            back.get_pixel(1, 1).0,
            [255, 255, 255],
            "transparent -> white"
        );
    }
}

/// Long side, in pixels, of the figure thumbnails `tvir eval` writes beside each
/// `report.json` for the HTML summary.
pub const THUMBNAIL_MAX_SIDE: u32 = 320;

/// JPEG quality of those thumbnails (a 320-pixel chart or photo comes out at
/// roughly 8-30 KB).
pub const THUMBNAIL_JPEG_QUALITY: u8 = 80;

/// A JPEG thumbnail: alpha on white, long side at most `max_side` (area-averaged
/// downscale, never upscaled), at `quality`.
pub fn thumbnail_jpeg(img: &RgbaImage, max_side: u32, quality: u8) -> Result<Vec<u8>, ImageError> {
    if img.width() == 0 || img.height() == 0 {
        return Err(ImageError::Encode {
            message: "cannot encode an empty image".into(),
        });
    }
    let (w, h) = fit_within(img.width(), img.height(), max_side);
    let small = if (w, h) == img.dimensions() {
        img.clone()
    } else {
        image::imageops::thumbnail(img, w, h)
    };
    let rgb = composite_on_white(&small);
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode_image(&rgb)
        .map_err(|e| ImageError::Encode {
            message: format!("JPEG encoding failed: {e}"),
        })?;
    Ok(out)
}

#[cfg(test)]
mod thumbnail_tests {
    use super::*;

    #[test]
    fn thumbnails_are_bounded_jpegs_on_white() {
        // 1000 x 400, transparent left half, opaque red right half.
        let img = RgbaImage::from_fn(1000, 400, |x, _| {
            if x < 500 {
                image::Rgba([0, 0, 0, 0])
            } else {
                image::Rgba([255, 0, 0, 255])
            }
        });
        let jpeg = thumbnail_jpeg(&img, THUMBNAIL_MAX_SIDE, THUMBNAIL_JPEG_QUALITY).unwrap();
        assert!(jpeg.starts_with(&[0xFF, 0xD8]), "not a JPEG");
        let back = image::load_from_memory(&jpeg).unwrap().to_rgb8();
        assert_eq!(back.dimensions(), (320, 128));
        let white = back.get_pixel(10, 64);
        assert!(
            white.0.iter().all(|&c| c > 240),
            "transparency not on white: {white:?}"
        );
        let red = back.get_pixel(300, 64);
        assert!(red[0] > 200 && red[1] < 60 && red[2] < 60, "{red:?}");
        // Small images keep their size.
        let tiny = RgbaImage::from_pixel(40, 30, image::Rgba([0, 0, 255, 255]));
        let jpeg = thumbnail_jpeg(&tiny, THUMBNAIL_MAX_SIDE, THUMBNAIL_JPEG_QUALITY).unwrap();
        assert_eq!(image::load_from_memory(&jpeg).unwrap().width(), 40);
        assert!(thumbnail_jpeg(&RgbaImage::new(0, 0), 320, 80).is_err());
    }
}
