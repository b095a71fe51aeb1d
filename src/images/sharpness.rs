//! Variance of the Laplacian at OpenCV apertures 1, 3 and 5 (`cv2.Laplacian(gray,
//! CV_64F, ksize)` with reflect-101 borders), computed exactly: the kernels are
//! integer, so every response is an integer and the sums fit in i64 for any image the
//! loader accepts. Bands of rows run in parallel, so one large image uses all threads.

use std::num::Wrapping;

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

#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    s1: [i64; 3],
    s2: [i64; 3],
}

impl Sums {
    fn add(mut self, o: Sums) -> Sums {
        for i in 0..3 {
            self.s1[i] += o.s1[i];
            self.s2[i] += o.s2[i];
        }
        self
    }
}

/// Exact population variance from integer sums.
fn variance(s1: i64, s2: i64, n: i64) -> f64 {
    let (s1, s2, n) = (i128::from(s1), i128::from(s2), i128::from(n));
    let num = n * s2 - s1 * s1;
    num as f64 / (n * n) as f64
}

/// Laplacian variances of a row-major 8-bit gray image.
pub fn laplacian_variances(gray: &[u8], width: u32, height: u32) -> LaplacianVariances {
    let (w, h) = (width as usize, height as usize);
    assert_eq!(gray.len(), w * h, "gray buffer does not match its size");
    if w == 0 || h == 0 {
        return LaplacianVariances {
            aperture1: 0.0,
            aperture3: 0.0,
            aperture5: 0.0,
        };
    }
    // Two pixels of reflect-101 border on every side serve all three kernels.
    let pw = w + 4;
    let border: [usize; 4] = [
        reflect101(-2, w as i64),
        reflect101(-1, w as i64),
        reflect101(w as i64, w as i64),
        reflect101(w as i64 + 1, w as i64),
    ];
    // Each band builds its own padded rows (its output rows plus two above and
    // below), so no padded copy of the whole image is ever allocated.
    let fill_row = |dst: &mut [u8], py: usize| {
        let sy = reflect101(py as i64 - 2, h as i64);
        let src = &gray[sy * w..(sy + 1) * w];
        dst[2..w + 2].copy_from_slice(src);
        dst[0] = src[border[0]];
        dst[1] = src[border[1]];
        dst[w + 2] = src[border[2]];
        dst[w + 3] = src[border[3]];
    };
    let sums = (0..h)
        .into_par_iter()
        .step_by(ROWS_PER_TASK)
        .map(|y0| {
            let y1 = (y0 + ROWS_PER_TASK).min(h);
            let mut band = vec![0u8; pw * (y1 - y0 + 4)];
            for (i, dst) in band.chunks_exact_mut(pw).enumerate() {
                fill_row(dst, y0 + i);
            }
            let mut acc = Sums::default();
            let mut buf = RowBuffers::new(w);
            for y in 0..y1 - y0 {
                let row = |k: usize| &band[(y + k) * pw..(y + k + 1) * pw];
                buf.responses(row(0), row(1), row(2), row(3), row(4));
                acc = acc.add(buf.sums());
            }
            acc
        })
        .reduce(Sums::default, Sums::add);
    let n = (w * h) as i64;
    LaplacianVariances {
        aperture1: variance(sums.s1[0], sums.s2[0], n),
        aperture3: variance(sums.s1[1], sums.s2[1], n),
        aperture5: variance(sums.s1[2], sums.s2[2], n),
    }
}

/// Responses of one output row at the three apertures, in i16: every response and
/// every partial sum of it lies within +-28560, so wrapping i16 arithmetic is exact
/// and the loops run 8 (SSE2) or 16 (AVX2) pixels per instruction.
struct RowBuffers {
    l1: Vec<i16>,
    l3: Vec<i16>,
    l5: Vec<i16>,
}

impl RowBuffers {
    fn new(w: usize) -> Self {
        Self {
            l1: vec![0; w],
            l3: vec![0; w],
            l5: vec![0; w],
        }
    }

    /// `r2` is the padded row itself, `r0..r4` its neighbourhood.
    fn responses(&mut self, r0: &[u8], r1: &[u8], r2: &[u8], r3: &[u8], r4: &[u8]) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            unsafe { self.responses_avx2(r0, r1, r2, r3, r4) };
            return;
        }
        self.responses_generic(r0, r1, r2, r3, r4);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn responses_avx2(&mut self, r0: &[u8], r1: &[u8], r2: &[u8], r3: &[u8], r4: &[u8]) {
        self.responses_generic(r0, r1, r2, r3, r4);
    }

    #[inline(always)]
    fn responses_generic(&mut self, r0: &[u8], r1: &[u8], r2: &[u8], r3: &[u8], r4: &[u8]) {
        let w = self.l1.len();
        // Column-shifted views, all of length w: row letter a..e (top to bottom),
        // column offset 0..=4.
        fn s(r: &[u8], d: usize, w: usize) -> &[u8] {
            &r[d..d + w]
        }
        let (a0, a1, a2, a3, a4) = (
            s(r0, 0, w),
            s(r0, 1, w),
            s(r0, 2, w),
            s(r0, 3, w),
            s(r0, 4, w),
        );
        let (b0, b1, b2, b3, b4) = (
            s(r1, 0, w),
            s(r1, 1, w),
            s(r1, 2, w),
            s(r1, 3, w),
            s(r1, 4, w),
        );
        let (c0, c1, c2, c3, c4) = (
            s(r2, 0, w),
            s(r2, 1, w),
            s(r2, 2, w),
            s(r2, 3, w),
            s(r2, 4, w),
        );
        let (d0, d1, d2, d3, d4) = (
            s(r3, 0, w),
            s(r3, 1, w),
            s(r3, 2, w),
            s(r3, 3, w),
            s(r3, 4, w),
        );
        let (e0, e1, e2, e3, e4) = (
            s(r4, 0, w),
            s(r4, 1, w),
            s(r4, 2, w),
            s(r4, 3, w),
            s(r4, 4, w),
        );
        let (l1, l3, l5) = (&mut self.l1[..w], &mut self.l3[..w], &mut self.l5[..w]);
        // Wrapping arithmetic: the ranges above make it exact, and it keeps the loop
        // free of overflow-check branches in builds that have them.
        let v = |x: u8| Wrapping(i16::from(x));
        let k = Wrapping::<i16>;
        for x in 0..w {
            // aperture 1: [[0,1,0],[1,-4,1],[0,1,0]]
            let cross = v(b2[x]) + v(d2[x]) + v(c1[x]) + v(c3[x]);
            let centre = v(c2[x]);
            l1[x] = (cross - k(4) * centre).0;
            // aperture 3: [[2,0,2],[0,-8,0],[2,0,2]]
            l3[x] = (k(2) * (v(b1[x]) + v(b3[x]) + v(d1[x]) + v(d3[x])) - k(8) * centre).0;
            // aperture 5: corners 2, outer ring 4, inner cross -8, centre -24.
            let corners = v(a0[x]) + v(a4[x]) + v(e0[x]) + v(e4[x]);
            let ring = v(a1[x])
                + v(a2[x])
                + v(a3[x])
                + v(e1[x])
                + v(e2[x])
                + v(e3[x])
                + v(b0[x])
                + v(b4[x])
                + v(c0[x])
                + v(c4[x])
                + v(d0[x])
                + v(d4[x]);
            l5[x] = (k(2) * corners + k(4) * ring - k(8) * cross - k(24) * centre).0;
        }
    }

    /// Sums and sums of squares of the three responses.
    fn sums(&self) -> Sums {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { self.sums_avx2() };
        }
        self.sums_generic()
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn sums_avx2(&self) -> Sums {
        self.sums_generic()
    }

    #[inline(always)]
    fn sums_generic(&self) -> Sums {
        let (s1a, s2a) = lane_sums(&self.l1);
        let (s1b, s2b) = lane_sums(&self.l3);
        let (s1c, s2c) = lane_sums(&self.l5);
        Sums {
            s1: [s1a, s1b, s1c],
            s2: [s2a, s2b, s2c],
        }
    }
}

/// Lanes and block length of the accumulators in [`lane_sums`].
const LANES: usize = 16;
const BLOCK: usize = 256;

/// Sum and sum of squares of responses with |x| <= 14280 (the largest any kernel can
/// produce: its positive weights sum to 56). Within a block each lane adds 16 values,
/// so sums fit i32 and squares u32 (16 x 14280^2 < 2^32); blocks fold into i64.
#[inline(always)]
fn lane_sums(l: &[i16]) -> (i64, i64) {
    let (mut s1, mut s2) = (0i64, 0i64);
    for block in l.chunks(BLOCK) {
        let mut a = [0i32; LANES];
        let mut q = [0u32; LANES];
        let mut it = block.chunks_exact(LANES);
        for c in &mut it {
            for k in 0..LANES {
                let x = i32::from(c[k]);
                a[k] = a[k].wrapping_add(x);
                q[k] = q[k].wrapping_add(x.wrapping_mul(x) as u32);
            }
        }
        for &x in it.remainder() {
            let x = i64::from(x);
            s1 += x;
            s2 += x * x;
        }
        s1 += a.iter().map(|&v| i64::from(v)).sum::<i64>();
        s2 += q.iter().map(|&v| i64::from(v)).sum::<i64>();
    }
    (s1, s2)
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
