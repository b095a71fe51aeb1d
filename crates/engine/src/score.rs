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
    /// TA, VA and Overall when a metric they average is not evaluated: left empty
    /// (ours, the default) or the mean of the metrics present (the reference).
    #[serde(default)]
    pub aggregates: Aggregates,
    /// Full precision (ours, the default) or every metric rounded to 4 decimals and
    /// the aggregates again (the reference).
    #[serde(default)]
    pub rounding: Rounding,
}

/// `--aggregates`: what TA, VA and Overall do when one of their metrics is missing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregates {
    /// Empty: a missing metric is the run's failure, not the report's (ours).
    #[default]
    Complete,
    /// The mean of the metrics that have a score (the reference's summary script).
    Present,
}

/// `--rounding`: the precision of every printed score.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rounding {
    /// Full precision (ours).
    #[default]
    Full,
    /// Every metric to 4 decimals, aggregates computed and rounded again (the
    /// reference: each metric file holds a 4-decimal score).
    Reference,
}

/// `x` rounded to 4 decimals as the reference evaluator's `round(x, 4)` does
/// (correct rounding of the binary value, ties to even).
pub fn round4(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.4}").parse().unwrap_or(x)
}

/// `x` rounded to 4 decimals as the reference's summary script rounds its system
/// means: they are numpy floats, whose `round(x, 4)` scales by 10^4, rounds half to
/// even and scales back (so 0.14375 gives 0.1438 where [`round4`] gives 0.1437).
pub fn round4_numpy(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    (x * 10_000.0).round_ties_even() / 10_000.0
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
            aggregates: Aggregates::Complete,
            rounding: Rounding::Full,
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
    let marker = units.iter().find(|u| is_marker(u));
    let (score, status, note) = if let Some(m) = marker {
        // The whole metric is not evaluated in this run (no judge, dry run, a judge
        // that cannot see): not even a unit a rule settled gives it a score.
        (None, MetricStatus::NotEvaluated, m.reason.clone())
    } else if item_count == 0 {
        (
            Some(empty_score),
            MetricStatus::Evaluated,
            Some("no unit to judge: edge-case score".to_string()),
        )
    } else if values.is_empty() {
        // Not evaluated only when no unit was scored (METRICS.md section 5).
        let why = if skipped > 0 && failed == 0 {
            units
                .iter()
                .find(|u| u.status == UnitStatus::Skipped)
                .and_then(|u| u.reason.clone())
        } else if skipped > 0 {
            Some(format!(
                "{failed} units failed{}, {skipped} skipped",
                shared_reason(units)
            ))
        } else {
            Some(format!("all {failed} units failed{}", shared_reason(units)))
        };
        (None, MetricStatus::NotEvaluated, why)
    } else {
        // A unit that failed or was skipped is left out alone (never a 0 for our
        // failure); the metric is the mean of the scored units, coverage beside it.
        let mut parts = Vec::new();
        if failed > 0 {
            parts.push(if opts.failed_as_zero {
                format!(
                    "{failed} of {item_count} units failed, counted as 0{}",
                    shared_reason(units)
                )
            } else {
                format!(
                    "{failed} of {item_count} units failed, left out of the mean{}",
                    shared_reason(units)
                )
            });
        }
        if skipped > 0 {
            let why = units
                .iter()
                .find(|u| u.status == UnitStatus::Skipped)
                .and_then(|u| u.reason.clone())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            parts.push(format!(
                "{skipped} of {item_count} units skipped, left out of the mean{why}"
            ));
        }
        let note = (!parts.is_empty()).then(|| parts.join("; "));
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

/// Name of the marker unit that makes a whole metric not evaluated in a run.
pub const MARKER_UNIT: &str = "judge";

/// The marker unit a run adds when it evaluates a metric not at all (`--no-judge`,
/// `--dry-run`, a judge that cannot see): unlike a unit that could not be done,
/// it leaves the metric not evaluated whatever the other units hold.
pub fn is_marker(u: &UnitRecord) -> bool {
    u.unit == MARKER_UNIT && u.status == UnitStatus::Skipped && u.detail.is_null()
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
    if opts.rounding == Rounding::Reference {
        // The reference writes every judged metric with 4 decimals (its image
        // quality file keeps full precision); FQ is computed from those files.
        for m in metrics.values_mut() {
            m.score = m.score.map(round4);
        }
    }
    let cq = metrics.get(CHART_QUALITY).cloned();
    // Chart units (rendered or not), markers aside.
    let cq_units = by_metric
        .get(CHART_QUALITY)
        .map_or(0, |us| us.iter().filter(|u| !is_marker(u)).count());
    let mut fq = figure_quality(
        out.n_images + out.n_charts,
        cq_units,
        &iq,
        cq.as_ref(),
        opts.aggregates == Aggregates::Present,
    );
    if opts.rounding == Rounding::Reference {
        fq.score = fq.score.map(round4);
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

/// IQ: mean(Q) x (1 - p_dup) over every image fetched (broken ones count with
/// Q = 0); an image not fetched in this run (skipped) is left out alone.
fn image_quality(images: &[&UnitRecord], opts: &ScoreOptions) -> MetricRecord {
    let mut iq = metric_from_units(
        images,
        0.0,
        &ScoreOptions {
            failed_as_zero: true,
            ..opts.clone()
        },
    );
    let counted: Vec<&UnitRecord> = images
        .iter()
        .copied()
        .filter(|u| u.status != UnitStatus::Skipped)
        .collect();
    if !counted.is_empty() {
        let qs: Vec<f64> = counted
            .iter()
            .map(|u| image_q(u, &opts.iq_weights))
            .collect();
        let valid = counted
            .iter()
            .filter(|u| u.detail["error"].is_null() && u.status == UnitStatus::Scored)
            .count();
        let dups = counted
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
        let skipped = images.len() - counted.len();
        let mut notes = Vec::new();
        if p_dup > 0.0 {
            notes.push(format!("duplicate penalty {p_dup}"));
        }
        if skipped > 0 {
            let why = images
                .iter()
                .find(|u| u.status == UnitStatus::Skipped)
                .and_then(|u| u.reason.clone())
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            notes.push(format!(
                "{skipped} of {} images skipped, left out of the mean{why}",
                images.len()
            ));
        }
        iq.note = (!notes.is_empty()).then(|| notes.join("; "));
    }
    iq
}

/// FQ = (N_img x IQ + N_chart x CQ) / (N_img + N_chart), each N the units its
/// metric counted (the reference weighs by the metric files' scored counts);
/// 0 when the report has no image and no chart. A metric that is not evaluated
/// leaves its figures out (coverage says so); none left: not evaluated.
fn figure_quality(
    n_figures: usize,
    cq_units: usize,
    iq: &MetricRecord,
    cq: Option<&MetricRecord>,
    present: bool,
) -> MetricRecord {
    // Images fetched (broken ones count with Q = 0), charts scored.
    let n_img = iq
        .score
        .map_or(0, |_| iq.item_count - iq.skipped_item_count);
    let (n_chart, cq_score) = match cq {
        Some(m) => (m.score.map_or(0, |_| m.scored_item_count), m.score),
        None => (0, None),
    };
    let n_items = iq.item_count + cq_units;
    let counted = n_img + n_chart;
    // Charts whose quality is not evaluated at all leave FQ not evaluated (ours: a
    // missing metric is not the report's fault); with `--aggregates present` FQ is
    // the image part alone, as the reference computes it.
    let cq_missing = cq_units > 0 && cq.is_none_or(|m| m.score.is_none());
    let score = if n_figures == 0 && n_items == 0 {
        Some(0.0)
    } else if counted == 0 || (cq_missing && !present) {
        None
    } else {
        Some(tvir_images::figure_quality(
            n_img,
            iq.score.unwrap_or(0.0),
            n_chart,
            cq_score.unwrap_or(0.0),
        ))
    };
    let mut notes = Vec::new();
    // Only a report that has charts can miss chart quality (and only one with
    // images image quality).
    if let Some(m) = cq.filter(|m| cq_units > 0 && m.score.is_none()) {
        notes.push(match &m.note {
            Some(n) => format!("chart quality not evaluated: {n}"),
            None => "chart quality not evaluated".to_string(),
        });
    }
    if iq.item_count > 0 && iq.score.is_none() {
        notes.push(match &iq.note {
            Some(n) => format!("image quality not evaluated: {n}"),
            None => "image quality not evaluated".to_string(),
        });
    }
    let counted = if score.is_some() { counted } else { 0 };
    let left_out = n_items.saturating_sub(counted);
    if score.is_some() && left_out > 0 {
        notes.push(format!(
            "{left_out} of {n_items} figures left out of the mean (not scored in this run)"
        ));
    }
    MetricRecord {
        score,
        status: if score.is_some() {
            MetricStatus::Evaluated
        } else {
            MetricStatus::NotEvaluated
        },
        item_count: n_items,
        scored_item_count: counted,
        failed_item_count: 0,
        skipped_item_count: left_out,
        coverage: if n_items == 0 {
            1.0
        } else {
            counted as f64 / n_items as f64
        },
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}

/// TA, VA, Overall, effective citations and structural error counts of `out`.
fn set_aggregates(
    out: &mut ReportRecord,
    metrics: &BTreeMap<String, MetricRecord>,
    opts: &ScoreOptions,
) {
    let present = opts.aggregates == Aggregates::Present;
    let aggregate = |names: &[String]| -> Option<f64> {
        let scores: Vec<Option<f64>> = names
            .iter()
            .map(|n| metrics.get(n).and_then(|m| m.score))
            .collect();
        if present {
            // The reference's summary: the mean of the metrics that have a score.
            mean(&scores.into_iter().flatten().collect::<Vec<_>>())
        } else {
            let all: Option<Vec<f64>> = scores.into_iter().collect();
            all.and_then(|s| mean(&s))
        }
    };
    // A report with no figure scores 0 on every visual metric, so its VA is 0 and
    // its Overall TA / 2 (METRICS.md section 5, as the reference averages them).
    out.ta = aggregate(&opts.ta_metrics);
    out.va = aggregate(&opts.va_metrics);
    out.overall = if present {
        // The reference's Overall: the mean of all ten metrics present.
        let all: Vec<String> = opts
            .ta_metrics
            .iter()
            .chain(&opts.va_metrics)
            .cloned()
            .collect();
        aggregate(&all)
    } else {
        match (out.ta, out.va) {
            (Some(t), Some(v)) => Some((t + v) / 2.0),
            _ => None,
        }
    };
    if opts.rounding == Rounding::Reference {
        out.ta = out.ta.map(round4);
        out.va = out.va.map(round4);
        out.overall = out.overall.map(round4);
    }
    out.effective_citations = metrics
        .get(CITATION_SUPPORT)
        .filter(|m| m.status == MetricStatus::Evaluated)
        .map(|_| {
            out.units
                .iter()
                .filter(|u| u.metric == CITATION_SUPPORT)
                .filter_map(|u| u.score)
                // From +0, not `sum()`'s -0: a report without facts has 0 effective
                // citations, not -0 (printed "-0.00").
                .fold(0.0, |a, b| a + b)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(status: UnitStatus, score: Option<f64>, name: &str) -> UnitRecord {
        UnitRecord {
            metric: "m".into(),
            unit: name.into(),
            status,
            reason: (status != UnitStatus::Scored).then(|| "timed out".to_string()),
            score,
            answer: None,
            justification: None,
            detail: serde_json::Value::Null,
        }
    }

    #[test]
    fn a_skipped_unit_fails_alone_and_a_marker_voids_the_metric() {
        // Two figures scored 0.6 and 0.9, one remote figure timed out (skipped):
        // (0.6 + 0.9) / 2 = 0.75 with coverage 2/3 (formerly: not evaluated).
        let a = unit(UnitStatus::Scored, Some(0.6), "figure:1");
        let b = unit(UnitStatus::Scored, Some(0.9), "figure:2");
        let c = unit(UnitStatus::Skipped, None, "figure:3");
        let m = metric_from_units(&[&a, &b, &c], 0.0, &ScoreOptions::default());
        assert_eq!(m.status, MetricStatus::Evaluated);
        assert!((m.score.unwrap() - 0.75).abs() < 1e-12);
        assert!((m.coverage - 2.0 / 3.0).abs() < 1e-12);
        assert!(m.note.unwrap().contains("1 of 3 units skipped"));
        let marker = unit(UnitStatus::Skipped, None, MARKER_UNIT);
        let m = metric_from_units(&[&a, &marker], 0.0, &ScoreOptions::default());
        assert_eq!((m.score, m.status), (None, MetricStatus::NotEvaluated));
    }

    #[test]
    fn round4_is_the_references_round() {
        assert_eq!(round4(0.123_449_9), 0.1234);
        assert_eq!(round4(0.911_55), 0.9115); // 0.91155 is stored just below the tie
        assert_eq!(round4(2.0 / 3.0), 0.6667);
    }

    #[test]
    fn round4_numpy_is_the_reference_summarys_round() {
        // Values numpy's `round(np.float64(x), 4)` gives (checked with numpy):
        // ties after scaling go to even, where Python's float round goes the other way.
        for (x, numpy, python) in [
            (0.14375, 0.1438, 0.1437),
            (0.41665, 0.4166, 0.4167),
            (0.00005, 0.0, 0.0001),
            (0.12345, 0.1234, 0.1235),
            (0.99995, 1.0, 1.0),
        ] {
            assert_eq!(round4_numpy(x), numpy, "{x}");
            assert_eq!(round4(x), python, "{x}");
        }
        assert!(round4_numpy(f64::NAN).is_nan());
    }
}
