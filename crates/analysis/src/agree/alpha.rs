//! Krippendorff's alpha for reliability data with missing values (Krippendorff,
//! "Computing Krippendorff's Alpha-Reliability", 2011): a coincidence matrix over
//! the pairable values of every unit, then alpha = 1 - D_observed / D_expected.

use std::collections::BTreeMap;

/// How far apart two values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Nominal,
    /// Ranks only: the distance counts the values seen between the two.
    Ordinal,
    Interval,
}

/// Alpha with the counts behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Alpha {
    /// None when undefined (fewer than two pairable values, or a single value
    /// everywhere), with the reason in `note`.
    pub value: Option<f64>,
    /// Units with at least two values (the only ones that count).
    pub pairable_units: usize,
    /// Values in those units.
    pub pairable_values: usize,
    pub note: Option<String>,
}

/// Alpha over `units`, each the values its raters gave (missing ratings simply
/// absent). Values are compared exactly, so give them on one scale.
pub fn krippendorff_alpha(units: &[Vec<f64>], metric: Metric) -> Alpha {
    // Distinct values, sorted, as indices into the coincidence matrix.
    let mut values: Vec<f64> = units
        .iter()
        .filter(|u| u.len() >= 2)
        .flatten()
        .copied()
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let index: BTreeMap<u64, usize> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (v.to_bits(), i))
        .collect();
    let k = values.len();
    let mut o = vec![vec![0.0f64; k]; k];
    let (mut pairable_units, mut pairable_values) = (0, 0);
    for u in units.iter().filter(|u| u.len() >= 2) {
        pairable_units += 1;
        pairable_values += u.len();
        let w = 1.0 / (u.len() - 1) as f64;
        for (i, a) in u.iter().enumerate() {
            for (j, b) in u.iter().enumerate() {
                if i != j {
                    o[index[&a.to_bits()]][index[&b.to_bits()]] += w;
                }
            }
        }
    }
    let undefined = |note: &str| Alpha {
        value: None,
        pairable_units,
        pairable_values,
        note: Some(note.to_string()),
    };
    if pairable_values < 2 {
        return undefined("no unit was rated by two raters");
    }
    let n_c: Vec<f64> = o.iter().map(|row| row.iter().sum()).collect();
    let n: f64 = n_c.iter().sum();
    let delta2 = |c: usize, d: usize| -> f64 {
        match metric {
            Metric::Nominal => f64::from(u8::from(c != d)),
            Metric::Interval => (values[c] - values[d]).powi(2),
            Metric::Ordinal => {
                let (lo, hi) = (c.min(d), c.max(d));
                let between: f64 = n_c[lo..=hi].iter().sum();
                (between - (n_c[c] + n_c[d]) / 2.0).powi(2)
            }
        }
    };
    let (mut observed, mut expected) = (0.0, 0.0);
    for c in 0..k {
        for d in 0..k {
            let d2 = delta2(c, d);
            observed += o[c][d] * d2;
            expected += n_c[c] * n_c[d] * d2;
        }
    }
    if expected == 0.0 {
        return undefined("every pairable rating has the same value (no variation to agree on)");
    }
    Alpha {
        value: Some(1.0 - (n - 1.0) * observed / expected),
        pairable_units,
        pairable_values,
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Krippendorff (2011), section C: 4 observers, 12 units, missing values; the
    /// publication gives alpha = 0.743 nominal, 0.815 ordinal, 0.849 interval.
    fn textbook_units() -> Vec<Vec<f64>> {
        let na = f64::NAN;
        let observers: [[f64; 12]; 4] = [
            [1., 2., 3., 3., 2., 1., 4., 1., 2., na, na, na],
            [1., 2., 3., 3., 2., 2., 4., 1., 2., 5., na, 3.],
            [na, 3., 3., 3., 2., 3., 4., 2., 2., 5., 1., na],
            [1., 2., 3., 3., 2., 4., 4., 1., 2., 5., 1., na],
        ];
        (0..12)
            .map(|u| {
                observers
                    .iter()
                    .map(|o| o[u])
                    .filter(|v| !v.is_nan())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn textbook_example_with_missing_values() {
        let units = textbook_units();
        for (metric, published) in [
            (Metric::Nominal, 0.743),
            (Metric::Ordinal, 0.815),
            (Metric::Interval, 0.849),
        ] {
            let a = krippendorff_alpha(&units, metric);
            let v = a.value.unwrap();
            assert!((v - published).abs() < 0.0005, "{metric:?}: {v}");
            // Unit 12 has one value: not pairable.
            assert_eq!((a.pairable_units, a.pairable_values), (11, 40));
        }
    }

    #[test]
    fn ordinal_depends_on_ranks_not_distances() {
        let a = vec![
            vec![1.0, 2.0],
            vec![2.0, 3.0],
            vec![3.0, 3.0],
            vec![1.0, 1.0],
        ];
        let b: Vec<Vec<f64>> = a
            .iter()
            .map(|u| {
                u.iter()
                    .map(|v| if *v == 3.0 { 100.0 } else { *v })
                    .collect()
            })
            .collect();
        let (x, y) = (
            krippendorff_alpha(&a, Metric::Ordinal).value.unwrap(),
            krippendorff_alpha(&b, Metric::Ordinal).value.unwrap(),
        );
        assert!((x - y).abs() < 1e-12);
        assert!(
            (krippendorff_alpha(&a, Metric::Interval).value.unwrap()
                - krippendorff_alpha(&b, Metric::Interval).value.unwrap())
            .abs()
                > 1e-3
        );
    }

    #[test]
    fn perfect_and_undefined() {
        let perfect = vec![vec![1.0, 1.0, 1.0], vec![4.0, 4.0], vec![2.0, 2.0, 2.0]];
        assert_eq!(
            krippendorff_alpha(&perfect, Metric::Ordinal).value,
            Some(1.0)
        );
        let one_value = vec![vec![3.0, 3.0], vec![3.0]];
        let a = krippendorff_alpha(&one_value, Metric::Ordinal);
        assert!(a.value.is_none() && a.note.unwrap().contains("same value"));
        let lonely = vec![vec![3.0], vec![2.0]];
        assert!(krippendorff_alpha(&lonely, Metric::Ordinal).value.is_none());
    }
}
