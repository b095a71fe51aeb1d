//! Intervals, paired tests and rank groups on the leaderboards of `tvir summarize`.
//!
//! For each judge model's leaderboard and each level (Overall, TA, VA, then every
//! metric in paper order) the per-task scores of every system are gathered from the
//! records on the 0-100 scale (one score per judge run; the significance module
//! averages a task's runs) and analysed by [`crate::significance::analyze_level`].
//! The result sits beside the leaderboard as `JudgeSummary::significance`; this file
//! also renders it for the text formats and the CSV.

use std::fmt::Write as _;

use indexmap::IndexMap;
use rayon::prelude::*;

use super::load::LoadedRecord;
use super::render::{level_label, TextTable};
use super::summary::{levels_of, JudgeSummary, Summary};
use crate::significance::{
    analyze_level, LevelReport, LevelScores, Options, PairComparison, SignificanceError,
};

/// The analyses of one leaderboard, keyed by level (`overall`, `ta`, `va`, then
/// metric file names) in that order; serialised as a JSON object in the same order.
pub type LevelReports = IndexMap<String, LevelReport>;

fn level_value(r: &LoadedRecord, level: &str) -> Option<f64> {
    let rec = &r.record;
    match level {
        "overall" => rec.overall,
        "ta" => rec.ta,
        "va" => rec.va,
        metric => rec.metrics.get(metric).and_then(|m| m.score),
    }
}

/// Per-task scores (0-100, one per run) of every system at `level`, from the records
/// of one judge model. A null or non-finite score is left out, as in the means.
pub fn level_scores<'a>(
    records: impl IntoIterator<Item = &'a LoadedRecord>,
    level: &str,
) -> LevelScores {
    let mut scores = LevelScores::new();
    for r in records {
        if let Some(v) = level_value(r, level).filter(|v| v.is_finite()) {
            scores.push(r.system.as_str(), r.task_id.as_str(), 100.0 * v);
        }
    }
    scores
}

/// The analysis of every level of one leaderboard that has a score at all. Levels
/// are independent (each draws from its own seeded streams), so they are spread over
/// the available cores with rayon, as are the systems and pairs within a level; the
/// result does not depend on how many cores there are.
pub fn leaderboard_significance(
    records: &[&LoadedRecord],
    levels: &[String],
    options: &Options,
) -> Result<LevelReports, SignificanceError> {
    let jobs: Vec<(String, LevelScores)> = levels
        .iter()
        .map(|level| (level.clone(), level_scores(records.iter().copied(), level)))
        .filter(|(_, scores)| scores.systems().next().is_some())
        .collect();
    let reports: Vec<Result<LevelReport, SignificanceError>> = jobs
        .par_iter()
        .map(|(_, scores)| analyze_level(scores, options))
        .collect();
    let mut out = LevelReports::with_capacity(jobs.len());
    for ((level, _), report) in jobs.into_iter().zip(reports) {
        out.insert(level, report?);
    }
    Ok(out)
}

/// Fills `significance` of every judge's leaderboard of `summary` from `records`
/// (the records the summary was built from).
pub fn add_significance(
    summary: &mut Summary,
    records: &[LoadedRecord],
    options: &Options,
) -> Result<(), SignificanceError> {
    for j in &mut summary.judges {
        let mine: Vec<&LoadedRecord> = records
            .iter()
            .filter(|r| r.judge_model == j.judge_model)
            .collect();
        let levels = levels_of(j);
        let mut reports = leaderboard_significance(&mine, &levels, options)?;
        // A level a system is not evaluated on (a text-only system's VA and
        // Overall) gets no interval: it is analysed without that system.
        for level in ["overall", "va", "ta"] {
            let blank: Vec<&str> = j
                .systems
                .iter()
                .filter(|s| s.not_evaluated.contains_key(level))
                .map(|s| s.system.as_str())
                .collect();
            if blank.is_empty() {
                continue;
            }
            let rest: Vec<&LoadedRecord> = mine
                .iter()
                .copied()
                .filter(|r| !blank.contains(&r.system.as_str()))
                .collect();
            let again = leaderboard_significance(&rest, &[level.to_string()], options)?;
            match again.get(level) {
                Some(r) => {
                    reports.insert(level.to_string(), r.clone());
                }
                None => {
                    reports.shift_remove(level);
                }
            }
        }
        j.significance = Some(reports);
    }
    Ok(())
}

/// `[70.12, 79.88]`.
pub fn fmt_interval(ci: [f64; 2]) -> String {
    format!("[{:.2}, {:.2}]", ci[0], ci[1])
}

/// A system's interval over `tasks` tasks: [`fmt_interval`], or `n/a (1 task)` when
/// fewer than two tasks leave nothing to resample (the bootstrap would give a
/// zero-width `[x, x]`).
pub fn fmt_system_interval(ci: [f64; 2], tasks: usize) -> String {
    if tasks < 2 {
        format!("n/a ({tasks} task{})", if tasks == 1 { "" } else { "s" })
    } else {
        fmt_interval(ci)
    }
}

/// When every pair of a level is untestable: one sentence saying so with the
/// reasons (each once), instead of one line per pair.
pub fn all_untestable(report: &LevelReport) -> Option<String> {
    if report.pairs.is_empty() || report.pairs.iter().any(|p| p.testable) {
        return None;
    }
    let mut reasons: Vec<&str> = report
        .pairs
        .iter()
        .map(|p| p.reason.as_deref().unwrap_or("no test"))
        .collect();
    reasons.sort_unstable();
    reasons.dedup();
    Some(format!(
        "no pair of systems can be tested ({} pair{}): {}",
        report.pairs.len(),
        if report.pairs.len() == 1 { "" } else { "s" },
        reasons.join("; ")
    ))
}

/// A p-value: three decimals, or two significant digits below 0.001.
pub fn fmt_p(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

/// What a pair's test says, in words.
pub fn verdict(pair: &PairComparison, alpha: f64) -> String {
    if !pair.testable {
        format!(
            "not testable: {}",
            pair.reason.as_deref().unwrap_or("no test")
        )
    } else if pair.differs(alpha) {
        format!("{} ahead", pair.a)
    } else {
        "not significant".into()
    }
}

/// `(interval as shown, group)` of `system` at `level`, when analysed.
pub fn system_interval(j: &JudgeSummary, level: &str, system: &str) -> Option<(String, usize)> {
    let report = j.significance.as_ref()?.get(level)?;
    report
        .systems
        .iter()
        .find(|s| s.system == system)
        .map(|s| (fmt_system_interval(s.ci, s.tasks), s.group))
}

/// How the analysis was made, in one sentence (the same for every level).
pub fn method_sentence(report: &LevelReport) -> String {
    format!(
        "{:.0} % percentile-bootstrap intervals over tasks ({} resamples, seed {}); paired sign-flip tests on shared tasks (exact up to 20 tasks, else {} random sign patterns), Holm-adjusted over the pairs of a level; groups hold systems that no test separates at {} (greedy from the top: a system joins the group above while it differs from none of its members). Scores 0-100; a task's score is its mean over judge runs.",
        100.0 * report.confidence,
        report.resamples,
        report.seed,
        report.permutations,
        report.alpha,
    )
}

/// One row per (level, system): mean, interval, group.
pub fn interval_table(j: &JudgeSummary) -> Option<TextTable> {
    let sig = j.significance.as_ref().filter(|s| !s.is_empty())?;
    let confidence = sig[0].confidence;
    let mut rows = Vec::new();
    for (level, report) in sig.iter() {
        for s in &report.systems {
            rows.push(vec![
                level_label(level),
                s.system.clone(),
                s.group.to_string(),
                s.tasks.to_string(),
                format!("{:.2}", s.mean),
                fmt_system_interval(s.ci, s.tasks),
            ]);
        }
    }
    Some(TextTable {
        title: format!(
            "Intervals and rank groups (judge {}, 0-100, {:.0} % bootstrap over tasks)",
            j.judge_model,
            100.0 * confidence
        ),
        headers: ["Level", "System", "Group", "Tasks", "Mean", "95% CI"]
            .map(String::from)
            .into(),
        rows,
    })
}

/// The pairs of Overall, TA and VA (every level's pairs are in the JSON and HTML).
pub fn pairs_table(j: &JudgeSummary) -> Option<TextTable> {
    let sig = j.significance.as_ref()?;
    let mut rows = Vec::new();
    for (level, report) in sig
        .iter()
        .filter(|(l, _)| ["overall", "ta", "va"].contains(&l.as_str()))
    {
        if let Some(why) = all_untestable(report) {
            rows.push(vec![
                level_label(level),
                "every pair".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                why,
            ]);
            continue;
        }
        for p in &report.pairs {
            rows.push(vec![
                level_label(level),
                format!("{} vs {}", p.a, p.b),
                p.tasks.to_string(),
                p.mean_diff
                    .map(|d| format!("{d:+.2}"))
                    .unwrap_or_else(|| "-".into()),
                p.ci.map(fmt_interval).unwrap_or_else(|| "-".into()),
                p.p.map(fmt_p).unwrap_or_else(|| "-".into()),
                p.p_holm.map(fmt_p).unwrap_or_else(|| "-".into()),
                verdict(p, report.alpha),
            ]);
        }
    }
    (!rows.is_empty()).then(|| TextTable {
        title: format!(
            "Pairwise differences (judge {}, paired sign-flip test, Holm over the pairs of a level)",
            j.judge_model
        ),
        headers: [
            "Level",
            "Pair",
            "Tasks",
            "Diff",
            "95% CI",
            "p",
            "p (Holm)",
            "Verdict",
        ]
        .map(String::from)
        .into(),
        rows,
    })
}

/// The method sentence and, per level with repeated judge runs, the judge-noise
/// sentence; bulleted for Markdown.
pub fn notes_text(j: &JudgeSummary, md: bool) -> String {
    let Some(sig) = j.significance.as_ref().filter(|s| !s.is_empty()) else {
        return String::new();
    };
    let bullet = if md { "- " } else { "  " };
    let mut out = format!(
        "Significance (judge {}): {}\n",
        j.judge_model,
        method_sentence(&sig[0])
    );
    let noisy: Vec<_> = sig
        .iter()
        .filter_map(|(l, r)| r.judge_noise.as_ref().map(|n| (l, n)))
        .collect();
    if !noisy.is_empty() {
        if md {
            out.push('\n');
        }
        let _ = writeln!(out, "Judge noise against task choice, per level:");
        if md {
            out.push('\n');
        }
        for (level, noise) in noisy {
            let _ = writeln!(
                out,
                "{bullet}{}: {}",
                level_label(level),
                noise.interpretation
            );
        }
    }
    out.push('\n');
    out
}

/// CSV columns added for the significance: `{level}_ci_lo`, `{level}_ci_hi`,
/// `{level}_group` for every level analysed in any leaderboard, and
/// `{level}_judge_share` (the system's share of judge noise in the variance of its
/// mean) when some level had repeated runs.
pub struct CsvColumns {
    levels: Vec<String>,
    noise: bool,
}

impl CsvColumns {
    pub fn new(s: &Summary) -> Self {
        let mut levels: Vec<String> = Vec::new();
        let mut noise = false;
        for sig in s.judges.iter().filter_map(|j| j.significance.as_ref()) {
            for (level, report) in sig.iter() {
                if !levels.iter().any(|l| l == level) {
                    levels.push(level.to_string());
                }
                noise |= report.judge_noise.is_some();
            }
        }
        Self { levels, noise }
    }

    pub fn header(&self) -> Vec<String> {
        let mut out = Vec::new();
        for l in &self.levels {
            out.push(format!("{l}_ci_lo"));
            out.push(format!("{l}_ci_hi"));
            out.push(format!("{l}_group"));
            if self.noise {
                out.push(format!("{l}_judge_share"));
            }
        }
        out
    }

    /// The cells of `system` on `j`'s leaderboard; `None` (empty cells) for a
    /// breakdown row.
    pub fn cells(&self, j: &JudgeSummary, system: Option<&str>) -> Vec<String> {
        let mut out = Vec::new();
        for l in &self.levels {
            let report = j.significance.as_ref().and_then(|s| s.get(l));
            let summary = system
                .and_then(|name| report.and_then(|r| r.systems.iter().find(|s| s.system == name)));
            match summary {
                Some(s) => {
                    out.push(s.ci[0].to_string());
                    out.push(s.ci[1].to_string());
                    out.push(s.group.to_string());
                }
                None => out.extend(std::iter::repeat_n(String::new(), 3)),
            }
            if self.noise {
                let share = system.and_then(|name| {
                    report
                        .and_then(|r| r.judge_noise.as_ref())
                        .and_then(|n| n.systems.iter().find(|s| s.system == name))
                        .map(|s| s.judge_share.to_string())
                });
                out.push(share.unwrap_or_default());
            }
        }
        out
    }
}
