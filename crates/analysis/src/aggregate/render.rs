//! Text renderings of a [`Summary`]: terminal table, Markdown and CSV. Scores are
//! printed on the 0-100 scale; AEC and structural errors are counts per report.

use std::fmt::Write as _;

use super::summary::{metric_columns, JudgeSummary, Stat, Summary, SystemStats};
use super::uncertainty;

/// Display name of a level: Overall, TA, VA, or a metric's abbreviation.
pub fn level_label(level: &str) -> String {
    match level {
        "overall" => "Overall".into(),
        "ta" => "TA".into(),
        "va" => "VA".into(),
        metric => metric_abbrev(metric),
    }
}

/// Short column label of a metric file name.
pub fn metric_abbrev(name: &str) -> String {
    match name {
        "citation_support" => "CS",
        "instruction_alignment" => "IA",
        "writing_quality" => "WQ",
        "analytical_depth_breadth" => "ADB",
        "factual_logical_consistency" => "FLC",
        "multimodal_composition" => "MC",
        "chart_quality" => "CQ",
        "image_quality" => "IQ",
        "figure_quality" => "FQ",
        "figure_caption_quality" => "FCQ",
        "figure_context_integration" => "FCI",
        "chart_source_consistency" => "CSC",
        other => return other.to_string(),
    }
    .to_string()
}

/// A score on the 0-100 scale with its spread over runs: `72.31 ±1.20`, or `-`.
pub fn fmt_score(s: &Stat) -> String {
    fmt_stat(s, 100.0)
}

/// A count per report (AEC, structural errors) with its spread over runs.
pub fn fmt_count(s: &Stat) -> String {
    fmt_stat(s, 1.0)
}

fn fmt_stat(s: &Stat, scale: f64) -> String {
    match (s.mean, s.std) {
        (None, _) => "-".into(),
        (Some(m), None) => format!("{:.2}", m * scale),
        (Some(m), Some(sd)) => format!("{:.2} ±{:.2}", m * scale, sd * scale),
    }
}

/// A plain table that renders as padded text or Markdown.
pub struct TextTable {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl TextTable {
    pub fn terminal(&self) -> String {
        let width = |s: &str| s.chars().count();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (i, c) in row.iter().enumerate() {
                if i < widths.len() {
                    widths[i] = widths[i].max(width(c));
                }
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = widths[i].saturating_sub(width(c));
                if i == 0 || i == 1 {
                    // labels left, numbers right
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                }
                if i + 1 < cells.len() {
                    s.push_str("  ");
                }
            }
            s.trim_end().to_string()
        };
        let mut out = format!("{}\n", self.title);
        out.push_str(&line(&self.headers));
        out.push('\n');
        let total: usize = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
        out.push_str(&"-".repeat(total));
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }

    pub fn markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let mut out = format!("### {}\n\n", self.title);
        let _ = writeln!(
            out,
            "| {} |",
            self.headers
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(
            out,
            "|{}",
            self.headers
                .iter()
                .enumerate()
                .map(|(i, _)| if i < 2 { " --- |" } else { " ---: |" })
                .collect::<String>()
        );
        for row in &self.rows {
            let _ = writeln!(
                out,
                "| {} |",
                row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            );
        }
        out
    }
}

fn runs_label(j: &JudgeSummary) -> String {
    match j.runs.len() {
        1 => "1 run".into(),
        n => format!("{n} runs, mean ±sample std over runs"),
    }
}

/// Leaderboard: rank, system, coverage, Overall (with its interval over tasks and
/// rank group when the significance was computed), TA, VA, AEC, structural errors.
pub fn leaderboard_table(j: &JudgeSummary) -> TextTable {
    let mut t = plain_leaderboard_table(j);
    if j.significance.is_some() {
        t.headers
            .splice(4..4, ["Overall 95% CI", "Group"].map(String::from));
        for (row, s) in t.rows.iter_mut().zip(&j.systems) {
            let (ci, group) = match uncertainty::system_interval(j, "overall", &s.system) {
                Some((ci, group)) => (ci, group.to_string()),
                None => ("-".into(), "-".into()),
            };
            row.splice(4..4, [ci, group]);
        }
    }
    t
}

fn plain_leaderboard_table(j: &JudgeSummary) -> TextTable {
    let headers = [
        "#",
        "System",
        "Tasks",
        "Overall",
        "TA",
        "VA",
        "AEC",
        "Trace.",
        "Consist.",
        "Compl.",
        "Text-only",
        "Failed units",
        "Suspect parses",
    ];
    TextTable {
        title: format!("Leaderboard (judge {}, {})", j.judge_model, runs_label(j)),
        headers: headers.iter().map(|s| s.to_string()).collect(),
        rows: j
            .systems
            .iter()
            .enumerate()
            .map(|(i, s)| {
                vec![
                    (i + 1).to_string(),
                    s.system.clone(),
                    s.tasks.to_string(),
                    level_cell(s, "overall", &s.overall),
                    level_cell(s, "ta", &s.ta),
                    level_cell(s, "va", &s.va),
                    fmt_count(&s.aec),
                    fmt_count(&s.structural_errors.traceability),
                    fmt_count(&s.structural_errors.consistency),
                    fmt_count(&s.structural_errors.completeness),
                    s.text_only_reports.to_string(),
                    s.units.failed.to_string(),
                    s.suspect_parses.len().to_string(),
                ]
            })
            .collect(),
    }
}

/// A leaderboard cell: the score, or `not evaluated` for a level the system is
/// not evaluated on (the reason is in the lines under the table).
fn level_cell(s: &SystemStats, level: &str, st: &Stat) -> String {
    if s.not_evaluated.contains_key(level) {
        "not evaluated".into()
    } else {
        fmt_score(st)
    }
}

/// The lines under a leaderboard naming each level not evaluated and why.
pub fn not_evaluated_text(j: &JudgeSummary, md: bool) -> String {
    let lines = super::summary::not_evaluated_lines(j);
    if lines.is_empty() {
        return String::new();
    }
    let bullet = if md { "- " } else { "  " };
    let mut out = String::from("Not evaluated:\n");
    for l in lines {
        let _ = writeln!(out, "{bullet}{l}");
    }
    out.push('\n');
    out
}

/// Per-metric means, one column per metric present.
pub fn metrics_table(j: &JudgeSummary) -> TextTable {
    let cols = metric_columns(j);
    let mut headers = vec!["#".to_string(), "System".to_string()];
    headers.extend(cols.iter().map(|c| metric_abbrev(c)));
    TextTable {
        title: format!("Metrics (judge {}, 0-100)", j.judge_model),
        headers,
        rows: j
            .systems
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut row = vec![(i + 1).to_string(), s.system.clone()];
                row.extend(cols.iter().map(|c| {
                    s.metrics
                        .get(c)
                        .map(fmt_score)
                        .unwrap_or_else(|| "-".into())
                }));
                row
            })
            .collect(),
    }
}

/// One table per breakdown dimension: rows (group, system).
pub fn breakdown_tables(j: &JudgeSummary) -> Vec<TextTable> {
    j.breakdowns
        .iter()
        .map(|b| TextTable {
            title: format!("By {} (judge {})", b.dimension, j.judge_model),
            headers: ["Group", "System", "Tasks", "Overall", "TA", "VA"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows: b
                .groups
                .iter()
                .flat_map(|g| {
                    g.systems.iter().map(move |s| {
                        vec![
                            g.group.clone(),
                            s.system.clone(),
                            s.tasks.to_string(),
                            fmt_score(&s.overall),
                            fmt_score(&s.ta),
                            fmt_score(&s.va),
                        ]
                    })
                })
                .collect(),
        })
        .collect()
}

/// Domain difficulty tables (hardest first).
pub fn difficulty_tables(j: &JudgeSummary) -> Vec<TextTable> {
    j.domain_difficulty
        .iter()
        .map(|d| TextTable {
            title: format!(
                "Domain difficulty by {} (average rank across systems, 1 = a system's weakest domain; hardest first)",
                d.level
            ),
            headers: ["Domain", "Avg rank", "Systems", "Mean score"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows: d
                .domains
                .iter()
                .map(|r| {
                    vec![
                        r.domain.clone(),
                        format!("{:.2}", r.average_rank),
                        r.systems.to_string(),
                        format!("{:.2}", r.mean_score * 100.0),
                    ]
                })
                .collect(),
        })
        .collect()
}

/// Which reports of each system the extraction self-check called suspect (None when
/// no report was).
pub fn suspect_table(j: &JudgeSummary) -> Option<TextTable> {
    let rows: Vec<Vec<String>> = j
        .systems
        .iter()
        .filter(|s| !s.suspect_parses.is_empty())
        .map(|s| {
            vec![
                s.system.clone(),
                s.suspect_parses.len().to_string(),
                s.suspect_parses.join(", "),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| TextTable {
        title: format!(
            "Suspect parses (extraction self-check, judge {})",
            j.judge_model
        ),
        headers: ["System", "Reports", "Tasks"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows,
    })
}

fn all_tables(j: &JudgeSummary) -> Vec<TextTable> {
    let mut v = vec![leaderboard_table(j), metrics_table(j)];
    v.extend(uncertainty::interval_table(j));
    v.extend(uncertainty::pairs_table(j));
    v.extend(suspect_table(j));
    v.extend(breakdown_tables(j));
    v.extend(difficulty_tables(j));
    v
}

fn trailer(s: &Summary, md: bool) -> String {
    let mut out = String::new();
    let bullet = if md { "- " } else { "  " };
    if !s.load_issues.is_empty() {
        let _ = writeln!(out, "Unreadable records ({}):", s.load_issues.len());
        for i in &s.load_issues {
            let _ = writeln!(out, "{bullet}{}: {}", i.path, i.message);
        }
        out.push('\n');
    }
    if !s.notes.is_empty() {
        let _ = writeln!(out, "Notes:");
        for n in &s.notes {
            let _ = writeln!(out, "{bullet}{n}");
        }
    }
    out
}

/// Terminal rendering.
pub fn to_terminal(s: &Summary) -> String {
    let mut out = String::new();
    for j in &s.judges {
        for t in all_tables(j) {
            out.push_str(&t.terminal());
            out.push('\n');
        }
        out.push_str(&not_evaluated_text(j, false));
        out.push_str(&uncertainty::notes_text(j, false));
    }
    out.push_str(&trailer(s, false));
    out
}

/// Markdown rendering.
pub fn to_markdown(s: &Summary) -> String {
    let mut out = format!("# TVIR summary of `{}`\n\n", s.root);
    for j in &s.judges {
        for t in all_tables(j) {
            out.push_str(&t.markdown());
            out.push('\n');
        }
        out.push_str(&not_evaluated_text(j, true));
        out.push_str(&uncertainty::notes_text(j, true));
    }
    out.push_str(&trailer(s, true));
    out
}

fn csv_stat(row: &mut Vec<String>, s: &Stat, scale: f64) {
    let f = |v: Option<f64>| v.map(|x| format!("{}", x * scale)).unwrap_or_default();
    row.push(f(s.mean));
    row.push(f(s.std));
}

/// CSV: one row per (judge, scope, group, system); `scope` is `all` for the
/// leaderboard or a breakdown dimension. Scores 0-100; `_std` over runs. With the
/// significance computed, leaderboard rows also carry each level's interval over
/// tasks and rank group (`X_ci_lo`, `X_ci_hi`, `X_group`, and `X_judge_share` with
/// repeated runs; see [`uncertainty::CsvColumns`]).
pub fn to_csv(s: &Summary) -> String {
    let mut metric_cols: Vec<String> = Vec::new();
    for j in &s.judges {
        for c in metric_columns(j) {
            if !metric_cols.contains(&c) {
                metric_cols.push(c);
            }
        }
    }
    let mut header: Vec<String> = [
        "judge_model",
        "scope",
        "group",
        "system",
        "tasks",
        "reports",
        "runs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let stat_cols: Vec<String> = ["overall", "ta", "va", "aec"]
        .iter()
        .map(|s| s.to_string())
        .chain(
            ["traceability", "consistency", "completeness", "total"]
                .iter()
                .map(|s| format!("structural_{s}")),
        )
        .chain(metric_cols.iter().cloned())
        .collect();
    for c in &stat_cols {
        header.push(format!("{c}_mean"));
        header.push(format!("{c}_std"));
    }
    header.extend(
        [
            "scored_units",
            "failed_units",
            "skipped_units",
            "text_only_reports",
            "not_evaluated",
            "suspect_parses",
            "judge_calls",
            "cost_usd",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let intervals = uncertainty::CsvColumns::new(s);
    header.extend(intervals.header());
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(&header);
    let mut write = |j: &JudgeSummary, scope: &str, group: &str, st: &SystemStats| {
        let judge = j.judge_model.as_str();
        let mut row = vec![
            judge.to_string(),
            scope.to_string(),
            group.to_string(),
            st.system.clone(),
            st.tasks.to_string(),
            st.reports.to_string(),
            st.runs.to_string(),
        ];
        csv_stat(&mut row, &st.overall, 100.0);
        csv_stat(&mut row, &st.ta, 100.0);
        csv_stat(&mut row, &st.va, 100.0);
        csv_stat(&mut row, &st.aec, 1.0);
        let se = &st.structural_errors;
        for x in [
            &se.traceability,
            &se.consistency,
            &se.completeness,
            &se.total,
        ] {
            csv_stat(&mut row, x, 1.0);
        }
        for m in &metric_cols {
            csv_stat(
                &mut row,
                &st.metrics.get(m).cloned().unwrap_or_default(),
                100.0,
            );
        }
        row.push(st.units.scored.to_string());
        row.push(st.units.failed.to_string());
        row.push(st.units.skipped.to_string());
        row.push(st.text_only_reports.to_string());
        row.push(
            st.not_evaluated
                .iter()
                .map(|(level, why)| format!("{level}: {why}"))
                .collect::<Vec<_>>()
                .join("; "),
        );
        row.push(st.suspect_parses.len().to_string());
        row.push(st.usage.calls.to_string());
        row.push(st.usage.cost_usd.map(|c| c.to_string()).unwrap_or_default());
        let leaderboard_row = (scope == "all").then_some(st.system.as_str());
        row.extend(intervals.cells(j, leaderboard_row));
        let _ = w.write_record(&row);
    };
    for j in &s.judges {
        for st in &j.systems {
            write(j, "all", "", st);
        }
        for b in &j.breakdowns {
            for g in &b.groups {
                for st in &g.systems {
                    write(j, &b.dimension, &g.group, st);
                }
            }
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_stats() {
        let s = Stat {
            mean: Some(0.72314),
            std: Some(0.012),
            runs: 3,
            values: 9,
        };
        assert_eq!(fmt_score(&s), "72.31 ±1.20");
        assert_eq!(fmt_score(&Stat::default()), "-");
        assert_eq!(
            fmt_count(&Stat {
                mean: Some(3.5),
                std: None,
                runs: 1,
                values: 2
            }),
            "3.50"
        );
    }

    #[test]
    fn markdown_escapes_pipes() {
        let t = TextTable {
            title: "T".into(),
            headers: vec!["#".into(), "System".into()],
            rows: vec![vec!["1".into(), "a|b".into()]],
        };
        assert!(t.markdown().contains("a\\|b"));
        assert!(t.terminal().contains("a|b"));
    }
}
