//! Agreement among human raters of one side: per level, Krippendorff's alpha
//! (ordinal, missing ratings allowed) and the paper's pairwise PAR between raters,
//! with the reports, raters and ratings each figure rests on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::alpha::{krippendorff_alpha, Metric};
use super::table::{AnnotatorScores, Cell, Scores};
use super::{inter_annotator_level, InterAnnotatorLevel};

/// What an import of an annotation tool's export counted (absent for a CSV).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ImportCounts {
    /// `json`, `json-min` or `csv` (Label Studio's export formats).
    pub format: String,
    /// Annotations read, skipped and cancelled ones included.
    pub annotations: usize,
    /// Annotations skipped or cancelled by their rater (left out).
    pub cancelled: usize,
    /// Level -> ratings marked "not applicable" (not scores, not 0).
    #[serde(default)]
    pub not_applicable: BTreeMap<String, usize>,
    /// Level -> submitted annotations that left the level blank.
    #[serde(default)]
    pub missing: BTreeMap<String, usize>,
    /// Every annotation or value left out, with where it was and why.
    #[serde(default)]
    pub excluded: Vec<String>,
}

/// Inter-rater agreement of one level, with what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RaterLevel {
    /// Reports with at least one rating.
    pub reports: usize,
    pub raters: usize,
    pub ratings: usize,
    /// Krippendorff's alpha (ordinal) over reports and raters; null when undefined.
    pub alpha: Option<f64>,
    /// Reports rated at least twice (the only ones alpha counts).
    pub alpha_reports: usize,
    /// Ratings of those reports.
    pub alpha_ratings: usize,
    /// The paper's pairwise PAR between raters.
    pub par: InterAnnotatorLevel,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Inter-rater agreement of one side, per level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RaterAgreement {
    /// Distinct raters over all levels.
    pub raters: usize,
    /// Distinct reports rated on any level.
    pub reports: usize,
    /// Ratings over all levels.
    pub ratings: usize,
    pub levels: BTreeMap<String, RaterLevel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<ImportCounts>,
}

/// Alpha and PAR of one level's ratings (rater -> report -> value).
pub fn rater_level(by_rater: &BTreeMap<String, Scores>) -> RaterLevel {
    let mut units: BTreeMap<&Cell, Vec<f64>> = BTreeMap::new();
    for scores in by_rater.values() {
        for (c, v) in scores {
            units.entry(c).or_default().push(*v);
        }
    }
    let unit_values: Vec<Vec<f64>> = units.values().cloned().collect();
    let a = krippendorff_alpha(&unit_values, Metric::Ordinal);
    RaterLevel {
        reports: units.len(),
        raters: by_rater.values().filter(|s| !s.is_empty()).count(),
        ratings: by_rater.values().map(|s| s.len()).sum(),
        alpha: a.value,
        alpha_reports: a.pairable_units,
        alpha_ratings: a.pairable_values,
        par: inter_annotator_level(by_rater),
        notes: a
            .note
            .map(|n| format!("alpha undefined: {n}"))
            .into_iter()
            .collect(),
    }
}

/// Inter-rater agreement of every level of `ann`, restricted to the cells `keep`
/// accepts (a breakdown), with the import counts of the whole side.
pub fn rater_agreement(
    ann: &AnnotatorScores,
    keep: impl Fn(&Cell) -> bool,
    import: Option<&ImportCounts>,
) -> RaterAgreement {
    let mut raters = std::collections::BTreeSet::new();
    let mut reports = std::collections::BTreeSet::new();
    let mut ratings = 0;
    let mut levels = BTreeMap::new();
    for (level, by) in &ann.levels {
        let kept: BTreeMap<String, Scores> = by
            .iter()
            .map(|(r, s)| {
                let s: Scores = s
                    .iter()
                    .filter(|(c, _)| keep(c))
                    .map(|(c, v)| (c.clone(), *v))
                    .collect();
                (r.clone(), s)
            })
            .filter(|(_, s)| !s.is_empty())
            .collect();
        if kept.is_empty() {
            continue;
        }
        for (r, s) in &kept {
            raters.insert(r.clone());
            reports.extend(s.keys().cloned());
            ratings += s.len();
        }
        levels.insert(level.clone(), rater_level(&kept));
    }
    RaterAgreement {
        raters: raters.len(),
        reports: reports.len(),
        ratings,
        levels,
        import: import.cloned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_alpha_and_par_of_three_raters() {
        let s = |rows: &[(&str, &str, f64)]| -> Scores {
            rows.iter()
                .map(|(a, b, v)| (Cell::new(*a, *b), *v))
                .collect()
        };
        let mut by = BTreeMap::new();
        by.insert("r1".to_string(), s(&[("x", "1", 80.0), ("y", "1", 40.0)]));
        by.insert("r2".to_string(), s(&[("x", "1", 70.0), ("y", "1", 50.0)]));
        by.insert("r3".to_string(), s(&[("x", "1", 60.0)]));
        let l = rater_level(&by);
        assert_eq!((l.reports, l.raters, l.ratings), (2, 3, 5));
        // x rated three times, y twice: both pairable.
        assert_eq!((l.alpha_reports, l.alpha_ratings), (2, 5));
        // r1 and r2 both prefer x over y; r3 rated one system only.
        assert_eq!(l.par.par, Some(1.0));
        assert_eq!(l.par.annotator_pairs_used, 1);
        // Ordinal alpha by hand: values 40,50,60,70,80 once each; x=(80,70,60),
        // y=(40,50). Coincidences: x pairs weight 1/2, y pair weight 1. n = 5,
        // every value once, so n_c = 1 and d(c,k) = (|rank c - rank k|)^2.
        // D_o numerator: x: (1+4+1)*2*1/2 = 6 ; y: 1*2*1 = 2 -> 8.
        // D_e: sum over ordered pairs of distinct values of (rank diff)^2
        //   = 2*(4*1 + 3*4 + 2*9 + 1*16) = 100; alpha = 1 - (n-1) * 8 / 100.
        let expected = 1.0 - 4.0 * 8.0 / 100.0;
        assert!((l.alpha.unwrap() - expected).abs() < 1e-12, "{:?}", l.alpha);
        let ann = AnnotatorScores {
            levels: [("overall".to_string(), by)].into_iter().collect(),
        };
        let only_x = rater_agreement(&ann, |c| c.system == "x", None);
        assert_eq!((only_x.reports, only_x.raters, only_x.ratings), (1, 3, 3));
        assert_eq!(only_x.levels["overall"].alpha_reports, 1);
    }
}
