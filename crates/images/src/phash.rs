//! Over 1,000 lines because a third is tests pinning the Pillow-exact resize; resize, AVX2 path and hash are one unit.
//!
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
/// `normalize_coeffs_8bpc`), with the i16 tables the AVX2 kernels multiply by.
#[derive(Clone)]
pub(crate) struct AxisCoeffs {
    ksize: usize,
    /// Per output pixel: first input index and number of taps.
    bounds: Vec<(usize, usize)>,
    /// Pillow's 22-bit fixed-point weights, `ksize` slots per output pixel.
    weights: Vec<i32>,
    /// The same weights as i16 tables for `_mm256_madd_epi16`; `None` when a weight
    /// does not split into i16 halves (|w| >= 2^26: normalised Lanczos weights stay
    /// near 2^22, so this is a guard, not a case that occurs).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    simd: Option<SimdWeights>,
    /// For every output pixel and every 8-bit input, `2^21 + sum(p * w)` lies in the
    /// i32 range, so an i32 accumulator (even a wrapping one) holds the exact sum.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    sums_fit_i32: bool,
}

/// Per output pixel `stride` i16 weights: its taps, then zeros up to a multiple of
/// [`LANES`] (so a kernel may always read whole 16-weight groups). Either the weights
/// themselves (`lo` is `None`: every weight of the axis fits i16, which happens when
/// the reduction factor is above ~128) or the split `w = hi * 2^11 + lo`, `lo` in
/// `[0, 2048)`, `hi = w >> 11` (fits i16 for |w| < 2^26).
#[derive(Clone)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct SimdWeights {
    stride: usize,
    hi: Vec<i16>,
    lo: Option<Vec<i16>>,
}

/// Bits of the low half in the hi / lo weight split.
const SPLIT_BITS: u32 = 11;
/// Weights per AVX2 step (16 i16 lanes).
const LANES: usize = 16;

impl AxisCoeffs {
    /// Coefficients from Pillow's layout, with the kernels' tables derived from them.
    fn with_tables(ksize: usize, bounds: Vec<(usize, usize)>, weights: Vec<i32>) -> Self {
        let mut c = AxisCoeffs {
            ksize,
            bounds,
            weights,
            simd: None,
            sums_fit_i32: false,
        };
        c.simd = simd_weights(&c);
        c.sums_fit_i32 = sums_fit_i32(&c);
        c
    }

    /// The input indices any output pixel reads.
    fn input_span(&self) -> std::ops::Range<usize> {
        let (lmin, ltaps) = self.bounds[self.bounds.len() - 1];
        self.bounds[0].0..lmin + ltaps
    }

    /// The fixed-point weights of output pixel `i`, one per tap.
    fn taps(&self, i: usize) -> &[i32] {
        let (_, taps) = self.bounds[i];
        &self.weights[i * self.ksize..i * self.ksize + taps]
    }
}

pub(crate) fn axis_coeffs(in_size: usize, out_size: usize) -> AxisCoeffs {
    let Kernel {
        ksize,
        bounds,
        values,
        ..
    } = lanczos_kernel(in_size, out_size, true);
    let mut weights = vec![0i32; out_size * ksize];
    for (xx, &(_, taps)) in bounds.iter().enumerate() {
        let k = &values[xx * ksize..xx * ksize + taps];
        let ww: f64 = k.iter().fold(0.0, |ww, &w| ww + w);
        let row = &mut weights[xx * ksize..(xx + 1) * ksize];
        for (dst, &w) in row.iter_mut().zip(k) {
            let w = if ww != 0.0 { w / ww } else { w };
            let scaled = w * f64::from(1u32 << PRECISION_BITS);
            *dst = if w < 0.0 {
                (-0.5 + scaled) as i32
            } else {
                (0.5 + scaled) as i32
            };
        }
    }
    AxisCoeffs::with_tables(ksize, bounds, weights)
}

/// Pillow's `precompute_coeffs` before normalisation: per output pixel its first
/// input index and number of taps, and the Lanczos value of each tap (`ksize` slots
/// per output).
struct Kernel {
    ksize: usize,
    bounds: Vec<(usize, usize)>,
    values: Vec<f64>,
    /// How many times `lanczos` ran (the rest were shared).
    #[cfg_attr(not(test), allow(dead_code))]
    evaluated: usize,
}

/// Lanczos values of the taps of one output class (see [`lanczos_kernel`]), indexed
/// by input index minus the class member's shift, from `base`.
struct SharedTaps {
    trunc: f64,
    base: i64,
    values: Vec<Option<f64>>,
}

/// The Lanczos taps of every output pixel. With `share`, outputs whose centres differ
/// by an exact integer evaluate `lanczos` once per argument: tap `i` of a centre
/// `c = c0 + k` has the argument `fl(fl(fl(i - c) + 0.5) * ss)`, and `i - c` and
/// `(i - k) - c0` are the same real number, so IEEE rounding gives the same f64 at
/// every step and `lanczos` the same value. Centres are positive and `fract` is exact
/// (`x - trunc(x)` is representable), so equal `fract` bits mean an exact integer
/// difference `k = trunc(c) - trunc(c0)`. When the input size is a multiple of the
/// output size (1984 -> 32, 960 -> 32) every output shares one class and `sin` runs
/// ~32x less; with an odd size each output is its own class and nothing changes.
fn lanczos_kernel(in_size: usize, out_size: usize, share: bool) -> Kernel {
    // Pillow computes the box width in single precision.
    let scale = f64::from(in_size as f32) / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = LANCZOS_SUPPORT * filterscale;
    let ksize = support.ceil() as usize * 2 + 1;
    let mut bounds = Vec::with_capacity(out_size);
    let mut values = vec![0f64; out_size * ksize];
    let mut classes: Vec<SharedTaps> = Vec::new();
    let mut class_of_fract = std::collections::HashMap::new();
    let mut evaluated = 0;
    for xx in 0..out_size {
        let center = (xx as f64 + 0.5) * scale;
        let ss = 1.0 / filterscale;
        // C casts truncate toward zero.
        let xmin = ((center - support + 0.5) as i64).max(0) as usize;
        let xmax = ((center + support + 0.5) as i64).min(in_size as i64) as usize;
        let taps = xmax.saturating_sub(xmin);
        let mut eval = |i: usize| {
            evaluated += 1;
            lanczos((i as f64 - center + 0.5) * ss)
        };
        let row = &mut values[xx * ksize..xx * ksize + taps];
        if !share {
            for (x, v) in row.iter_mut().enumerate() {
                *v = eval(x + xmin);
            }
        } else {
            let ci = *class_of_fract
                .entry(center.fract().to_bits())
                .or_insert_with(|| {
                    classes.push(SharedTaps {
                        trunc: center.trunc(),
                        base: (center - support).floor() as i64 - 2,
                        values: vec![None; ksize + 4],
                    });
                    classes.len() - 1
                });
            let class = &mut classes[ci];
            // Exact: both are integers below 2^53.
            let shift = (center.trunc() - class.trunc) as i64;
            for (x, v) in row.iter_mut().enumerate() {
                let i = x + xmin;
                let slot = usize::try_from(i as i64 - shift - class.base)
                    .ok()
                    .and_then(|s| class.values.get_mut(s));
                *v = match slot {
                    Some(Some(w)) => *w,
                    Some(slot) => *slot.insert(eval(i)),
                    None => eval(i),
                };
            }
        }
        bounds.push((xmin, taps));
    }
    Kernel {
        ksize,
        bounds,
        values,
        evaluated,
    }
}

fn simd_weights(c: &AxisCoeffs) -> Option<SimdWeights> {
    let n = c.bounds.len();
    let all = (0..n).flat_map(|i| c.taps(i).iter().copied());
    if !all.clone().all(|w| (-(1 << 26)..1 << 26).contains(&w)) {
        return None;
    }
    let single = all.clone().all(|w| i16::try_from(w).is_ok());
    let stride = c.ksize.div_ceil(LANES) * LANES;
    let mut hi = vec![0i16; n * stride];
    let mut lo = (!single).then(|| vec![0i16; n * stride]);
    for i in 0..n {
        for (t, &w) in c.taps(i).iter().enumerate() {
            match lo.as_mut() {
                // Both casts are exact: checked above.
                None => hi[i * stride + t] = w as i16,
                Some(lo) => {
                    hi[i * stride + t] = (w >> SPLIT_BITS) as i16;
                    lo[i * stride + t] = (w & ((1 << SPLIT_BITS) - 1)) as i16;
                }
            }
        }
    }
    Some(SimdWeights { stride, hi, lo })
}

fn sums_fit_i32(c: &AxisCoeffs) -> bool {
    (0..c.bounds.len()).all(|i| {
        let (pos, neg) = c.taps(i).iter().fold((0i64, 0i64), |(p, n), &w| {
            (p + i64::from(w.max(0)), n + i64::from(w.min(0)))
        });
        let half = 1i64 << (PRECISION_BITS - 1);
        half + 255 * pos <= i64::from(i32::MAX) && half + 255 * neg >= i64::from(i32::MIN)
    })
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

/// Which inner loops a pass may use: the AVX2 kernels when the CPU has them, or the
/// plain scalar reference (tests compare the two).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[cfg_attr(not(test), allow(dead_code))]
enum Kernels {
    Auto,
    Scalar,
}

/// One horizontal pass: every row of `src` (`width` wide) resampled to `out_w`.
fn horizontal_pass(
    src: &[u8],
    width: usize,
    out_w: usize,
    c: &AxisCoeffs,
    kernels: Kernels,
) -> Vec<u8> {
    let rows = src.len() / width;
    let mut out = vec![0u8; out_w * rows];
    out.par_chunks_mut(out_w * 16)
        .zip(src.par_chunks(width * 16))
        .for_each(|(out_rows, in_rows)| {
            for (out_row, in_row) in out_rows.chunks_mut(out_w).zip(in_rows.chunks(width)) {
                match kernels {
                    Kernels::Auto => horizontal_row(in_row, out_row, c),
                    Kernels::Scalar => horizontal_row_generic(in_row, out_row, c),
                }
            }
        });
    out
}

/// One source row resampled to `out_row.len()` pixels.
pub(crate) fn horizontal_row(in_row: &[u8], out_row: &mut [u8], c: &AxisCoeffs) {
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = &c.simd {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { avx2::horizontal_row(in_row, out_row, c, t) };
            return;
        }
    }
    horizontal_row_generic(in_row, out_row, c);
}

/// The scalar reference of the horizontal kernel (and the fallback without AVX2).
fn horizontal_row_generic(in_row: &[u8], out_row: &mut [u8], c: &AxisCoeffs) {
    for (xx, o) in out_row.iter_mut().enumerate() {
        let (xmin, taps) = c.bounds[xx];
        // i32 like Pillow's accumulator: the weights sum to 2^22, so for 8-bit input
        // the total stays far from overflow.
        let mut ss: i32 = 1 << (PRECISION_BITS - 1);
        for (&p, &w) in in_row[xmin..xmin + taps].iter().zip(c.taps(xx)) {
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
    vertical_pass_with(src, width, out_h, c, row_offset, Kernels::Auto)
}

fn vertical_pass_with(
    src: &[u8],
    width: usize,
    out_h: usize,
    c: &AxisCoeffs,
    row_offset: usize,
    kernels: Kernels,
) -> Vec<u8> {
    let mut out = vec![0u8; width * out_h];
    out.par_chunks_mut(width)
        .enumerate()
        .for_each(|(yy, out_row)| {
            let (ymin, taps) = c.bounds[yy];
            let ymin = ymin - row_offset;
            let rows = &src[ymin * width..(ymin + taps) * width];
            #[cfg(target_arch = "x86_64")]
            if kernels == Kernels::Auto && c.sums_fit_i32 && width >= LANES {
                if let Some(t) = &c.simd {
                    if std::is_x86_feature_detected!("avx2") {
                        let k = yy * t.stride..(yy + 1) * t.stride;
                        let lo = t.lo.as_ref().map(|lo| &lo[k.clone()]);
                        // SAFETY: the CPU supports AVX2, checked just above.
                        unsafe { avx2::vertical_row(rows, width, taps, &t.hi[k], lo, out_row) };
                        return;
                    }
                }
            }
            let _ = kernels;
            vertical_row_scalar(rows, width, c.taps(yy), out_row);
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
        let horiz = axis_coeffs(width, out_w);
        // A square resized to a square has the same coefficients on both axes.
        let vert = (height != out_h).then(|| {
            if (height, out_h) == (width, out_w) {
                horiz.clone()
            } else {
                axis_coeffs(height, out_h)
            }
        });
        // Only the source rows the vertical pass will read.
        let rows = vert.as_ref().map_or(0..height, AxisCoeffs::input_span);
        let (first, last) = (rows.start, rows.end);
        Some(RowResize {
            horiz,
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

/// The scalar reference of the vertical kernel: `rows` holds the taps' source rows.
fn vertical_row_scalar(rows: &[u8], width: usize, k: &[i32], out_row: &mut [u8]) {
    let mut acc = vec![1i64 << (PRECISION_BITS - 1); width];
    for (row, &w) in rows.chunks_exact(width).zip(k) {
        for (a, &p) in acc.iter_mut().zip(row) {
            *a += i64::from(p) * i64::from(w);
        }
    }
    for (o, a) in out_row.iter_mut().zip(acc) {
        *o = clip8(a);
    }
}

/// AVX2 kernels, bit-identical to the scalar ones.
///
/// Exactness: every product `p * w_half` has |p| <= 255 and |w_half| <= 2^15, so
/// `_mm256_madd_epi16` forms it and the sum of two of them exactly in i32 (< 2^24);
/// every later addition is an i32 addition, i.e. exact modulo 2^32. With the split
/// tables, `(hi_sum << 11) + lo_sum` is congruent modulo 2^32 to
/// `sum(p * (hi * 2^11 + lo)) = sum(p * w)`. So each kernel yields `2^21 + sum(p * w)`
/// modulo 2^32, whatever the order of the additions and whatever the zero-weight
/// padding taps read. The horizontal scalar reference accumulates in wrapping i32 too,
/// so it yields the same residue: identical. The vertical reference accumulates in
/// i64; the vertical kernel runs only when `sums_fit_i32` proved that the exact total
/// lies in the i32 range, where the residue modulo 2^32 determines it: identical.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{clip8, AxisCoeffs, SimdWeights, LANES, PRECISION_BITS, SPLIT_BITS};

    /// Wrapping sum of the eight i32 lanes.
    #[target_feature(enable = "avx2")]
    unsafe fn hsum(v: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        _mm_cvtsi128_si32(s)
    }

    /// `(hi << 11) + lo` (wrapping) for the split tables, `hi` otherwise.
    #[target_feature(enable = "avx2")]
    unsafe fn combine<const SPLIT: bool>(hi: __m256i, lo: __m256i) -> __m256i {
        if SPLIT {
            _mm256_add_epi32(_mm256_slli_epi32::<{ SPLIT_BITS as i32 }>(hi), lo)
        } else {
            hi
        }
    }

    std::thread_local! {
        /// The current source row widened to i16, plus [`LANES`] zeros.
        static ROW16: std::cell::RefCell<Vec<i16>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn horizontal_row(
        in_row: &[u8],
        out_row: &mut [u8],
        c: &AxisCoeffs,
        t: &SimdWeights,
    ) {
        ROW16.with_borrow_mut(|row16| {
            // Widen once per row (each pixel meets ~6 outputs' taps); the zeros after
            // the row let every group of 16 taps load whole (past the taps the
            // weights are zero).
            let len = in_row.len();
            if row16.len() < len + LANES {
                row16.resize(len + LANES, 0);
            }
            let mut i = 0;
            while i + LANES <= len {
                let p = _mm256_cvtepu8_epi16(_mm_loadu_si128(in_row.as_ptr().add(i).cast()));
                _mm256_storeu_si256(row16.as_mut_ptr().add(i).cast(), p);
                i += LANES;
            }
            for (d, &p) in row16[i..len].iter_mut().zip(&in_row[i..]) {
                *d = i16::from(p);
            }
            row16[len..len + LANES].fill(0);
            let row16 = &row16[..len + LANES];
            match &t.lo {
                None => horizontal_row_impl::<false>(row16, out_row, c, &t.hi, &t.hi, t.stride),
                Some(lo) => horizontal_row_impl::<true>(row16, out_row, c, &t.hi, lo, t.stride),
            }
        })
    }

    /// `row16`: the source row as i16 followed by [`LANES`] zeros.
    #[target_feature(enable = "avx2")]
    unsafe fn horizontal_row_impl<const SPLIT: bool>(
        row16: &[i16],
        out_row: &mut [u8],
        c: &AxisCoeffs,
        hi: &[i16],
        lo: &[i16],
        stride: usize,
    ) {
        let len = row16.len() - LANES;
        for (xx, o) in out_row.iter_mut().enumerate() {
            let (xmin, taps) = c.bounds[xx];
            // The scalar kernel would panic on a short row; so does this one.
            assert!(xmin + taps <= len, "row shorter than the taps");
            // Groups of 16 taps. The last group starts below xmin + taps <= len, so
            // its pixel load ends before len + 16; taps <= ksize <= stride and the
            // stride is a multiple of 16, so the weight loads stay in this output's
            // slots. Past `taps` the weights are zero.
            let px = row16.as_ptr().add(xmin);
            let whi = hi[xx * stride..(xx + 1) * stride].as_ptr();
            let wlo = lo[xx * stride..(xx + 1) * stride].as_ptr();
            let mut acc_hi = _mm256_setzero_si256();
            let mut acc_lo = _mm256_setzero_si256();
            for j in (0..taps).step_by(LANES) {
                let p = _mm256_loadu_si256(px.add(j).cast());
                let w = _mm256_loadu_si256(whi.add(j).cast());
                acc_hi = _mm256_add_epi32(acc_hi, _mm256_madd_epi16(p, w));
                if SPLIT {
                    let w = _mm256_loadu_si256(wlo.add(j).cast());
                    acc_lo = _mm256_add_epi32(acc_lo, _mm256_madd_epi16(p, w));
                }
            }
            let ss = hsum(combine::<SPLIT>(acc_hi, acc_lo)).wrapping_add(1 << (PRECISION_BITS - 1));
            *o = clip8(i64::from(ss));
        }
    }

    /// Two i16 weights as the i32 lane pattern `_mm256_madd_epi16` pairs them with.
    fn pair(a: i16, b: i16) -> i32 {
        (u32::from(a as u16) | (u32::from(b as u16) << 16)) as i32
    }

    /// One output row of the vertical pass: `rows` holds the `taps` source rows
    /// (`width` wide, `width >= 16`), `hi` / `lo` the output's padded weights.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn vertical_row(
        rows: &[u8],
        width: usize,
        taps: usize,
        hi: &[i16],
        lo: Option<&[i16]>,
        out_row: &mut [u8],
    ) {
        match lo {
            None => vertical_row_impl::<false>(rows, width, taps, hi, hi, out_row),
            Some(lo) => vertical_row_impl::<true>(rows, width, taps, hi, lo, out_row),
        }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn vertical_row_impl<const SPLIT: bool>(
        rows: &[u8],
        width: usize,
        taps: usize,
        hi: &[i16],
        lo: &[i16],
        out_row: &mut [u8],
    ) {
        assert!(width >= LANES && out_row.len() == width);
        assert!(rows.len() >= taps * width);
        // Weights are read in pairs (y, y + 1) with y even and y < taps: the table
        // is padded to a multiple of 16 >= taps, so y + 1 < its length.
        assert!(hi.len() >= taps.next_multiple_of(2) && lo.len() >= taps.next_multiple_of(2));
        let base = rows.as_ptr();
        let half = _mm256_set1_epi32(1 << (PRECISION_BITS - 1));
        let mut sums = [0i32; LANES];
        let mut x0 = 0;
        loop {
            // The last group overlaps the previous one when width % 16 != 0; it
            // recomputes the same values.
            let x = x0.min(width - LANES);
            let (mut hi0, mut hi1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
            let (mut lo0, mut lo1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
            for y in (0..taps).step_by(2) {
                // An odd last tap pairs with itself under a zero (padding) weight.
                let y1 = if y + 1 < taps { y + 1 } else { y };
                let a = _mm_loadu_si128(base.add(y * width + x).cast());
                let b = _mm_loadu_si128(base.add(y1 * width + x).cast());
                // Columns x..x+8 and x+8..x+16 as (row y, row y1) i16 pairs.
                let p0 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b));
                let p1 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b));
                let w = _mm256_set1_epi32(pair(hi[y], hi[y + 1]));
                hi0 = _mm256_add_epi32(hi0, _mm256_madd_epi16(p0, w));
                hi1 = _mm256_add_epi32(hi1, _mm256_madd_epi16(p1, w));
                if SPLIT {
                    let w = _mm256_set1_epi32(pair(lo[y], lo[y + 1]));
                    lo0 = _mm256_add_epi32(lo0, _mm256_madd_epi16(p0, w));
                    lo1 = _mm256_add_epi32(lo1, _mm256_madd_epi16(p1, w));
                }
            }
            let s0 = _mm256_add_epi32(combine::<SPLIT>(hi0, lo0), half);
            let s1 = _mm256_add_epi32(combine::<SPLIT>(hi1, lo1), half);
            _mm256_storeu_si256(sums.as_mut_ptr().cast(), s0);
            _mm256_storeu_si256(sums.as_mut_ptr().add(8).cast(), s1);
            for (o, &s) in out_row[x..x + LANES].iter_mut().zip(&sums) {
                *o = clip8(i64::from(s));
            }
            if x + LANES >= width {
                break;
            }
            x0 += LANES;
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
    resize_with(src, width, height, out_w, out_h, Kernels::Auto)
}

fn resize_with(
    src: &[u8],
    width: usize,
    height: usize,
    out_w: usize,
    out_h: usize,
    kernels: Kernels,
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
    // A square image resized to a square has the same coefficients on both axes
    // (the same computation on the same numbers): compute them once.
    let vert_own;
    let vert = if (height, out_h) == (width, out_w) {
        &horiz
    } else {
        vert_own = axis_coeffs(height, out_h);
        &vert_own
    };
    let hpass = |src: &[u8]| horizontal_pass(src, width, out_w, &horiz, kernels);
    let vpass = |src: &[u8], w: usize, first: usize| {
        vertical_pass_with(src, w, out_h, vert, first, kernels)
    };
    if pillow_horizontal_first(width, height, out_w, out_h) {
        if !need_horizontal {
            return vpass(src, width, 0);
        }
        // Only the source rows the vertical pass will read.
        let (first, last) = if need_vertical {
            let rows = vert.input_span();
            (rows.start, rows.end)
        } else {
            (0, height)
        };
        let tmp = hpass(&src[first * width..last * width]);
        if need_vertical {
            vpass(&tmp, out_w, first)
        } else {
            tmp
        }
    } else {
        // Reached only when the height shrinks, so the vertical pass is needed.
        let tmp = vpass(src, width, 0);
        if need_horizontal {
            hpass(&tmp)
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

    /// xorshift32 bytes: deterministic test images without a dependency.
    fn noise(n: usize, seed: u32) -> Vec<u8> {
        let mut state = seed | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state >> 24) as u8
            })
            .collect()
    }

    /// Images of one size: uniform noise, 0/255 noise, a 0/255 checkerboard, 0/255
    /// stripes of both orientations, all 0 and all 255.
    fn test_images(w: usize, h: usize, seed: u32) -> Vec<(&'static str, Vec<u8>)> {
        let n = w * h;
        vec![
            ("noise", noise(n, seed)),
            (
                "noise01",
                noise(n, seed ^ 0x5555)
                    .iter()
                    .map(|&v| if v & 1 == 1 { 255 } else { 0 })
                    .collect(),
            ),
            (
                "checker",
                (0..n)
                    .map(|i| {
                        if (i % w + i / w).is_multiple_of(2) {
                            255
                        } else {
                            0
                        }
                    })
                    .collect(),
            ),
            (
                "vstripes",
                (0..n)
                    .map(|i| if (i % w) % 6 < 3 { 255 } else { 0 })
                    .collect(),
            ),
            (
                "hstripes",
                (0..n)
                    .map(|i| if (i / w) % 4 < 2 { 0 } else { 255 })
                    .collect(),
            ),
            ("zeros", vec![0; n]),
            ("full", vec![255; n]),
        ]
    }

    #[cfg(target_arch = "x86_64")]
    fn have_avx2() -> bool {
        std::is_x86_feature_detected!("avx2")
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn have_avx2() -> bool {
        false
    }

    #[test]
    fn resize_kernels_match_the_scalar_reference() {
        if !have_avx2() {
            eprintln!("no AVX2 on this CPU: both sides run the scalar kernels");
        }
        let sizes = [
            (1, 1),
            (7, 3),
            (3, 7),
            (33, 32),
            (32, 33),
            (64, 2000),
            (2000, 64),
            (5370, 300),
            (301, 1999),
            (101, 77),
            (257, 129),
            (999, 17),
            (17, 999),
            (48, 48),
            (4097, 33),
        ];
        let targets = [(32, 32), (9, 5), (1, 1), (100, 47)];
        for (si, &(w, h)) in sizes.iter().enumerate() {
            for (name, img) in test_images(w, h, 0x9E37_79B9 ^ si as u32) {
                for &(ow, oh) in &targets {
                    // Keep the debug-build scalar reference quick on the big inputs.
                    if w * h > 100_000 && (ow, oh) != (32, 32) {
                        continue;
                    }
                    let fast = pillow_lanczos_resize(&img, w, h, ow, oh);
                    let reference = resize_with(&img, w, h, ow, oh, Kernels::Scalar);
                    assert_eq!(fast, reference, "{name} {w}x{h} -> {ow}x{oh}");
                }
            }
        }
    }

    /// The axes the comparisons above run through, and which table kind each gets.
    fn axes() -> Vec<(usize, usize)> {
        let mut v = vec![
            (1, 32),
            (3, 32),
            (7, 100),
            (32, 32),
            (33, 32),
            (48, 9),
            (64, 32),
            (300, 32),
            (1984, 32),
            (2000, 1),
            (4097, 32),
            (5370, 32),
            (5370, 9),
            (33, 1000),
        ];
        v.extend((1..200).map(|i| (i * 37 + 5, 32)));
        v
    }

    #[test]
    fn tables_split_weights_exactly_and_cover_both_kinds() {
        let (mut single, mut split) = (0, 0);
        for (inp, out) in axes() {
            let c = axis_coeffs(inp, out);
            assert!(c.sums_fit_i32, "{inp}->{out}");
            let t = c
                .simd
                .as_ref()
                .expect("Lanczos weights split into i16 halves");
            assert_eq!(t.stride % LANES, 0);
            assert!(t.stride >= c.ksize);
            for i in 0..out {
                let row = i * t.stride..(i + 1) * t.stride;
                let rebuilt: Vec<i32> = match &t.lo {
                    None => t.hi[row].iter().map(|&h| i32::from(h)).collect(),
                    Some(lo) => t.hi[row.clone()]
                        .iter()
                        .zip(&lo[row])
                        .map(|(&h, &l)| {
                            assert!((0..1 << SPLIT_BITS).contains(&l));
                            i32::from(h) * (1 << SPLIT_BITS) + i32::from(l)
                        })
                        .collect(),
                };
                let taps = c.taps(i);
                assert_eq!(&rebuilt[..taps.len()], taps, "{inp}->{out} #{i}");
                assert!(rebuilt[taps.len()..].iter().all(|&w| w == 0));
            }
            match t.lo {
                None => single += 1,
                Some(_) => split += 1,
            }
        }
        // Both kinds of table are exercised (large reductions give single tables).
        assert!(single >= 3 && split >= 3, "{single} single, {split} split");
        assert!(axis_coeffs(5370, 32).simd.unwrap().lo.is_none());
        assert!(axis_coeffs(1984, 32).simd.unwrap().lo.is_some());
    }

    #[test]
    fn horizontal_row_matches_the_scalar_kernel() {
        for (ai, (inp, out)) in axes().into_iter().enumerate() {
            let c = axis_coeffs(inp, out);
            for extra in [0, 5, 40] {
                // A row longer than the axis (as inside a padded band) and the exact
                // length (the last taps then need the tail copy).
                for (name, row) in test_images(inp + extra, 1, ai as u32 + 7) {
                    let mut fast = vec![0u8; out];
                    let mut reference = vec![1u8; out];
                    horizontal_row(&row, &mut fast, &c);
                    horizontal_row_generic(&row, &mut reference, &c);
                    assert_eq!(fast, reference, "{name} {inp}->{out} +{extra}");
                }
            }
        }
    }

    #[test]
    fn vertical_pass_matches_the_scalar_kernel() {
        for (width, inp, out) in [
            (16, 1984, 32),
            (17, 5370, 32),
            (32, 300, 32),
            (33, 33, 32),
            (31, 64, 9),
            (300, 2000, 32),
            (5, 100, 32),
            (40, 7, 100),
        ] {
            let c = axis_coeffs(inp, out);
            // Only the rows the taps reach, as the horizontal-first resize passes.
            let first = c.bounds[0].0;
            let (lmin, ltaps) = c.bounds[out - 1];
            let rows = lmin + ltaps - first;
            for (name, img) in test_images(width, rows, (width * inp) as u32) {
                let fast = vertical_pass(&img, width, out, &c, first);
                let reference = vertical_pass_with(&img, width, out, &c, first, Kernels::Scalar);
                assert_eq!(fast, reference, "{name} {width} wide, {inp}->{out}");
            }
        }
    }

    #[test]
    fn weights_outside_the_fast_ranges_fall_back_to_exact_sums() {
        // Not Lanczos weights: two taps per output whose i32 sum overflows for bright
        // input (255 * 2^24 > 2^31), and one that does not split into i16 halves.
        let (ksize, out) = (2, 3);
        let bounds = vec![(0, 2), (1, 2), (2, 1)];
        let weights = vec![1 << 24, -(1 << 20), 1 << 24, 1 << 24, 1 << 22, 0];
        let c = AxisCoeffs::with_tables(ksize, bounds.clone(), weights);
        assert!(!c.sums_fit_i32);
        assert!(c.simd.is_some());
        let width = 40;
        let img = vec![255u8; width * 3];
        let fast = vertical_pass(&img, width, out, &c, 0);
        // The i64 reference clips to 255 where a wrapped i32 sum would not.
        assert!(fast.iter().all(|&v| v == 255), "{fast:?}");
        assert_eq!(
            fast,
            vertical_pass_with(&img, width, out, &c, 0, Kernels::Scalar)
        );
        let big = AxisCoeffs::with_tables(ksize, bounds, vec![1 << 26, 0, 1, 1, 1, 0]);
        assert!(big.simd.is_none());
        let mut row = [0u8; 3];
        horizontal_row(&[1, 2, 3], &mut row, &big);
        let mut reference = [0u8; 3];
        horizontal_row_generic(&[1, 2, 3], &mut reference, &big);
        assert_eq!(row, reference);
    }

    #[test]
    fn square_images_reuse_the_axis_and_hash_alike_on_both_kernels() {
        for (w, h) in [(640, 640), (640, 641), (2000, 64)] {
            for (name, img) in test_images(w, h, 3) {
                let fast = pillow_lanczos_resize(&img, w, h, DCT_SIDE, DCT_SIDE);
                let reference = resize_with(&img, w, h, DCT_SIDE, DCT_SIDE, Kernels::Scalar);
                assert_eq!(fast, reference, "{name} {w}x{h}");
            }
        }
    }

    #[test]
    fn shared_lanczos_taps_are_bit_identical() {
        let mut cases: Vec<(usize, usize)> = (1..700).map(|i| (i, 32)).collect();
        cases.extend((1..400).map(|i| (i * 29 + 700, 32)));
        cases.extend([
            (1984, 32),
            (960, 32),
            (5370, 32),
            (3570, 32),
            (1920, 32),
            (4096, 32),
            (64, 9),
            (7, 100),
            (3, 64),
            (1000, 1),
            (1000, 250),
            (1023, 1000),
        ]);
        for (inp, out) in cases {
            let shared = lanczos_kernel(inp, out, true);
            let plain = lanczos_kernel(inp, out, false);
            assert_eq!(shared.bounds, plain.bounds, "{inp}->{out}");
            let bits = |k: &Kernel| k.values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&shared), bits(&plain), "{inp}->{out}");
        }
        // The sharing happens where it should (one class when 32 divides the size).
        let evals = |inp| {
            let (s, p) = (
                lanczos_kernel(inp, 32, true),
                lanczos_kernel(inp, 32, false),
            );
            (s.evaluated, p.evaluated)
        };
        let (s, p) = evals(1984);
        assert!(s * 20 < p, "1984: {s} of {p}");
        let (s, p) = evals(960);
        assert!(s * 10 < p, "960: {s} of {p}");
        let (s, p) = evals(5371);
        assert_eq!(s, p, "5371");
    }

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
