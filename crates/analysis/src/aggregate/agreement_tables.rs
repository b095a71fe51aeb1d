//! The tables of an agreement report beyond its main one: agreement among human
//! raters (Krippendorff's alpha, pairwise PAR, counts, what the import left out)
//! and the per-language and per-system breakdowns. One builder for every output
//! (`tvir agree`'s text, `tvir summarize`'s table, Markdown and HTML pages), so the
//! formats cannot drift apart.

use std::fmt::Write as _;

use super::html::esc;
use super::render::TextTable;
use crate::agree::table::level_order;
use crate::agree::{AgreeReport, RaterAgreement};

fn num(v: Option<f64>, percent: bool) -> String {
    match v {
        None => "null".into(),
        Some(x) if percent => format!("{:.2}", x * 100.0),
        Some(x) => format!("{x:.4}"),
    }
}

fn opt(v: Option<usize>) -> String {
    v.map_or_else(|| "-".into(), |n| n.to_string())
}

fn side_name(side: &str) -> &'static str {
    if side == "a" {
        "A"
    } else {
        "B"
    }
}

/// What an import counted, in one line ("" for a CSV side).
pub fn import_line(r: &RaterAgreement) -> String {
    let Some(i) = &r.import else {
        return String::new();
    };
    let mut s = format!(
        "Label Studio {} export: {} annotations, {} skipped or cancelled, {} values left out",
        i.format,
        i.annotations,
        i.cancelled,
        i.excluded.len().saturating_sub(i.cancelled)
    );
    for (level, n) in &i.not_applicable {
        let _ = write!(s, "; {level}: {n} not applicable");
    }
    for (level, n) in &i.missing {
        let _ = write!(s, "; {level}: {n} left blank");
    }
    s
}

fn rater_rows(r: &RaterAgreement, group: Option<&str>) -> Vec<Vec<String>> {
    let mut levels: Vec<_> = r.levels.iter().collect();
    levels.sort_by_key(|(k, _)| level_order(k));
    levels
        .into_iter()
        .map(|(level, l)| {
            let mut row: Vec<String> = group.map(str::to_string).into_iter().collect();
            row.extend([
                level.clone(),
                l.reports.to_string(),
                l.raters.to_string(),
                l.ratings.to_string(),
                num(l.alpha, false),
                format!("{} / {}", l.alpha_reports, l.alpha_ratings),
                num(l.par.par, true),
                format!(
                    "{} of {}",
                    l.par.annotator_pairs_used, l.par.annotator_pairs
                ),
                l.notes
                    .iter()
                    .chain(&l.par.notes)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; "),
            ]);
            row
        })
        .collect()
}

const RATER_HEADERS: [&str; 9] = [
    "Level",
    "Reports",
    "Raters",
    "Ratings",
    "Alpha (ordinal)",
    "Alpha reports / ratings",
    "Rater PAR",
    "Rater pairs used",
    "Notes",
];

/// Agreement among raters, per side given as human ratings, then per breakdown.
pub fn rater_tables(r: &AgreeReport) -> Vec<TextTable> {
    let mut out = Vec::new();
    for (side, ra) in &r.raters {
        let line = import_line(ra);
        out.push(TextTable {
            title: format!(
                "Agreement among the raters of {} ({} reports, {} raters, {} ratings; PAR in %){}",
                side_name(side),
                ra.reports,
                ra.raters,
                ra.ratings,
                if line.is_empty() {
                    String::new()
                } else {
                    format!("; {line}")
                }
            ),
            headers: RATER_HEADERS.iter().map(|s| s.to_string()).collect(),
            rows: rater_rows(ra, None),
        });
    }
    for by in ["language", "system"] {
        let groups: Vec<_> = r.breakdowns.iter().filter(|g| g.by == by).collect();
        if groups.is_empty() {
            continue;
        }
        let mut t = TextTable {
            title: format!(
                "Agreement of A and B per {by} (PAR in %{})",
                if by == "system" {
                    "; PAR over the pairs that involve the system"
                } else {
                    ""
                }
            ),
            headers: [
                by, "Level", "Cells", "Tasks", "PAR", "Pairs", "OPC", "OSC", "Raters", "Ratings",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: Vec::new(),
        };
        let mut rt = TextTable {
            title: format!("Agreement among the raters per {by} (PAR in %)"),
            headers: std::iter::once(by.to_string())
                .chain(std::iter::once("Side".to_string()))
                .chain(RATER_HEADERS.iter().map(|s| s.to_string()))
                .collect(),
            rows: Vec::new(),
        };
        for g in groups {
            for (level, l) in &g.levels {
                t.rows.push(vec![
                    g.group.clone(),
                    level.clone(),
                    l.cells.to_string(),
                    l.tasks.to_string(),
                    num(l.par, true),
                    l.pairs.to_string(),
                    num(l.opc, false),
                    num(l.osc, false),
                    opt(l.raters),
                    opt(l.ratings),
                ]);
            }
            for (side, ra) in &g.raters {
                for mut row in rater_rows(ra, None) {
                    row.insert(0, side_name(side).to_string());
                    row.insert(0, g.group.clone());
                    rt.rows.push(row);
                }
            }
        }
        out.push(t);
        if !rt.rows.is_empty() {
            out.push(rt);
        }
    }
    out
}

/// Every annotation or value an import left out, per side.
pub fn exclusions(r: &AgreeReport) -> Vec<String> {
    r.raters
        .iter()
        .filter_map(|(side, ra)| Some((side, ra.import.as_ref()?)))
        .flat_map(|(side, i)| {
            i.excluded
                .iter()
                .map(move |e| format!("{} left out: {e}", side_name(side)))
        })
        .collect()
}

impl TextTable {
    /// The table as an HTML `<table>` with its title as caption.
    pub fn html(&self, class: &str) -> String {
        let mut out = format!(
            "<table class=\"{}\"><caption>{}</caption><thead><tr>",
            esc(class),
            esc(&self.title)
        );
        for h in &self.headers {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr></thead><tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for (i, c) in row.iter().enumerate() {
                let numeric = i > 0 && c.parse::<f64>().is_ok();
                let _ = write!(
                    out,
                    "<td{}>{}</td>",
                    if numeric { " class=\"num\"" } else { "" },
                    esc(c)
                );
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
        out
    }
}
