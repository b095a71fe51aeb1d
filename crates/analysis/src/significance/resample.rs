//! The resampling machinery: seeded random streams, type-7 quantiles, the
//! percentile bootstrap and the paired sign-flip permutation test.
//!
//! Everything here works on plain slices of per-task values so that it can be
//! tested (and benchmarked) without the report types around it.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// A ChaCha8 stream for one named computation.
///
/// Every system's bootstrap, every pair's permutation test and the bootstrap of
/// every set of shared tasks (which the pairs sharing exactly those tasks draw
/// their paired resamples from) has its own stream: the key is the user's `seed`, the ChaCha stream
/// number is a fixed 64-bit FNV-1a hash of `parts` (joined with a NUL). So a
/// result depends only on the seed and on the data it is about — not on which
/// other systems are in the level, nor on the order in which they were
/// processed or stored.
pub fn stream_rng(seed: u64, parts: &[&str]) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(fnv1a64(parts));
    rng
}

/// 64-bit FNV-1a over the parts, with a 0 byte after each one so that
/// `["ab", "c"]` and `["a", "bc"]` give different streams. Written out here
/// because `std`'s hashers are not guaranteed stable across Rust releases.
fn fnv1a64(parts: &[&str]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for part in parts {
        for &byte in part.as_bytes().iter().chain(std::iter::once(&0u8)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    hash
}

/// Arithmetic mean; `NaN` for an empty slice (callers never pass one).
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Sample variance with divisor `n - 1`; 0 when there are fewer than two values
/// (one value carries no information about spread, and 0 keeps the
/// judge-noise sums well defined for single-run tasks, which are excluded
/// from the pooled estimate anyway).
pub fn sample_variance(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let m = mean(values);
    values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64
}

/// The two-sided percentile interval at `confidence` (e.g. 0.95 → the type-7
/// quantiles at 2.5 % and 97.5 %) of `replicates`, which are reordered in
/// place.
///
/// Equal to [`quantile_sorted`](crate::agree::stats::quantile_sorted) (Hyndman & Fan's type 7, R's and NumPy's default)
/// on the sorted replicates, but only the two
/// order statistics around each quantile are found (by selection, O(B)
/// instead of a full O(B log B) sort).
pub fn percentile_interval(replicates: &mut [f64], confidence: f64) -> [f64; 2] {
    let tail = (1.0 - confidence) / 2.0;
    let n = replicates.len();
    assert!(n > 0, "quantile of an empty sample");
    let h_low = (n - 1) as f64 * tail.clamp(0.0, 1.0);
    let h_high = (n - 1) as f64 * (1.0 - tail).clamp(0.0, 1.0);
    let (lo, hi) = (h_low.floor() as usize, h_high.floor() as usize);
    if hi <= lo {
        return [
            selected_quantile_type7(replicates, tail),
            selected_quantile_type7(replicates, 1.0 - tail),
        ];
    }
    if let Some(interval) = tails_from_sample(replicates, [lo, hi], [h_low, h_high]) {
        return interval;
    }
    // One selection for the lower quantile; the upper one is then selected among
    // the values above it only (the same order statistics, about half the work).
    let (_, &mut below, above) = replicates.select_nth_unstable_by(lo, f64::total_cmp);
    let next = above
        .iter()
        .copied()
        .min_by(f64::total_cmp)
        .unwrap_or(below);
    let lower = below + (h_low - lo as f64) * (next - below);
    let (_, &mut below, above) = above.select_nth_unstable_by(hi - lo - 1, f64::total_cmp);
    let next = above
        .iter()
        .copied()
        .min_by(f64::total_cmp)
        .unwrap_or(below);
    [lower, below + (h_high - hi as f64) * (next - below)]
}

/// Sampled every 16th replicate for the thresholds of [`tails_from_sample`].
const TAIL_STRIDE: usize = 16;

/// The order statistics the interval needs, when the thin-tails path applies: the
/// number of values needed at or below the lower threshold (ranks `lo` and
/// `lo + 1`) and at or above the upper one (ranks `hi`, `hi + 1`).
fn tail_needs(n: usize, lo: usize, hi: usize) -> Option<(usize, usize)> {
    let (need_low, need_high) = (lo + 2, n - hi);
    (n >= 2048 && need_low <= n / 8 && need_high <= n / 8).then_some((need_low, need_high))
}

/// Two thresholds from a sample of every [`TAIL_STRIDE`]-th replicate: its order
/// statistics expected to have `need_low` replicates below (`need_high` above),
/// plus a margin of about four standard deviations of that count.
fn tail_thresholds(sample: &mut [f64], need_low: usize, need_high: usize) -> Option<(f64, f64)> {
    let s = sample.len();
    let rank = |need: usize| {
        let r = need as f64 / TAIL_STRIDE as f64;
        ((r + 4.0 * r.sqrt() + 4.0).ceil() as usize).min(s - 1)
    };
    let (r_low, r_high) = (rank(need_low), s - 1 - rank(need_high));
    let (_, &mut t_low, _) = sample.select_nth_unstable_by(r_low, f64::total_cmp);
    let (_, &mut t_high, _) = sample.select_nth_unstable_by(r_high, f64::total_cmp);
    // Overlapping tails (few distinct values) are left to the full selection.
    (t_low < t_high).then_some((t_low, t_high))
}

/// The interval from the kept tails: `low` holds every replicate at or below the
/// lower threshold (so exactly the smallest ones), `high` every one at or above
/// the upper threshold (the largest); `None` when either holds too few.
fn interval_from_tails(
    low: &mut [f64],
    high: &mut [f64],
    n: usize,
    [lo, hi]: [usize; 2],
    [h_low, h_high]: [f64; 2],
) -> Option<[f64; 2]> {
    let (need_low, need_high) = tail_needs(n, lo, hi)?;
    if low.len() < need_low || high.len() < need_high {
        return None;
    }
    let interpolate = |part: &mut [f64], at: usize, h: f64, rank: usize| {
        let (_, &mut below, above) = part.select_nth_unstable_by(at, f64::total_cmp);
        let next = above
            .iter()
            .copied()
            .min_by(f64::total_cmp)
            .unwrap_or(below);
        below + (h - rank as f64) * (next - below)
    };
    let offset = n - high.len();
    Some([
        interpolate(low, lo, h_low, lo),
        interpolate(high, hi - offset, h_high, hi),
    ])
}

/// [`percentile_interval`] of many replicates (at least 2,048) with thin tails,
/// reading the whole sample once: a sample of every 16th replicate gives two
/// thresholds safely past the wanted order statistics, one pass keeps the values at
/// or below the lower threshold and those at or above the upper one (a few hundred
/// each), and the order statistics are selected among those. A kept part holds
/// exactly the smallest (largest) replicates, so the result is the one of the full
/// selection, bit for bit; `None` (the caller selects over everything) when a
/// threshold kept too few values or a value is NaN.
fn tails_from_sample(replicates: &[f64], [lo, hi]: [usize; 2], h: [f64; 2]) -> Option<[f64; 2]> {
    let n = replicates.len();
    let (need_low, need_high) = tail_needs(n, lo, hi)?;
    let mut sample: Vec<f64> = replicates.iter().step_by(TAIL_STRIDE).copied().collect();
    let (t_low, t_high) = tail_thresholds(&mut sample, need_low, need_high)?;
    let mut low = Vec::with_capacity(2 * need_low + 64);
    let mut high = Vec::with_capacity(2 * need_high + 64);
    let mut nan = false;
    for &v in replicates {
        if v <= t_low {
            low.push(v);
        }
        if v >= t_high {
            high.push(v);
        }
        nan |= v.is_nan();
    }
    // Without NaN, {v <= t} is a prefix of the order `total_cmp` sorts by and
    // {v >= t} a suffix (a threshold of -0 or +0 takes both zeros, which are
    // neighbours in that order).
    if nan {
        return None;
    }
    interval_from_tails(&mut low, &mut high, n, [lo, hi], h)
}

/// [`percentile_interval`] of the replicates `a[r] - b[r]` (a pair's paired
/// bootstrap, from two columns of [`shared_bootstrap_means`]), bit for bit, without
/// writing them all out and selecting twice: the differences are sampled for the
/// thresholds of [`tails_from_sample`], then one pass computes each difference and
/// keeps it (branch-free, into `scratch`) when it falls in a tail. Falls back to
/// the full selection over the differences where that path does not apply.
pub fn difference_interval(
    a: &[f64],
    b: &[f64],
    confidence: f64,
    scratch: &mut Vec<f64>,
) -> [f64; 2] {
    let n = a.len();
    assert!(
        n > 0 && b.len() == n,
        "two columns of equal, non-zero length"
    );
    let tail = (1.0 - confidence) / 2.0;
    let h_low = (n - 1) as f64 * tail.clamp(0.0, 1.0);
    let h_high = (n - 1) as f64 * (1.0 - tail).clamp(0.0, 1.0);
    let (lo, hi) = (h_low.floor() as usize, h_high.floor() as usize);
    let fast = (hi > lo)
        .then(|| tail_needs(n, lo, hi))
        .flatten()
        .and_then(|(need_low, need_high)| {
            let mut sample: Vec<f64> = (0..n).step_by(TAIL_STRIDE).map(|r| a[r] - b[r]).collect();
            tail_thresholds(&mut sample, need_low, need_high)
        })
        .and_then(|(t_low, t_high)| {
            if scratch.len() < 2 * n {
                scratch.resize(2 * n, 0.0);
            }
            let (low, high) = scratch.split_at_mut(n);
            let (mut kept_low, mut kept_high) = (0, 0);
            let mut nan = false;
            for (x, y) in a.iter().zip(b) {
                let d = x - y;
                // Written every time, kept (the count moves on) only in a tail.
                low[kept_low] = d;
                kept_low += usize::from(d <= t_low);
                high[kept_high] = d;
                kept_high += usize::from(d >= t_high);
                nan |= d.is_nan();
            }
            if nan {
                return None;
            }
            interval_from_tails(
                &mut low[..kept_low],
                &mut high[..kept_high],
                n,
                [lo, hi],
                [h_low, h_high],
            )
        });
    fast.unwrap_or_else(|| {
        // Every difference the same (two systems with equal scores on every shared
        // task, or both 0 throughout): the interval is that value, computed as the
        // selection would (`below + frac * (next - below)`), without selecting.
        let d0 = a[0] - b[0];
        if !d0.is_nan()
            && a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).to_bits() == d0.to_bits())
        {
            // `next - below` with next = below = d0 (0, or NaN for an infinite d0).
            #[allow(clippy::eq_op)]
            let gap = d0 - d0;
            return [
                d0 + (h_low - lo as f64) * gap,
                d0 + (h_high - hi as f64) * gap,
            ];
        }
        scratch.clear();
        scratch.extend(a.iter().zip(b).map(|(x, y)| x - y));
        percentile_interval(scratch, confidence)
    })
}

/// [`quantile_sorted`](crate::agree::stats::quantile_sorted) without sorting: select the `⌊h⌋`-th smallest value; the
/// next order statistic is then the minimum of the part to its right.
fn selected_quantile_type7(values: &mut [f64], p: f64) -> f64 {
    let n = values.len();
    assert!(n > 0, "quantile of an empty sample");
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let (_, &mut below, above) = values.select_nth_unstable_by(lo, f64::total_cmp);
    let next = above
        .iter()
        .copied()
        .min_by(f64::total_cmp)
        .unwrap_or(below);
    below + (h - lo as f64) * (next - below)
}

/// Fills `out` with `resamples` bootstrap means of `values`: each replicate
/// draws `values.len()` indices uniformly with replacement and averages the
/// picked values.
///
/// The indices come from a continuous stream of 32-bit words, two per 64-bit
/// output (low half first, then high half) of a `Xoshiro256PlusPlus`
/// generator whose state is the next four `next_u64` of `rng` (the ChaCha8
/// stream only seeds it: a million-index bootstrap would otherwise spend most
/// of its time generating ChaCha blocks). Each word is mapped to
/// `0..n` by Lemire's multiply-shift with rejection: the index is the high
/// half of `word · n`, and a word whose low half falls below `2^32 mod n` is
/// rejected and replaced by the next word, so every index is exactly
/// uniform. The word stream runs on across replicates.
///
/// `out` is cleared and reused, so the resample loop itself never allocates.
pub fn bootstrap_means(values: &[f64], resamples: usize, rng: &mut ChaCha8Rng, out: &mut Vec<f64>) {
    out.clear();
    out.reserve(resamples);
    let n = values.len();
    assert!(
        n > 0 && n <= u32::MAX as usize,
        "bootstrap needs 1..=u32::MAX values"
    );
    let mut bits = Xoshiro256PlusPlus::from_rng(rng);
    let range = n as u32;
    let reject_below = u64::from(range.wrapping_neg() % range);
    let range = u64::from(range);
    let inv_n = 1.0 / n as f64;
    // Four partial sums: independent additions instead of one long
    // dependency chain. `k` counts the indices of the current replicate.
    let mut sums = [0.0f64; 4];
    let mut k = 0;
    while out.len() < resamples {
        let x = bits.next_u64();
        for word in [x & 0xffff_ffff, x >> 32] {
            let m = word * range;
            if m & 0xffff_ffff < reject_below {
                continue;
            }
            sums[k & 3] += values[(m >> 32) as usize];
            k += 1;
            if k == n {
                out.push(((sums[0] + sums[1]) + (sums[2] + sums[3])) * inv_n);
                sums = [0.0; 4];
                k = 0;
                if out.len() == resamples {
                    break;
                }
            }
        }
    }
}

/// Bootstrap means of several columns (systems) over the same resamples of their
/// shared tasks: `values` is task-major (`values[t * columns + c]` is column `c` on
/// task `t`), indices are drawn as in [`bootstrap_means`] once per replicate and
/// added into every column. Returns the replicates column by column
/// (`out[c * resamples + r]`). The difference of two columns' replicates is the
/// paired bootstrap of their mean difference (a resample of tasks, shared by both),
/// so every pair of systems scored on the same tasks is served by one draw
/// instead of one per pair: with 100 systems, 4,950 pairs at a level cost what 100
/// systems do.
pub fn shared_bootstrap_means(
    values: &[f64],
    columns: usize,
    resamples: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<f64> {
    let n = values.len() / columns.max(1);
    assert!(
        columns > 0 && n > 0 && n * columns == values.len() && n <= u32::MAX as usize,
        "shared bootstrap needs a full task-major table"
    );
    let mut out = vec![0.0; columns * resamples];
    let mut bits = Xoshiro256PlusPlus::from_rng(rng);
    let range = n as u32;
    let reject_below = u64::from(range.wrapping_neg() % range);
    let range = u64::from(range);
    let inv_n = 1.0 / n as f64;
    let mut sums = vec![0.0f64; columns];
    let (mut k, mut r) = (0, 0);
    while r < resamples {
        let x = bits.next_u64();
        for word in [x & 0xffff_ffff, x >> 32] {
            let m = word * range;
            if m & 0xffff_ffff < reject_below {
                continue;
            }
            let t = (m >> 32) as usize;
            for (sum, v) in sums.iter_mut().zip(&values[t * columns..(t + 1) * columns]) {
                *sum += v;
            }
            k += 1;
            if k == n {
                for (c, sum) in sums.iter_mut().enumerate() {
                    out[c * resamples + r] = *sum * inv_n;
                    *sum = 0.0;
                }
                k = 0;
                r += 1;
                if r == resamples {
                    break;
                }
            }
        }
    }
    out
}

/// xoshiro256++ 1.0 (Blackman & Vigna, <https://prng.di.unimi.it/>): 256 bits
/// of state, period 2^256 − 1, passes BigCrush and PractRand, and about a
/// nanosecond per 64-bit output. Written out here (a dozen lines, checked
/// against the reference algorithm in the tests) because the bootstrap only
/// needs fast, well-distributed bits from a seeded stream, not a crate.
struct Xoshiro256PlusPlus {
    s: [u64; 4],
}

impl Xoshiro256PlusPlus {
    /// State = the next four words of `rng`; the all-zero state (the one
    /// state xoshiro must not start from, probability 2^-256) is redrawn.
    fn from_rng(rng: &mut ChaCha8Rng) -> Self {
        loop {
            let s = [
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
            ];
            if s != [0; 4] {
                return Self { s };
            }
        }
    }

    #[inline(always)]
    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }
}

/// 95 % (or `confidence`) percentile-bootstrap interval for the mean of
/// `values`, resampling the values (tasks) with replacement. `scratch` holds
/// the replicates and is reused between calls.
pub fn bootstrap_mean_ci(
    values: &[f64],
    resamples: usize,
    confidence: f64,
    rng: &mut ChaCha8Rng,
    scratch: &mut Vec<f64>,
) -> [f64; 2] {
    bootstrap_means(values, resamples, rng, scratch);
    percentile_interval(scratch, confidence)
}

/// How a permutation p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestMethod {
    /// All `2^n` sign patterns were enumerated; `p = count / 2^n`.
    Exact,
    /// `permutations` random sign patterns; `p = (count + 1) / (permutations + 1)`.
    MonteCarlo,
}

/// Largest `n` for which exact enumeration is accepted at all (the tables
/// below hold `2^(n/2)` sums each, so 32 means at most 65,536 per half).
pub const MAX_EXACT_TASKS: usize = 32;

/// Relative tolerance for "as extreme as observed": a pattern counts when
/// `|Σ ±d| ≥ |Σ d| − TIE_TOLERANCE · Σ|d|`. Sums of at most a few hundred
/// scores carry a rounding error around `1e-14 · Σ|d|`, so exact ties (e.g.
/// equal differences) are always counted, while no real difference between
/// two sign patterns on a 0–100 scale is anywhere near this small.
pub const TIE_TOLERANCE: f64 = 1e-9;

/// Two-sided p-value of the paired sign-flip (randomisation) test for
/// `mean(diffs) = 0`.
///
/// Under the null hypothesis each task's difference is as likely to be `+d` as
/// `−d`, so the reference distribution of the mean is that of `Σ ±dᵢ / n` over
/// the sign patterns. Since `n` is fixed, comparing sums is the same as
/// comparing means. Zero differences stay in (they count towards `n` and their
/// flip changes nothing).
///
/// * `n <= exact_max_tasks` (capped at [`MAX_EXACT_TASKS`]): exact. All `2^n`
///   patterns are counted by meet-in-the-middle — the signed sums of each half
///   are tabulated, one table sorted, and for every left sum the right sums
///   reaching the threshold on either side are found by binary search.
///   `p = count / 2^n`; the observed pattern and its mirror always count, so
///   `p ≥ 2 / 2^n`.
/// * otherwise Monte Carlo with `permutations` patterns drawn from `rng`
///   (one random bit per task: one `next_u64` per 64 tasks, bit `k` of the
///   `w`-th word flipping task `64·w + k`): `p = (count + 1) / (permutations +
///   1)`, which counts the observed pattern and is never 0. The sum of the
///   flipped differences is read from per-byte subset-sum tables
///   (`SubsetSums`), eight tasks per lookup.
pub fn sign_flip_p_value(
    diffs: &[f64],
    exact_max_tasks: usize,
    permutations: usize,
    rng: &mut ChaCha8Rng,
) -> (f64, TestMethod) {
    let n = diffs.len();
    let total: f64 = diffs.iter().sum();
    let scale: f64 = diffs.iter().map(|d| d.abs()).sum();
    let threshold = total.abs() - TIE_TOLERANCE * scale;
    if n <= exact_max_tasks.min(MAX_EXACT_TASKS) {
        // Observed sum ~0: every pattern is at least as extreme.
        if threshold <= 0.0 {
            return (1.0, TestMethod::Exact);
        }
        let count = exact_extreme_count(diffs, threshold);
        return (count as f64 / (n as f64).exp2(), TestMethod::Exact);
    }
    // Observed sum ~0: every pattern is at least as extreme, count = permutations.
    if threshold <= 0.0 {
        return (1.0, TestMethod::MonteCarlo);
    }
    let table = SubsetSums::new(diffs);
    let words = n.div_ceil(64);
    let mut count: u64 = 0;
    for _ in 0..permutations {
        // Sum of the differences whose sign is flipped to negative: bit k of
        // the w-th word flips task 64·w + k.
        let mut flipped = 0.0;
        for w in 0..words {
            flipped += table.sum_of_word(w, rng.next_u64());
        }
        if (total - 2.0 * flipped).abs() >= threshold {
            count += 1;
        }
    }
    (
        (count + 1) as f64 / (permutations + 1) as f64,
        TestMethod::MonteCarlo,
    )
}

/// Monte Carlo sign-flip p-values of several pairs of columns scored on the same
/// tasks, all from one set of `permutations` random sign patterns drawn from `rng`
/// (each pattern drawn as in [`sign_flip_p_value`]: one `next_u64` per 64 tasks).
///
/// `values` is task-major (`values[t * columns + c]`, as in
/// [`shared_bootstrap_means`]); `pairs` are (column a, column b) and each gets the
/// two-sided p of `mean(a - b) = 0`, `p = (count + 1) / (permutations + 1)`, or 1
/// when the observed sum is 0 (every pattern is as extreme). The sum a pattern
/// flips is linear in the differences, `flipped(a - b) = flipped(a) - flipped(b)`,
/// so every column's flipped sum is computed once per pattern (eight tasks per
/// table lookup) and a pair costs one subtraction and one comparison per pattern:
/// 4,950 pairs of 100 systems cost what 100 columns do, not what 4,950 pairs do.
/// For each pair the result is [`sign_flip_p_value`]'s on the same stream (same
/// patterns, same count) whenever the rounding of that difference is far below the
/// tie tolerance; a pair whose differences are too small for that (relative to the
/// scores themselves) is summed from its own differences instead, on the same
/// patterns.
pub fn shared_sign_flip_p_values(
    values: &[f64],
    columns: usize,
    pairs: &[(usize, usize)],
    permutations: usize,
    rng: &mut ChaCha8Rng,
) -> Vec<f64> {
    use rayon::prelude::*;
    let n = values.len() / columns.max(1);
    assert!(
        columns > 0 && n > 0 && n * columns == values.len(),
        "shared sign-flip test needs a full task-major table"
    );
    let words = n.div_ceil(64);
    let patterns: Vec<u64> = (0..permutations * words).map(|_| rng.next_u64()).collect();
    let column = |c: usize| -> Vec<f64> { (0..n).map(|t| values[t * columns + c]).collect() };
    let flipped_sums = |x: &[f64]| -> Vec<f64> {
        let table = SubsetSums::new(x);
        patterns
            .chunks_exact(words)
            .map(|pattern| {
                pattern
                    .iter()
                    .enumerate()
                    .map(|(w, &bits)| table.sum_of_word(w, bits))
                    .sum()
            })
            .collect()
    };
    // Only the columns some pair uses.
    let mut used: Vec<usize> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
    used.sort_unstable();
    used.dedup();
    let flipped: Vec<Vec<f64>> = used.par_iter().map(|&c| flipped_sums(&column(c))).collect();
    let of = |c: usize| &flipped[used.binary_search(&c).expect("a used column")];
    pairs
        .par_iter()
        .map(|&(a, b)| {
            let (xa, xb) = (column(a), column(b));
            let diffs: Vec<f64> = xa.iter().zip(&xb).map(|(x, y)| x - y).collect();
            let total: f64 = diffs.iter().sum();
            let scale: f64 = diffs.iter().map(|d| d.abs()).sum();
            let threshold = total.abs() - TIE_TOLERANCE * scale;
            if threshold <= 0.0 {
                return 1.0;
            }
            // The rounding of 2 (flipped(a) - flipped(b)) is below 4 n eps times the
            // scores' own absolute sums (a sum of n terms errs by at most n eps of
            // its absolute sum); twice that must stay inside the tie tolerance, so
            // that exact ties still count and nothing else moves.
            let magnitude: f64 = xa.iter().chain(&xb).map(|v| v.abs()).sum();
            let count = if 8.0 * f64::EPSILON * n as f64 * magnitude < TIE_TOLERANCE * scale {
                let (fa, fb) = (of(a), of(b));
                fa.iter()
                    .zip(fb)
                    .map(|(x, y)| u64::from((total - 2.0 * (x - y)).abs() >= threshold))
                    .sum::<u64>()
            } else {
                flipped_sums(&diffs)
                    .iter()
                    .map(|f| u64::from((total - 2.0 * f).abs() >= threshold))
                    .sum()
            };
            (count + 1) as f64 / (permutations + 1) as f64
        })
        .collect()
}

/// For every run of eight tasks (the last one padded with zeros), the sums of
/// all 256 subsets of their differences: `sums[256·g + mask]` is the sum of
/// `diffs[8·g + k]` over the bits `k` set in `mask`. The sum of any sign
/// pattern's flipped differences is then one lookup per byte of the pattern.
struct SubsetSums {
    sums: Vec<f64>,
    bytes: usize,
}

impl SubsetSums {
    fn new(diffs: &[f64]) -> Self {
        let bytes = diffs.len().div_ceil(8);
        let mut sums = vec![0.0; 256 * bytes];
        for (g, table) in sums.chunks_exact_mut(256).enumerate() {
            let group = &diffs[8 * g..(8 * g + 8).min(diffs.len())];
            for mask in 1..256usize {
                let low = mask.trailing_zeros() as usize;
                let d = group.get(low).copied().unwrap_or(0.0);
                table[mask] = table[mask & (mask - 1)] + d;
            }
        }
        Self { sums, bytes }
    }

    /// Sum of the differences flipped by `bits`, the `word`-th 64-bit word
    /// of a pattern (tasks `64·word .. 64·word + 64`); bits of tasks past the
    /// end are ignored.
    #[inline(always)]
    fn sum_of_word(&self, word: usize, bits: u64) -> f64 {
        let first = 8 * word;
        let last = (first + 8).min(self.bytes);
        let mut parts = [0.0f64; 2];
        for (k, g) in (first..last).enumerate() {
            let byte = ((bits >> (8 * k)) & 0xff) as usize;
            parts[k & 1] += self.sums[256 * g + byte];
        }
        parts[0] + parts[1]
    }
}

/// Number of sign patterns whose signed sum `s` satisfies `|s| >= threshold`
/// (`threshold > 0`, so the two tails are disjoint).
fn exact_extreme_count(diffs: &[f64], threshold: f64) -> u64 {
    let (left, right) = diffs.split_at(diffs.len() / 2);
    let left_sums = signed_sums(left);
    let mut right_sums = signed_sums(right);
    right_sums.sort_unstable_by(f64::total_cmp);
    let m = right_sums.len();
    left_sums
        .iter()
        .map(|&l| {
            let upper = m - right_sums.partition_point(|&r| r < threshold - l);
            let lower = right_sums.partition_point(|&r| r <= -threshold - l);
            (upper + lower) as u64
        })
        .sum()
}

/// `Σ ±xᵢ` for every sign pattern (bit `i` set = `+xᵢ`), each summed directly
/// in index order so that equal patterns give bit-identical sums.
fn signed_sums(xs: &[f64]) -> Vec<f64> {
    (0u64..1 << xs.len())
        .map(|mask| {
            xs.iter()
                .enumerate()
                .map(|(i, &x)| if mask >> i & 1 == 1 { x } else { -x })
                .sum()
        })
        .collect()
}
