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

use super::contrast::{self, ContrastStats, RowSegments};
use super::gray::RowSource;
use super::phash::{self, PHash, RowResize, DCT_SIDE};
use super::sharpness::{self, LaplacianSums, LaplacianVariances};

/// Output rows per band: the halo costs 4 extra gray rows per band (3 % at 128), and a
/// band's padded rows (at most 2.1 MB at the 16384-pixel width limit) stay in cache.
const BAND_ROWS: usize = 128;

thread_local! {
    /// A band's padded gray rows, kept per worker thread so that bands after the
    /// first neither allocate nor zero-fill (fresh pages are costly to fault in).
    static BAND_SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Pixel statistics of one image.
#[derive(Debug, Clone, PartialEq)]
pub struct PixelStats {
    pub laplacian: LaplacianVariances,
    pub contrast: ContrastStats,
    pub phash: PHash,
}

/// Sweep a decoded image (alpha composited on white, as the reference does).
pub fn pixel_stats(img: &DynamicImage) -> PixelStats {
    let src = RowSource::new(img);
    let (w, h) = (src.width, src.height);
    let (width, height) = (img.width(), img.height());
    if w == 0 || h == 0 {
        return PixelStats {
            laplacian: LaplacianSums::default().variances(),
            contrast: contrast::stats_from_row_sums(&[], width, height),
            phash: phash::phash_gray(&[], width, height),
        };
    }
    let segments = RowSegments::new(width, height);
    let resize = RowResize::new(w, h, DCT_SIDE, DCT_SIDE);
    // Per source row, the hash's horizontal output, or (when Pillow would resample
    // vertically first) the PIL gray row itself.
    let hash_stride = resize.as_ref().map_or(w, RowResize::out_width);
    let mut hash_rows = vec![0u8; h * hash_stride];
    let pw = w + 4;
    let bands: Vec<(LaplacianSums, Vec<(u64, u64)>)> = hash_rows
        .par_chunks_mut(hash_stride * BAND_ROWS)
        .enumerate()
        .map(|(band, hash_out)| {
            let y0 = band * BAND_ROWS;
            let n = hash_out.len() / hash_stride;
            // Nothing below may call into rayon: a stolen band on this thread would
            // find the scratch borrowed.
            BAND_SCRATCH.with_borrow_mut(|scratch| {
                scratch.resize(pw * (n + 4) + w, 0);
                let (cv, pil) = scratch.split_at_mut(pw * (n + 4));
                let mut seg_sums = Vec::with_capacity(n * segments.per_row);
                for (i, padded) in cv.chunks_exact_mut(pw).enumerate() {
                    let interior = &mut padded[2..w + 2];
                    if (2..n + 2).contains(&i) {
                        let y = y0 + i - 2;
                        let out = &mut hash_out[(i - 2) * hash_stride..(i - 1) * hash_stride];
                        match &resize {
                            Some(r) => {
                                src.gray_row(y, interior, pil);
                                if r.rows().contains(&y) {
                                    r.row(pil, out);
                                }
                            }
                            None => src.gray_row(y, interior, out),
                        }
                        segments.push_row(interior, &mut seg_sums);
                    } else {
                        // Halo row (a neighbouring band's, or a reflection at the edge).
                        let sy = sharpness::padded_source_row(y0 + i, h);
                        src.gray_row(sy, interior, pil);
                    }
                    sharpness::pad_row_borders(padded, w);
                }
                (sharpness::band_sums(cv, w), seg_sums)
            })
        })
        .collect();
    let laplacian = bands
        .iter()
        .fold(LaplacianSums::default(), |acc, b| acc.merge(b.0))
        .variances();
    let row_sums: Vec<(u64, u64)> = bands.into_iter().flat_map(|b| b.1).collect();
    let contrast = contrast::stats_from_row_sums(&row_sums, width, height);
    let phash = match &resize {
        Some(r) => {
            let rows = r.rows();
            let small = r.finish(&hash_rows[rows.start * hash_stride..rows.end * hash_stride]);
            phash::phash_of_resized(&small)
        }
        None => phash::phash_gray(&hash_rows, width, height),
    };
    PixelStats {
        laplacian,
        contrast,
        phash,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::gray::GrayPlanes;
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
        // Single rows and columns, widths around the 8- and 16-pixel SIMD steps, band
        // boundaries (64 rows), block sides, horizontal-first and vertical-first hash
        // resizes, and an exact 32-pixel width (no horizontal pass).
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
            (257, 130),
            (300, 40),
            (36, 500),
        ] {
            for (k, img) in images(w, h).iter().enumerate() {
                assert_eq!(pixel_stats(img), via_planes(img), "{w}x{h} image #{k}");
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
