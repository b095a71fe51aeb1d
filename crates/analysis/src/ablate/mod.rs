//! Metric ablations (`tvir ablate`): every score of an `eval` output tree recomputed
//! from the stored judge answers and image components under variants of the scoring
//! settings, with no judge call, and the leaderboard movement against the base
//! measured with the agreement statistics of [`crate::agree`] (PAR, OPC, OSC).
//!
//! Pure: records in, [`AblationReport`] out. Reading the tree and variant files is
//! the caller's (the CLI's) business.

pub mod render;
pub mod variant;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use variant::{Configuration, Variant, VariantError, BASE_NAME};

use crate::aggregate::summary::{sort_leaderboard, system_stats, SystemStats};
use crate::agree::{agree_level, AgreeOptions, LevelAgreement};
use crate::load::{LoadIssue, LoadedRecord};
use tvir_engine::record::{ReportRecord, UnitStatus};
use tvir_engine::score::{rescore, IMAGE_QUALITY};
use tvir_images::duplicates::group_duplicates;
use tvir_images::PHash;

/// Two scores closer than this are the same (JSON round trips can move the last
/// bit of a stored image component).
pub const SCORE_TOLERANCE: f64 = 1e-9;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AblateError {
    /// Regrouping duplicates needs every decoded image's perceptual hash.
    #[error("{report}: cannot regroup duplicate images: {message}")]
    NoHashes { report: String, message: String },
    #[error("two variants are named {0:?}; names must be unique")]
    DuplicateName(String),
}

/// How the comparison against the base is computed.
#[derive(Debug, Clone)]
pub struct AblateOptions {
    /// Bootstrap replicates for the agreement intervals (0 = none).
    pub bootstrap: usize,
    pub seed: u64,
}

impl Default for AblateOptions {
    fn default() -> Self {
        Self {
            bootstrap: 0,
            seed: crate::agree::DEFAULT_SEED,
        }
    }
}

/// One system's place in the base and in a variant leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankMove {
    pub system: String,
    /// 1-based leaderboard positions (best Overall, then TA, then name).
    pub base_rank: usize,
    pub rank: usize,
    /// Places gained (positive) or lost (negative).
    pub shift: i64,
    pub base_overall: Option<f64>,
    pub overall: Option<f64>,
    /// Variant minus base (null when either side has no value).
    pub delta_overall: Option<f64>,
    pub delta_ta: Option<f64>,
    pub delta_va: Option<f64>,
}

/// Agreement of a variant with the base on one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelVsBase {
    /// `overall`, `ta`, `va` or a metric file name.
    pub level: String,
    pub agreement: LevelAgreement,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantResult {
    pub name: String,
    pub description: Option<String>,
    /// What the variant changes, in words.
    pub changes: Vec<String>,
    /// Best Overall first.
    pub leaderboard: Vec<SystemStats>,
    /// In the variant's leaderboard order.
    pub movement: Vec<RankMove>,
    /// Overall, TA, VA, then the metrics (only levels with a score on both sides).
    pub agreement: Vec<LevelVsBase>,
    /// Reports with at least one score (metric, TA, VA, Overall, AEC) different
    /// from the base.
    pub reports_changed: usize,
    /// Scored units whose stored answer does not score under this variant (they
    /// count as failed).
    pub units_failed: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeAblation {
    pub judge_model: String,
    pub runs: Vec<u32>,
    pub reports: usize,
    /// The base leaderboard (the stored answers re-scored with the base settings).
    pub base: Vec<SystemStats>,
    pub variants: Vec<VariantResult>,
}

/// Everything `tvir ablate` prints (`--format json`); scores are fractions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AblationReport {
    pub root: String,
    pub judges: Vec<JudgeAblation>,
    /// `report.json` files that could not be read.
    pub load_issues: Vec<LoadIssue>,
    pub notes: Vec<String>,
}

/// `record` with `duplicate_of` of its image units recomputed at Hamming distance
/// `threshold` from the stored hashes (greedy grouping in report order, as `eval`
/// does). A decoded image without a stored hash makes regrouping impossible.
pub fn regroup_duplicates(
    record: &ReportRecord,
    threshold: u32,
    label: &str,
) -> Result<ReportRecord, AblateError> {
    let mut out = record.clone();
    if record.error.is_some() {
        return Ok(out);
    }
    let positions: Vec<usize> = out
        .units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.metric == IMAGE_QUALITY)
        .map(|(i, _)| i)
        .collect();
    let mut hashes = Vec::with_capacity(positions.len());
    for &i in &positions {
        let u = &out.units[i];
        let decoded = u.status == UnitStatus::Scored && u.detail["error"].is_null();
        if !decoded {
            hashes.push(None);
            continue;
        }
        let hash = u.detail["phash"]
            .as_str()
            .and_then(PHash::from_hex)
            .ok_or_else(|| AblateError::NoHashes {
                report: label.to_string(),
                message: format!(
                    "image unit {} has no stored 16-hex-digit phash in its detail",
                    u.unit
                ),
            })?;
        hashes.push(Some(hash));
    }
    let groups = group_duplicates(&hashes, threshold);
    for (&i, dup) in positions.iter().zip(&groups.duplicate_of) {
        if let serde_json::Value::Object(m) = &mut out.units[i].detail {
            m.insert(
                "duplicate_of".into(),
                dup.map_or(serde_json::Value::Null, |d| d.into()),
            );
        }
    }
    Ok(out)
}

/// One record re-scored under a configuration.
pub fn rescore_record(
    record: &ReportRecord,
    config: &Configuration,
    label: &str,
) -> Result<ReportRecord, AblateError> {
    match config.dup_threshold {
        Some(t) => Ok(rescore(
            &regroup_duplicates(record, t, label)?,
            &config.rubrics,
            &config.options,
        )),
        None => Ok(rescore(record, &config.rubrics, &config.options)),
    }
}

/// Every record re-scored under a configuration (folder facts kept).
pub fn rescore_all(
    records: &[LoadedRecord],
    config: &Configuration,
) -> Result<Vec<LoadedRecord>, AblateError> {
    records
        .iter()
        .map(|r| {
            let record = rescore_record(&r.record, config, &r.path.display().to_string())?;
            Ok(LoadedRecord {
                units: crate::load::RecordUnits::of(&record),
                record,
                ..r.clone()
            })
        })
        .collect()
}

fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => (x - y).abs() <= SCORE_TOLERANCE,
        _ => false,
    }
}

/// Whether two records carry the same scores (every metric, TA, VA, Overall, AEC).
pub fn same_scores(a: &ReportRecord, b: &ReportRecord) -> bool {
    let names: BTreeSet<&String> = a.metrics.keys().chain(b.metrics.keys()).collect();
    close(a.ta, b.ta)
        && close(a.va, b.va)
        && close(a.overall, b.overall)
        && close(a.effective_citations, b.effective_citations)
        && names.into_iter().all(|n| {
            close(
                a.metrics.get(n).and_then(|m| m.score),
                b.metrics.get(n).and_then(|m| m.score),
            )
        })
}

/// Leaderboard (best first) of one judge's records.
pub fn leaderboard(records: &[&LoadedRecord]) -> Vec<SystemStats> {
    let mut by_system: BTreeMap<&str, Vec<&LoadedRecord>> = BTreeMap::new();
    for r in records {
        by_system.entry(r.system.as_str()).or_default().push(r);
    }
    let mut v: Vec<SystemStats> = by_system
        .iter()
        .map(|(s, recs)| system_stats(s, recs))
        .collect();
    sort_leaderboard(&mut v);
    v
}

fn delta(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(b? - a?)
}

/// Rank movement of every system from `base` to `variant` (both sorted best first).
pub fn movement(base: &[SystemStats], variant: &[SystemStats]) -> Vec<RankMove> {
    let base_pos: BTreeMap<&str, (usize, &SystemStats)> = base
        .iter()
        .enumerate()
        .map(|(i, s)| (s.system.as_str(), (i + 1, s)))
        .collect();
    variant
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let (base_rank, b) = base_pos.get(s.system.as_str())?;
            Some(RankMove {
                system: s.system.clone(),
                base_rank: *base_rank,
                rank: i + 1,
                shift: *base_rank as i64 - (i + 1) as i64,
                base_overall: b.overall.mean,
                overall: s.overall.mean,
                delta_overall: delta(b.overall.mean, s.overall.mean),
                delta_ta: delta(b.ta.mean, s.ta.mean),
                delta_va: delta(b.va.mean, s.va.mean),
            })
        })
        .collect()
}

/// Agreement of the variant's cells with the base's, per level both have.
pub fn agreement_vs_base(
    base: &[&LoadedRecord],
    variant: &[&LoadedRecord],
    opts: &AblateOptions,
) -> Vec<LevelVsBase> {
    let a = crate::agree::table::level_cells(base);
    let b = crate::agree::table::level_cells(variant);
    let agree_opts = AgreeOptions {
        bootstrap: opts.bootstrap,
        seed: opts.seed,
        levels: None,
    };
    let mut levels: Vec<&String> = a.keys().filter(|l| b.contains_key(*l)).collect();
    levels.sort_by_key(|l| crate::agree::table::level_order(l));
    levels
        .into_iter()
        .map(|l| {
            let mut agreement = agree_level(&a[l], &b[l], &agree_opts);
            if opts.bootstrap == 0 {
                // The CLI flag is named differently here; say it in our words.
                agreement.notes.retain(|n| !n.starts_with("no intervals"));
            }
            LevelVsBase {
                level: l.clone(),
                agreement,
            }
        })
        .collect()
}

/// Re-score `records` under the base and every variant and compare. Records may
/// hold several judge models; each gets its own leaderboards.
pub fn ablate(
    root: &str,
    records: &[LoadedRecord],
    load_issues: &[LoadIssue],
    base: &Configuration,
    variants: &[Configuration],
    opts: &AblateOptions,
) -> Result<AblationReport, AblateError> {
    let mut seen = BTreeSet::new();
    for v in variants {
        if !seen.insert(v.name.as_str()) {
            return Err(AblateError::DuplicateName(v.name.clone()));
        }
    }
    let mut notes = Vec::new();
    let base_records = rescore_all(records, base)?;
    let differing: Vec<&LoadedRecord> = records
        .iter()
        .zip(&base_records)
        .filter(|(stored, fresh)| !same_scores(&stored.record, &fresh.record))
        .map(|(stored, _)| stored)
        .collect();
    if let Some(first) = differing.first() {
        notes.push(format!(
            "{} of {} reports score differently when re-scored with the base settings \
             (first: {}); the eval run used other rubrics or options (pass its --rubrics DIR, \
             and --failed-as-zero if it had it); the comparison below is against the re-scored base",
            differing.len(),
            records.len(),
            first.path.display()
        ));
    }
    let variant_records: Vec<Vec<LoadedRecord>> = variants
        .iter()
        .map(|v| rescore_all(records, v))
        .collect::<Result<_, _>>()?;

    let mut models: Vec<&str> = records.iter().map(|r| r.judge_model.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    let judges = models
        .into_iter()
        .map(|model| {
            let pick = |rs: &'_ [LoadedRecord]| -> Vec<usize> {
                rs.iter()
                    .enumerate()
                    .filter(|(_, r)| r.judge_model == model)
                    .map(|(i, _)| i)
                    .collect()
            };
            let idx = pick(&base_records);
            let base_sel: Vec<&LoadedRecord> = idx.iter().map(|&i| &base_records[i]).collect();
            let base_board = leaderboard(&base_sel);
            let mut runs: Vec<u32> = base_sel.iter().map(|r| r.run).collect();
            runs.sort_unstable();
            runs.dedup();
            let variants = variants
                .iter()
                .zip(&variant_records)
                .map(|(v, recs)| {
                    let sel: Vec<&LoadedRecord> = idx.iter().map(|&i| &recs[i]).collect();
                    let board = leaderboard(&sel);
                    let reports_changed = base_sel
                        .iter()
                        .zip(&sel)
                        .filter(|(a, b)| !same_scores(&a.record, &b.record))
                        .count();
                    let units_failed = base_sel
                        .iter()
                        .zip(&sel)
                        .map(|(a, b)| {
                            a.record
                                .units
                                .iter()
                                .zip(&b.record.units)
                                .filter(|(x, y)| {
                                    x.status == UnitStatus::Scored && y.status == UnitStatus::Failed
                                })
                                .count()
                        })
                        .sum();
                    VariantResult {
                        name: v.name.clone(),
                        description: v.description.clone(),
                        changes: v.changes.clone(),
                        movement: movement(&base_board, &board),
                        agreement: agreement_vs_base(&base_sel, &sel, opts),
                        leaderboard: board,
                        reports_changed,
                        units_failed,
                    }
                })
                .collect();
            JudgeAblation {
                judge_model: model.to_string(),
                runs,
                reports: base_sel.len(),
                base: base_board,
                variants,
            }
        })
        .collect();
    Ok(AblationReport {
        root: root.to_string(),
        judges,
        load_issues: load_issues.to_vec(),
        notes,
    })
}
