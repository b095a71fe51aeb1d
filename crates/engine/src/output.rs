//! Writing results: `OUT/{system}/{task_id}/{judge_model}/{metric}.json` in the
//! reference evaluator's layout, `report.json` beside them, `OUT/summary.json`, and
//! the short table printed at the end. Everything written here is a pure function of
//! the records, so a resumed run writes the same bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::record::{MetricFile, ReportRecord, UnitRecord};
use super::score::{FIGURE_QUALITY, IMAGE_QUALITY};

#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct OutputError {
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

/// A path component that cannot climb out of the output folder.
pub fn safe_component(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':' | '\0') || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    match cleaned.as_str() {
        "" | "." | ".." => format!("_{cleaned}_"),
        _ => cleaned,
    }
}

pub fn report_dir(out: &Path, record: &ReportRecord) -> PathBuf {
    out.join(safe_component(&record.system))
        .join(safe_component(&record.task_id))
        .join(safe_component(&record.judge_model))
}

/// A unit's entry in its metric file, borrowed from the record: its verdict. Its
/// evidence (`detail`: the fact, its sources, de-duplication decisions, figure
/// facts) is in `report.json`'s unit of the same name, written once rather than in
/// both files.
#[derive(serde::Serialize)]
struct UnitResult<'a> {
    unit: &'a str,
    status: super::record::UnitStatus,
    score: Option<f64>,
    reason: &'a Option<String>,
    justification: &'a Option<String>,
    answer: &'a Option<Value>,
}

impl<'a> From<&'a UnitRecord> for UnitResult<'a> {
    fn from(u: &'a UnitRecord) -> Self {
        Self {
            unit: &u.unit,
            status: u.status,
            score: u.score,
            reason: &u.reason,
            justification: &u.justification,
            answer: &u.answer,
        }
    }
}

fn unit_result(u: &UnitRecord) -> Value {
    serde_json::to_value(UnitResult::from(u)).unwrap_or(Value::Null)
}

/// [`MetricFile`] borrowing its units from the record (what is written: the same
/// bytes, without copying every answer and detail into a new value first).
#[derive(serde::Serialize)]
struct MetricFileOut<'a> {
    normalized_score: Option<f64>,
    item_count: usize,
    scored_item_count: usize,
    evaluation_results: Vec<UnitResult<'a>>,
}

fn metric_file_out<'a>(record: &'a ReportRecord, metric: &str) -> MetricFileOut<'a> {
    let m = record.metrics.get(metric);
    MetricFileOut {
        normalized_score: m.and_then(|m| m.score),
        item_count: m.map_or(0, |m| m.item_count),
        scored_item_count: m.map_or(0, |m| m.scored_item_count),
        evaluation_results: record
            .units
            .iter()
            .filter(|u| u.metric == metric)
            .map(UnitResult::from)
            .collect(),
    }
}

/// One metric's file in the reference layout.
pub fn metric_file(record: &ReportRecord, metric: &str) -> MetricFile {
    let m = record.metrics.get(metric);
    let evaluation_results = if metric == FIGURE_QUALITY {
        let score = |k: &str| record.metrics.get(k).and_then(|m| m.score);
        vec![json!({
            "n_images": record.n_images, "image_quality": score(IMAGE_QUALITY),
            "n_charts": record.n_charts, "chart_quality": score("chart_quality"),
        })]
    } else {
        record
            .units
            .iter()
            .filter(|u| u.metric == metric)
            .map(unit_result)
            .collect()
    };
    MetricFile {
        normalized_score: m.and_then(|m| m.score),
        item_count: m.map_or(0, |m| m.item_count),
        scored_item_count: m.map_or(0, |m| m.scored_item_count),
        evaluation_results,
    }
}

/// Write `bytes` to `path` (creating its folder) through a temporary file renamed
/// into place, so an interrupted run never leaves half a file.
fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_through_temp(path, bytes, ".tmp")
}

/// Write `bytes` to `path` (creating its folder) as the file `path` + `suffix`,
/// then renamed into place.
fn write_through_temp(path: &Path, bytes: &[u8], suffix: &str) -> Result<(), OutputError> {
    let err = |source| OutputError {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(suffix);
    std::fs::write(&tmp, bytes).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// Indented JSON (`summary.json`: a small file people read).
fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), OutputError> {
    write_json_as(path, value, true)
}

/// `pretty`: indented; else one line (`report.json` and the per-metric files: JSON
/// readers, the reference's tools included, read them the same, and indentation
/// made up a large part of their bytes at benchmark scale).
fn write_json_as(
    path: &Path,
    value: &impl serde::Serialize,
    pretty: bool,
) -> Result<(), OutputError> {
    let err = |source| OutputError {
        path: path.display().to_string(),
        source,
    };
    // One buffer per thread, reused from file to file: a report's files are written
    // one after another and would otherwise each grow a new buffer from empty.
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| {
        let mut bytes = buffer.borrow_mut();
        bytes.clear();
        if pretty {
            serde_json::to_writer_pretty(&mut *bytes, value)
        } else {
            serde_json::to_writer(&mut *bytes, value)
        }
        .map_err(|e| err(std::io::Error::other(e)))?;
        bytes.push(b'\n');
        write_file_atomic(path, &bytes)
    })
}

/// Write a report's metric files and `report.json`.
pub fn write_report(out: &Path, record: &ReportRecord) -> Result<(), OutputError> {
    write_metric_files(out, record)?;
    write_report_json(out, record, None, &Default::default()).map(|_| ())
}

/// Write a report's metric files (creating its folder).
pub fn write_metric_files(out: &Path, record: &ReportRecord) -> Result<(), OutputError> {
    let dir = report_dir(out, record);
    std::fs::create_dir_all(&dir).map_err(|source| OutputError {
        path: dir.display().to_string(),
        source,
    })?;
    for metric in super::record::metric_names_of([record]) {
        let path = dir.join(format!("{metric}.json"));
        if metric == FIGURE_QUALITY {
            write_json_as(&path, &metric_file(record, &metric), false)?;
        } else {
            write_json_as(&path, &metric_file_out(record, &metric), false)?;
        }
    }
    Ok(())
}

/// What `report.json` holds: the record, with this process's stage times as a
/// last key, `timing`, when the run measured them.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct ReportFile<'a> {
    #[serde(flatten)]
    pub record: &'a ReportRecord,
    /// Wall and CPU seconds of each stage for this report, in this process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timing: Option<&'a super::timing::ReportTiming>,
}

/// Write `report.json` (and the figure pictures it names: rendered charts, and the
/// thumbnails not there yet); with `timing`, the record carries a `timing` object
/// (wall and CPU time by stage, this process's: everything else in the file is a
/// pure function of the answers, so comparisons of two runs mask that one key).
/// Thumbnails come from `thumbs` (the store by content hash) or are decoded there.
/// Returns how many thumbnail files were written for it.
pub fn write_report_json(
    out: &Path,
    record: &ReportRecord,
    timing: Option<&super::timing::ReportTiming>,
    thumbs: &crate::figures::ThumbnailMemo,
) -> Result<usize, OutputError> {
    let dir = report_dir(out, record);
    write_rendered_figures(&dir, record)?;
    let (written, failed) = write_thumbnails(out, &dir, record, thumbs)?;
    // A thumbnail that could not be made keeps no path, with why.
    let amended;
    let record = if failed.is_empty() {
        record
    } else {
        let mut r = record.clone();
        for (k, why) in failed {
            r.thumbnails[k].path = None;
            r.thumbnails[k].reason = Some(why);
        }
        amended = r;
        &amended
    };
    let path = dir.join("report.json");
    write_json_as(&path, &ReportFile { record, timing }, false).map(|()| written)
}

/// Thumbnails made, and the figures (by index) whose thumbnail could not be, with why.
type ThumbnailsMade = (usize, Vec<(usize, String)>);

/// Each figure's thumbnail that is not there yet (its name carries the figure's
/// content hash, so one that is there is this figure's): from the store by content
/// hash, else decoded from the bytes the evaluation read, bounded JPEG
/// (`tvir_images::thumbnail_of_bytes`), written then renamed. Returns how many were
/// written and the figures whose thumbnail could not be made, with why; an error
/// writing the file is the run's.
///
/// A thumbnail whose picture's content hash is known is written once per output
/// folder, under [`THUMBNAIL_STORE`], and hard-linked into each report folder that
/// shows it (the same picture in many reports, runs and judges takes its bytes
/// once on disk; copied where the file system has no hard links).
fn write_thumbnails(
    out: &Path,
    dir: &Path,
    record: &ReportRecord,
    thumbs: &crate::figures::ThumbnailMemo,
) -> Result<ThumbnailsMade, OutputError> {
    let mut failed = Vec::new();
    let mut written = 0;
    for (k, t) in record.thumbnails.iter().enumerate() {
        let (Some(rel), Some(bytes)) = (&t.path, &t.bytes) else {
            continue;
        };
        let path = dir.join(rel);
        if path.is_file() {
            continue;
        }
        let stored = t
            .hash
            .as_deref()
            .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(|h| out.join(THUMBNAIL_STORE).join(format!("{h}.jpg")));
        if let Some(stored) = stored.as_ref().filter(|s| s.is_file()) {
            link_or_copy(stored, &path)?;
            written += 1;
            continue;
        }
        let limits = tvir_images::ImageLimits::default();
        let jpeg = match thumbs.jpeg(t.hash.as_deref(), bytes, &t.content, &limits) {
            Ok(j) => j,
            Err(e) => {
                failed.push((k, format!("no thumbnail: {e}")));
                continue;
            }
        };
        match &stored {
            Some(stored) => {
                write_file_unique(stored, &jpeg)?;
                link_or_copy(stored, &path)?;
            }
            None => write_file_atomic(&path, &jpeg)?,
        }
        written += 1;
    }
    Ok((written, failed))
}

/// The output folder's store of thumbnails by content hash (see [`write_thumbnails`]).
pub const THUMBNAIL_STORE: &str = ".thumbnails";

/// [`write_file_atomic`] through a temporary name of this thread's own, for a file
/// that reports written in parallel may both make (same name, same bytes).
fn write_file_unique(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let suffix = format!(
        ".{}-{:?}.tmp",
        std::process::id(),
        std::thread::current().id()
    );
    write_through_temp(path, bytes, &suffix)
}

/// `to` as a hard link of `from` (a copy where links fail); a `to` that is already
/// there is kept.
fn link_or_copy(from: &Path, to: &Path) -> Result<(), OutputError> {
    let err = |source| OutputError {
        path: to.display().to_string(),
        source,
    };
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    match std::fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(_) => std::fs::copy(from, to).map(|_| ()).map_err(err),
    }
}

/// The PNG of every chart the suite rendered, under `figures/` beside
/// `report.json`, as its record names it.
fn write_rendered_figures(dir: &Path, record: &ReportRecord) -> Result<(), OutputError> {
    let Some(render) = &record.render else {
        return Ok(());
    };
    for chart in &render.charts {
        let Some(bytes) = &chart.bytes else {
            continue;
        };
        write_file_atomic(&dir.join(&chart.png), bytes)?;
    }
    Ok(())
}

/// Removes a `timing.json` an earlier version wrote beside `report.json` (it repeated
/// `report.json`'s `timing` object); left there, it would give a re-run's reader
/// stale times.
pub fn remove_old_timing(out: &Path, record: &ReportRecord) {
    let _ = std::fs::remove_file(report_dir(out, record).join("timing.json"));
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

fn std_dev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    Some((xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt())
}

/// Per-system means of one run. A mean needs the value of every report it covers
/// (one not-evaluated report makes it null rather than biased). VA and Overall cover
/// every report, text-only ones (VA 0) included, as `tvir summarize` and METRICS.md
/// s.5; a system none of whose reports has a figure has no VA or Overall (the
/// paper's text-only system).
fn system_run_means(records: &[&ReportRecord]) -> BTreeMap<String, Option<f64>> {
    let mut out = BTreeMap::new();
    let text_only = records
        .iter()
        .all(|r| r.figure_count() == 0 && r.n_images + r.n_charts == 0);
    let mut put = |name: &str, get: &dyn Fn(&ReportRecord) -> Option<f64>| {
        let xs: Vec<f64> = records.iter().filter_map(|r| get(r)).collect();
        let value = if text_only && matches!(name, "va" | "overall") {
            None
        } else if xs.len() == records.len() {
            mean(&xs)
        } else {
            None
        };
        out.insert(name.to_string(), value);
    };
    for m in super::record::metric_names_of(records.iter().copied()) {
        put(&m, &|r| r.metrics.get(&m).and_then(|x| x.score));
    }
    put("ta", &|r| r.ta);
    put("va", &|r| r.va);
    put("overall", &|r| r.overall);
    put("aec", &|r| r.effective_citations);
    out
}

/// `OUT/summary.json`: per system, mean over tasks of every metric, TA, VA,
/// Overall and AEC, with mean and standard deviation over runs.
pub fn summary(records: &[ReportRecord], settings: &Value) -> Value {
    let mut systems: BTreeMap<&str, Vec<&ReportRecord>> = BTreeMap::new();
    for r in records {
        systems.entry(r.system.as_str()).or_default().push(r);
    }
    let mut sys_out = BTreeMap::new();
    for (system, recs) in systems {
        let mut runs: BTreeMap<u32, Vec<&ReportRecord>> = BTreeMap::new();
        for r in &recs {
            runs.entry(r.run).or_default().push(r);
        }
        let per_run: Vec<BTreeMap<String, Option<f64>>> =
            runs.values().map(|rs| system_run_means(rs)).collect();
        let mut scores = BTreeMap::new();
        let keys: Vec<String> = per_run
            .first()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for key in keys {
            let xs: Vec<f64> = per_run.iter().filter_map(|m| m[&key]).collect();
            let complete = xs.len() == per_run.len();
            let values: Vec<Option<f64>> = per_run.iter().map(|m| m[&key]).collect();
            scores.insert(
                key,
                ScoreOverRuns {
                    mean: if complete { mean(&xs) } else { None },
                    std: if complete { std_dev(&xs) } else { None },
                    runs: values,
                },
            );
        }
        let tasks: std::collections::BTreeSet<&str> =
            recs.iter().map(|r| r.task_id.as_str()).collect();
        let failed_units: usize = recs
            .iter()
            .map(|r| {
                r.metrics
                    .values()
                    .map(|m| m.failed_item_count)
                    .sum::<usize>()
            })
            .sum();
        let unreadable: Vec<&str> = recs
            .iter()
            .filter(|r| r.load_error().is_some())
            .map(|r| r.task_id.as_str())
            .collect();
        let se = |f: &dyn Fn(&ReportRecord) -> usize| {
            mean(&recs.iter().map(|r| f(r) as f64).collect::<Vec<_>>())
        };
        sys_out.insert(
            system.to_string(),
            SystemSummaryRecord {
                tasks: tasks.len(),
                runs: per_run.len(),
                scores,
                structural_errors_mean: StructuralErrorMeans {
                    traceability: se(&|r| r.structural_error_counts.traceability),
                    consistency: se(&|r| r.structural_error_counts.consistency),
                    completeness: se(&|r| r.structural_error_counts.completeness),
                },
                failed_units,
                unreadable_reports: unreadable.iter().map(|t| t.to_string()).collect(),
                usage: UsageTotals {
                    calls: recs.iter().map(|r| r.usage.calls).sum(),
                    prompt_tokens: recs.iter().map(|r| r.usage.prompt_tokens).sum(),
                    completion_tokens: recs.iter().map(|r| r.usage.completion_tokens).sum(),
                    cost_usd: recs
                        .iter()
                        .filter_map(|r| r.usage.cost_usd)
                        .fold(None, |a: Option<f64>, c| Some(a.unwrap_or(0.0) + c)),
                },
            },
        );
    }
    let file = SummaryFile {
        settings: settings.clone(),
        reports: records.len(),
        systems: sys_out,
    };
    serde_json::to_value(file).expect("a summary is plain data")
}

/// `OUT/summary.json`: the run's settings and one entry per system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SummaryFile {
    /// The settings the run used (the same object as `run.json`'s `settings`).
    pub settings: Value,
    /// Report records the summary was made from.
    pub reports: usize,
    /// System name -> its figures.
    pub systems: BTreeMap<String, SystemSummaryRecord>,
}

/// One system in `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SystemSummaryRecord {
    /// Distinct tasks with a record.
    pub tasks: usize,
    /// Judge runs (`--runs`).
    pub runs: usize,
    /// Metric file name, `ta`, `va`, `overall` or `aec` -> its value over runs.
    pub scores: BTreeMap<String, ScoreOverRuns>,
    /// Mean structural errors per report, by kind.
    pub structural_errors_mean: StructuralErrorMeans,
    /// Units that failed, over every report and metric.
    pub failed_units: usize,
    /// Tasks whose report could not be read or parsed.
    pub unreadable_reports: Vec<String>,
    /// Judge usage summed over the system's reports.
    pub usage: UsageTotals,
}

/// A system's score: the mean over tasks in each run, and their mean and standard
/// deviation (null unless every run has the score).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScoreOverRuns {
    pub mean: Option<f64>,
    pub std: Option<f64>,
    /// One value per run, null where the run has no value.
    pub runs: Vec<Option<f64>>,
}

/// Mean structural errors per report (null for a system with no report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StructuralErrorMeans {
    pub traceability: Option<f64>,
    pub consistency: Option<f64>,
    pub completeness: Option<f64>,
}

/// Judge usage summed over reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsageTotals {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Null when no call had a known price.
    pub cost_usd: Option<f64>,
}

pub fn write_summary(out: &Path, summary: &Value) -> Result<(), OutputError> {
    std::fs::create_dir_all(out).map_err(|source| OutputError {
        path: out.display().to_string(),
        source,
    })?;
    write_json(&out.join("summary.json"), summary)
}

pub fn write_run_stats(out: &Path, stats: &RunStatsFile) -> Result<(), OutputError> {
    write_json(&out.join("run.json"), stats)
}

/// `OUT/run.json`: what the run did (judge calls, cache, figure work) and its timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunStatsFile {
    /// Wall time of the whole command.
    pub wall_seconds: f64,
    /// Judge requests built (cache hits included).
    pub requests_built: u64,
    /// Answers received from the judge server.
    pub answers: u64,
    /// Answers taken from the cache.
    pub cache_hits: u64,
    /// Calls that failed after their retries.
    pub failed_calls: u64,
    /// Calls not made (budget spent, dry run, a judge that cannot see pictures).
    pub skipped_calls: u64,
    pub spend_usd: f64,
    pub estimated_prompt_tokens: u64,
    /// Null when the judge model has no known price.
    pub estimated_cost_usd: Option<f64>,
    /// Reports evaluated.
    pub reports: usize,
    pub figures: FigureWork,
    /// Time per stage (parse, fetch, render, judge, write), wall and CPU seconds.
    pub timing: Value,
    /// The protocol and every setting it implies (null without `--protocol`).
    pub protocol: Option<super::record::ProtocolRecord>,
}

/// The figure work of a run: what was encoded, computed or reused from earlier runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FigureWork {
    pub encoded: u64,
    pub facts_reused: u64,
    pub facts_computed: u64,
    pub thumbnails_written: usize,
    pub thumbnails_reused: u64,
    pub thumbnails_decoded: u64,
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{:.2}", v * 100.0))
}

/// The short table printed at the end (0-100 scale; `-` = not evaluated).
pub fn table(summary: &Value) -> String {
    let cols = [
        ("CS", "citation_support"),
        ("IA", "instruction_alignment"),
        ("WQ", "writing_quality"),
        ("ADB", "analytical_depth_breadth"),
        ("FLC", "factual_logical_consistency"),
        ("MC", "multimodal_composition"),
        ("IQ", "image_quality"),
        ("FQ", "figure_quality"),
        ("FCQ", "figure_caption_quality"),
        ("FCI", "figure_context_integration"),
        ("CSC", "chart_source_consistency"),
        ("TA", "ta"),
        ("VA", "va"),
        ("Overall", "overall"),
    ];
    let mut out = format!("{:<24} {:>5}", "system", "tasks");
    for (h, _) in cols {
        out.push_str(&format!(" {h:>7}"));
    }
    out.push_str(&format!(" {:>7}\n", "AEC"));
    if let Some(systems) = summary["systems"].as_object() {
        for (name, s) in systems {
            out.push_str(&format!("{:<24} {:>5}", truncate(name, 24), s["tasks"]));
            for (_, key) in cols {
                out.push_str(&format!(" {:>7}", pct(s["scores"][key]["mean"].as_f64())));
            }
            let aec = s["scores"]["aec"]["mean"].as_f64();
            out.push_str(&format!(
                " {:>7}\n",
                aec.map_or("-".into(), |v| format!("{v:.2}"))
            ));
        }
    }
    out
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_cannot_escape() {
        assert_eq!(safe_component("../x"), ".._x");
        assert_eq!(safe_component(".."), "_.._");
        assert_eq!(safe_component("gpt-4o"), "gpt-4o");
    }

    #[test]
    fn written_metric_files_are_the_metric_file_values() {
        use crate::record::UnitStatus;
        let unit = |metric: &str, n: usize, status| UnitRecord {
            metric: metric.into(),
            unit: format!("fact:{n}"),
            status,
            reason: (status != UnitStatus::Scored).then(|| "why \"quoted\"".into()),
            score: (status == UnitStatus::Scored).then_some(0.5),
            answer: Some(json!({"verdict": "supported", "n": [1, 2.5]})),
            justification: Some("because".into()),
            detail: json!({"fact": "Revenue grew 5%.", "sources": [{"idx": "1"}]}),
        };
        let record: ReportRecord = serde_json::from_value(json!({
            "system": "s", "task_id": "t", "judge_model": "m", "run": 1,
            "language": null, "complexity": null, "domain": null,
            "metrics": {"citation_support": {"score": 0.5, "status": "evaluated",
                "item_count": 3, "scored_item_count": 1, "failed_item_count": 1,
                "skipped_item_count": 1, "coverage": 0.33, "note": null}},
            "ta": null, "va": null, "overall": null, "effective_citations": null,
            "structural_error_counts": super::super::record::StructuralErrorCounts::default(),
            "structural_errors": tvir_report::StructuralErrors::default(),
            "units": [], "usage": super::super::record::UsageRecord::default(), "n_images": 0, "n_charts": 0,
            "n_figures": 0, "error": null
        }))
        .map(|mut r: ReportRecord| {
            r.units = vec![
                unit("citation_support", 1, UnitStatus::Scored),
                unit("writing_quality", 1, UnitStatus::Scored),
                unit("citation_support", 2, UnitStatus::Failed),
                unit("citation_support", 3, UnitStatus::Skipped),
            ];
            r
        })
        .expect("record fixture");
        // Figure Quality is written from its value (no units of its own).
        for metric in super::super::record::METRIC_NAMES
            .iter()
            .filter(|m| **m != FIGURE_QUALITY)
        {
            let written = serde_json::to_vec_pretty(&metric_file_out(&record, metric)).unwrap();
            let value = serde_json::to_vec_pretty(&metric_file(&record, metric)).unwrap();
            assert_eq!(
                String::from_utf8(written).unwrap(),
                String::from_utf8(value).unwrap(),
                "{metric}"
            );
        }
        assert_eq!(
            metric_file(&record, "citation_support")
                .evaluation_results
                .len(),
            3
        );
    }

    #[test]
    fn sample_std_dev() {
        assert_eq!(std_dev(&[1.0]), None);
        assert!((std_dev(&[1.0, 3.0]).unwrap() - 2f64.sqrt()).abs() < 1e-12);
    }
}
