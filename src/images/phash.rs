//! 64-bit DCT perceptual hash, bit-compatible with Python imagehash's `phash`
//! (hash size 8): PIL "L" gray, Pillow's Lanczos resize to 32 x 32, 2-D DCT-II, the
//! top-left 8 x 8 coefficients, bit = coefficient above their median.
//!
//! image_hasher 3.1 cannot be configured to agree (it resizes to 16 x 16, uses Rec.709
//! gray and compares with `>=`), and the image crate's Lanczos3 resize differs from
//! Pillow's on synthetic images, so the resize below re-implements Pillow's separable
//! two-pass resampling (support scaled by the reduction factor, coefficients
//! normalised then rounded to 22-bit fixed point, Pillow 13's rule for which pass runs
//! first) and the DCT runs on rustdct.

use std::fmt;

use rayon::prelude::*;
use rustdct::DctPlanner;

/// Side of the image the DCT runs on (imagehash: hash size 8 x highfreq factor 4).
pub const DCT_SIDE: usize = 32;
/// Side of the kept low-frequency block.
pub const HASH_SIDE: usize = 8;

/// Pillow's `PRECISION_BITS` for 8-bit resampling.
const PRECISION_BITS: u32 = 32 - 8 - 2;
/// Pillow's Lanczos support (a = 3).
const LANCZOS_SUPPORT: f64 = 3.0;

/// A 64-bit perceptual hash; bit 63 is the top-left coefficient (row-major, most
/// significant first, as imagehash prints it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PHash(pub u64);

impl PHash {
    /// imagehash's 16-digit lowercase hex string.
    pub fn to_hex(self) -> String {
        format!("{:016x}", self.0)
    }

    pub fn from_hex(s: &str) -> Option<PHash> {
        if s.len() != 16 {
            return None;
        }
        u64::from_str_radix(s, 16).ok().map(PHash)
    }

    pub fn distance(self, other: PHash) -> u32 {
        (self.0 ^ other.0).count_ones()
    }
}

impl fmt::Display for PHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

fn sinc(x: f64) -> f64 {
    if x == 0.0 {
        1.0
    } else {
        let x = x * std::f64::consts::PI;
        x.sin() / x
    }
}

fn lanczos(x: f64) -> f64 {
    if (-LANCZOS_SUPPORT..LANCZOS_SUPPORT).contains(&x) {
        sinc(x) * sinc(x / 3.0)
    } else {
        0.0
    }
}

/// Fixed-point coefficients of one resampling axis (Pillow `precompute_coeffs` +
/// `normalize_coeffs_8bpc`).
pub(crate) struct AxisCoeffs {
    ksize: usize,
    /// Per output pixel: first input index and number of taps.
    bounds: Vec<(usize, usize)>,
    weights: Vec<i32>,
}

pub(crate) fn axis_coeffs(in_size: usize, out_size: usize) -> AxisCoeffs {
    // Pillow computes the box width in single precision.
    let scale = f64::from(in_size as f32) / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = LANCZOS_SUPPORT * filterscale;
    let ksize = support.ceil() as usize * 2 + 1;
    let mut bounds = Vec::with_capacity(out_size);
    let mut weights = vec![0i32; out_size * ksize];
    let mut k = vec![0f64; ksize];
    for xx in 0..out_size {
        let center = (xx as f64 + 0.5) * scale;
        let ss = 1.0 / filterscale;
        // C casts truncate toward zero.
        let xmin = ((center - support + 0.5) as i64).max(0) as usize;
        let xmax = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
        let taps = xmax.saturating_sub(xmin);
        let mut ww = 0.0;
        for (x, kx) in k.iter_mut().enumerate().take(taps) {
            let w = lanczos(((x + xmin) as f64 - center + 0.5) * ss);
            *kx = w;
            ww += w;
        }
        let row = &mut weights[xx * ksize..(xx + 1) * ksize];
        for (dst, &w) in row.iter_mut().zip(&k[..taps]) {
            let w = if ww != 0.0 { w / ww } else { w };
            let scaled = w * f64::from(1u32 << PRECISION_BITS);
            *dst = if w < 0.0 {
                (-0.5 + scaled) as i32
            } else {
                (0.5 + scaled) as i32
            };
        }
        bounds.push((xmin, taps));
    }
    AxisCoeffs {
        ksize,
        bounds,
        weights,
    }
}

/// Pillow `clip8`: fixed-point sum back to a byte.
fn clip8(v: i64) -> u8 {
    if v >= (1i64 << PRECISION_BITS << 8) {
        255
    } else if v <= 0 {
        0
    } else {
        (v >> PRECISION_BITS) as u8
    }
}

/// Pillow's choice of pass order (Pillow >= 11): the vertical pass runs first when
/// the height shrinks by more than twice as many pixels as the width does.
pub fn pillow_horizontal_first(width: usize, height: usize, out_w: usize, out_h: usize) -> bool {
    let dy = height as i64 - out_h as i64;
    let dx = width as i64 - out_w as i64;
    !(dy > 0 && dy > dx * 2)
}

/// One horizontal pass: every row of `src` (`width` wide) resampled to `out_w`.
fn horizontal_pass(src: &[u8], width: usize, out_w: usize, c: &AxisCoeffs) -> Vec<u8> {
    let rows = src.len() / width;
    let mut out = vec![0u8; out_w * rows];
    out.par_chunks_mut(out_w * 16)
        .zip(src.par_chunks(width * 16))
        .for_each(|(out_rows, in_rows)| {
            for (out_row, in_row) in out_rows.chunks_mut(out_w).zip(in_rows.chunks(width)) {
                horizontal_row(in_row, out_row, c);
            }
        });
    out
}

pub(crate) fn horizontal_row(in_row: &[u8], out_row: &mut [u8], c: &AxisCoeffs) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        unsafe { horizontal_row_avx2(in_row, out_row, c) };
        return;
    }
    horizontal_row_generic(in_row, out_row, c);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn horizontal_row_avx2(in_row: &[u8], out_row: &mut [u8], c: &AxisCoeffs) {
    horizontal_row_generic(in_row, out_row, c);
}

#[inline(always)]
fn horizontal_row_generic(in_row: &[u8], out_row: &mut [u8], c: &AxisCoeffs) {
    for (xx, o) in out_row.iter_mut().enumerate() {
        let (xmin, taps) = c.bounds[xx];
        let k = &c.weights[xx * c.ksize..xx * c.ksize + taps];
        // i32 like Pillow's accumulator: the weights sum to 2^22, so for 8-bit input
        // the total stays far from overflow.
        let mut ss: i32 = 1 << (PRECISION_BITS - 1);
        for (&p, &w) in in_row[xmin..xmin + taps].iter().zip(k) {
            ss = ss.wrapping_add(i32::from(p).wrapping_mul(w));
        }
        *o = clip8(i64::from(ss));
    }
}

/// One vertical pass: `src` (`width` wide) resampled to `out_h` rows; `row_offset` is
/// the source row that `src` starts at.
pub(crate) fn vertical_pass(
    src: &[u8],
    width: usize,
    out_h: usize,
    c: &AxisCoeffs,
    row_offset: usize,
) -> Vec<u8> {
    let mut out = vec![0u8; width * out_h];
    out.par_chunks_mut(width)
        .enumerate()
        .for_each(|(yy, out_row)| {
            let (ymin, taps) = c.bounds[yy];
            let ymin = ymin - row_offset;
            let k = &c.weights[yy * c.ksize..yy * c.ksize + taps];
            let mut acc = vec![1i64 << (PRECISION_BITS - 1); width];
            for (y, &w) in k.iter().enumerate() {
                let row = &src[(ymin + y) * width..(ymin + y + 1) * width];
                for (a, &p) in acc.iter_mut().zip(row) {
                    *a += i64::from(p) * i64::from(w);
                }
            }
            for (o, a) in out_row.iter_mut().zip(acc) {
                *o = clip8(a);
            }
        });
    out
}

/// The horizontal-first case of [`pillow_lanczos_resize`] with its input fed one
/// row at a time, so a caller sweeping an image in bands never needs the whole gray
/// plane: [`RowResize::row`] for each source row in `rows()`, then
/// [`RowResize::finish`] on those rows' outputs, in order.
pub(crate) struct RowResize {
    horiz: AxisCoeffs,
    vert: Option<AxisCoeffs>,
    first: usize,
    last: usize,
    out_w: usize,
    out_h: usize,
}

impl RowResize {
    /// `None` when Pillow would not run a horizontal pass first (no width change, or
    /// the vertical pass goes first): use [`pillow_lanczos_resize`] then.
    pub(crate) fn new(width: usize, height: usize, out_w: usize, out_h: usize) -> Option<Self> {
        if width == out_w || !pillow_horizontal_first(width, height, out_w, out_h) {
            return None;
        }
        let vert = (height != out_h).then(|| axis_coeffs(height, out_h));
        // Only the source rows the vertical pass will read.
        let (first, last) = match &vert {
            Some(v) => {
                let (lmin, ltaps) = v.bounds[out_h - 1];
                (v.bounds[0].0, lmin + ltaps)
            }
            None => (0, height),
        };
        Some(RowResize {
            horiz: axis_coeffs(width, out_w),
            vert,
            first,
            last,
            out_w,
            out_h,
        })
    }

    /// The source rows that matter.
    pub(crate) fn rows(&self) -> std::ops::Range<usize> {
        self.first..self.last
    }

    pub(crate) fn out_width(&self) -> usize {
        self.out_w
    }

    /// Horizontal pass of one source row into `out` (`out_width()` bytes).
    pub(crate) fn row(&self, src_row: &[u8], out: &mut [u8]) {
        horizontal_row(src_row, out, &self.horiz);
    }

    /// The resized image from the horizontal outputs of rows `rows()`, in order.
    pub(crate) fn finish(&self, rows_out: &[u8]) -> Vec<u8> {
        assert_eq!(rows_out.len(), (self.last - self.first) * self.out_w);
        match &self.vert {
            Some(v) => vertical_pass(rows_out, self.out_w, self.out_h, v, self.first),
            None => rows_out.to_vec(),
        }
    }
}

/// Pillow-compatible Lanczos resize of an 8-bit gray image (`Image.resize(size,
/// LANCZOS)` on mode "L", Pillow 13), returning the row-major output.
pub fn pillow_lanczos_resize(
    src: &[u8],
    width: usize,
    height: usize,
    out_w: usize,
    out_h: usize,
) -> Vec<u8> {
    assert_eq!(
        src.len(),
        width * height,
        "gray buffer does not match its size"
    );
    if width == out_w && height == out_h {
        return src.to_vec();
    }
    let need_horizontal = out_w != width;
    let need_vertical = out_h != height;
    let horiz = axis_coeffs(width, out_w);
    let vert = axis_coeffs(height, out_h);
    if pillow_horizontal_first(width, height, out_w, out_h) {
        if !need_horizontal {
            return vertical_pass(src, width, out_h, &vert, 0);
        }
        // Only the source rows the vertical pass will read.
        let (first, last) = if need_vertical {
            let (lmin, ltaps) = vert.bounds[out_h - 1];
            (vert.bounds[0].0, lmin + ltaps)
        } else {
            (0, height)
        };
        let tmp = horizontal_pass(&src[first * width..last * width], width, out_w, &horiz);
        if need_vertical {
            vertical_pass(&tmp, out_w, out_h, &vert, first)
        } else {
            tmp
        }
    } else {
        // Reached only when the height shrinks, so the vertical pass is needed.
        let tmp = vertical_pass(src, width, out_h, &vert, 0);
        if need_horizontal {
            horizontal_pass(&tmp, width, out_w, &horiz)
        } else {
            tmp
        }
    }
}

/// imagehash `phash` of a PIL-"L" gray image (row-major).
pub fn phash_gray(gray: &[u8], width: u32, height: u32) -> PHash {
    let small = pillow_lanczos_resize(gray, width as usize, height as usize, DCT_SIDE, DCT_SIDE);
    phash_of_resized(&small)
}

/// The hash of an image already resized to [`DCT_SIDE`] x [`DCT_SIDE`].
pub fn phash_of_resized(small: &[u8]) -> PHash {
    assert_eq!(small.len(), DCT_SIDE * DCT_SIDE);
    let mut m: Vec<f64> = small.iter().map(|&v| f64::from(v)).collect();
    let dct = DctPlanner::new().plan_dct2(DCT_SIDE);
    // Columns first, then rows, the order scipy applies the axes in.
    let mut col = vec![0f64; DCT_SIDE];
    for x in 0..DCT_SIDE {
        for y in 0..DCT_SIDE {
            col[y] = m[y * DCT_SIDE + x];
        }
        dct.process_dct2(&mut col);
        for y in 0..DCT_SIDE {
            m[y * DCT_SIDE + x] = col[y];
        }
    }
    for row in m.chunks_exact_mut(DCT_SIDE) {
        dct.process_dct2(row);
    }
    let low: Vec<f64> = (0..HASH_SIDE)
        .flat_map(|y| m[y * DCT_SIDE..y * DCT_SIDE + HASH_SIDE].to_vec())
        .collect();
    let mut sorted = low.clone();
    let med = super::contrast::median(&mut sorted).unwrap_or(0.0);
    let bits = low
        .iter()
        .fold(0u64, |acc, &v| (acc << 1) | u64::from(v > med));
    PHash(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_order_follows_pillow() {
        // Height shrinks by more than twice the width's reduction: vertical first.
        assert!(!pillow_horizontal_first(100, 1000, 32, 32));
        assert!(!pillow_horizontal_first(100, 170, 32, 32));
        assert!(pillow_horizontal_first(100, 150, 32, 32));
        assert!(pillow_horizontal_first(1000, 100, 32, 32));
        // Upscaling never goes vertical first.
        assert!(pillow_horizontal_first(4, 20, 32, 32));
    }

    #[test]
    fn hex_round_trip_and_distance() {
        let h = PHash(0x8000_0000_0000_0001);
        assert_eq!(h.to_hex(), "8000000000000001");
        assert_eq!(PHash::from_hex("8000000000000001"), Some(h));
        assert_eq!(PHash::from_hex("123"), None);
        assert_eq!(h.distance(PHash(0)), 2);
    }

    #[test]
    fn resize_of_flat_image_stays_flat() {
        let src = vec![77u8; 300 * 200];
        let out = pillow_lanczos_resize(&src, 300, 200, 32, 32);
        assert!(out.iter().all(|&v| v == 77));
        // Upscaling as well (imagehash resizes tiny images up to 32 x 32).
        let out = pillow_lanczos_resize(&[5u8; 12], 4, 3, 32, 32);
        assert!(out.iter().all(|&v| v == 5));
    }

    #[test]
    fn coefficients_sum_to_one_in_fixed_point() {
        for (inp, out) in [(5370, 32), (100, 32), (32, 32), (7, 32), (1000, 32)] {
            let c = axis_coeffs(inp, out);
            for xx in 0..out {
                let (_, taps) = c.bounds[xx];
                let s: i64 = c.weights[xx * c.ksize..xx * c.ksize + taps]
                    .iter()
                    .map(|&w| i64::from(w))
                    .sum();
                assert!(
                    (s - (1 << PRECISION_BITS)).abs() <= taps as i64,
                    "{inp}->{out}"
                );
            }
        }
    }

    #[test]
    fn hash_separates_structure_and_ignores_brightness_shift() {
        let (w, h) = (120usize, 90usize);
        let pattern = |fx: f64, fy: f64| -> Vec<u8> {
            (0..w * h)
                .map(|i| {
                    let (x, y) = ((i % w) as f64, (i / w) as f64);
                    (128.0 + 60.0 * (x / fx).sin() * (y / fy).cos() + 30.0 * ((x + y) / 5.0).sin())
                        as u8
                })
                .collect()
        };
        let left_dark = pattern(7.0, 11.0);
        let top_dark = pattern(13.0, 4.0);
        let shifted: Vec<u8> = left_dark.iter().map(|&v| v / 2 + 20).collect();
        let a = phash_gray(&left_dark, w as u32, h as u32);
        let b = phash_gray(&top_dark, w as u32, h as u32);
        let c = phash_gray(&shifted, w as u32, h as u32);
        assert!(a.distance(b) > 10, "{a} vs {b}");
        assert!(a.distance(c) <= 2, "{a} vs {c}");
    }
}
