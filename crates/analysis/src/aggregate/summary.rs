//! The system-level summary (METRICS.md section 5), computed purely from loaded
//! records: per-system means of every metric, TA, VA, Overall, AEC and
//! structural-error counts, mean and standard deviation over runs, breakdowns by
//! language, complexity and domain, and domain difficulty as average rank.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::agree::stats::average_ranks;
use crate::load::{
    detect_language_fallback, normalize_language, LoadIssue, LoadedRecord, TaskInfo,
};
use tvir_engine::record::{MetricStatus, UsageRecord, METRIC_NAMES, TA_METRICS, VA_METRICS};
use tvir_engine::score::round4_numpy;

/// Mean over runs of the per-run mean over reports, and the sample standard
/// deviation (n - 1) of those per-run means (null with fewer than two runs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub mean: Option<f64>,
    pub std: Option<f64>,
    /// Runs with at least one value.
    pub runs: usize,
    /// Report values used, over all runs.
    pub values: usize,
}

impl Stat {
    /// From values grouped by run.
    pub fn over_runs(per_run: &BTreeMap<u32, Vec<f64>>) -> Stat {
        let run_means: Vec<f64> = per_run
            .values()
            .filter(|v| !v.is_empty())
            .map(|v| v.iter().sum::<f64>() / v.len() as f64)
            .collect();
        let values = per_run.values().map(|v| v.len()).sum();
        let n = run_means.len();
        if n == 0 {
            return Stat {
                values,
                ..Default::default()
            };
        }
        let mean = run_means.iter().sum::<f64>() / n as f64;
        let std = (n >= 2).then(|| {
            let ss: f64 = run_means.iter().map(|m| (m - mean).powi(2)).sum();
            (ss / (n - 1) as f64).sqrt()
        });
        Stat {
            mean: Some(mean),
            std,
            runs: n,
            values,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StructuralStats {
    pub traceability: Stat,
    pub consistency: Stat,
    pub completeness: Stat,
    pub total: Stat,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitCounts {
    pub scored: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// Everything known about one system (over all its records, or one group's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemStats {
    pub system: String,
    pub tasks: usize,
    pub reports: usize,
    pub runs: usize,
    pub ta: Stat,
    pub va: Stat,
    pub overall: Stat,
    /// Average Effective Citations (sum of CS unit scores per report).
    pub aec: Stat,
    /// Keyed by metric file name.
    pub metrics: BTreeMap<String, Stat>,
    /// Mean count per report.
    pub structural_errors: StructuralStats,
    /// Reports with no figure at all (their visual metrics score 0 and count in
    /// the means, as in the reference).
    pub text_only_reports: usize,
    /// Levels that are not evaluated for the system, with why: VA and Overall of a
    /// system none of whose reports has a figure (the paper's text-only system).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_evaluated: BTreeMap<String, String>,
    /// How TA, VA and Overall were computed when not from the report-level
    /// aggregates (records made with `--aggregates present`: from the per-metric
    /// means, as the reference's summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels_from: Option<String>,
    pub units: UnitCounts,
    /// (report, metric) pairs not evaluated (`--no-judge`, budget, all units failed).
    pub metrics_not_evaluated: usize,
    pub usage: UsageRecord,
    /// Tasks whose rules parse the extraction self-check called suspect (once per
    /// task, over all runs), sorted.
    #[serde(default)]
    pub suspect_parses: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakdownGroup {
    pub group: String,
    pub tasks: usize,
    pub systems: Vec<SystemStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// `language`, `complexity` or `domain`.
    pub dimension: String,
    pub groups: Vec<BreakdownGroup>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainRank {
    pub domain: String,
    /// Mean over systems of the domain's rank within the system (1 = the system's
    /// lowest-scoring domain, so a lower average rank means a harder domain).
    pub average_rank: f64,
    pub systems: usize,
    /// Mean over systems of their mean score in the domain.
    pub mean_score: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainDifficulty {
    /// `overall`, `ta` or `va`.
    pub level: String,
    /// Hardest first.
    pub domains: Vec<DomainRank>,
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSummary {
    pub judge_model: String,
    pub runs: Vec<u32>,
    /// Best Overall first (then TA, then name).
    pub systems: Vec<SystemStats>,
    pub breakdowns: Vec<Breakdown>,
    pub domain_difficulty: Vec<DomainDifficulty>,
    /// Intervals, pairwise tests and rank groups of this leaderboard by level, on
    /// the 0-100 scale (filled by `aggregate::add_significance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub significance: Option<super::uncertainty::LevelReports>,
}

/// `tvir summarize --format json`. Scores are fractions in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub root: String,
    pub tasks_file: Option<String>,
    pub judges: Vec<JudgeSummary>,
    /// report.json files that could not be read.
    pub load_issues: Vec<LoadIssue>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// `tvir agree --json` outputs attached with `summarize --agree FILE`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agreements: Vec<NamedAgreement>,
}

/// An agreement report and the file it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedAgreement {
    pub label: String,
    pub report: crate::agree::AgreeReport,
}

fn push(map: &mut BTreeMap<u32, Vec<f64>>, run: u32, v: Option<f64>) {
    let entry = map.entry(run).or_default();
    if let Some(v) = v.filter(|v| v.is_finite()) {
        entry.push(v);
    }
}

/// Stats of one system over the given records (all of that system).
pub fn system_stats(system: &str, records: &[&LoadedRecord]) -> SystemStats {
    let mut ta = BTreeMap::new();
    let mut va = BTreeMap::new();
    let mut overall = BTreeMap::new();
    let mut aec = BTreeMap::new();
    let mut metrics: BTreeMap<String, BTreeMap<u32, Vec<f64>>> = BTreeMap::new();
    let mut se: [BTreeMap<u32, Vec<f64>>; 4] = Default::default();
    let mut out = SystemStats {
        system: system.to_string(),
        reports: records.len(),
        ..Default::default()
    };
    let mut tasks = BTreeSet::new();
    let mut runs = BTreeSet::new();
    for r in records {
        let rec = &r.record;
        tasks.insert(r.task_id.as_str());
        runs.insert(r.run);
        push(&mut ta, r.run, rec.ta);
        push(&mut va, r.run, rec.va);
        push(&mut overall, r.run, rec.overall);
        push(&mut aec, r.run, rec.effective_citations);
        if rec.figure_count() == 0 && rec.n_images + rec.n_charts == 0 {
            out.text_only_reports += 1;
        }
        for (name, m) in &rec.metrics {
            push(metrics.entry(name.clone()).or_default(), r.run, m.score);
            if m.status == MetricStatus::NotEvaluated {
                out.metrics_not_evaluated += 1;
            }
        }
        let c = &rec.structural_error_counts;
        let counts = [
            c.traceability,
            c.consistency,
            c.completeness,
            c.traceability + c.consistency + c.completeness,
        ];
        for (map, n) in se.iter_mut().zip(counts) {
            push(map, r.run, Some(n as f64));
        }
        out.units.scored += r.units.scored;
        out.units.failed += r.units.failed;
        out.units.skipped += r.units.skipped;
        if rec.extraction_suspect() && !out.suspect_parses.contains(&r.task_id) {
            out.suspect_parses.push(r.task_id.clone());
        }
        let u = &rec.usage;
        out.usage.calls += u.calls;
        out.usage.cache_hits += u.cache_hits;
        out.usage.failed_calls += u.failed_calls;
        out.usage.prompt_tokens += u.prompt_tokens;
        out.usage.completion_tokens += u.completion_tokens;
        out.usage.cached_tokens += u.cached_tokens;
        if let Some(c) = u.cost_usd {
            *out.usage.cost_usd.get_or_insert(0.0) += c;
        }
    }
    out.suspect_parses.sort();
    out.tasks = tasks.len();
    out.runs = runs.len();
    out.ta = Stat::over_runs(&ta);
    out.va = Stat::over_runs(&va);
    out.overall = Stat::over_runs(&overall);
    out.aec = Stat::over_runs(&aec);
    let reference_levels = ReferenceLevels::of(records);
    if let Some(way) = &reference_levels {
        // `tvir eval --aggregates present` (implied by `--protocol reference`): the
        // reference's summary computes a system's TA, VA and Overall from its
        // per-metric means (the metrics it has), not from report-level aggregates.
        let [t, v, o] = way.levels(&metrics);
        (out.ta, out.va, out.overall) = (t, v, o);
        out.levels_from = Some(way.describe());
    }
    if out.reports > 0 && out.text_only_reports == out.reports && reference_levels.is_none() {
        // METRICS.md section 5: a system that produced no visual at all is not
        // evaluated on VA and Overall (left blank in the paper's tables). The
        // reference's summary code instead averages the visual metrics' zeros
        // (VA 0, Overall TA/2): records made with `--aggregates present` keep that.
        let why = format!(
            "no figure in any of its {} reports (a text-only system; left blank as in the paper)",
            out.reports
        );
        for level in ["va", "overall"] {
            out.not_evaluated.insert(level.to_string(), why.clone());
        }
        out.va = Stat {
            mean: None,
            std: None,
            ..out.va
        };
        out.overall = Stat {
            mean: None,
            std: None,
            ..out.overall
        };
    }
    // `--rounding reference`: the reference's summary rounds each metric's system
    // mean to 4 decimals too, not only the levels, as numpy rounds (ties to even
    // after scaling, not Python's rounding of the decimal value).
    let round_means = ReferenceLevels::all_say(records, "rounding", "reference");
    out.metrics = metrics
        .iter()
        .map(|(k, v)| {
            let mut s = Stat::over_runs(v);
            if round_means {
                s.mean = s.mean.map(round4_numpy);
            }
            (k.clone(), s)
        })
        .collect();
    let [t, c, m, total] = se;
    out.structural_errors = StructuralStats {
        traceability: Stat::over_runs(&t),
        consistency: Stat::over_runs(&c),
        completeness: Stat::over_runs(&m),
        total: Stat::over_runs(&total),
    };
    out
}

/// How a system's TA, VA and Overall are computed when its records were made with
/// `--aggregates present` (the reference's summary): per run, the mean over the
/// reports of each metric, then TA = the mean of the text metric means present, VA
/// of the visual ones, Overall of all ten; with `--rounding reference` each level
/// is rounded to 4 decimals (computed from the unrounded metric means, as the
/// reference does).
struct ReferenceLevels {
    round: bool,
}

impl ReferenceLevels {
    /// Some when every record says `aggregates=present` in its protocol.
    fn of(records: &[&LoadedRecord]) -> Option<Self> {
        Self::all_say(records, "aggregates", "present").then(|| Self {
            round: Self::all_say(records, "rounding", "reference"),
        })
    }

    /// Whether every record's protocol sets `key` to `value`.
    fn all_say(records: &[&LoadedRecord], key: &str, value: &str) -> bool {
        let setting = |r: &LoadedRecord| {
            r.record
                .protocol
                .as_ref()
                .and_then(|p| p.settings.get(key).cloned())
        };
        !records.is_empty() && records.iter().all(|r| setting(r).as_deref() == Some(value))
    }

    fn levels(&self, metrics: &BTreeMap<String, BTreeMap<u32, Vec<f64>>>) -> [Stat; 3] {
        let runs: BTreeSet<u32> = metrics.values().flat_map(|m| m.keys().copied()).collect();
        let mut levels: [BTreeMap<u32, Vec<f64>>; 3] = Default::default();
        let all: Vec<&str> = TA_METRICS
            .iter()
            .chain(VA_METRICS.iter())
            .copied()
            .collect();
        for run in runs {
            let mean_of = |names: &[&str]| {
                let means: Vec<f64> = names
                    .iter()
                    .filter_map(|n| metrics.get(*n).and_then(|m| m.get(&run)))
                    .filter(|v| !v.is_empty())
                    .map(|v| v.iter().sum::<f64>() / v.len() as f64)
                    .collect();
                (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64)
            };
            for (level, names) in levels
                .iter_mut()
                .zip([&TA_METRICS[..], &VA_METRICS[..], &all])
            {
                let v = mean_of(names).map(|x| if self.round { round4_numpy(x) } else { x });
                push(level, run, v);
            }
        }
        levels.map(|l| {
            let mut s = Stat::over_runs(&l);
            if self.round {
                s.mean = s.mean.map(round4_numpy);
            }
            s
        })
    }

    fn describe(&self) -> String {
        format!(
            "per-metric means (the reference's summary: TA, VA and Overall from each metric's mean over the reports{})",
            if self.round { ", rounded to 4 decimals" } else { "" }
        )
    }
}

fn by_system<'a>(records: &[&'a LoadedRecord]) -> BTreeMap<&'a str, Vec<&'a LoadedRecord>> {
    let mut m: BTreeMap<&str, Vec<&LoadedRecord>> = BTreeMap::new();
    for r in records {
        m.entry(r.system.as_str()).or_default().push(r);
    }
    m
}

fn rank_key(s: &SystemStats) -> (f64, f64) {
    (
        s.overall.mean.unwrap_or(f64::NEG_INFINITY),
        s.ta.mean.unwrap_or(f64::NEG_INFINITY),
    )
}

/// One line per system with a level not evaluated: `SYSTEM: VA, Overall not
/// evaluated: WHY` (what every output format shows beside the leaderboard).
pub fn not_evaluated_lines(j: &JudgeSummary) -> Vec<String> {
    let mut lines = Vec::new();
    for s in &j.systems {
        let mut by_reason: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for level in ["ta", "va", "overall"] {
            if let Some(why) = s.not_evaluated.get(level) {
                by_reason.entry(why).or_default().push(match level {
                    "ta" => "TA",
                    "va" => "VA",
                    _ => "Overall",
                });
            }
        }
        for (why, levels) in by_reason {
            lines.push(format!(
                "{}: {} not evaluated: {why}",
                s.system,
                levels.join(", ")
            ));
        }
    }
    lines
}

/// Leaderboard order: best Overall first, then TA, then name.
pub fn sort_leaderboard(v: &mut [SystemStats]) {
    v.sort_by(|a, b| {
        let (ka, kb) = (rank_key(a), rank_key(b));
        kb.0.total_cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(a.system.cmp(&b.system))
    });
}

/// The breakdown dimensions.
pub const DIMENSIONS: [&str; 3] = ["language", "complexity", "domain"];

/// A record's group for a dimension: the task file first, then the record, then
/// (language only) detection from the task's query text.
pub fn group_of(
    dimension: &str,
    r: &LoadedRecord,
    tasks: &BTreeMap<String, TaskInfo>,
) -> Option<String> {
    let task = tasks.get(&r.task_id);
    match dimension {
        "language" => task
            .and_then(|t| t.language.clone())
            .or_else(|| r.record.language.as_deref().and_then(normalize_language))
            .or_else(|| {
                task.and_then(|t| detect_language_fallback(&t.query))
                    .map(String::from)
            }),
        "complexity" => task
            .and_then(|t| t.complexity.clone())
            .or_else(|| {
                r.record
                    .complexity
                    .as_ref()
                    .map(|c| c.trim().to_lowercase())
            })
            .filter(|c| !c.is_empty()),
        "domain" => task
            .and_then(|t| t.domain.clone())
            .or_else(|| r.record.domain.as_ref().map(|d| d.trim().to_string()))
            .filter(|d| !d.is_empty()),
        _ => None,
    }
}

fn group_order(dimension: &str, g: &str) -> (usize, String) {
    let rank = match (dimension, g) {
        ("language", "zh") | ("complexity", "low") => 0,
        ("language", "en") | ("complexity", "medium") => 1,
        ("complexity", "high") => 2,
        (_, "unknown") => 99,
        _ => 50,
    };
    (rank, g.to_string())
}

fn breakdown(
    dimension: &str,
    records: &[&LoadedRecord],
    tasks: &BTreeMap<String, TaskInfo>,
) -> Option<Breakdown> {
    let mut groups: BTreeMap<String, Vec<&LoadedRecord>> = BTreeMap::new();
    let mut known = false;
    for r in records {
        let g = group_of(dimension, r, tasks);
        known |= g.is_some();
        groups
            .entry(g.unwrap_or_else(|| "unknown".into()))
            .or_default()
            .push(r);
    }
    if !known {
        return None;
    }
    let mut groups: Vec<BreakdownGroup> = groups
        .into_iter()
        .map(|(group, recs)| {
            let tasks: BTreeSet<&str> = recs.iter().map(|r| r.task_id.as_str()).collect();
            let mut systems: Vec<SystemStats> = by_system(&recs)
                .into_iter()
                .map(|(s, rs)| system_stats(s, &rs))
                .collect();
            sort_leaderboard(&mut systems);
            BreakdownGroup {
                group,
                tasks: tasks.len(),
                systems,
            }
        })
        .collect();
    groups.sort_by_key(|g| group_order(dimension, &g.group));
    Some(Breakdown {
        dimension: dimension.into(),
        groups,
    })
}

/// The levels of a leaderboard: Overall, TA, VA, then its metrics in paper order.
pub fn levels_of(j: &JudgeSummary) -> Vec<String> {
    let mut levels: Vec<String> = ["overall", "ta", "va"].map(String::from).into();
    levels.extend(metric_columns(j));
    levels
}

/// A system's mean at `level` (a name from [`levels_of`]).
pub fn level_mean(s: &SystemStats, level: &str) -> Option<f64> {
    match level {
        "overall" => s.overall.mean,
        "ta" => s.ta.mean,
        "va" => s.va.mean,
        m => s.metrics.get(m).and_then(|st| st.mean),
    }
}

/// Domain difficulty for one level: each system ranks the domains it has a score
/// in (1 = its lowest score, ties share the average rank); a domain's difficulty
/// is its mean rank over systems. Hardest first.
pub fn domain_difficulty(domains: &Breakdown, level: &str) -> DomainDifficulty {
    // system -> [(domain, score)]
    let mut per_system: BTreeMap<&str, Vec<(&str, f64)>> = BTreeMap::new();
    for g in domains.groups.iter().filter(|g| g.group != "unknown") {
        for s in &g.systems {
            if let Some(v) = level_mean(s, level) {
                per_system.entry(&s.system).or_default().push((&g.group, v));
            }
        }
    }
    let mut acc: BTreeMap<&str, (f64, f64, usize)> = BTreeMap::new();
    let mut notes = Vec::new();
    let n_domains = domains
        .groups
        .iter()
        .filter(|g| g.group != "unknown")
        .count();
    for (system, scores) in &per_system {
        if scores.len() < n_domains {
            notes.push(format!(
                "{system} has {level} scores in {} of {n_domains} domains: ranked among those",
                scores.len()
            ));
        }
        let values: Vec<f64> = scores.iter().map(|(_, v)| *v).collect();
        for ((d, v), r) in scores.iter().zip(average_ranks(&values)) {
            let e = acc.entry(d).or_insert((0.0, 0.0, 0));
            e.0 += r;
            e.1 += v;
            e.2 += 1;
        }
    }
    let mut ranks: Vec<DomainRank> = acc
        .into_iter()
        .map(|(d, (r, v, n))| DomainRank {
            domain: d.to_string(),
            average_rank: r / n as f64,
            systems: n,
            mean_score: v / n as f64,
        })
        .collect();
    ranks.sort_by(|a, b| {
        a.average_rank
            .total_cmp(&b.average_rank)
            .then(a.mean_score.total_cmp(&b.mean_score))
            .then(a.domain.cmp(&b.domain))
    });
    DomainDifficulty {
        level: level.into(),
        domains: ranks,
        notes,
    }
}

/// Summarise loaded records. `tasks` may be empty (no task file).
pub fn summarize(
    root: &str,
    records: &[LoadedRecord],
    issues: &[LoadIssue],
    tasks: &BTreeMap<String, TaskInfo>,
    tasks_file: Option<&str>,
) -> Summary {
    let mut by_judge: BTreeMap<&str, Vec<&LoadedRecord>> = BTreeMap::new();
    for r in records {
        by_judge.entry(r.judge_model.as_str()).or_default().push(r);
    }
    let mut notes = Vec::new();
    if !tasks.is_empty() {
        let unknown: BTreeSet<&str> = records
            .iter()
            .map(|r| r.task_id.as_str())
            .filter(|t| !tasks.contains_key(*t))
            .collect();
        if !unknown.is_empty() {
            notes.push(format!(
                "{} task id(s) in the output are not in the task file (e.g. {})",
                unknown.len(),
                unknown.iter().next().unwrap_or(&"")
            ));
        }
    }
    let judges = by_judge
        .into_iter()
        .map(|(judge, recs)| {
            let runs: BTreeSet<u32> = recs.iter().map(|r| r.run).collect();
            let mut systems: Vec<SystemStats> = by_system(&recs)
                .into_iter()
                .map(|(s, rs)| system_stats(s, &rs))
                .collect();
            sort_leaderboard(&mut systems);
            let breakdowns: Vec<Breakdown> = DIMENSIONS
                .iter()
                .filter_map(|d| breakdown(d, &recs, tasks))
                .collect();
            let domain_difficulty = breakdowns
                .iter()
                .find(|b| b.dimension == "domain")
                .map(|d| {
                    ["overall", "ta", "va"]
                        .iter()
                        .map(|l| domain_difficulty(d, l))
                        .filter(|dd| !dd.domains.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            JudgeSummary {
                judge_model: judge.to_string(),
                runs: runs.into_iter().collect(),
                systems,
                breakdowns,
                domain_difficulty,
                significance: None,
            }
        })
        .collect();
    Summary {
        root: root.to_string(),
        tasks_file: tasks_file.map(String::from),
        judges,
        load_issues: issues.to_vec(),
        notes,
        agreements: Vec::new(),
    }
}

/// Metric names present in any system of a judge, in paper order (unknown last).
pub fn metric_columns(j: &JudgeSummary) -> Vec<String> {
    let present: BTreeSet<&String> = j.systems.iter().flat_map(|s| s.metrics.keys()).collect();
    let mut cols: Vec<String> = METRIC_NAMES
        .iter()
        .filter(|m| present.iter().any(|p| p == m))
        .map(|m| m.to_string())
        .collect();
    for p in present {
        if !cols.contains(p) {
            cols.push(p.clone());
        }
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_over_runs_mean_and_sample_std() {
        let mut m = BTreeMap::new();
        m.insert(1, vec![0.2, 0.4]); // 0.3
        m.insert(2, vec![0.5]); // 0.5
        m.insert(3, vec![0.7, 0.7, 0.7]); // 0.7
        let s = Stat::over_runs(&m);
        assert!((s.mean.unwrap() - 0.5).abs() < 1e-15);
        // deviations -.2, 0, .2 -> ss .08 / 2 = .04 -> .2
        assert!((s.std.unwrap() - 0.2).abs() < 1e-15);
        assert_eq!((s.runs, s.values), (3, 6));
        let one = Stat::over_runs(&[(1, vec![1.0])].into_iter().collect());
        assert_eq!((one.mean, one.std), (Some(1.0), None));
        let none = Stat::over_runs(&[(1, vec![])].into_iter().collect());
        assert_eq!(none.mean, None);
    }
}
