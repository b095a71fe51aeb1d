//! Human-rating studies: a Label Studio study folder from reports ([`export`]) and
//! the raters' answers read back from Label Studio's exports ([`import`]) as a
//! score table `agree` compares with a judge ([`ratings_table`]; the inter-rater
//! figures are `agree`'s, [`crate::agree::raters`]).

pub mod export;
pub mod import;

use std::collections::BTreeMap;

use crate::agree::table::{mean_over_annotators, AnnotatorScores, Cell, ScoreTable, Scores};
use crate::agree::ImportCounts;
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

/// A score table of human ratings: per level the raters' mean per report, every
/// rater's own ratings, and what the import counted and left out.
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
        languages: BTreeMap::new(),
        import: Some(ImportCounts {
            format: match set.format {
                Some(ExportFormat::Json) => "json",
                Some(ExportFormat::JsonMin) => "json-min",
                Some(ExportFormat::Csv) => "csv",
                None => "unknown",
            }
            .into(),
            annotations: set.annotations,
            cancelled: set.cancelled,
            not_applicable: set.not_applicable.clone(),
            missing: set.missing.clone(),
            excluded: set.excluded.clone(),
        }),
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
