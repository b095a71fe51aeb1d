//! Variance of the Laplacian at OpenCV apertures 1, 3 and 5 (`cv2.Laplacian(gray,
//! CV_64F, ksize)` with reflect-101 borders), computed exactly: the kernels are
//! integer, so every response is an integer and the sums fit in i64 for any image the
//! loader accepts. Bands of rows run in parallel, so one large image uses all threads.

use rayon::prelude::*;

/// Output rows per rayon task.
const ROWS_PER_TASK: usize = 32;

/// OpenCV `borderInterpolate` for `BORDER_REFLECT_101` (`gfedcb|abcdefgh|gfedcba`).
pub fn reflect101(mut p: i64, len: i64) -> usize {
    if len == 1 {
        return 0;
    }
    while p < 0 || p >= len {
        p = if p < 0 { -p } else { 2 * (len - 1) - p };
    }
    p as usize
}

/// Population variances of the three Laplacian responses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaplacianVariances {
    pub aperture1: f64,
    pub aperture3: f64,
    pub aperture5: f64,
}

/// Integer sums of the three responses (true, unscaled values) over some pixels.
/// Exact for any image the loader accepts, and independent of how rows are grouped,
/// so bands can be summed in any order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaplacianSums {
    s1: [i64; 3],
    s2: [i64; 3],
    n: i64,
}

impl LaplacianSums {
    pub fn merge(mut self, o: LaplacianSums) -> LaplacianSums {
        for i in 0..3 {
            self.s1[i] += o.s1[i];
            self.s2[i] += o.s2[i];
        }
        self.n += o.n;
        self
    }

    /// Population variances; all zero for no pixels.
    pub fn variances(&self) -> LaplacianVariances {
        if self.n == 0 {
            return LaplacianVariances {
                aperture1: 0.0,
                aperture3: 0.0,
                aperture5: 0.0,
            };
        }
        LaplacianVariances {
            aperture1: variance(self.s1[0], self.s2[0], self.n),
            aperture3: variance(self.s1[1], self.s2[1], self.n),
            aperture5: variance(self.s1[2], self.s2[2], self.n),
        }
    }

    fn push(&mut self, l: [i64; 3]) {
        for (k, v) in l.into_iter().enumerate() {
            self.s1[k] += v;
            self.s2[k] += v * v;
        }
    }
}

/// Exact population variance from integer sums.
fn variance(s1: i64, s2: i64, n: i64) -> f64 {
    let (s1, s2, n) = (i128::from(s1), i128::from(s2), i128::from(n));
    let num = n * s2 - s1 * s1;
    num as f64 / (n * n) as f64
}

/// Fill the two reflect-101 border pixels on each side of a padded row whose
/// interior (`row[2..w + 2]`) is already set.
pub fn pad_row_borders(row: &mut [u8], w: usize) {
    debug_assert_eq!(row.len(), w + 4);
    let at = |p: i64| 2 + reflect101(p, w as i64);
    row[0] = row[at(-2)];
    row[1] = row[at(-1)];
    row[w + 2] = row[at(w as i64)];
    row[w + 3] = row[at(w as i64 + 1)];
}

/// Source row of padded row `py` (rows -2..h+2 of the image, reflect-101).
pub fn padded_source_row(py: usize, h: usize) -> usize {
    reflect101(py as i64 - 2, h as i64)
}

/// Laplacian variances of a row-major 8-bit gray image.
pub fn laplacian_variances(gray: &[u8], width: u32, height: u32) -> LaplacianVariances {
    let (w, h) = (width as usize, height as usize);
    assert_eq!(gray.len(), w * h, "gray buffer does not match its size");
    if w == 0 || h == 0 {
        return LaplacianSums::default().variances();
    }
    let pw = w + 4;
    // Each band feeds its own padded rows (its output rows plus two above and below)
    // through a window, so no padded copy of the whole image is ever allocated.
    (0..h)
        .into_par_iter()
        .step_by(ROWS_PER_TASK)
        .map(|y0| {
            let y1 = (y0 + ROWS_PER_TASK).min(h);
            let mut window = RowWindow::new(w);
            let mut padded = vec![0u8; pw];
            for py in y0..y1 + 4 {
                let sy = padded_source_row(py, h);
                padded[2..w + 2].copy_from_slice(&gray[sy * w..(sy + 1) * w]);
                pad_row_borders(&mut padded, w);
                window.push(&padded);
            }
            window.sums()
        })
        .reduce(LaplacianSums::default, LaplacianSums::merge)
        .variances()
}

/// A rolling window over consecutive padded rows (`w + 4` bytes, borders filled by
/// [`pad_row_borders`]): each row is widened to i16 once, and every pushed row from
/// the fifth on completes the output row two above it. The kernels then load each
/// row five times without widening it again.
#[derive(Debug, Clone, Default)]
pub struct RowWindow {
    w: usize,
    rows: Vec<i16>,
    pushed: usize,
    sums: LaplacianSums,
}

impl RowWindow {
    pub fn new(w: usize) -> RowWindow {
        let mut window = RowWindow::default();
        window.reset(w);
        window
    }

    /// Start over for rows `w` pixels wide, keeping the allocation.
    pub fn reset(&mut self, w: usize) {
        self.w = w;
        self.rows.resize(5 * (w + 4), 0);
        self.pushed = 0;
        self.sums = LaplacianSums::default();
    }

    pub fn push(&mut self, padded: &[u8]) {
        let pw = self.w + 4;
        assert_eq!(padded.len(), pw, "padded row has the wrong width");
        let slot = self.pushed % 5;
        for (d, &s) in self.rows[slot * pw..(slot + 1) * pw].iter_mut().zip(padded) {
            *d = i16::from(s);
        }
        self.pushed += 1;
        if self.pushed >= 5 {
            let first = self.pushed - 5;
            let rows: [&[i16]; 5] = std::array::from_fn(|k| {
                let s = (first + k) % 5;
                &self.rows[s * pw..(s + 1) * pw]
            });
            accumulate_row(rows, self.w, &mut self.sums);
        }
    }

    /// Sums over the output rows completed so far.
    pub fn sums(&self) -> LaplacianSums {
        self.sums
    }
}

/// Add the responses of one output row; `rows` are the five padded rows centred on it.
pub fn accumulate_row(rows: [&[i16]; 5], w: usize, acc: &mut LaplacianSums) {
    assert!(rows.iter().all(|r| r.len() == w + 4));
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    {
        // Widest vectors first, then narrower ones on what is left of the row.
        let rest = |done: usize| -> [&[i16]; 5] { std::array::from_fn(|k| &rows[k][done..]) };
        if std::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU supports AVX-512BW (checked above); row lengths checked.
            let (n, part) = unsafe { avx512::accumulate(rest(done), w - done) };
            *acc = acc.merge(part);
            done += n;
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked above); row lengths checked.
            let (n, part) = unsafe { avx2::accumulate(rest(done), w - done) };
            *acc = acc.merge(part);
            done += n;
        }
    }
    for x in done..w {
        acc.push(responses_at(&rows, x));
    }
    acc.n += (w - done) as i64;
}

/// The three responses at output column `x` (padded column `x + 2`).
#[inline]
fn responses_at(rows: &[&[i16]; 5], x: usize) -> [i64; 3] {
    let p = |r: usize, dx: usize| i64::from(rows[r][x + dx]);
    let centre = p(2, 2);
    let cross = p(1, 2) + p(3, 2) + p(2, 1) + p(2, 3);
    // aperture 1: [[0,1,0],[1,-4,1],[0,1,0]]
    let l1 = cross - 4 * centre;
    // aperture 3: [[2,0,2],[0,-8,0],[2,0,2]]
    let l3 = 2 * (p(1, 1) + p(1, 3) + p(3, 1) + p(3, 3)) - 8 * centre;
    // aperture 5: corners 2, outer ring 4, inner cross -8, centre -24.
    let corners = p(0, 0) + p(0, 4) + p(4, 0) + p(4, 4);
    let ring = p(0, 1)
        + p(0, 2)
        + p(0, 3)
        + p(4, 1)
        + p(4, 2)
        + p(4, 3)
        + p(1, 0)
        + p(1, 4)
        + p(2, 0)
        + p(2, 4)
        + p(3, 0)
        + p(3, 4);
    let l5 = 2 * corners + 4 * ring - 8 * cross - 24 * centre;
    [l1, l3, l5]
}

/// The SIMD row kernel, written once for both vector widths. Lanes of i16 hold the
/// responses: the aperture-3 and aperture-5 kernels have only even weights, so their
/// halves are computed (|L3/2| <= 1020, |L5/2| <= 7140) and the sums rescaled at the
/// end. Squares and sums go through `madd` into i32 lanes, flushed to i64 every 16
/// steps: a lane then holds at most 32 squares of 7140 (1.63e9 < 2^31), so nothing
/// wraps. The invoking module provides `ld!` (load `$lanes` i16), `add!`,
/// `sub!`, `shl!` (i16), `madd!`, `add32!`, `zero!` and `lane_total`.
#[cfg(target_arch = "x86_64")]
macro_rules! laplacian_kernel {
    ($rows:expr, $w:expr, $lanes:expr) => {{
        const STEPS_PER_FLUSH: usize = 16;
        let [a, b, c, d, e] = $rows;
        let w: usize = $w;
        let ones = ones!();
        let mut total = LaplacianSums::default();
        let vectors = w / $lanes;
        let mut x = 0;
        let mut v = 0;
        while v < vectors {
            let steps = (vectors - v).min(STEPS_PER_FLUSH);
            let mut s1 = [zero!(); 3];
            let mut s2 = [zero!(); 3];
            for _ in 0..steps {
                // Loads end at x + k + $lanes <= w + 4: within the padded row.
                let vae = |k: usize| add!(ld!(a, x + k), ld!(e, x + k));
                let vbd = |k: usize| add!(ld!(b, x + k), ld!(d, x + k));
                let (c0, c1, c2, c3, c4) = (
                    ld!(c, x),
                    ld!(c, x + 1),
                    ld!(c, x + 2),
                    ld!(c, x + 3),
                    ld!(c, x + 4),
                );
                let corners = add!(vae(0), vae(4));
                let ring = add!(
                    add!(add!(vae(1), vae(2)), vae(3)),
                    add!(add!(vbd(0), vbd(4)), add!(c0, c4))
                );
                let cross = add!(vbd(2), add!(c1, c3));
                let c2x4 = shl!(c2, 2);
                let l1 = sub!(cross, c2x4);
                let l3_half = sub!(add!(vbd(1), vbd(3)), c2x4);
                // L5 / 2 = corners + 2 ring - 4 cross - 12 centre
                let l5_half = sub!(
                    add!(corners, shl!(ring, 1)),
                    add!(shl!(cross, 2), add!(c2x4, shl!(c2, 3)))
                );
                for (k, l) in [l1, l3_half, l5_half].into_iter().enumerate() {
                    s1[k] = add32!(s1[k], madd!(l, ones));
                    s2[k] = add32!(s2[k], madd!(l, l));
                }
                x += $lanes;
            }
            v += steps;
            for k in 0..3 {
                total.s1[k] += lane_total(s1[k]);
                total.s2[k] += lane_total(s2[k]);
            }
        }
        // Undo the halving of apertures 3 and 5.
        for k in 1..3 {
            total.s1[k] *= 2;
            total.s2[k] *= 4;
        }
        total.n = x as i64;
        (x, total)
    }};
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::LaplacianSums;

    macro_rules! ld {
        ($r:expr, $x:expr) => {
            _mm256_loadu_si256($r.as_ptr().add($x).cast())
        };
    }
    macro_rules! add {
        ($a:expr, $b:expr) => {
            _mm256_add_epi16($a, $b)
        };
    }
    macro_rules! sub {
        ($a:expr, $b:expr) => {
            _mm256_sub_epi16($a, $b)
        };
    }
    macro_rules! shl {
        ($a:expr, $n:literal) => {
            _mm256_slli_epi16($a, $n)
        };
    }
    macro_rules! madd {
        ($a:expr, $b:expr) => {
            _mm256_madd_epi16($a, $b)
        };
    }
    macro_rules! add32 {
        ($a:expr, $b:expr) => {
            _mm256_add_epi32($a, $b)
        };
    }
    macro_rules! zero {
        () => {
            _mm256_setzero_si256()
        };
    }
    macro_rules! ones {
        () => {
            _mm256_set1_epi16(1)
        };
    }

    /// Whole 16-pixel steps of one output row; returns the pixels done and their sums.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn accumulate(rows: [&[i16]; 5], w: usize) -> (usize, LaplacianSums) {
        laplacian_kernel!(rows, w, 16)
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn lane_total(v: __m256i) -> i64 {
        let mut lanes = [0i32; 8];
        _mm256_storeu_si256(lanes.as_mut_ptr().cast(), v);
        lanes.iter().map(|&l| i64::from(l)).sum()
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::LaplacianSums;

    macro_rules! ld {
        ($r:expr, $x:expr) => {
            _mm512_loadu_si512($r.as_ptr().add($x).cast())
        };
    }
    macro_rules! add {
        ($a:expr, $b:expr) => {
            _mm512_add_epi16($a, $b)
        };
    }
    macro_rules! sub {
        ($a:expr, $b:expr) => {
            _mm512_sub_epi16($a, $b)
        };
    }
    macro_rules! shl {
        ($a:expr, $n:literal) => {
            _mm512_slli_epi16($a, $n)
        };
    }
    macro_rules! madd {
        ($a:expr, $b:expr) => {
            _mm512_madd_epi16($a, $b)
        };
    }
    macro_rules! add32 {
        ($a:expr, $b:expr) => {
            _mm512_add_epi32($a, $b)
        };
    }
    macro_rules! zero {
        () => {
            _mm512_setzero_si512()
        };
    }
    macro_rules! ones {
        () => {
            _mm512_set1_epi16(1)
        };
    }

    /// Whole 32-pixel steps of one output row; returns the pixels done and their sums.
    #[target_feature(enable = "avx512bw")]
    pub(super) unsafe fn accumulate(rows: [&[i16]; 5], w: usize) -> (usize, LaplacianSums) {
        laplacian_kernel!(rows, w, 32)
    }

    #[inline]
    #[target_feature(enable = "avx512bw")]
    unsafe fn lane_total(v: __m512i) -> i64 {
        let mut lanes = [0i32; 16];
        _mm512_storeu_si512(lanes.as_mut_ptr().cast(), v);
        lanes.iter().map(|&l| i64::from(l)).sum()
    }
}

/// Brightness-dependent normaliser of the sharpness score (METRICS.md section 4).
pub fn sharpness_threshold(mean_gray: f64) -> f64 {
    if mean_gray > 120.0 {
        90.0
    } else if mean_gray > 80.0 {
        80.0
    } else {
        50.0
    }
}

/// S = clip((0.5 v1 + 0.3 v3 + 0.2 v5) / t, 0, 1).
pub fn sharpness_score(v: &LaplacianVariances, mean_gray: f64) -> f64 {
    let combined = 0.5 * v.aperture1 + 0.3 * v.aperture3 + 0.2 * v.aperture5;
    (combined / sharpness_threshold(mean_gray)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct convolution with an explicit kernel and per-index reflect-101, as a
    /// slow oracle for the fused row code.
    fn naive(gray: &[u8], w: usize, h: usize, k: &[&[i32]]) -> f64 {
        let r = (k.len() / 2) as i64;
        let mut vals = Vec::new();
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                let mut acc = 0i64;
                for (ky, krow) in k.iter().enumerate() {
                    for (kx, &kv) in krow.iter().enumerate() {
                        let sy = reflect101(y + ky as i64 - r, h as i64);
                        let sx = reflect101(x + kx as i64 - r, w as i64);
                        acc += i64::from(kv) * i64::from(gray[sy * w + sx]);
                    }
                }
                vals.push(acc as f64);
            }
        }
        let mean = vals.iter().sum::<f64>() / vals.len() as f64;
        vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / vals.len() as f64
    }

    #[test]
    fn reflect101_matches_opencv_examples() {
        // gfedcb|abcdefgh|gfedcba for len 8
        assert_eq!(reflect101(-1, 8), 1);
        assert_eq!(reflect101(-2, 8), 2);
        assert_eq!(reflect101(8, 8), 6);
        assert_eq!(reflect101(9, 8), 5);
        assert_eq!(reflect101(-2, 2), 0);
        assert_eq!(reflect101(3, 2), 1);
        assert_eq!(reflect101(5, 1), 0);
    }

    #[test]
    fn matches_naive_convolution_on_all_small_sizes() {
        let k1: [&[i32]; 3] = [&[0, 1, 0], &[1, -4, 1], &[0, 1, 0]];
        let k3: [&[i32]; 3] = [&[2, 0, 2], &[0, -8, 0], &[2, 0, 2]];
        let k5: [&[i32]; 5] = [
            &[2, 4, 4, 4, 2],
            &[4, 0, -8, 0, 4],
            &[4, -8, -24, -8, 4],
            &[4, 0, -8, 0, 4],
            &[2, 4, 4, 4, 2],
        ];
        let mut seed = 12345u32;
        for (w, h) in [(1, 1), (1, 5), (2, 2), (3, 7), (5, 5), (17, 9), (40, 70)] {
            let gray: Vec<u8> = (0..w * h)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (seed >> 16) as u8
                })
                .collect();
            let v = laplacian_variances(&gray, w as u32, h as u32);
            let tol = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
            assert!(tol(v.aperture1, naive(&gray, w, h, &k1)), "k1 {w}x{h}");
            assert!(tol(v.aperture3, naive(&gray, w, h, &k3)), "k3 {w}x{h}");
            assert!(tol(v.aperture5, naive(&gray, w, h, &k5)), "k5 {w}x{h}");
        }
    }

    #[test]
    fn extreme_responses_do_not_overflow() {
        // Random 0/255 pixels drive every kernel towards its extremes (|l5| <= 14280).
        let (w, h) = (300usize, 7usize);
        let mut seed = 99u32;
        let gray: Vec<u8> = (0..w * h)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                if seed >> 31 == 1 {
                    255
                } else {
                    0
                }
            })
            .collect();
        let k5: [&[i32]; 5] = [
            &[2, 4, 4, 4, 2],
            &[4, 0, -8, 0, 4],
            &[4, -8, -24, -8, 4],
            &[4, 0, -8, 0, 4],
            &[2, 4, 4, 4, 2],
        ];
        let v = laplacian_variances(&gray, w as u32, h as u32);
        let expected = naive(&gray, w, h, &k5);
        assert!((v.aperture5 - expected).abs() <= 1e-9 * expected);
        assert!(v.aperture5 > 1e7, "{v:?}");
    }

    /// The SIMD row kernels (AVX-512 and AVX2, where the CPU has them) against the
    /// scalar responses, on widths around their 32- and 16-pixel steps (so each
    /// width class ends in the AVX2 step, the scalar tail, or both) and the 16-step
    /// flush, with extreme values.
    #[test]
    fn row_kernel_matches_scalar_responses() {
        let mut seed = 7u32;
        for w in [
            1usize, 15, 16, 17, 31, 32, 33, 48, 63, 80, 255, 256, 257, 270, 304, 513, 5370,
        ] {
            let rows: Vec<Vec<i16>> = (0..5)
                .map(|_| {
                    (0..w + 4)
                        .map(|_| {
                            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                            match (seed >> 16) % 4 {
                                0 => 0,
                                1 => 255,
                                _ => i16::from((seed >> 8) as u8),
                            }
                        })
                        .collect()
                })
                .collect();
            let r: [&[i16]; 5] = std::array::from_fn(|k| rows[k].as_slice());
            let mut fast = LaplacianSums::default();
            accumulate_row(r, w, &mut fast);
            let mut slow = LaplacianSums::default();
            for x in 0..w {
                slow.push(responses_at(&r, x));
            }
            slow.n = w as i64;
            assert_eq!(fast, slow, "width {w}");
        }
    }

    #[test]
    fn flat_image_has_zero_sharpness() {
        let gray = vec![173u8; 50 * 30];
        let v = laplacian_variances(&gray, 50, 30);
        assert_eq!(v.aperture1, 0.0);
        assert_eq!(v.aperture3, 0.0);
        assert_eq!(v.aperture5, 0.0);
        assert_eq!(sharpness_score(&v, 173.0), 0.0);
    }

    #[test]
    fn thresholds_and_clipping() {
        assert_eq!(sharpness_threshold(120.0), 80.0);
        assert_eq!(sharpness_threshold(120.5), 90.0);
        assert_eq!(sharpness_threshold(80.0), 50.0);
        assert_eq!(sharpness_threshold(81.0), 80.0);
        let v = LaplacianVariances {
            aperture1: 10.0,
            aperture3: 20.0,
            aperture5: 30.0,
        };
        // (5 + 6 + 6) / 50
        assert!((sharpness_score(&v, 10.0) - 17.0 / 50.0).abs() < 1e-12);
        let big = LaplacianVariances {
            aperture1: 1e6,
            aperture3: 1e6,
            aperture5: 1e6,
        };
        assert_eq!(sharpness_score(&big, 200.0), 1.0);
    }
}
