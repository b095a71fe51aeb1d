//! The significance part of the HTML page: for every level of a leaderboard, the
//! systems' means as points with their interval bars (SVG written out by hand, so
//! the page needs no script) and the pairwise matrix coloured by the Holm-adjusted
//! test, with the pairs that could not be tested listed with their reason.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::html::esc;
use super::render::level_label;
use super::summary::JudgeSummary;
use super::uncertainty::{
    all_untestable, fmt_interval, fmt_p, fmt_system_interval, method_sentence, verdict,
};
use crate::significance::{LevelReport, PairComparison};

/// One colour per rank group (cycled).
const GROUP_COLOURS: [&str; 7] = [
    "#3465a4", "#cc0000", "#4e9a06", "#f57900", "#75507b", "#c4a000", "#06989a",
];
/// Matrix cells: row significantly ahead, behind, not significant, not testable.
const AHEAD: &str = "#a6dba0";
const BEHIND: &str = "#f4a582";
const NOT_SIGNIFICANT: &str = "#f7f7f7";
const NOT_TESTABLE: &str = "#d0d0d0";

/// A level's intervals and pairwise matrix on a page of its own (leaderboards of
/// many systems): where it goes in the summary folder and its body.
pub struct LevelPage {
    pub level: String,
    /// Relative to the summary folder.
    pub path: String,
    pub body: String,
}

/// The whole block for one leaderboard (empty without significance). With
/// `pages` (a leaderboard of many systems: a matrix of 100 systems is 10,000
/// cells), each level's chart and matrix go to a page of their own, named by
/// `pages(level)`, and the block lists the levels with their groups and links.
pub fn section(
    j: &JudgeSummary,
    pages: Option<&dyn Fn(&str) -> String>,
    out_pages: &mut Vec<LevelPage>,
) -> String {
    let Some(sig) = j.significance.as_ref().filter(|s| !s.is_empty()) else {
        return String::new();
    };
    let mut out = format!(
        "<section class=\"significance\">\n<h3>Intervals and pairwise tests (judge {})</h3>\n<p>{}</p>\n",
        esc(&j.judge_model),
        esc(&method_sentence(&sig[0]))
    );
    if pages.is_none() {
        out.push_str(&legend());
    }
    // No pair testable at any level, for the same reasons: said once for all.
    let whys: Vec<Option<String>> = sig.values().map(all_untestable).collect();
    let said_once = whys.iter().all(|w| w.is_some() && *w == whys[0]);
    if said_once {
        if let Some(Some(why)) = whys.first() {
            let _ = writeln!(out, "<p class=\"untestable\">Every level: {}</p>", esc(why));
        }
    }
    if let Some(path_of) = pages {
        out.push_str("<table class=\"sig-levels\"><thead><tr><th>Level</th><th>Systems</th><th>Rank groups</th><th>Pairs tested</th><th>Pairs that differ</th><th>Intervals and pairwise matrix</th></tr></thead><tbody>\n");
        for (level, report) in sig.iter() {
            let label = level_label(level);
            let tested = report.pairs.iter().filter(|p| p.testable).count();
            let differ = report
                .pairs
                .iter()
                .filter(|p| p.differs(report.alpha))
                .count();
            let path = path_of(level);
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{tested}</td><td class=\"num\">{differ}</td><td><a href=\"{}\">{} page</a></td></tr>",
                esc(&label),
                report.systems.len(),
                report.groups.len(),
                esc(&path),
                esc(&label)
            );
            let mut body = format!(
                "<h2>{} (judge {})</h2>\n<p>{}</p>\n",
                esc(&label),
                esc(&j.judge_model),
                esc(&method_sentence(report))
            );
            body.push_str(&legend());
            body.push_str(&level_block(j, level, report, false));
            out_pages.push(LevelPage {
                level: level.clone(),
                path,
                body,
            });
        }
        out.push_str("</tbody></table>\n</section>\n");
        return out;
    }
    for (level, report) in sig.iter() {
        out.push_str(&level_block(j, level, report, said_once));
    }
    out.push_str("</section>\n");
    out
}

/// The colours of the matrix cells.
fn legend() -> String {
    format!(
        "<p class=\"legend\">Matrix cells: row minus column, Holm-adjusted p below. \
         <span style=\"background:{AHEAD}\">&nbsp;row ahead&nbsp;</span> \
         <span style=\"background:{BEHIND}\">&nbsp;row behind&nbsp;</span> \
         <span style=\"background:{NOT_SIGNIFICANT};border:1px solid #ccc\">&nbsp;not significant&nbsp;</span> \
         <span style=\"background:{NOT_TESTABLE}\">&nbsp;not testable&nbsp;</span></p>\n"
    )
}

/// One level: its interval chart, its matrix (or the sentence saying no pair is
/// testable, unless `said_once` for every level above), untestable pairs, noise.
fn level_block(j: &JudgeSummary, level: &str, report: &LevelReport, said_once: bool) -> String {
    let mut out = String::new();
    {
        let label = level_label(level);
        let _ = writeln!(
            out,
            "<div class=\"sig-level\" id=\"sig-{}-{}\">\n<h4>{}</h4>",
            esc(&j.judge_model),
            esc(level),
            esc(&label)
        );
        out.push_str(&interval_svg(report, &label));
        let untestable: Vec<&PairComparison> =
            report.pairs.iter().filter(|p| !p.testable).collect();
        if let Some(why) = all_untestable(report) {
            // Said once for the level (or above for all): no matrix of grey cells,
            // no line per pair.
            if !said_once {
                let _ = writeln!(
                    out,
                    "<p class=\"untestable\">{}: {}</p>",
                    esc(&label),
                    esc(&why)
                );
            }
        } else if !untestable.is_empty() {
            out.push_str(&pair_matrix(report));
            out.push_str("<ul class=\"untestable\">");
            for p in untestable {
                let _ = write!(
                    out,
                    "<li>{} vs {}: {}</li>",
                    esc(&p.a),
                    esc(&p.b),
                    esc(&verdict(p, report.alpha))
                );
            }
            out.push_str("</ul>\n");
        } else {
            out.push_str(&pair_matrix(report));
        }
        if let Some(noise) = &report.judge_noise {
            let _ = writeln!(out, "<p class=\"noise\">{}</p>", esc(&noise.interpretation));
        }
        out.push_str("</div>\n");
    }
    out
}

/// A step of 1, 2 or 5 times a power of ten giving about five ticks over `span`.
fn tick_step(span: f64) -> f64 {
    let raw = span / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// Points (means) with interval bars, best system on top, coloured by rank group.
pub fn interval_svg(report: &LevelReport, title: &str) -> String {
    const LABEL_W: f64 = 190.0;
    const PLOT_W: f64 = 340.0;
    const VALUE_W: f64 = 170.0;
    const ROW_H: f64 = 24.0;
    const TOP: f64 = 26.0;
    const AXIS_H: f64 = 34.0;
    let n = report.systems.len();
    let width = LABEL_W + PLOT_W + VALUE_W;
    let height = TOP + ROW_H * n as f64 + AXIS_H;
    let lo = report
        .systems
        .iter()
        .map(|s| s.ci[0].min(s.mean))
        .fold(f64::INFINITY, f64::min);
    let hi = report
        .systems
        .iter()
        .map(|s| s.ci[1].max(s.mean))
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.08).max(0.5);
    let (lo, hi) = ((lo - pad).max(0.0), (hi + pad).min(100.0));
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let x = |v: f64| LABEL_W + (v - lo) / (hi - lo) * PLOT_W;
    let mut svg = format!(
        "<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{} means with intervals\" font-family=\"sans-serif\" font-size=\"12\">\n<text x=\"{}\" y=\"17\" text-anchor=\"middle\" font-size=\"15\">{} (mean and {:.0} % interval, 0-100)</text>\n",
        esc(title),
        width / 2.0,
        esc(title),
        100.0 * report.confidence
    );
    // Axis and ticks under the rows.
    let axis_y = TOP + ROW_H * n as f64 + 4.0;
    let step = tick_step(hi - lo);
    let mut tick = (lo / step).ceil() * step;
    while tick <= hi + 1e-9 {
        let tx = x(tick);
        let _ = writeln!(
            svg,
            "<line x1=\"{tx:.1}\" y1=\"{TOP}\" x2=\"{tx:.1}\" y2=\"{axis_y}\" stroke=\"#e4e4e4\"/><text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            axis_y + 16.0,
            format_tick(tick, step)
        );
        tick += step;
    }
    let _ = writeln!(
        svg,
        "<line x1=\"{LABEL_W}\" y1=\"{axis_y}\" x2=\"{}\" y2=\"{axis_y}\" stroke=\"#888\"/>",
        LABEL_W + PLOT_W
    );
    for (i, s) in report.systems.iter().enumerate() {
        let y = TOP + ROW_H * (i as f64 + 0.5);
        let colour = GROUP_COLOURS[(s.group.max(1) - 1) % GROUP_COLOURS.len()];
        if s.group % 2 == 0 {
            let _ = writeln!(
                svg,
                "<rect x=\"0\" y=\"{:.1}\" width=\"{width}\" height=\"{ROW_H}\" fill=\"#f4f4f4\"/>",
                y - ROW_H / 2.0
            );
        }
        let (x0, x1, xm) = (x(s.ci[0]), x(s.ci[1]), x(s.mean));
        let _ = writeln!(
            svg,
            "<g><title>{name}: mean {mean:.2}, interval {ci}, {tasks} tasks, group {group}</title>\
             <text x=\"{lx}\" y=\"{ty:.1}\" text-anchor=\"end\">{short} (g{group})</text>\
             <line x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>\
             <line x1=\"{x0:.1}\" y1=\"{c0:.1}\" x2=\"{x0:.1}\" y2=\"{c1:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>\
             <line x1=\"{x1:.1}\" y1=\"{c0:.1}\" x2=\"{x1:.1}\" y2=\"{c1:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>\
             <circle cx=\"{xm:.1}\" cy=\"{y:.1}\" r=\"4.5\" fill=\"{colour}\"/>\
             <text x=\"{vx}\" y=\"{ty:.1}\" fill=\"#333\">{mean:.2} {ci}</text></g>",
            name = esc(&s.system),
            short = esc(&shorten(&s.system, 24)),
            mean = s.mean,
            ci = fmt_system_interval(s.ci, s.tasks),
            tasks = s.tasks,
            group = s.group,
            lx = LABEL_W - 8.0,
            ty = y + 4.0,
            c0 = y - 5.0,
            c1 = y + 5.0,
            vx = LABEL_W + PLOT_W + 10.0,
        );
    }
    svg.push_str("</svg></figure>\n");
    svg
}

fn format_tick(v: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{v:.0}")
    } else if step >= 0.1 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max - 1).chain(['…']).collect()
    }
}

/// The comparison of `row` with `col` from `row`'s side: the pair, and whether its
/// difference must be negated (the pair is stored higher-ranked first). `pairs`
/// indexes the level's pairs by (a, b).
fn oriented<'a>(
    report: &'a LevelReport,
    pairs: &HashMap<(&str, &str), usize>,
    row: &str,
    col: &str,
) -> Option<(&'a PairComparison, f64)> {
    if let Some(&k) = pairs.get(&(row, col)) {
        Some((&report.pairs[k], 1.0))
    } else {
        pairs.get(&(col, row)).map(|&k| (&report.pairs[k], -1.0))
    }
}

/// Square matrix of paired differences (row minus column) in ranking order.
pub fn pair_matrix(report: &LevelReport) -> String {
    // A cell looks its pair up by name: an index, not a scan of every pair for
    // every cell (100 systems: 10,000 cells, 4,950 pairs).
    let pairs: HashMap<(&str, &str), usize> = report
        .pairs
        .iter()
        .enumerate()
        .map(|(k, p)| ((p.a.as_str(), p.b.as_str()), k))
        .collect();
    let mut out = String::from("<table class=\"pairs\"><thead><tr><th>row &minus; column</th>");
    for s in &report.systems {
        let _ = write!(out, "<th>{}</th>", esc(&shorten(&s.system, 16)));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &report.systems {
        let _ = write!(
            out,
            "<tr><th>{} <small>(g{})</small></th>",
            esc(&row.system),
            row.group
        );
        for col in &report.systems {
            if row.system == col.system {
                out.push_str("<td class=\"diag\">&mdash;</td>");
                continue;
            }
            let Some((pair, sign)) = oriented(report, &pairs, &row.system, &col.system) else {
                out.push_str("<td>?</td>");
                continue;
            };
            out.push_str(&matrix_cell(
                pair,
                sign,
                &row.system,
                &col.system,
                report.alpha,
            ));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

fn matrix_cell(pair: &PairComparison, sign: f64, row: &str, col: &str, alpha: f64) -> String {
    let diff = pair.mean_diff.map(|d| sign * d);
    let ci = pair
        .ci
        .map(|[lo, hi]| if sign > 0.0 { [lo, hi] } else { [-hi, -lo] });
    if !pair.testable {
        let why = verdict(pair, alpha);
        return format!(
            "<td class=\"untestable\" style=\"background:{NOT_TESTABLE}\" title=\"{}\">{}<br><small>not testable</small></td>",
            esc(&format!("{row} − {col}: {why}")),
            diff.map(|d| format!("{d:+.2}")).unwrap_or_else(|| "-".into()),
        );
    }
    let d = diff.unwrap_or(0.0);
    let colour = match (pair.differs(alpha), d > 0.0) {
        (true, true) => AHEAD,
        (true, false) => BEHIND,
        (false, _) => NOT_SIGNIFICANT,
    };
    let class = if pair.differs(alpha) {
        "significant"
    } else {
        "not-significant"
    };
    let p_holm = pair.p_holm.unwrap_or(1.0);
    let title = format!(
        "{row} − {col}: {d:+.2}, interval {}, p {}, Holm p {}, {} shared tasks",
        ci.map(fmt_interval).unwrap_or_else(|| "-".into()),
        pair.p.map(fmt_p).unwrap_or_else(|| "-".into()),
        fmt_p(p_holm),
        pair.tasks
    );
    format!(
        "<td class=\"{class}\" style=\"background:{colour}\" title=\"{}\">{d:+.2}<br><small>p={}</small></td>",
        esc(&title),
        fmt_p(p_holm)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(10.0), 2.0);
        assert_eq!(tick_step(3.0), 1.0);
        assert_eq!(tick_step(40.0), 10.0);
        assert!((tick_step(0.9) - 0.2).abs() < 1e-12);
    }
}
