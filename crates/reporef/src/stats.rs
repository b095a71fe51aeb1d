//! Proportions with binomial standard errors, and McNemar's test on paired outcomes.

use serde::Serialize;
use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, DiscreteCDF};

/// Discordant-pair count below which the exact binomial test is the one to read
/// (the usual rule of thumb: the chi-square approximation needs b + c >= 25).
pub const EXACT_BELOW_DISCORDANT: u64 = 25;

/// `k` successes out of `n`, as a fraction with its binomial standard error
/// `sqrt(p (1 - p) / n)`. Both are `None` when `n` is 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Proportion {
    pub n: usize,
    pub correct: usize,
    pub accuracy: Option<f64>,
    pub se: Option<f64>,
}

impl Proportion {
    pub fn new(correct: usize, n: usize) -> Self {
        debug_assert!(correct <= n);
        if n == 0 {
            return Self {
                n,
                correct,
                accuracy: None,
                se: None,
            };
        }
        let p = correct as f64 / n as f64;
        Self {
            n,
            correct,
            accuracy: Some(p),
            se: Some((p * (1.0 - p) / n as f64).sqrt()),
        }
    }
}

/// Which McNemar p-value to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum McNemarMethod {
    Exact,
    ChiSquare,
}

/// McNemar's test on `b` (first right, second wrong) and `c` (first wrong, second
/// right) discordant pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct McNemar {
    pub b: u64,
    pub c: u64,
    /// Two-sided exact binomial p-value: min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2).
    pub exact_p: f64,
    /// Continuity-corrected statistic (|b - c| - 1)^2 / (b + c), as R's
    /// `mcnemar.test` and statsmodels compute it; `None` when b + c = 0.
    pub chi_square: Option<f64>,
    /// Upper tail of chi-square with 1 degree of freedom at `chi_square`.
    pub chi_square_p: Option<f64>,
    /// Exact when b + c < [`EXACT_BELOW_DISCORDANT`], else chi-square.
    pub recommended: McNemarMethod,
    /// The p-value of the recommended method.
    pub p_value: f64,
}

/// P(X <= k) for X ~ Bin(n, 1/2). Up to n = 1020 the terms C(n, i) and 2^n are
/// summed directly in f64 (2^n is exact there), which keeps p = 1 exactly 1 where
/// statrs' regularised beta gives 0.9999999999999992; beyond that, statrs.
pub fn binomial_half_cdf(k: u64, n: u64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if n <= 1020 {
        let (mut term, mut sum) = (1.0f64, 1.0f64);
        for i in 0..k {
            term *= (n - i) as f64 / (i + 1) as f64;
            sum += term;
        }
        sum / 2f64.powi(n as i32)
    } else {
        Binomial::new(0.5, n)
            .expect("p = 0.5 is a valid probability")
            .cdf(k)
    }
}

pub fn mcnemar(b: u64, c: u64) -> McNemar {
    let n = b + c;
    let exact_p = if n == 0 {
        1.0
    } else {
        (2.0 * binomial_half_cdf(b.min(c), n)).min(1.0)
    };
    let (chi_square, chi_square_p) = if n == 0 {
        (None, None)
    } else {
        let diff = b.abs_diff(c) as f64 - 1.0;
        let stat = diff * diff / n as f64;
        let chi = ChiSquared::new(1.0).expect("1 degree of freedom is valid");
        (Some(stat), Some(chi.sf(stat)))
    };
    let recommended = if n < EXACT_BELOW_DISCORDANT {
        McNemarMethod::Exact
    } else {
        McNemarMethod::ChiSquare
    };
    let p_value = match recommended {
        McNemarMethod::Exact => exact_p,
        McNemarMethod::ChiSquare => chi_square_p.unwrap_or(1.0),
    };
    McNemar {
        b,
        c,
        exact_p,
        chi_square,
        chi_square_p,
        recommended,
        p_value,
    }
}

/// Mean of the present values; `None` when there are none.
pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, k), v| (s + v, k + 1));
    (count > 0).then(|| sum / count as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    #[test]
    fn paper_standard_error() {
        // 268/400: p = 0.67, se = sqrt(0.67 * 0.33 / 400) = sqrt(0.00055275) = 0.0235107...
        let p = Proportion::new(268, 400);
        assert_eq!(p.accuracy, Some(0.67));
        assert!((p.se.unwrap() - 0.023_510_635_891_017_9).abs() < 1e-12);
        assert_eq!(Proportion::new(0, 0).accuracy, None);
        assert_eq!(Proportion::new(3, 3).se, Some(0.0));
    }

    #[test]
    fn mcnemar_against_scipy() {
        // Reference values from scipy 1.x:
        //   binomtest(k, n, 0.5).pvalue            (exact, two-sided)
        //   chi2.sf((abs(b - c) - 1)**2 / (b + c), 1)  (continuity-corrected)
        // b=12, c=10 (the paper's 77 % vs 75 % on 100 examples has b - c = 2):
        //   exact 0.8318119049072266, stat 1/22 = 0.045454..., chi2 p 0.8311704095417624
        let m = mcnemar(12, 10);
        assert!(
            close(m.exact_p, 0.831_811_904_907_226_6, 1e-9),
            "{}",
            m.exact_p
        );
        assert!(close(m.chi_square.unwrap(), 1.0 / 22.0, 1e-12));
        assert!(
            close(m.chi_square_p.unwrap(), 0.831_170_409_541_762_4, 1e-9),
            "{:?}",
            m.chi_square_p
        );
        assert_eq!(m.recommended, McNemarMethod::Exact);
        // b=2, c=9: exact 2 * P(X <= 2 | 11) = 2 * 67/2048 = 0.0654296875;
        //   stat (7 - 1)^2 / 11 = 3.2727..., chi2 p 0.070440429272088
        let m = mcnemar(2, 9);
        assert!(close(m.exact_p, 0.065_429_687_5, 1e-12), "{}", m.exact_p);
        assert!(
            close(m.chi_square_p.unwrap(), 0.070_440_429_272_088, 1e-9),
            "{:?}",
            m.chi_square_p
        );
        // b=30, c=10: 40 discordant pairs -> chi-square recommended.
        //   stat (20 - 1)^2 / 40 = 9.025, chi2 p 0.002663119259138558; exact 0.0022214337732293643
        let m = mcnemar(30, 10);
        assert_eq!(m.recommended, McNemarMethod::ChiSquare);
        assert!(close(m.chi_square.unwrap(), 9.025, 1e-12));
        assert!(
            close(m.p_value, 0.002_663_119_259_138_558, 1e-8),
            "{}",
            m.p_value
        );
        assert!(
            close(m.exact_p, 0.002_221_433_773_229_364_3, 1e-8),
            "{}",
            m.exact_p
        );
    }

    #[test]
    fn binomial_tail_direct_and_statrs_agree() {
        // n = 4, k = 1: (1 + 4) / 16 = 0.3125 exactly.
        assert_eq!(binomial_half_cdf(1, 4), 0.3125);
        assert_eq!(binomial_half_cdf(0, 1), 0.5);
        // scipy binom.cdf(480, 1000, 0.5) = 0.10872414660207075 (direct sum branch).
        assert!(close(
            binomial_half_cdf(480, 1000),
            0.108_724_146_602_070_75,
            1e-9
        ));
        // scipy binom.cdf(1000, 2100, 0.5) = 0.015360353932121245 (statrs branch).
        assert!(close(
            binomial_half_cdf(1000, 2100),
            0.015_360_353_932_121_245,
            1e-8
        ));
    }

    #[test]
    fn mcnemar_edge_cases() {
        // b = 0, c = 1: exact p = 2 * 0.5 = 1 exactly; statistic 0, p 1.
        let m = mcnemar(0, 1);
        assert_eq!(
            (m.exact_p, m.chi_square, m.chi_square_p),
            (1.0, Some(0.0), Some(1.0))
        );
        let m = mcnemar(0, 0);
        assert_eq!((m.exact_p, m.chi_square, m.p_value), (1.0, None, 1.0));
        // Equal discordant counts: exact p capped at 1; the corrected statistic is
        // (0 - 1)^2 / 10 = 0.1 with p 0.7518296340458492 (scipy), as R computes it.
        let m = mcnemar(5, 5);
        assert_eq!(m.exact_p, 1.0);
        assert!(close(
            m.chi_square_p.unwrap(),
            0.751_829_634_045_849_2,
            1e-9
        ));
        // One-sided extreme: b=0, c=6 -> 2 * (1/2)^6 = 0.03125.
        assert!(close(mcnemar(0, 6).exact_p, 0.031_25, 1e-12));
    }
}
