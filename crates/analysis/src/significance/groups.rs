//! Multiple-comparison correction (Holm) and rank groups.

/// Holm's step-down adjustment of `p` (one family: all testable pairs of a
/// level).
///
/// Sort the `m` p-values ascending (ties by input position, for
/// determinism); the `k`-th smallest (1-based) becomes
/// `min(1, max_{j ≤ k} (m − j + 1) · p₍ⱼ₎)`. The running maximum makes the
/// adjusted values monotone in the raw ones, and the cap keeps them
/// probabilities. Rejecting where the adjusted value is below `alpha` controls
/// the family-wise error rate at `alpha` without any independence assumption.
/// Returned in input order.
pub fn holm_adjust(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]).then(i.cmp(&j)));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (k, &i) in order.iter().enumerate() {
        running = running.max(((m - k) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Groups of a ranking, as ranges of rank positions (best first).
///
/// The rule — greedy contiguous groups: walk the ranking from the top; a group
/// starts at the best system not yet assigned and takes the next systems
/// down, one at a time, as long as the candidate is *not* significantly
/// different from **every** member already in the group; the first candidate
/// that differs from any member starts the next group.
///
/// So groups are disjoint runs of consecutive ranks, every pair inside a
/// group is not significantly different, and the first system of each group
/// after the first differs significantly from at least one system of the
/// group above it. In an overlapping chain (A ≈ B, B ≈ C, but A ≠ C) the
/// middle system joins the higher group: {A, B}, {C}. Unlike a compact letter
/// display this gives each system exactly one group number, at the price of
/// not showing that B is also close to C — the pairwise table has that.
///
/// `differs(i, j)` (rank positions, `i < j`) says whether the pair is
/// significantly different; untestable pairs must answer `false`.
pub fn greedy_groups(
    n: usize,
    differs: impl Fn(usize, usize) -> bool,
) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && (start..end).all(|member| !differs(member, end)) {
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}
