//! Paired comparison of two conditions on the same gold instances (McNemar).

use serde::Serialize;

use super::metrics::Outcome;
use super::stats::{mcnemar, McNemar, Proportion};

/// Two conditions' outcomes on the same instances, with McNemar's test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a: String,
    pub b: String,
    /// Paired instances (all gold records; a missing run is wrong).
    pub n: usize,
    pub a_accuracy: Proportion,
    pub b_accuracy: Proportion,
    pub both_correct: usize,
    /// Discordant: A right, B wrong (McNemar's b).
    pub a_only: usize,
    /// Discordant: A wrong, B right (McNemar's c).
    pub b_only: usize,
    pub both_wrong: usize,
    pub mcnemar: McNemar,
}

/// Pairs outcomes index by index (both must be in gold order, as
/// [`super::metrics::evaluate`] returns them).
pub fn compare(a_name: &str, a: &[Outcome], b_name: &str, b: &[Outcome]) -> Comparison {
    debug_assert_eq!(a.len(), b.len());
    let (mut both_correct, mut a_only, mut b_only, mut both_wrong) = (0, 0, 0, 0);
    for (x, y) in a.iter().zip(b) {
        match (x.correct(), y.correct()) {
            (true, true) => both_correct += 1,
            (true, false) => a_only += 1,
            (false, true) => b_only += 1,
            (false, false) => both_wrong += 1,
        }
    }
    let n = a.len().min(b.len());
    Comparison {
        a: a_name.to_string(),
        b: b_name.to_string(),
        n,
        a_accuracy: Proportion::new(both_correct + a_only, n),
        b_accuracy: Proportion::new(both_correct + b_only, n),
        both_correct,
        a_only,
        b_only,
        both_wrong,
        mcnemar: mcnemar(a_only as u64, b_only as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Answer;
    use crate::MatchLevel;

    fn outcomes(bits: &[u8]) -> Vec<Outcome> {
        bits.iter()
            .map(|&b| Outcome {
                level: (b == 1).then_some(MatchLevel::Exact),
                answer: if b == 1 {
                    Answer::Correct
                } else {
                    Answer::NoPrediction
                },
                surfaced: None,
                present: true,
            })
            .collect()
    }

    #[test]
    fn counts_and_test() {
        // A: 1 1 1 0 0 1 ; B: 1 0 0 1 0 0 -> both 1, a_only 3, b_only 1, both_wrong 1.
        let c = compare(
            "a",
            &outcomes(&[1, 1, 1, 0, 0, 1]),
            "b",
            &outcomes(&[1, 0, 0, 1, 0, 0]),
        );
        assert_eq!(
            (c.both_correct, c.a_only, c.b_only, c.both_wrong),
            (1, 3, 1, 1)
        );
        assert_eq!(c.a_accuracy.correct, 4);
        assert_eq!(c.b_accuracy.correct, 2);
        // Exact: 2 * P(X <= 1 | n=4, 1/2) = 2 * 5/16 = 0.625.
        assert!((c.mcnemar.exact_p - 0.625).abs() < 1e-12);
        // Chi-square: (|3 - 1| - 1)^2 / 4 = 0.25.
        assert!((c.mcnemar.chi_square.unwrap() - 0.25).abs() < 1e-12);
    }
}
