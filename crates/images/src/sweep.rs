//! Everything IQ reads from pixels, in one sweep over the decoded image: bands of rows
//! run in parallel, and each band turns its rows (plus two rows of reflect-101 halo
//! above and below) into both grays, sums the three Laplacian responses, takes the
//! per-row segment sums the contrast blocks need, and runs the hash's horizontal
//! resampling pass on its rows. No full-size gray plane exists, so a large image costs
//! one read of its pixels instead of several passes over several planes.
//!
//! The results are the same integers (hence the same f64 values) as the plane-based
//! functions ([`super::sharpness::laplacian_variances`],
//! [`super::contrast::contrast_stats`], [`super::phash::phash_gray`]); tests hold the
//! two routes equal.

use image::DynamicImage;
use rayon::prelude::*;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::contrast::{self, ContrastStats, RowSegments};
use super::gray::RowSource;
use super::phash::{self, PHash, RowResize, DCT_SIDE};
use super::sharpness::{self, LaplacianSums, LaplacianVariances, RowWindow};
use super::{load, ImageError, ImageLimits};

/// Output rows per band: the halo costs 4 extra gray rows per band (3 % at 128). A
/// band keeps only a few gray rows at a time; a streamed PNG band holds its 132
/// decoded rows (2.8 MB for a 5370-pixel RGBA chart).
const BAND_ROWS: usize = 128;

/// A band's working rows, kept per worker thread so that bands after the first
/// neither allocate nor zero-fill (fresh pages are costly to fault in).
#[derive(Default)]
struct BandScratch {
    /// The current padded OpenCV-gray row.
    padded: Vec<u8>,
    /// The current PIL-gray row.
    pil: Vec<u8>,
    window: RowWindow,
}

thread_local! {
    static BAND_SCRATCH: std::cell::RefCell<BandScratch> = std::cell::RefCell::new(BandScratch::default());
}

/// Pixel statistics of one image.
#[derive(Debug, Clone, PartialEq)]
pub struct PixelStats {
    pub laplacian: LaplacianVariances,
    pub contrast: ContrastStats,
    pub phash: PHash,
}

/// What every band of one image shares.
struct Plan {
    w: usize,
    h: usize,
    segments: RowSegments,
    resize: Option<RowResize>,
    /// Bytes per row of the hash's buffer: the horizontal pass's output, or (when
    /// Pillow would resample vertically first) the PIL gray row itself.
    hash_stride: usize,
}

/// What one band contributes.
type BandResult = (LaplacianSums, Vec<(u64, u64)>);

impl Plan {
    fn new(w: usize, h: usize) -> Plan {
        let resize = RowResize::new(w, h, DCT_SIDE, DCT_SIDE);
        Plan {
            w,
            h,
            segments: RowSegments::new(w as u32, h as u32),
            hash_stride: resize.as_ref().map_or(w, RowResize::out_width),
            resize,
        }
    }

    fn bands(&self) -> usize {
        self.h.div_ceil(BAND_ROWS)
    }

    /// Image rows band `band` reads: its own rows and two on each side, within the
    /// image (reflections at the edges land inside this range).
    fn rows_read(&self, band: usize) -> std::ops::Range<usize> {
        let y0 = band * BAND_ROWS;
        let y1 = (y0 + BAND_ROWS).min(self.h);
        y0.saturating_sub(2)..(y1 + 2).min(self.h)
    }

    /// Sweep band `band` of `src` (which holds at least [`Plan::rows_read`]),
    /// writing its rows of the hash buffer into `hash_out`.
    fn band(&self, src: &RowSource, band: usize, hash_out: &mut [u8]) -> BandResult {
        let (w, h, pw) = (self.w, self.h, self.w + 4);
        let y0 = band * BAND_ROWS;
        let n = hash_out.len() / self.hash_stride;
        // Nothing below may call into rayon: a stolen band on this thread would find
        // the scratch borrowed.
        BAND_SCRATCH.with_borrow_mut(|scratch| {
            let BandScratch {
                padded,
                pil,
                window,
            } = scratch;
            padded.resize(pw, 0);
            pil.resize(w, 0);
            window.reset(w);
            let mut seg_sums = Vec::with_capacity(n * self.segments.per_row);
            for i in 0..n + 4 {
                let interior = &mut padded[2..w + 2];
                if (2..n + 2).contains(&i) {
                    let y = y0 + i - 2;
                    let out = &mut hash_out[(i - 2) * self.hash_stride..(i - 1) * self.hash_stride];
                    match &self.resize {
                        Some(r) => {
                            src.gray_row(y, interior, pil);
                            if r.rows().contains(&y) {
                                r.row(pil, out);
                            }
                        }
                        None => src.gray_row(y, interior, out),
                    }
                    self.segments.push_row(interior, &mut seg_sums);
                } else {
                    // Halo row (a neighbouring band's, or a reflection at the edge).
                    let sy = sharpness::padded_source_row(y0 + i, h);
                    src.gray_row(sy, interior, pil);
                }
                sharpness::pad_row_borders(padded, w);
                window.push(padded);
            }
            (window.sums(), seg_sums)
        })
    }

    /// Combine the bands (in order) and the filled hash buffer.
    fn finish(&self, bands: Vec<BandResult>, hash_rows: &[u8]) -> PixelStats {
        let (width, height) = (self.w as u32, self.h as u32);
        let laplacian = bands
            .iter()
            .fold(LaplacianSums::default(), |acc, b| acc.merge(b.0))
            .variances();
        let row_sums: Vec<(u64, u64)> = bands.into_iter().flat_map(|b| b.1).collect();
        let contrast = contrast::stats_from_row_sums(&row_sums, width, height);
        let phash = match &self.resize {
            Some(r) => {
                let rows = r.rows();
                let s = self.hash_stride;
                phash::phash_of_resized(&r.finish(&hash_rows[rows.start * s..rows.end * s]))
            }
            None => phash::phash_gray(hash_rows, width, height),
        };
        PixelStats {
            laplacian,
            contrast,
            phash,
        }
    }
}

/// Sweep a decoded image (alpha composited on white, as the reference does).
pub fn pixel_stats(img: &DynamicImage) -> PixelStats {
    let src = RowSource::new(img);
    let (w, h) = (src.width, src.height);
    if w == 0 || h == 0 {
        let (width, height) = (img.width(), img.height());
        return PixelStats {
            laplacian: LaplacianSums::default().variances(),
            contrast: contrast::stats_from_row_sums(&[], width, height),
            phash: phash::phash_gray(&[], width, height),
        };
    }
    let plan = Plan::new(w, h);
    let mut hash_rows = vec![0u8; h * plan.hash_stride];
    let bands: Vec<BandResult> = hash_rows
        .par_chunks_mut(plan.hash_stride * BAND_ROWS)
        .enumerate()
        .map(|(band, hash_out)| plan.band(&src, band, hash_out))
        .collect();
    plan.finish(bands, &hash_rows)
}

/// Row buffers of finished streamed bands, reused across bands and images so that
/// only the first few bands of a run fault fresh pages in.
static BAND_BUFFERS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// Enough for the bands in flight on a few threads; more would only hold memory.
const MAX_POOLED_BUFFERS: usize = 8;
const MAX_POOLED_BYTES: usize = 32 << 20;

/// Bands decoded but not yet swept that the decoding thread lets wait for another
/// thread; past this it sweeps the band itself, so memory stays bounded.
const MAX_WAITING_BANDS: usize = 3;

/// [`pixel_stats`] of a PNG streamed row by row ([`load::png_rows`]): the decoded
/// image never exists in full. Each band is handed to the rayon pool as soon as its
/// rows (and the two below) are decoded, so sweeping overlaps decoding. Returns the
/// size and the statistics; `Ok(None)` when the PNG cannot be streamed (use
/// [`load::decode_dynamic`] and [`pixel_stats`] then).
pub fn png_pixel_stats(
    bytes: &[u8],
    name: &str,
    limits: &ImageLimits,
) -> Result<Option<(u32, u32, PixelStats)>, ImageError> {
    let Some(mut rows) = load::png_rows(bytes, name, limits)? else {
        return Ok(None);
    };
    let (w, h, layout) = (rows.width, rows.height, rows.layout);
    let plan = Plan::new(w, h);
    let stride = rows.stride();
    let mut hash_rows = vec![0u8; h * plan.hash_stride];
    let results: Mutex<Vec<(usize, BandResult)>> = Mutex::new(Vec::with_capacity(plan.bands()));
    let waiting = AtomicUsize::new(0);
    let failure: Result<(), ImageError> = rayon::scope(|scope| {
        let mut outs = hash_rows.chunks_mut(plan.hash_stride * BAND_ROWS);
        // The rows a band shares with the next one (its last two and the two below).
        let mut carry: Vec<u8> = Vec::new();
        for band in 0..plan.bands() {
            let need = plan.rows_read(band);
            let mut window = BAND_BUFFERS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop()
                .unwrap_or_default();
            window.resize(need.len() * stride, 0);
            window[..carry.len()].copy_from_slice(&carry);
            for row in window[carry.len()..].chunks_exact_mut(stride) {
                if !rows.read_row(row)? {
                    return Err(ImageError::Decode {
                        name: name.into(),
                        message: "corrupt or truncated Png: fewer rows than its header says".into(),
                    });
                }
            }
            if band + 1 < plan.bands() {
                let next_start = plan.rows_read(band + 1).start;
                carry.clear();
                carry.extend_from_slice(&window[(next_start - need.start) * stride..]);
            } else {
                rows.finish()?;
            }
            let out = outs.next().expect("one hash chunk per band");
            let (plan, results, waiting) = (&plan, &results, &waiting);
            let job = move || {
                let out = out; // moved in: the job runs once
                let src = RowSource::window(w, h, layout, need.start, &window);
                let r = plan.band(&src, band, out);
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((band, r));
                let mut pool = BAND_BUFFERS.lock().unwrap_or_else(|p| p.into_inner());
                let held: usize = pool.iter().map(Vec::capacity).sum();
                if pool.len() < MAX_POOLED_BUFFERS && held + window.capacity() <= MAX_POOLED_BYTES {
                    pool.push(window);
                }
            };
            if waiting.load(Ordering::Acquire) >= MAX_WAITING_BANDS {
                job();
            } else {
                waiting.fetch_add(1, Ordering::AcqRel);
                scope.spawn(move |_| {
                    waiting.fetch_sub(1, Ordering::AcqRel);
                    job();
                });
            }
        }
        Ok(())
    });
    failure?;
    let mut bands = results.into_inner().unwrap_or_else(|p| p.into_inner());
    bands.sort_by_key(|(band, _)| *band);
    let bands = bands.into_iter().map(|(_, r)| r).collect();
    Ok(Some((w as u32, h as u32, plan.finish(bands, &hash_rows))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gray::GrayPlanes;
    use image::{GrayAlphaImage, GrayImage, Rgb32FImage, RgbImage, RgbaImage};

    fn noise(seed: &mut u64) -> u8 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        (*seed >> 24) as u8
    }

    /// Smooth structure plus noise, so the hash and the blocks see something.
    fn pixel(x: u32, y: u32, c: u32, seed: &mut u64) -> u8 {
        let wave = ((x * (3 + c) + y * 5) % 200) as u8;
        wave.wrapping_add(noise(seed) % 40)
    }

    fn via_planes(img: &DynamicImage) -> PixelStats {
        let p = GrayPlanes::from_image(img);
        PixelStats {
            laplacian: sharpness::laplacian_variances(&p.cv, p.width, p.height),
            contrast: contrast::contrast_stats(&p.cv, p.width, p.height),
            phash: phash::phash_gray(&p.pil, p.width, p.height),
        }
    }

    fn images(w: u32, h: u32) -> Vec<DynamicImage> {
        let mut s = u64::from(w) * 7919 + u64::from(h) + 1;
        vec![
            DynamicImage::ImageRgba8(RgbaImage::from_fn(w, h, |x, y| {
                // Some rows fully opaque, some with random alpha.
                let a = if (y / 3) % 2 == 0 { 255 } else { noise(&mut s) };
                image::Rgba([
                    pixel(x, y, 0, &mut s),
                    pixel(x, y, 1, &mut s),
                    pixel(x, y, 2, &mut s),
                    a,
                ])
            })),
            DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([
                    pixel(x, y, 0, &mut s),
                    pixel(x, y, 1, &mut s),
                    pixel(x, y, 2, &mut s),
                ])
            })),
            DynamicImage::ImageLuma8(GrayImage::from_fn(w, h, |x, y| {
                image::Luma([pixel(x, y, 0, &mut s)])
            })),
            DynamicImage::ImageLumaA8(GrayAlphaImage::from_fn(w, h, |x, y| {
                image::LumaA([pixel(x, y, 0, &mut s), noise(&mut s)])
            })),
            DynamicImage::ImageRgb32F(Rgb32FImage::from_fn(w, h, |x, y| {
                image::Rgb([f32::from(pixel(x, y, 0, &mut s)) / 255.0, 0.5, 0.25])
            })),
        ]
    }

    #[test]
    fn sweep_equals_the_plane_functions() {
        // Single rows and columns, widths around the 8-, 16- and 32-pixel SIMD steps,
        // band boundaries (128 rows), block sides, squares (one set of coefficients
        // for both axes), horizontal-first and vertical-first hash resizes, and an
        // exact 32-pixel width (no horizontal pass).
        for (w, h) in [
            (1, 1),
            (1, 9),
            (9, 1),
            (2, 3),
            (15, 17),
            (16, 16),
            (17, 64),
            (32, 90),
            (33, 65),
            (40, 129),
            (70, 31),
            (131, 200),
            (200, 200),
            (257, 130),
            (300, 40),
            (36, 500),
        ] {
            for (k, img) in images(w, h).iter().enumerate() {
                assert_eq!(pixel_stats(img), via_planes(img), "{w}x{h} image #{k}");
            }
        }
    }

    fn png(img: &DynamicImage) -> Vec<u8> {
        let mut out = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn streamed_png_equals_the_decoded_image() {
        let limits = ImageLimits::default();
        // One band, several bands (128 rows each) with a short last one, a one-row
        // last band, a single row, and widths around the SIMD steps.
        for (w, h) in [
            (1, 1),
            (37, 5),
            (300, 129),
            (64, 257),
            (131, 700),
            (33, 400),
        ] {
            for img in images(w, h) {
                if matches!(img, DynamicImage::ImageRgb32F(_)) {
                    continue; // PNG has no float pixels
                }
                let bytes = png(&img);
                let decoded = load::decode_dynamic(&bytes, "x.png", &limits).unwrap();
                let streamed = png_pixel_stats(&bytes, "x.png", &limits)
                    .unwrap()
                    .expect("8-bit non-interlaced PNGs stream");
                assert_eq!(
                    streamed,
                    (w, h, pixel_stats(&decoded)),
                    "{w}x{h} {:?}",
                    img.color()
                );
            }
        }
    }

    #[test]
    fn streaming_declines_what_it_cannot_stream_and_names_broken_files() {
        let limits = ImageLimits::default();
        // 16-bit PNG: left to the full decoder.
        let img16 = DynamicImage::ImageRgb16(image::ImageBuffer::from_pixel(
            20,
            10,
            image::Rgb([1000u16, 20000, 65535]),
        ));
        assert!(png_pixel_stats(&png(&img16), "deep.png", &limits)
            .unwrap()
            .is_none());
        // Not a PNG at all.
        assert!(png_pixel_stats(b"GIF89a....", "a.gif", &limits)
            .unwrap()
            .is_none());
        // Truncated in the middle of the pixel data: an error naming the file.
        let img = &images(200, 300)[1];
        let bytes = png(img);
        let cut = &bytes[..bytes.len() / 2];
        let err = png_pixel_stats(cut, "cut.png", &limits).unwrap_err();
        assert!(err.to_string().contains("cut.png"), "{err}");
        // Too large by the limits: refused before decoding.
        let small = ImageLimits {
            max_width: 100,
            ..ImageLimits::default()
        };
        let err = png_pixel_stats(&bytes, "wide.png", &small).unwrap_err();
        assert!(matches!(err, ImageError::TooLarge { .. }), "{err}");
    }

    /// Files cut anywhere near their end (IEND, the zlib checksum, the last rows):
    /// the streamed route accepts exactly what the full decoder accepts.
    #[test]
    fn truncated_files_are_judged_like_the_full_decoder() {
        let limits = ImageLimits::default();
        for img in [&images(90, 140)[0], &images(40, 3)[1]] {
            let bytes = png(img);
            for cut in (bytes.len().saturating_sub(64)..bytes.len()).chain([40, 100]) {
                let part = &bytes[..cut];
                let full = load::decode_dynamic(part, "c.png", &limits).map(|i| pixel_stats(&i));
                let streamed = png_pixel_stats(part, "c.png", &limits);
                match (full, streamed) {
                    (Ok(a), Ok(Some((_, _, b)))) => assert_eq!(a, b, "cut at {cut}"),
                    (Err(_), Err(e)) => assert!(e.to_string().contains("c.png"), "{e}"),
                    (a, b) => panic!("cut at {cut}: full {a:?} vs streamed {b:?}"),
                }
            }
        }
    }

    /// Random byte corruption anywhere in the file: never a panic, and the same
    /// verdict (and, when both accept, the same statistics) as the full decoder.
    #[test]
    fn corrupted_files_are_judged_like_the_full_decoder() {
        let limits = ImageLimits::default();
        let bytes = png(&images(70, 300)[0]);
        let mut seed = 0x2545_f491_u64;
        for round in 0..300 {
            let mut bad = bytes.clone();
            for _ in 0..1 + round % 3 {
                let at = (noise(&mut seed) as usize * 131 + round * 977) % bad.len();
                bad[at] ^= noise(&mut seed) | 1;
            }
            let full = load::decode_dynamic(&bad, "m.png", &limits).map(|i| pixel_stats(&i));
            let streamed = png_pixel_stats(&bad, "m.png", &limits);
            match (full, streamed) {
                (Ok(a), Ok(Some((_, _, b)))) => assert_eq!(a, b, "round {round}"),
                (Err(_), Err(_)) | (_, Ok(None)) => {}
                (a, b) => panic!("round {round}: full {a:?} vs streamed {b:?}"),
            }
        }
    }

    #[test]
    fn sweep_of_a_flat_image_is_zero() {
        let img = DynamicImage::ImageRgb8(RgbImage::from_pixel(150, 90, image::Rgb([9, 9, 9])));
        let s = pixel_stats(&img);
        assert_eq!(s.laplacian.aperture5, 0.0);
        assert_eq!(s.contrast.global_std, 0.0);
        assert_eq!(s.contrast.mean, 9.0);
        assert_eq!(s.contrast.block_count, 2);
    }
}
