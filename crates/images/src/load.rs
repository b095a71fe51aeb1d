//! The one bounded image loader: raster formats through the `image` crate (with
//! `image::Limits`), SVG rasterised with resvg. Reports are untrusted input, so every
//! size is checked against [`ImageLimits`] before any pixel buffer is allocated.

use std::io::Cursor;
use std::path::Path;

use image::{DynamicImage, ImageFormat, ImageReader, RgbaImage};
use resvg::{tiny_skia, usvg};

use super::gray::RowLayout;
use super::{ImageError, ImageLimits};

/// Bytes per decoded pixel we budget for when checking `max_alloc` up front: the
/// RGBA buffer every pipeline stage ends up with.
const BUDGET_BYTES_PER_PIXEL: u64 = 4;

/// Read a file and decode it, bounded. The error names the file.
pub fn decode_file(path: &Path, limits: &ImageLimits) -> Result<DynamicImage, ImageError> {
    let name = path.display().to_string();
    let bytes = read_file_bounded(path, limits)?;
    decode_dynamic(&bytes, &name, limits)
}

/// Read a file, refusing it (before reading) when it is larger than `max_file_bytes`.
pub fn read_file_bounded(path: &Path, limits: &ImageLimits) -> Result<Vec<u8>, ImageError> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| ImageError::Io {
        name: name.clone(),
        message: e.to_string(),
    })?;
    if !meta.is_file() {
        return Err(ImageError::Io {
            name,
            message: "not a regular file".into(),
        });
    }
    check_file_size(&name, meta.len(), limits)?;
    std::fs::read(path).map_err(|e| ImageError::Io {
        name,
        message: e.to_string(),
    })
}

/// Refuse inputs larger than `max_file_bytes`.
fn check_file_size(name: &str, bytes: u64, limits: &ImageLimits) -> Result<(), ImageError> {
    if bytes > limits.max_file_bytes {
        return Err(ImageError::FileTooLarge {
            name: name.into(),
            bytes,
            max_bytes: limits.max_file_bytes,
        });
    }
    Ok(())
}

/// Decode bytes into the decoder's native pixel layout (first frame of an animation;
/// SVG rasterised at its intrinsic size), bounded by `limits`.
pub fn decode_dynamic(
    bytes: &[u8],
    name: &str,
    limits: &ImageLimits,
) -> Result<DynamicImage, ImageError> {
    check_file_size(name, bytes.len() as u64, limits)?;
    if bytes.is_empty() {
        return Err(decode_err(name, "empty file"));
    }
    let format = image::guess_format(bytes).ok();
    match format {
        Some(format) => decode_raster(bytes, name, format, limits),
        None if looks_like_svg(bytes) => decode_svg(bytes, name, limits).map(DynamicImage::from),
        None => Err(ImageError::Unsupported {
            name: name.into(),
            message: "not a recognised image format (PNG, JPEG, WebP, GIF, BMP, TIFF, SVG)".into(),
        }),
    }
}

fn decode_raster(
    bytes: &[u8],
    name: &str,
    format: ImageFormat,
    limits: &ImageLimits,
) -> Result<DynamicImage, ImageError> {
    if !matches!(
        format,
        ImageFormat::Png
            | ImageFormat::Jpeg
            | ImageFormat::WebP
            | ImageFormat::Gif
            | ImageFormat::Bmp
            | ImageFormat::Tiff
    ) {
        return Err(ImageError::Unsupported {
            name: name.into(),
            message: format!("{format:?} images are not supported"),
        });
    }
    // Header first: a clear error for oversized images before the decoder allocates.
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(|e| decode_err(name, &format!("unreadable {format:?} header: {e}")))?;
    check_size(name, width, height, limits)?;

    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut decode_limits = image::Limits::default();
    decode_limits.max_image_width = Some(limits.max_width);
    decode_limits.max_image_height = Some(limits.max_height);
    decode_limits.max_alloc = Some(limits.max_alloc);
    reader.limits(decode_limits);
    reader.decode().map_err(|e| match e {
        image::ImageError::Limits(l) => ImageError::TooLarge {
            name: name.into(),
            message: format!("{width}x{height} {format:?} refused by the decoding limits: {l}"),
        },
        other => decode_err(name, &format!("corrupt or truncated {format:?}: {other}")),
    })
}

/// Refuse sizes past the limits (dimensions, and the RGBA buffer against `max_alloc`).
pub fn check_size(
    name: &str,
    width: u32,
    height: u32,
    limits: &ImageLimits,
) -> Result<(), ImageError> {
    if width == 0 || height == 0 {
        return Err(decode_err(name, &format!("empty image ({width}x{height})")));
    }
    if width > limits.max_width || height > limits.max_height {
        return Err(ImageError::TooLarge {
            name: name.into(),
            message: format!(
                "{width}x{height} exceeds the {}x{} limit",
                limits.max_width, limits.max_height
            ),
        });
    }
    let bytes = u64::from(width) * u64::from(height) * BUDGET_BYTES_PER_PIXEL;
    if bytes > limits.max_alloc {
        return Err(ImageError::TooLarge {
            name: name.into(),
            message: format!(
                "{width}x{height} needs {} MiB decoded, over the {} MiB allocation limit",
                bytes >> 20,
                limits.max_alloc >> 20
            ),
        });
    }
    Ok(())
}

/// SVG (or gzip-compressed SVGZ) sniffing: an XML prolog, comment or `<svg` root near
/// the start.
fn looks_like_svg(bytes: &[u8]) -> bool {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return true;
    }
    let head = &bytes[..bytes.len().min(4096)];
    let head = String::from_utf8_lossy(head);
    let trimmed = head.trim_start_matches('\u{feff}').trim_start();
    (trimmed.starts_with('<')) && head.contains("<svg")
}

/// Rasterise an SVG at its intrinsic size (rounded up), transparent background.
/// External files referenced by the SVG are never read (untrusted input).
pub fn decode_svg(bytes: &[u8], name: &str, limits: &ImageLimits) -> Result<RgbaImage, ImageError> {
    let mut options = usvg::Options {
        resources_dir: None,
        ..usvg::Options::default()
    };
    options.image_href_resolver.resolve_string = Box::new(|_, _| None);
    // Text is turned into paths while parsing, so fonts must be known then. Loading
    // the system fonts costs time, so only SVGs with text pay for it.
    if memchr_text(bytes) {
        options.fontdb_mut().load_system_fonts();
    }
    let tree = usvg::Tree::from_data(bytes, &options)
        .map_err(|e| decode_err(name, &format!("invalid SVG: {e}")))?;
    let size = tree.size();
    let (w, h) = (size.width().ceil(), size.height().ceil());
    if !(w.is_finite() && h.is_finite()) || w < 1.0 || h < 1.0 {
        return Err(decode_err(
            name,
            &format!("SVG has no usable size ({w}x{h})"),
        ));
    }
    if w > limits.max_width as f32 || h > limits.max_height as f32 {
        return Err(ImageError::TooLarge {
            name: name.into(),
            message: format!(
                "SVG size {w}x{h} exceeds the {}x{} limit",
                limits.max_width, limits.max_height
            ),
        });
    }
    let (width, height) = (w as u32, h as u32);
    check_size(name, width, height, limits)?;
    let mut pixmap = tiny_skia::Pixmap::new(width, height)
        .ok_or_else(|| decode_err(name, "cannot allocate the SVG canvas"))?;
    resvg::render(
        &tree,
        tiny_skia::Transform::identity(),
        &mut pixmap.as_mut(),
    );
    let mut out = RgbaImage::new(width, height);
    for (dst, src) in out.pixels_mut().zip(pixmap.pixels()) {
        let c = src.demultiply();
        *dst = image::Rgba([c.red(), c.green(), c.blue(), c.alpha()]);
    }
    Ok(out)
}

fn memchr_text(bytes: &[u8]) -> bool {
    bytes.windows(5).any(|w| w == b"<text") || bytes.starts_with(&[0x1f, 0x8b])
}

fn decode_err(name: &str, message: &str) -> ImageError {
    ImageError::Decode {
        name: name.into(),
        message: message.into(),
    }
}

/// A PNG decoded one row at a time, with exactly the pixels [`decode_dynamic`] gives
/// (the same `png` crate and expansion the `image` crate uses), for callers that do
/// not need the whole image in memory: a 5370 x 3570 RGBA chart is 77 MB decoded,
/// and faulting in that much fresh memory costs more than inflating it.
pub struct PngRows<'a> {
    reader: png::Reader<Cursor<&'a [u8]>>,
    name: String,
    pub width: usize,
    pub height: usize,
    pub layout: RowLayout,
}

/// Row-by-row decoding of `bytes` when it is a PNG the rows can be streamed from:
/// `Ok(None)` for other formats, interlaced PNGs (rows arrive in passes) and 16-bit
/// PNGs (whose 8-bit conversion belongs to [`decode_dynamic`]). The same size checks
/// as [`decode_dynamic`] apply.
pub fn png_rows<'a>(
    bytes: &'a [u8],
    name: &str,
    limits: &ImageLimits,
) -> Result<Option<PngRows<'a>>, ImageError> {
    if image::guess_format(bytes).ok() != Some(ImageFormat::Png) {
        return Ok(None);
    }
    check_file_size(name, bytes.len() as u64, limits)?;
    let max_bytes = usize::try_from(limits.max_alloc).unwrap_or(usize::MAX);
    let mut decoder =
        png::Decoder::new_with_limits(Cursor::new(bytes), png::Limits { bytes: max_bytes });
    // As the image crate configures it, so both accept and refuse the same files.
    decoder.set_ignore_text_chunk(false);
    let info = decoder
        .read_header_info()
        .map_err(|e| decode_err(name, &format!("unreadable Png header: {e}")))?;
    check_size(name, info.width, info.height, limits)?;
    let (width, height) = (info.width as usize, info.height as usize);
    decoder.set_transformations(png::Transformations::EXPAND);
    let reader = decoder
        .read_info()
        .map_err(|e| png_err(name, width, height, e))?;
    if reader.info().interlaced {
        return Ok(None);
    }
    let layout = match reader.output_color_type() {
        (png::ColorType::Grayscale, png::BitDepth::Eight) => RowLayout::Luma,
        (png::ColorType::GrayscaleAlpha, png::BitDepth::Eight) => RowLayout::LumaAlpha,
        (png::ColorType::Rgb, png::BitDepth::Eight) => RowLayout::Rgb,
        (png::ColorType::Rgba, png::BitDepth::Eight) => RowLayout::Rgba,
        _ => return Ok(None),
    };
    Ok(Some(PngRows {
        reader,
        name: name.into(),
        width,
        height,
        layout,
    }))
}

impl PngRows<'_> {
    /// Bytes per decoded row.
    pub fn stride(&self) -> usize {
        self.width * self.layout.bytes_per_pixel()
    }

    /// Decode the next row into `out` (`stride()` bytes); `false` after the last row.
    pub fn read_row(&mut self, out: &mut [u8]) -> Result<bool, ImageError> {
        debug_assert_eq!(out.len(), self.stride());
        match self.reader.read_row(out) {
            Ok(Some(_)) => Ok(true),
            Ok(None) => Ok(false),
            Err(e) => Err(png_err(&self.name, self.width, self.height, e)),
        }
    }

    /// After the last row: check that the image data ends properly, as a full decode
    /// does (a file cut just after its last row is still an error).
    pub fn finish(&mut self) -> Result<(), ImageError> {
        let mut spare = vec![0u8; self.stride()];
        if self.read_row(&mut spare)? {
            return Err(decode_err(
                &self.name,
                "corrupt Png: more rows than its header says",
            ));
        }
        Ok(())
    }
}

fn png_err(name: &str, width: usize, height: usize, e: png::DecodingError) -> ImageError {
    match e {
        png::DecodingError::LimitsExceeded => ImageError::TooLarge {
            name: name.into(),
            message: format!("{width}x{height} Png refused by the decoding limits"),
        },
        other => decode_err(name, &format!("corrupt or truncated Png: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_bytes(img: &DynamicImage) -> Vec<u8> {
        let mut out = Vec::new();
        img.write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    /// A PNG whose header claims `w`x`h` (CRC fixed up), with a tiny body.
    pub(crate) fn png_with_claimed_size(w: u32, h: u32) -> Vec<u8> {
        let mut bytes = png_bytes(&DynamicImage::new_luma8(1, 1));
        // IHDR data starts after the 8-byte signature, 4-byte length and 4-byte type.
        bytes[16..20].copy_from_slice(&w.to_be_bytes());
        bytes[20..24].copy_from_slice(&h.to_be_bytes());
        let crc = crc32(&bytes[12..29]);
        bytes[29..33].copy_from_slice(&crc.to_be_bytes());
        bytes
    }

    fn crc32(data: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn refuses_oversized_header_before_decoding() {
        let bytes = png_with_claimed_size(30000, 30000);
        let err = decode_dynamic(&bytes, "bomb.png", &ImageLimits::default()).unwrap_err();
        assert!(matches!(err, ImageError::TooLarge { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.starts_with("bomb.png:"), "{msg}");
        assert!(msg.contains("30000x30000"), "{msg}");
    }

    #[test]
    fn refuses_by_allocation_budget() {
        let limits = ImageLimits {
            max_alloc: 1024,
            ..ImageLimits::default()
        };
        let bytes = png_bytes(&DynamicImage::new_rgb8(100, 100));
        let err = decode_dynamic(&bytes, "big.png", &limits).unwrap_err();
        assert!(err.to_string().contains("allocation limit"), "{err}");
    }

    #[test]
    fn truncated_png_names_the_file() {
        let img = DynamicImage::ImageRgb8(image::RgbImage::from_fn(64, 64, |x, y| {
            image::Rgb([(x * 4) as u8, (y * 4) as u8, ((x ^ y) * 3) as u8])
        }));
        let bytes = png_bytes(&img);
        let cut = &bytes[..bytes.len() / 2];
        let err = decode_dynamic(cut, "cut.png", &ImageLimits::default()).unwrap_err();
        assert!(err.to_string().starts_with("cut.png:"), "{err}");
    }

    #[test]
    fn garbage_and_empty_are_errors() {
        let limits = ImageLimits::default();
        let err = decode_dynamic(b"hello world", "x.bin", &limits).unwrap_err();
        assert!(matches!(err, ImageError::Unsupported { .. }), "{err}");
        assert!(decode_dynamic(b"", "e.png", &limits).is_err());
    }

    #[test]
    fn file_size_cap() {
        let limits = ImageLimits {
            max_file_bytes: 10,
            ..ImageLimits::default()
        };
        let bytes = png_bytes(&DynamicImage::new_rgb8(4, 4));
        let err = decode_dynamic(&bytes, "f.png", &limits).unwrap_err();
        assert!(matches!(err, ImageError::FileTooLarge { .. }), "{err}");
    }

    #[test]
    fn svg_is_rasterised_at_intrinsic_size() {
        let svg = br##"<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">
            <rect x="0" y="0" width="20" height="20" fill="#ff0000"/></svg>"##;
        let img = decode_dynamic(svg, "c.svg", &ImageLimits::default())
            .unwrap()
            .to_rgba8();
        assert_eq!(img.dimensions(), (40, 20));
        assert_eq!(img.get_pixel(5, 5).0, [255, 0, 0, 255]);
        assert_eq!(
            img.get_pixel(35, 5).0[3],
            0,
            "uncovered area stays transparent"
        );
    }

    #[test]
    fn svg_size_is_bounded_and_external_files_ignored() {
        let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" width="30000" height="30000"></svg>"#;
        let err = decode_dynamic(svg, "huge.svg", &ImageLimits::default()).unwrap_err();
        assert!(matches!(err, ImageError::TooLarge { .. }), "{err}");
        let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="8" height="8"><image href="/etc/passwd" width="8" height="8"/></svg>"#;
        let img = decode_dynamic(svg, "ext.svg", &ImageLimits::default()).unwrap();
        assert_eq!((img.width(), img.height()), (8, 8));
    }
}
