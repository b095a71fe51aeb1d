//! Global and block contrast of the OpenCV gray image (METRICS.md section 4), from exact
//! integer sums: mean, global standard deviation, and the median of the standard
//! deviations of whole b x b blocks, b = max(min(w, h) div 4, 64).

use rayon::prelude::*;

/// Smallest block side the spec allows.
pub const MIN_BLOCK: u32 = 64;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContrastStats {
    pub mean: f64,
    /// Population standard deviation of the whole image.
    pub global_std: f64,
    /// Median of the block standard deviations; `None` when no whole block fits.
    pub block_median_std: Option<f64>,
    pub block_count: usize,
}

fn std_from_sums(s1: u64, s2: u64, n: u64) -> f64 {
    let (s1, s2, n) = (u128::from(s1), u128::from(s2), u128::from(n));
    let num = n * s2 - s1 * s1;
    (num as f64 / (n * n) as f64).sqrt()
}

/// Block side for an image of this size.
pub fn block_side(width: u32, height: u32) -> u32 {
    (width.min(height) / 4).max(MIN_BLOCK)
}

/// Median as numpy computes it (mean of the two middle values for even counts).
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// How a row is cut for the block statistics: segments of `seg` pixels (the last one
/// possibly ragged), `per_row` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSegments {
    pub seg: usize,
    pub per_row: usize,
}

impl RowSegments {
    pub fn new(width: u32, height: u32) -> RowSegments {
        let (w, b) = (width as usize, block_side(width, height) as usize);
        // Without a whole block, one segment per row carries the global sums.
        let seg = if w / b == 0 { w.max(1) } else { b };
        RowSegments {
            seg,
            per_row: w.div_ceil(seg),
        }
    }

    /// Append the (sum, sum of squares) of each segment of `row` to `out`.
    pub fn push_row(&self, row: &[u8], out: &mut Vec<(u64, u64)>) {
        out.extend(row.chunks(self.seg).map(segment_sums));
    }
}

pub fn contrast_stats(gray: &[u8], width: u32, height: u32) -> ContrastStats {
    let (w, h) = (width as usize, height as usize);
    assert_eq!(gray.len(), w * h, "gray buffer does not match its size");
    if w * h == 0 {
        return stats_from_row_sums(&[], width, height);
    }
    let segments = RowSegments::new(width, height);
    let row_sums: Vec<(u64, u64)> = gray
        .par_chunks(w)
        .flat_map_iter(|row| {
            let mut out = Vec::with_capacity(segments.per_row);
            segments.push_row(row, &mut out);
            out
        })
        .collect();
    stats_from_row_sums(&row_sums, width, height)
}

/// The statistics from the segment sums of every row ([`RowSegments::push_row`] over
/// rows 0..height, in order).
pub fn stats_from_row_sums(row_sums: &[(u64, u64)], width: u32, height: u32) -> ContrastStats {
    let (w, h) = (width as usize, height as usize);
    let n = (w * h) as u64;
    if n == 0 {
        return ContrastStats {
            mean: 0.0,
            global_std: 0.0,
            block_median_std: None,
            block_count: 0,
        };
    }
    let segments = RowSegments::new(width, height);
    assert_eq!(
        row_sums.len(),
        h * segments.per_row,
        "segment sums do not match the size"
    );
    let b = block_side(width, height) as usize;
    let (bx_count, by_count) = (w / b, h / b);
    let (s1, s2) = row_sums
        .iter()
        .fold((0u64, 0u64), |acc, &(a, q)| (acc.0 + a, acc.1 + q));
    let mean = s1 as f64 / n as f64;
    let global_std = std_from_sums(s1, s2, n);

    let mut block_stds: Vec<f64> = (0..by_count)
        .flat_map(|by| (0..bx_count).map(move |bx| (by, bx)))
        .map(|(by, bx)| {
            let (a, q) = (by * b..(by + 1) * b)
                .map(|y| row_sums[y * segments.per_row + bx])
                .fold((0u64, 0u64), |acc, r| (acc.0 + r.0, acc.1 + r.1));
            std_from_sums(a, q, (b * b) as u64)
        })
        .collect();
    let block_count = block_stds.len();
    ContrastStats {
        mean,
        global_std,
        block_median_std: median(&mut block_stds),
        block_count,
    }
}

/// Sum and sum of squares of one row segment.
fn segment_sums(part: &[u8]) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { segment_sums_avx2(part) };
    }
    segment_sums_generic(part)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn segment_sums_avx2(part: &[u8]) -> (u64, u64) {
    segment_sums_generic(part)
}

#[inline(always)]
fn segment_sums_generic(part: &[u8]) -> (u64, u64) {
    // u32 holds 16384 squares of 255; longer segments (raised limits) add up in u64.
    let (mut total_a, mut total_q) = (0u64, 0u64);
    for piece in part.chunks(16384) {
        let (mut a, mut q) = (0u32, 0u32);
        for &v in piece {
            // Wrapping ops: cannot overflow here (see above), and no check branches.
            let v = u32::from(v);
            a = a.wrapping_add(v);
            q = q.wrapping_add(v.wrapping_mul(v));
        }
        total_a += u64::from(a);
        total_q += u64::from(q);
    }
    (total_a, total_q)
}

/// Brightness-dependent normaliser of the contrast score.
pub fn contrast_norm(mean_gray: f64) -> f64 {
    if mean_gray > 120.0 {
        45.0
    } else if mean_gray > 80.0 {
        55.0
    } else {
        50.0
    }
}

/// C = clip((0.7 g + 0.3 l) / n, 0, 1), or clip(g / n) without blocks.
pub fn contrast_score(stats: &ContrastStats) -> f64 {
    let raw = match stats.block_median_std {
        Some(l) => 0.7 * stats.global_std + 0.3 * l,
        None => stats.global_std,
    };
    (raw / contrast_norm(stats.mean)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_image_has_zero_contrast() {
        let s = contrast_stats(&vec![200u8; 300 * 300], 300, 300);
        assert_eq!(s.global_std, 0.0);
        assert_eq!(s.block_median_std, Some(0.0));
        assert_eq!(s.block_count, 16);
        assert_eq!(contrast_score(&s), 0.0);
    }

    #[test]
    fn block_grid() {
        assert_eq!(block_side(100, 50), 64);
        assert_eq!(block_side(1000, 400), 100);
        // 100x50: min side below 64, so no whole block and only the global term.
        let gray: Vec<u8> = (0..100 * 50).map(|i| (i % 2 * 100) as u8).collect();
        let s = contrast_stats(&gray, 100, 50);
        assert_eq!(s.block_count, 0);
        assert_eq!(s.block_median_std, None);
        assert!((s.global_std - 50.0).abs() < 1e-12);
        assert!((s.mean - 50.0).abs() < 1e-12);
        // mean 50 -> n = 50
        assert!((contrast_score(&s) - 1.0).abs() < 1e-12);
        // 130x260: b = 64, 2 x 4 whole blocks; the ragged edge is ignored.
        let s = contrast_stats(&vec![9u8; 130 * 260], 130, 260);
        assert_eq!(s.block_count, 8);
    }

    #[test]
    fn two_level_image_std_and_median() {
        // Left half 0, right half 200, 256 x 256: b = 64, 16 blocks each flat.
        let (w, h) = (256usize, 256usize);
        let gray: Vec<u8> = (0..w * h)
            .map(|i| if i % w < w / 2 { 0 } else { 200 })
            .collect();
        let s = contrast_stats(&gray, w as u32, h as u32);
        assert!((s.global_std - 100.0).abs() < 1e-12);
        assert_eq!(s.block_median_std, Some(0.0));
        // mean 100 -> n = 55; (0.7 * 100) / 55 > 1 -> clipped
        assert_eq!(contrast_score(&s), 1.0);
    }

    #[test]
    fn median_like_numpy() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(contrast_norm(121.0), 45.0);
        assert_eq!(contrast_norm(120.0), 55.0);
        assert_eq!(contrast_norm(80.0), 50.0);
    }
}
