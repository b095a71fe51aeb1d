//! Score math, pure and parameterised: every metric, TA, VA, Overall and effective
//! citations recomputed from the stored unit answers. The pipeline produces its
//! final numbers through [`rescore`]; `tvir ablate` reuses it with other options.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::record::{
    MetricRecord, MetricStatus, ReportRecord, StructuralErrorCounts, UnitRecord, UnitStatus,
    TA_METRICS, VA_METRICS,
};
use tvir_rubric::{unit_score, RubricSet};

pub const IMAGE_QUALITY: &str = "image_quality";
pub const FIGURE_QUALITY: &str = "figure_quality";
pub const CHART_QUALITY: &str = "chart_quality";
pub const CITATION_SUPPORT: &str = "citation_support";
pub const FACT_DEDUP: &str = "fact_dedup";

/// The decision of a `fact_dedup` unit: its judge answer, or the pre-filter's.
pub fn dedup_decision(unit: &UnitRecord) -> Option<bool> {
    match &unit.answer {
        Some(a) => a["duplicate"].as_bool(),
        None => unit.detail["duplicate"].as_bool(),
    }
}

/// Weights of Q = wR R + wA A + wS S + wC C (METRICS.md section 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IqWeights {
    pub resolution: f64,
    pub aspect: f64,
    pub sharpness: f64,
    pub contrast: f64,
}

impl Default for IqWeights {
    fn default() -> Self {
        Self {
            resolution: 0.25,
            aspect: 0.15,
            sharpness: 0.35,
            contrast: 0.25,
        }
    }
}

/// Everything a score depends on besides the judge's answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreOptions {
    pub iq_weights: IqWeights,
    /// p_dup = min(dup_cap, dup_factor x duplicates / valid images).
    pub dup_factor: f64,
    pub dup_cap: f64,
    /// Metrics averaged into TA and VA.
    pub ta_metrics: Vec<String>,
    pub va_metrics: Vec<String>,
    /// Count failed units as 0 (true) or leave them out of the mean (false).
    pub failed_as_zero: bool,
}

impl Default for ScoreOptions {
    fn default() -> Self {
        Self {
            iq_weights: IqWeights::default(),
            dup_factor: 0.8,
            dup_cap: 0.5,
            ta_metrics: TA_METRICS.iter().map(|s| s.to_string()).collect(),
            va_metrics: VA_METRICS.iter().map(|s| s.to_string()).collect(),
            failed_as_zero: false,
        }
    }
}

impl ScoreOptions {
    /// The defaults with TA and VA taken from the rubrics' `level` declarations
    /// (the paper's sets for the built-in rubrics), in metric-file order; Figure
    /// Quality, computed from pixels, is visual.
    pub fn for_rubrics(rubrics: &RubricSet) -> Self {
        let level = |m: &str| {
            if m == FIGURE_QUALITY {
                Some(tvir_rubric::Level::Visual)
            } else {
                rubrics.get(m).ok().and_then(|r| r.level)
            }
        };
        let names = metric_names(rubrics);
        let at = |l| {
            names
                .iter()
                .filter(|m| level(m) == Some(l))
                .cloned()
                .collect::<Vec<_>>()
        };
        Self {
            ta_metrics: at(tvir_rubric::Level::Text),
            va_metrics: at(tvir_rubric::Level::Visual),
            ..Self::default()
        }
    }
}

/// Every metric file of a run with these rubrics: the paper's twelve, then the
/// added metric rubrics by id.
pub fn metric_names(rubrics: &RubricSet) -> Vec<String> {
    let mut names: Vec<String> = super::record::METRIC_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    names.extend(rubrics.added_metrics().map(|r| r.id.clone()));
    names
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// `: REASON` when every failed unit failed for the same reason (a gone judge
/// server, no network), so the coverage note says why; empty otherwise.
fn shared_reason(units: &[&UnitRecord]) -> String {
    let mut reasons = units
        .iter()
        .filter(|u| u.status == UnitStatus::Failed)
        .map(|u| u.reason.as_deref().unwrap_or_default());
    match reasons.next() {
        Some(first) if !first.is_empty() && reasons.all(|r| r == first) => format!(": {first}"),
        _ => String::new(),
    }
}

/// Metric record over units, applying the failed/skipped policy. `empty_score` is
/// the rule score when there is no unit at all.
fn metric_from_units(units: &[&UnitRecord], empty_score: f64, opts: &ScoreOptions) -> MetricRecord {
    let count = |s| units.iter().filter(|u| u.status == s).count();
    let (scored, failed, skipped) = (
        count(UnitStatus::Scored),
        count(UnitStatus::Failed),
        count(UnitStatus::Skipped),
    );
    let item_count = units.len();
    let coverage = if item_count == 0 {
        1.0
    } else {
        scored as f64 / item_count as f64
    };
    let mut values: Vec<f64> = units
        .iter()
        .filter(|u| u.status == UnitStatus::Scored)
        .filter_map(|u| u.score)
        .collect();
    if opts.failed_as_zero {
        values.extend(std::iter::repeat_n(0.0, failed));
    }
    let (score, status, note) = if item_count == 0 {
        (
            Some(empty_score),
            MetricStatus::Evaluated,
            Some("no unit to judge: edge-case score".to_string()),
        )
    } else if skipped > 0 {
        // A partly skipped metric (--no-judge, --dry-run, budget) is not a score.
        (
            None,
            MetricStatus::NotEvaluated,
            units
                .iter()
                .find(|u| u.status == UnitStatus::Skipped)
                .and_then(|u| u.reason.clone()),
        )
    } else if values.is_empty() {
        (
            None,
            MetricStatus::NotEvaluated,
            Some(format!("all {failed} units failed{}", shared_reason(units))),
        )
    } else {
        let note = (failed > 0).then(|| {
            if opts.failed_as_zero {
                format!(
                    "{failed} of {item_count} units failed, counted as 0{}",
                    shared_reason(units)
                )
            } else {
                format!(
                    "{failed} of {item_count} units failed, left out of the mean{}",
                    shared_reason(units)
                )
            }
        });
        (mean(&values), MetricStatus::Evaluated, note)
    };
    // Cut pages are never silent: the note counts the units that saw one.
    let cut = units
        .iter()
        .filter(|u| {
            u.detail
                .get("source_cuts")
                .is_some_and(|c| c.as_array().is_some_and(|a| !a.is_empty()))
        })
        .count();
    let note = match (note, cut) {
        (note, 0) => note,
        (None, n) => Some(cut_note(n, item_count)),
        (Some(text), n) => Some(format!("{text}; {}", cut_note(n, item_count))),
    };
    MetricRecord {
        score,
        status,
        item_count,
        scored_item_count: scored,
        failed_item_count: failed,
        skipped_item_count: skipped,
        coverage,
        note,
    }
}

fn cut_note(cut: usize, of: usize) -> String {
    format!("{cut} of {of} units saw cited pages cut to fit (detail.source_cuts)")
}

/// Per-unit score of a judged unit from its stored answer or rule.
fn judged_unit_score(unit: &UnitRecord, rubrics: &RubricSet) -> Option<f64> {
    if unit.status != UnitStatus::Scored {
        return None;
    }
    let rubric = rubrics.get(&unit.metric).ok()?;
    match &unit.answer {
        Some(answer) => unit_score(rubric, answer).ok(),
        None => unit.detail["rule"].as_str().map(|r| rubric.rule_score(r)),
    }
}

/// Q of one image from its stored components; 0 for an image that failed.
fn image_q(unit: &UnitRecord, w: &IqWeights) -> f64 {
    let d = &unit.detail;
    if unit.status != UnitStatus::Scored || !d["error"].is_null() {
        return 0.0;
    }
    let c = |k: &str| d[k].as_f64().unwrap_or(0.0);
    w.resolution * c("resolution")
        + w.aspect * c("aspect")
        + w.sharpness * c("sharpness")
        + w.contrast * c("contrast")
}

/// Recompute every unit score, metric, TA, VA, Overall and effective citations of a
/// record from its stored answers and image components.
pub fn rescore(record: &ReportRecord, rubrics: &RubricSet, opts: &ScoreOptions) -> ReportRecord {
    rescore_owned(record.clone(), rubrics, opts)
}

/// [`rescore`] of a record the caller gives up (no copy of its units).
pub fn rescore_owned(
    record: ReportRecord,
    rubrics: &RubricSet,
    opts: &ScoreOptions,
) -> ReportRecord {
    let mut out = record;
    if let Some(error) = out.load_error() {
        let error = error.to_string();
        return unevaluable(out, &error, rubrics);
    }
    score_units(&mut out.units, rubrics, opts);
    let mut by_metric: BTreeMap<&str, Vec<&UnitRecord>> = BTreeMap::new();
    for unit in &out.units {
        by_metric
            .entry(unit.metric.as_str())
            .or_default()
            .push(unit);
    }
    let mut metrics = BTreeMap::new();
    for rubric in rubrics.rubrics() {
        if !rubric.is_metric() {
            continue;
        }
        let units = by_metric
            .get(rubric.id.as_str())
            .cloned()
            .unwrap_or_default();
        let m = metric_from_units(&units, rubric.empty_score.unwrap_or(0.0), opts);
        metrics.insert(rubric.id.clone(), m);
    }
    let images = by_metric.get(IMAGE_QUALITY).cloned().unwrap_or_default();
    let iq = image_quality(&images, opts);
    let cq = metrics
        .get(CHART_QUALITY)
        .and_then(|m: &MetricRecord| m.score);
    let mut fq = figure_quality(out.n_images, out.n_charts, iq.score, cq);
    // Charts drawn by script that were not rendered count in FQ too: without their
    // CQ there is no FQ (never a 0 for a chart we could not show).
    if let Some(u) = out
        .units
        .iter()
        .find(|u| u.metric == CHART_QUALITY && u.unit.starts_with(crate::render::UNRENDERED_UNIT))
    {
        fq.score = None;
        fq.status = MetricStatus::NotEvaluated;
        fq.coverage = 0.0;
        fq.note = u.reason.clone();
    }
    metrics.insert(IMAGE_QUALITY.to_string(), iq);
    metrics.insert(FIGURE_QUALITY.to_string(), fq);
    set_aggregates(&mut out, &metrics, opts);
    out.metrics = metrics;
    out
}

/// Each unit's score from its stored answer (or pixels); a scored unit whose
/// answer no longer scores fails.
fn score_units(units: &mut [UnitRecord], rubrics: &RubricSet, opts: &ScoreOptions) {
    for unit in units {
        if unit.metric == FACT_DEDUP {
            // A duplicate check decides a merge and carries no score: it stays scored
            // (settled) when its answer holds the decision.
            unit.score = None;
            if unit.status == UnitStatus::Scored
                && unit.answer.is_some()
                && dedup_decision(unit).is_none()
            {
                unit.status = UnitStatus::Failed;
                unit.reason = Some("stored duplicate answer holds no yes/no decision".into());
            }
            continue;
        }
        unit.score = match unit.metric.as_str() {
            IMAGE_QUALITY => {
                (unit.status == UnitStatus::Scored).then(|| image_q(unit, &opts.iq_weights))
            }
            _ => judged_unit_score(unit, rubrics),
        };
        // A scored unit whose stored answer no longer validates (edited rubric) fails.
        if unit.status == UnitStatus::Scored && unit.score.is_none() {
            unit.status = UnitStatus::Failed;
            unit.reason = Some("stored answer does not score under this rubric".into());
        }
    }
}

/// IQ: mean(Q) x (1 - p_dup) over every image (failed ones count with Q = 0).
fn image_quality(images: &[&UnitRecord], opts: &ScoreOptions) -> MetricRecord {
    let mut iq = metric_from_units(
        images,
        0.0,
        &ScoreOptions {
            failed_as_zero: true,
            ..opts.clone()
        },
    );
    // An image not fetched in this run (skipped) leaves IQ not evaluated.
    if !images.is_empty() && iq.skipped_item_count == 0 {
        let qs: Vec<f64> = images
            .iter()
            .map(|u| image_q(u, &opts.iq_weights))
            .collect();
        let valid = images
            .iter()
            .filter(|u| u.detail["error"].is_null() && u.status == UnitStatus::Scored)
            .count();
        let dups = images
            .iter()
            .filter(|u| u.status == UnitStatus::Scored && !u.detail["duplicate_of"].is_null())
            .count();
        let p_dup = if valid == 0 {
            0.0
        } else {
            (opts.dup_factor * dups as f64 / valid as f64).min(opts.dup_cap)
        };
        iq.score = mean(&qs).map(|m| m * (1.0 - p_dup));
        iq.status = MetricStatus::Evaluated;
        iq.note = (p_dup > 0.0).then(|| format!("duplicate penalty {p_dup}"));
    }
    iq
}

/// FQ from IQ and CQ, weighted by counts; needs CQ only when there are charts.
fn figure_quality(
    n_images: usize,
    n_charts: usize,
    iq: Option<f64>,
    cq: Option<f64>,
) -> MetricRecord {
    let n = n_images + n_charts;
    let fq_score = if n == 0 {
        Some(0.0)
    } else if n_charts > 0 && cq.is_none() {
        None
    } else {
        iq.map(|iq| tvir_images::figure_quality(n_images, iq, n_charts, cq.unwrap_or(0.0)))
    };
    MetricRecord {
        score: fq_score,
        status: if fq_score.is_some() {
            MetricStatus::Evaluated
        } else {
            MetricStatus::NotEvaluated
        },
        item_count: n,
        scored_item_count: if fq_score.is_some() { n } else { 0 },
        failed_item_count: 0,
        skipped_item_count: if fq_score.is_some() { 0 } else { n },
        coverage: if fq_score.is_some() || n == 0 {
            1.0
        } else {
            0.0
        },
        note: fq_score
            .is_none()
            .then(|| "chart quality not evaluated".to_string()),
    }
}

/// TA, VA, Overall, effective citations and structural error counts of `out`.
fn set_aggregates(
    out: &mut ReportRecord,
    metrics: &BTreeMap<String, MetricRecord>,
    opts: &ScoreOptions,
) {
    let aggregate = |names: &[String]| -> Option<f64> {
        let scores: Option<Vec<f64>> = names
            .iter()
            .map(|n| metrics.get(n).and_then(|m| m.score))
            .collect();
        scores.and_then(|s| mean(&s))
    };
    out.ta = aggregate(&opts.ta_metrics);
    out.va = if out.figure_count() == 0 {
        None
    } else {
        aggregate(&opts.va_metrics)
    };
    out.overall = match (out.ta, out.va) {
        (Some(t), Some(v)) => Some((t + v) / 2.0),
        _ => None,
    };
    out.effective_citations = metrics
        .get(CITATION_SUPPORT)
        .filter(|m| m.status == MetricStatus::Evaluated)
        .map(|_| {
            out.units
                .iter()
                .filter(|u| u.metric == CITATION_SUPPORT)
                .filter_map(|u| u.score)
                .sum()
        });
    out.structural_error_counts = StructuralErrorCounts {
        traceability: out.structural_errors.traceability.len(),
        consistency: out.structural_errors.consistency.len(),
        completeness: out.structural_errors.completeness.len(),
    };
}

/// A report that could not be read: every metric not evaluated, never 0.
fn unevaluable(mut out: ReportRecord, error: &str, rubrics: &RubricSet) -> ReportRecord {
    out.metrics = metric_names(rubrics)
        .iter()
        .map(|m| {
            (
                m.to_string(),
                MetricRecord {
                    score: None,
                    status: MetricStatus::NotEvaluated,
                    item_count: 0,
                    scored_item_count: 0,
                    failed_item_count: 0,
                    skipped_item_count: 0,
                    coverage: 0.0,
                    note: Some(error.to_string()),
                },
            )
        })
        .collect();
    out.ta = None;
    out.va = None;
    out.overall = None;
    out.effective_citations = None;
    out
}
