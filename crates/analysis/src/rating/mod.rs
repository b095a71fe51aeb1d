//! Human-rating studies: a Label Studio study folder from reports ([`export`]),
//! the raters' answers read back from Label Studio's exports ([`import`]), and the
//! inter-rater agreement a study publishes ([`alpha`], [`rater_agreement`]).

pub mod alpha;
pub mod export;
pub mod import;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::agree::table::{mean_over_annotators, AnnotatorScores, Cell, ScoreTable, Scores};
use crate::agree::{inter_annotator_level, InterAnnotatorLevel};
pub use import::{detect, parse_export, to_ratings_csv, ExportFormat, Rating, RatingSet};

/// The rating scale of every dimension (the paper's 0-100).
pub const SCALE_MIN: f64 = 0.0;
pub const SCALE_MAX: f64 = 100.0;
/// The task data field holding our reference of the report (hex of
/// `system` + U+001F + `task_id`): not shown by the labeling view, and there in
/// every export format, where `meta` is only in the JSON one.
pub const REF_FIELD: &str = "tvir_ref";
/// `{dimension}_na`: the "not applicable" choice beside a dimension.
pub const NA_SUFFIX: &str = "_na";

pub fn encode_ref(system: &str, task_id: &str) -> String {
    hex::encode(format!("{system}\u{1f}{task_id}"))
}

pub fn decode_ref(r: &str) -> Option<(String, String)> {
    let bytes = hex::decode(r.trim()).ok()?;
    let s = String::from_utf8(bytes).ok()?;
    let (a, b) = s.split_once('\u{1f}')?;
    (!a.is_empty() && !b.is_empty()).then(|| (a.to_string(), b.to_string()))
}

/// A score table of human ratings: per level the raters' mean per report, and
/// every rater's own ratings.
pub fn ratings_table(set: &RatingSet, label: &str) -> ScoreTable {
    let mut by: BTreeMap<String, BTreeMap<String, Scores>> = BTreeMap::new();
    for r in &set.ratings {
        by.entry(r.dimension.clone())
            .or_default()
            .entry(r.rater.clone())
            .or_default()
            .insert(Cell::new(r.system.clone(), r.task_id.clone()), r.value);
    }
    let mut notes = Vec::new();
    if set.cancelled > 0 {
        notes.push(format!(
            "{label}: {} skipped or cancelled annotations left out",
            set.cancelled
        ));
    }
    ScoreTable {
        label: label.to_string(),
        levels: by
            .iter()
            .map(|(l, r)| (l.clone(), mean_over_annotators(r)))
            .collect(),
        annotators: Some(AnnotatorScores { levels: by }),
        notes,
    }
}

/// Inter-rater agreement of one dimension, with what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaterLevel {
    /// Reports with at least one rating.
    pub reports: usize,
    pub raters: usize,
    pub ratings: usize,
    /// Ratings marked "not applicable" (not scores).
    pub not_applicable: usize,
    /// Submitted annotations that left this dimension blank.
    pub missing: usize,
    /// Krippendorff's alpha, ordinal, over reports (units) and raters, missing
    /// ratings allowed.
    pub alpha_ordinal: Option<f64>,
    /// Reports rated at least twice (the units alpha counts).
    pub alpha_reports: usize,
    /// The paper's pairwise PAR between raters.
    pub par: InterAnnotatorLevel,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Inter-rater agreement of an export, per dimension, with its counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaterAgreement {
    pub format: Option<ExportFormat>,
    pub annotations: usize,
    pub cancelled: usize,
    pub ratings: usize,
    pub levels: BTreeMap<String, RaterLevel>,
    /// Every value or annotation left out, with why.
    pub excluded: Vec<String>,
}

pub fn rater_agreement(set: &RatingSet) -> RaterAgreement {
    let table = ratings_table(set, "");
    let by = table.annotators.unwrap_or_default().levels;
    let mut levels = BTreeMap::new();
    for (level, raters) in &by {
        let mut units: BTreeMap<&Cell, Vec<f64>> = BTreeMap::new();
        for scores in raters.values() {
            for (c, v) in scores {
                units.entry(c).or_default().push(*v);
            }
        }
        let unit_values: Vec<Vec<f64>> = units.values().cloned().collect();
        let a = alpha::krippendorff_alpha(&unit_values, alpha::Metric::Ordinal);
        levels.insert(
            level.clone(),
            RaterLevel {
                reports: units.len(),
                raters: raters.len(),
                ratings: raters.values().map(|s| s.len()).sum(),
                not_applicable: set.not_applicable.get(level).copied().unwrap_or(0),
                missing: set.missing.get(level).copied().unwrap_or(0),
                alpha_ordinal: a.value,
                alpha_reports: a.pairable_units,
                par: inter_annotator_level(raters),
                notes: a
                    .note
                    .map(|n| format!("alpha undefined: {n}"))
                    .into_iter()
                    .collect(),
            },
        );
    }
    RaterAgreement {
        format: set.format,
        annotations: set.annotations,
        cancelled: set.cancelled,
        ratings: set.ratings.len(),
        levels,
        excluded: set.excluded.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_round_trip_and_garbage() {
        let r = encode_ref("sys a", "zh-01");
        assert_eq!(decode_ref(&r), Some(("sys a".into(), "zh-01".into())));
        assert_eq!(decode_ref("zz"), None);
        assert_eq!(decode_ref(&hex::encode("no separator")), None);
    }
}
