//! Greedy near-duplicate grouping by perceptual-hash Hamming distance and the
//! resulting penalty (METRICS.md section 4).

use super::phash::PHash;

/// Result of grouping a report's valid images.
#[derive(Debug, Clone, PartialEq)]
pub struct DuplicateGroups {
    /// For each input position: the position of its group's first member when it is a
    /// later member of a group, else `None` (also `None` for images without a hash).
    pub duplicate_of: Vec<Option<usize>>,
    /// Sum over groups of (size - 1).
    pub duplicates: usize,
    /// Images that had a hash (decoded).
    pub valid: usize,
}

/// Walk the hashed images in order; each not-yet-grouped image starts a group and pulls
/// in every later ungrouped image within `threshold` bits. `None` entries (failed
/// images) take no part.
pub fn group_duplicates(hashes: &[Option<PHash>], threshold: u32) -> DuplicateGroups {
    let mut duplicate_of = vec![None; hashes.len()];
    let mut grouped = vec![false; hashes.len()];
    let mut duplicates = 0;
    for i in 0..hashes.len() {
        let Some(hi) = hashes[i] else { continue };
        if grouped[i] {
            continue;
        }
        grouped[i] = true;
        for j in i + 1..hashes.len() {
            let Some(hj) = hashes[j] else { continue };
            if !grouped[j] && hi.distance(hj) <= threshold {
                grouped[j] = true;
                duplicate_of[j] = Some(i);
                duplicates += 1;
            }
        }
    }
    DuplicateGroups {
        duplicate_of,
        duplicates,
        valid: hashes.iter().filter(|h| h.is_some()).count(),
    }
}

/// p_dup = min(cap, factor x duplicates / valid); 0 without valid images.
pub fn duplicate_penalty(duplicates: usize, valid: usize, factor: f64, cap: f64) -> f64 {
    if valid == 0 {
        return 0.0;
    }
    (factor * duplicates as f64 / valid as f64).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_grouping_in_order() {
        // a ~ b (3 bits), b ~ c (3 bits) but a !~ c (6 bits > 4): greedy from a takes
        // b only; c then starts its own group.
        let a = PHash(0);
        let b = PHash(0b111);
        let c = PHash(0b111_111);
        let g = group_duplicates(&[Some(a), Some(b), Some(c)], 4);
        assert_eq!(g.duplicate_of, vec![None, Some(0), None]);
        assert_eq!(g.duplicates, 1);
        assert_eq!(g.valid, 3);
    }

    #[test]
    fn failed_images_are_skipped_and_threshold_is_inclusive() {
        let a = PHash(0);
        let ten = PHash((1 << 10) - 1);
        let eleven = PHash((1 << 11) - 1);
        let g = group_duplicates(&[Some(a), None, Some(ten), Some(a), Some(eleven)], 10);
        assert_eq!(g.duplicate_of, vec![None, None, Some(0), Some(0), None]);
        assert_eq!(g.duplicates, 2);
        assert_eq!(g.valid, 4);
    }

    #[test]
    fn penalty_is_capped() {
        assert_eq!(duplicate_penalty(0, 0, 0.8, 0.5), 0.0);
        assert!((duplicate_penalty(1, 4, 0.8, 0.5) - 0.2).abs() < 1e-12);
        assert_eq!(duplicate_penalty(3, 4, 0.8, 0.5), 0.5);
    }
}
