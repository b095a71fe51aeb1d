//! The pure statistics behind `tvir agree`: preference signs with ties, Pearson,
//! Spearman on average ranks, and percentile intervals. Every function returns
//! `Err(Undefined)` instead of NaN so callers can report the reason.

use std::cmp::Ordering;

/// Scores closer than this (relative to max(1, |a|, |b|)) are the same score.
/// Exact inputs (CSV values) are unaffected; it only absorbs summation noise in
/// means over runs, so mathematically equal means tie as they should.
pub const TIE_EPS: f64 = 1e-12;

/// Why a statistic has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Undefined {
    #[error("fewer than two systems ({0})")]
    TooFewSystems(usize),
    #[error("the per-system means of {0} are constant")]
    Constant(&'static str),
    #[error("no pair of systems shares a task")]
    NoPairs,
    #[error("vectors differ in length ({0} vs {1})")]
    LengthMismatch(usize, usize),
}

/// True when two scores count as equal (a tie).
pub fn same_score(a: f64, b: f64) -> bool {
    (a - b).abs() <= TIE_EPS * 1f64.max(a.abs()).max(b.abs())
}

/// The preference between two systems' scores: `Greater` when the first is higher,
/// `Equal` for a tie.
pub fn preference(a: f64, b: f64) -> Ordering {
    if same_score(a, b) {
        Ordering::Equal
    } else if a > b {
        Ordering::Greater
    } else {
        Ordering::Less
    }
}

fn is_constant(v: &[f64]) -> bool {
    v.iter().all(|x| same_score(*x, v[0]))
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Pearson correlation. `Err` for fewer than two values or a constant vector.
pub fn pearson(x: &[f64], y: &[f64]) -> Result<f64, Undefined> {
    if x.len() != y.len() {
        return Err(Undefined::LengthMismatch(x.len(), y.len()));
    }
    if x.len() < 2 {
        return Err(Undefined::TooFewSystems(x.len()));
    }
    if is_constant(x) {
        return Err(Undefined::Constant("A"));
    }
    if is_constant(y) {
        return Err(Undefined::Constant("B"));
    }
    let (mx, my) = (mean(x), mean(y));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    Ok((sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

/// 1-based ranks; tied values (see [`same_score`]) share the average of their ranks.
pub fn average_ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&i, &j| v[i].total_cmp(&v[j]));
    let mut ranks = vec![0.0; v.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && same_score(v[order[end]], v[order[start]]) {
            end += 1;
        }
        // positions start..end (0-based) hold ranks start+1..=end; their mean:
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Spearman correlation: Pearson on average ranks.
pub fn spearman(x: &[f64], y: &[f64]) -> Result<f64, Undefined> {
    if x.len() != y.len() {
        return Err(Undefined::LengthMismatch(x.len(), y.len()));
    }
    if x.len() < 2 {
        return Err(Undefined::TooFewSystems(x.len()));
    }
    pearson(&average_ranks(x), &average_ranks(y))
}

/// Agreeing and total unordered pairs among the systems of one task, given their
/// scores under A and B (same order). Tie against tie agrees.
pub fn pair_agreement(a: &[f64], b: &[f64]) -> (usize, usize) {
    let n = a.len().min(b.len());
    let mut agree = 0;
    let mut pairs = 0;
    for i in 0..n {
        for j in i + 1..n {
            pairs += 1;
            if preference(a[i], a[j]) == preference(b[i], b[j]) {
                agree += 1;
            }
        }
    }
    (agree, pairs)
}

/// Quantile of sorted data with linear interpolation between order statistics
/// (numpy's default), `q` in [0, 1]. `None` for empty data.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn pearson_hand_computed() {
        // x = 1,2,3,4 ; y = 2,4,5,4: mx 2.5, my 3.75; sxy = 3.5, sxx = 5, syy = 4.75
        let r = pearson(&[1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 5.0, 4.0]).unwrap();
        assert!(close(r, 3.5 / (5.0f64 * 4.75).sqrt()), "{r}");
        assert!(close(pearson(&[1.0, 2.0], &[3.0, 1.0]).unwrap(), -1.0));
    }

    #[test]
    fn pearson_undefined_cases() {
        assert_eq!(pearson(&[1.0], &[2.0]), Err(Undefined::TooFewSystems(1)));
        assert_eq!(
            pearson(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]),
            Err(Undefined::Constant("A"))
        );
        assert_eq!(
            pearson(&[1.0, 2.0, 3.0], &[0.5, 0.5, 0.5]),
            Err(Undefined::Constant("B"))
        );
    }

    #[test]
    fn ranks_average_ties() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 10.0, 30.0, 20.0]),
            vec![1.5, 3.5, 1.5, 5.0, 3.5]
        );
        assert_eq!(average_ranks(&[3.0, 3.0, 3.0]), vec![2.0, 2.0, 2.0]);
        // summation noise does not break a tie
        assert_eq!(average_ranks(&[0.1 + 0.2, 0.3, 0.0]), vec![2.5, 2.5, 1.0]);
    }

    #[test]
    fn spearman_with_ties_hand_computed() {
        // x ranks: 1.5,1.5,3,4 ; y ranks: 1,2,3.5,3.5
        // mean 2.5 both; dx = -1,-1,.5,1.5 ; dy = -1.5,-.5,1,1
        // sxy = 1.5+.5+.5+1.5 = 4 ; sxx = 1+1+.25+2.25 = 4.5 ; syy = 2.25+.25+1+1 = 4.5
        let r = spearman(&[1.0, 1.0, 2.0, 5.0], &[0.1, 0.2, 0.9, 0.9]).unwrap();
        assert!(close(r, 4.0 / 4.5), "{r}");
        assert_eq!(
            spearman(&[1.0, 2.0], &[7.0, 7.0]),
            Err(Undefined::Constant("B"))
        );
    }

    #[test]
    fn pair_agreement_with_ties() {
        // (0,1): A >, B > agree; (0,2): A tie, B > disagree; (1,2): A <, B < agree
        assert_eq!(pair_agreement(&[2.0, 1.0, 2.0], &[5.0, 3.0, 4.0]), (2, 3));
        // tie against tie agrees
        assert_eq!(pair_agreement(&[2.0, 2.0], &[0.5, 0.5]), (1, 1));
        assert_eq!(pair_agreement(&[1.0, 1.0], &[1.0, 2.0]), (0, 1));
        assert_eq!(pair_agreement(&[1.0], &[1.0]), (0, 0));
    }

    #[test]
    fn quantile_interpolates() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile_sorted(&v, 0.5), Some(3.0));
        assert!(close(quantile_sorted(&v, 0.025).unwrap(), 1.1));
        assert_eq!(quantile_sorted(&v, 1.0), Some(5.0));
        assert_eq!(quantile_sorted(&[], 0.5), None);
    }
}
