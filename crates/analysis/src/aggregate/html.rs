//! The pages of `tvir summarize --format html` (the folder is written by `site`):
//! leaderboard, per-metric bar charts and a per-system profile chart (plotters SVG,
//! inline), intervals and the pairwise matrix of every level (`uncertainty_html`),
//! breakdowns, agreement tables, and each report's page with every unit's verdict
//! and justification, figure pictures, fetch failures and structural errors.
//! Everything from a report is escaped: reports are untrusted.

use std::fmt::Write as _;

use plotters::prelude::*;

use super::page_record::PageRecord;
use super::pictures::{figure_caption, metric_short, report_pictures, PictureFolder};
use super::render::{
    breakdown_tables, difficulty_tables, leaderboard_table, level_label, metrics_table, TextTable,
};
use super::site::{aec, pct};
use super::summary::{level_mean, levels_of, JudgeSummary, NamedAgreement};
use super::unit_html::{
    fetch_failures, sources_list_into, status_label, unit_evidence_into, unit_verdict_into,
};
use crate::load::LoadedRecord;
use tvir_engine::record::UnitStatus;
use tvir_images::ImageLimits;

/// Which reports get a section on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReportSections {
    /// Every record of every run.
    #[default]
    All,
    /// Only the lowest run of each (system, task, judge): a third of the size for
    /// three runs.
    FirstRun,
    /// Summary tables and charts only.
    None,
}

/// Options of the HTML page.
#[derive(Debug, Clone)]
pub struct HtmlOptions {
    pub sections: ReportSections,
    /// Root of the report folders (`ROOT/{system}/{task_id}/`), for thumbnails.
    pub reports_root: Option<std::path::PathBuf>,
    /// Thumbnails per report at most.
    pub max_thumbnails_per_report: usize,
    /// Long side of a thumbnail in pixels.
    pub thumbnail_side: u32,
    /// Longest answer text shown per unit (characters).
    pub max_answer_chars: usize,
    /// How report pages store their units and sources.
    pub evidence: super::packed::EvidenceEncoding,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        Self {
            sections: ReportSections::All,
            reports_root: None,
            max_thumbnails_per_report: 24,
            thumbnail_side: 160,
            max_answer_chars: 600,
            evidence: Default::default(),
        }
    }
}

/// Escape text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    esc_into(&mut out, s);
    out
}

/// [`esc`] appended to `out` (no string of its own: a report page escapes every
/// justification and source of its units).
pub fn esc_into(out: &mut String, s: &str) {
    // The five characters are ASCII: runs between them are copied whole.
    let mut from = 0;
    for (i, b) in s.bytes().enumerate() {
        let entity = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&s[from..i]);
        out.push_str(entity);
        from = i + 1;
    }
    out.push_str(&s[from..]);
}

pub(super) fn truncate(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if s.len() <= max || s.chars().count() <= max {
        std::borrow::Cow::Borrowed(s)
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        std::borrow::Cow::Owned(t)
    }
}

fn html_table(t: &TextTable, class: &str) -> String {
    let mut out = format!(
        "<h3>{}</h3>\n<table class=\"{class}\">\n<thead><tr>",
        esc(&t.title)
    );
    for h in &t.headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let class = if i >= 2 { " class=\"num\"" } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// Plotters reports errors with the backend's error type; a chart that cannot be
/// drawn becomes a note on the page rather than a failed page.
fn chart_error(e: impl std::fmt::Display) -> String {
    format!("chart not drawn: {e}")
}

/// Horizontal bar chart of one level (0-100) per system, best first.
pub fn bar_chart_svg(title: &str, bars: &[(String, f64)]) -> Result<String, String> {
    let n = bars.len().max(1);
    // A discrete range of one value draws no slot at all (an empty axis): one bar
    // gets two slots, the second left blank.
    let slots = n.max(2);
    let height = 70 + 26 * slots as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (580, height)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let names: Vec<String> = bars
            .iter()
            .map(|b| truncate(&b.0, 28).into_owned())
            .collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(8)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(180)
            // A discrete i32 range includes both ends: 0..n-1 gives n slots.
            .build_cartesian_2d(0f64..100f64, (0..slots as i32 - 1).into_segmented())
            .map_err(chart_error)?;
        // Best first means top row: bar i sits in slot slots-1-i.
        let top = slots as i32 - 1;
        let slot_name = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(k) | SegmentValue::Exact(k) => {
                let i = top - *k;
                usize::try_from(i)
                    .ok()
                    .and_then(|i| names.get(i).cloned())
                    .unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .y_labels(slots)
            .y_label_formatter(&slot_name)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 13))
            .x_desc("score (0-100)")
            .draw()
            .map_err(chart_error)?;
        // The bars plotters' horizontal histogram draws (a slot's value from 0, 4
        // pixels off each side of the slot), drawn in the order of `bars`: the
        // histogram keeps its bars in a hash map, so the elements of the SVG came
        // out in another order each run.
        let slots_spec = chart.as_coord_spec().y_spec().clone();
        let style = RGBColor(52, 101, 164).filled();
        let rects: Vec<_> = bars
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                let at = slots_spec.index_of(&SegmentValue::from(top - i as i32))?;
                let (y, ny) = (slots_spec.from_index(at)?, slots_spec.from_index(at + 1)?);
                let mut rect = Rectangle::new([(0.0 + b.1 * 100.0, y), (0.0, ny)], style);
                rect.set_margin(4, 4, 0, 0);
                Some(rect)
            })
            .collect();
        chart.draw_series(rects).map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

/// Line chart: one line per system across levels and metrics (0-100).
pub fn profile_chart_svg(
    labels: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> Result<String, String> {
    let m = labels.len().max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Per-system profile", ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(40)
            .build_cartesian_2d((0..m as i32 - 1).into_segmented(), 0f64..100f64)
            .map_err(chart_error)?;
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(m)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => usize::try_from(*i)
                    .ok()
                    .and_then(|i| labels.get(i).cloned())
                    .unwrap_or_default(),
                SegmentValue::Last => String::new(),
            })
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 13))
            .y_desc("score (0-100)")
            .draw()
            .map_err(chart_error)?;
        for (k, (name, values)) in series.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            let points: Vec<(SegmentValue<i32>, f64)> = values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (SegmentValue::CenterOf(i as i32), v * 100.0)))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(chart_error)?
                .label(truncate(name, 28).into_owned())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(chart_error)?;
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 13))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

fn figure_block(svg: Result<String, String>) -> String {
    match svg {
        Ok(s) => format!("<figure class=\"chart\">{s}</figure>\n"),
        Err(e) => format!("<p class=\"warn\">{}</p>\n", esc(&e)),
    }
}

/// A leaderboard of more systems than this keeps only its tables and the Overall,
/// TA and VA charts on the first page: each level's chart, intervals and pairwise
/// matrix, and the breakdowns, go to pages of their own (a matrix of 100 systems is
/// 10,000 cells, fifteen of them 20 MB).
pub const INLINE_MAX_SYSTEMS: usize = 20;

/// A page beside the first one: its path in the summary folder, title and body.
pub(super) struct ExtraPage {
    pub path: String,
    pub title: String,
    pub body: String,
}

/// One leaderboard's part of the first page; with more than [`INLINE_MAX_SYSTEMS`]
/// systems, the pages it links are added to `pages`, each at `path_of(name)`
/// (a level, or `breakdowns`).
pub(super) fn judge_section(
    j: &JudgeSummary,
    path_of: &dyn Fn(&str) -> String,
    pages: &mut Vec<ExtraPage>,
) -> String {
    let split = j.systems.len() > INLINE_MAX_SYSTEMS;
    let mut out = format!(
        "<section class=\"judge\" id=\"judge-{}\">\n<h2>Judge {}</h2>\n",
        esc(&j.judge_model),
        esc(&j.judge_model)
    );
    out.push_str(&html_table(&leaderboard_table(j), "leaderboard"));
    let not_evaluated = super::summary::not_evaluated_lines(j);
    if !not_evaluated.is_empty() {
        out.push_str("<p class=\"note\">Not evaluated:</p>\n<ul class=\"not-evaluated\">");
        for l in &not_evaluated {
            out.push_str(&format!("<li>{}</li>", esc(l)));
        }
        out.push_str("</ul>\n");
    }
    out.push_str(&html_table(&metrics_table(j), "metrics"));
    if let Some(t) = super::render::suspect_table(j) {
        out.push_str(&html_table(&t, "suspect"));
    }

    out.push_str("<h3>Charts</h3>\n<div class=\"charts\">\n");
    let levels = levels_of(j);
    // Level -> its bar chart, for the level's own page when split.
    let mut level_charts: Vec<(String, String)> = Vec::new();
    for level in &levels {
        let label = level_label(level);
        let mut bars: Vec<(String, f64)> = j
            .systems
            .iter()
            .filter_map(|s| level_mean(s, level).map(|v| (s.system.clone(), v)))
            .collect();
        if bars.is_empty() {
            continue;
        }
        bars.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let chart = figure_block(bar_chart_svg(&label, &bars));
        if !split || ["overall", "ta", "va"].contains(&level.as_str()) {
            out.push_str(&chart);
        }
        if split {
            level_charts.push((level.clone(), chart));
        }
    }
    let labels: Vec<String> = levels.iter().map(|l| level_label(l)).collect();
    let series: Vec<(String, Vec<Option<f64>>)> = j
        .systems
        .iter()
        .map(|s| {
            (
                s.system.clone(),
                levels.iter().map(|l| level_mean(s, l)).collect(),
            )
        })
        .collect();
    if !series.is_empty() && !split {
        out.push_str(&figure_block(profile_chart_svg(&labels, &series)));
    }
    out.push_str("</div>\n");
    let mut level_pages = Vec::new();
    out.push_str(&super::uncertainty_html::section(
        j,
        split.then_some(path_of),
        &mut level_pages,
    ));
    let mut breakdowns = String::new();
    for t in breakdown_tables(j) {
        breakdowns.push_str(&html_table(&t, "breakdown"));
    }
    for (t, d) in difficulty_tables(j).iter().zip(&j.domain_difficulty) {
        breakdowns.push_str(&html_table(t, "difficulty"));
        for n in &d.notes {
            let _ = writeln!(breakdowns, "<p class=\"note\">{}</p>", esc(n));
        }
    }
    if !split {
        out.push_str(&breakdowns);
        out.push_str("</section>\n");
        return out;
    }
    // Many systems: every level's chart on its page (with its intervals and
    // matrix when analysed), the breakdowns on one page, links from here.
    let judge = esc(&j.judge_model);
    let mut chart_links = Vec::new();
    for (level, chart) in level_charts {
        let label = level_label(&level);
        match level_pages.iter_mut().find(|p| p.level == level) {
            Some(page) => {
                let at = page.body.find("</h2>\n").map_or(0, |k| k + "</h2>\n".len());
                page.body.insert_str(at, &chart);
            }
            None => {
                let path = path_of(&level);
                chart_links.push(format!("<a href=\"{}\">{}</a>", esc(&path), esc(&label)));
                pages.push(ExtraPage {
                    path,
                    title: format!("{label} (judge {})", j.judge_model),
                    body: format!("<h2>{} (judge {judge})</h2>\n{chart}", esc(&label)),
                });
            }
        }
    }
    for p in level_pages {
        let label = level_label(&p.level);
        pages.push(ExtraPage {
            path: p.path,
            title: format!("{label} (judge {})", j.judge_model),
            body: p.body,
        });
    }
    let _ = writeln!(
        out,
        "<p class=\"note\">{} systems: each level's chart, intervals and pairwise matrix are on the level's page{}; no profile chart (one line per system would be unreadable).</p>",
        j.systems.len(),
        if chart_links.is_empty() {
            String::new()
        } else {
            format!(" ({})", chart_links.join(", "))
        }
    );
    if !breakdowns.is_empty() {
        let path = path_of("breakdowns");
        let _ = writeln!(
            out,
            "<p><a href=\"{}\">Breakdowns by language, complexity and domain, and domain difficulty</a></p>",
            esc(&path)
        );
        pages.push(ExtraPage {
            path,
            title: format!("Breakdowns (judge {})", j.judge_model),
            body: format!("<h2>Breakdowns (judge {judge})</h2>\n{breakdowns}"),
        });
    }
    out.push_str("</section>\n");
    out
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}"))
        .unwrap_or_else(|| "null".into())
}

fn fmt_ci(v: Option<[f64; 2]>) -> String {
    v.map(|[lo, hi]| format!("[{lo:.4}, {hi:.4}]"))
        .unwrap_or_else(|| "-".into())
}

pub(super) fn agreement_section(reports: &[NamedAgreement]) -> String {
    let mut out =
        String::from("<section id=\"agreement\">\n<h2>Agreement between evaluators</h2>\n");
    for NamedAgreement { label, report: r } in reports {
        let _ = writeln!(
            out,
            "<h3>{}</h3>\n<p>A: {} &middot; B: {}</p>",
            esc(label),
            esc(&r.a),
            esc(&r.b)
        );
        out.push_str("<table class=\"agreement\"><thead><tr><th>Level</th><th>PAR</th><th>PAR 95% CI</th><th>OPC</th><th>OPC 95% CI</th><th>OSC</th><th>OSC 95% CI</th><th>Tasks</th><th>Systems</th><th>Pairs</th><th>Raters</th><th>Ratings</th><th>Notes</th></tr></thead><tbody>\n");
        for (level, l) in &r.levels {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(level),
                fmt_opt(l.par),
                fmt_ci(l.par_ci),
                fmt_opt(l.opc),
                fmt_ci(l.opc_ci),
                fmt_opt(l.osc),
                fmt_ci(l.osc_ci),
                l.tasks,
                l.systems,
                l.pairs,
                l.raters.map_or_else(|| "-".into(), |n| n.to_string()),
                l.ratings.map_or_else(|| "-".into(), |n| n.to_string()),
                esc(&l.notes.join("; "))
            );
        }
        out.push_str("</tbody></table>\n");
        for t in super::agreement_tables::rater_tables(r) {
            out.push_str(&t.html("raters"));
        }
        let left_out = super::agreement_tables::exclusions(r);
        if !left_out.is_empty() {
            let _ = writeln!(
                out,
                "<details><summary>{} ratings or annotations left out</summary><ul>",
                left_out.len()
            );
            for e in &left_out {
                let _ = writeln!(out, "<li>{}</li>", esc(e));
            }
            out.push_str("</ul></details>\n");
        }
        for n in &r.notes {
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(n));
        }
    }
    out.push_str("</section>\n");
    out
}

/// One report's evidence (opened), its pictures from `folder`; `to_root` leads
/// from the page to the summary folder.
#[allow(clippy::too_many_arguments)]
pub(super) fn report_section(
    out: &mut String,
    i: usize,
    r: &LoadedRecord,
    page: &PageRecord,
    opts: &HtmlOptions,
    limits: &ImageLimits,
    folder: &PictureFolder,
    to_root: &str,
) {
    let rec = &r.record;
    let failed = page
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Failed)
        .count();
    let _ = writeln!(
        out,
        "<details class=\"report\" id=\"report-{i}\" open><summary><span class=\"sys\">{}</span> / <span class=\"task\">{}</span> / {} run {} &mdash; Overall {}, TA {}, VA {}, AEC {}, failed units {failed}</summary>",
        esc(&r.system),
        esc(&r.task_id),
        esc(&r.judge_model),
        r.run,
        pct(rec.overall),
        pct(rec.ta),
        pct(rec.va),
        aec(rec.effective_citations),
    );
    // Everything below the section's summary line is the report's evidence: stored
    // as `opts.evidence` says (packed pages are a fraction of the bytes).
    let start = out.len();
    if let Some(e) = &rec.extraction {
        let method = match e.method {
            tvir_report::ExtractionMethod::Rules => "rules",
            tvir_report::ExtractionMethod::Judge => "judge",
        };
        let verdict = if e.is_suspect() { "suspect" } else { "ok" };
        let _ = write!(
            out,
            "<p class=\"extraction {verdict}\">Extraction: {verdict} (references and facts by {method})"
        );
        for reason in &e.reasons {
            let _ = write!(out, "; {}", esc(reason));
        }
        if let Some(j) = &e.judge {
            let _ = write!(out, "; judge extraction {}", esc(&j.status));
            if let Some(why) = &j.reason {
                let _ = write!(out, ": {}", esc(why));
            }
        }
        out.push_str("</p>\n");
    }
    out.push_str("<table class=\"report-metrics\"><thead><tr><th>Metric</th><th>Score</th><th>Status</th><th>Items</th><th>Scored</th><th>Failed</th><th>Skipped</th><th>Note</th></tr></thead><tbody>\n");
    for (name, m) in &rec.metrics {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(name),
            pct(m.score),
            match m.status {
                tvir_engine::record::MetricStatus::Evaluated => "evaluated",
                tvir_engine::record::MetricStatus::NotEvaluated => "not evaluated",
            },
            m.item_count,
            m.scored_item_count,
            m.failed_item_count,
            m.skipped_item_count,
            esc(m.note.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</tbody></table>\n");

    let se = &page.structural_errors;
    let total = se.traceability.len() + se.consistency.len() + se.completeness.len();
    let _ = writeln!(out, "<h4>Structural errors ({total})</h4>");
    if total > 0 {
        out.push_str("<ul class=\"structural\">");
        for (cat, list) in [
            ("traceability", &se.traceability),
            ("consistency", &se.consistency),
            ("completeness", &se.completeness),
        ] {
            for e in list {
                let _ = write!(
                    out,
                    "<li><b>{cat}</b> <code>{}</code>{}: {}</li>",
                    esc(&e.code),
                    e.line.map(|l| format!(" (line {l})")).unwrap_or_default(),
                    esc(&e.reason)
                );
            }
        }
        out.push_str("</ul>\n");
    }

    let fails = fetch_failures(page);
    let _ = writeln!(out, "<h4>Fetch failures ({})</h4>", fails.len());
    if !fails.is_empty() {
        out.push_str("<ul class=\"fetch-failures\">");
        for f in &fails {
            let _ = write!(out, "<li>{}</li>", esc(f));
        }
        out.push_str("</ul>\n");
    }

    let pictures = report_pictures(r, page, opts, limits, folder, to_root);
    if !pictures.figures.is_empty() {
        let _ = writeln!(
            out,
            "<h4>Figures ({})</h4>\n<div class=\"thumbs\">",
            pictures.figures.len()
        );
        for f in &pictures.figures {
            let scores: Vec<String> = page
                .units
                .iter()
                .filter(|u| u.status == UnitStatus::Scored)
                .filter(|u| pictures.figure_of(u).is_some_and(|g| g.unit == f.unit))
                .filter_map(|u| {
                    u.score
                        .map(|s| format!("{} {s:.2}", metric_short(&u.metric)))
                })
                .collect();
            let caption = figure_caption(page, &f.unit)
                .map(|c| format!("<div class=\"caption\">{}</div>", esc(&truncate(c, 200))))
                .unwrap_or_default();
            let _ = write!(
                out,
                "<figure class=\"thumb\" id=\"fig-{i}-{}\">{}<figcaption><b>{}</b> <code>{}</code>{caption}<div class=\"fig-scores\">{}</div></figcaption></figure>",
                esc(f.unit.trim_start_matches("figure:")),
                f.picture(),
                esc(&f.unit),
                esc(&truncate(&f.content, 60)),
                if scores.is_empty() { "no score".to_string() } else { esc(&scores.join(" · ")) },
            );
        }
        out.push_str("</div>\n");
    }

    let mut evidence = out.split_off(start);
    let ev = &mut evidence;
    sources_list_into(ev, page);
    let _ = writeln!(ev, "<h4>Units ({})</h4>", page.units.len());
    ev.push_str("<table class=\"units\"><thead><tr><th>Metric</th><th>Unit</th><th>Status</th><th>Score</th><th>What was judged</th><th>Verdict and justification</th><th>Reason</th></tr></thead><tbody>\n");
    for u in &page.units {
        let zero = u.status == UnitStatus::Scored && u.score == Some(0.0);
        let status = status_label(u.status);
        let _ = write!(
            ev,
            "<tr class=\"unit {status}{}\" data-metric=\"",
            if zero { " zero" } else { "" }
        );
        esc_into(ev, &u.metric);
        ev.push_str("\" data-unit=\"");
        esc_into(ev, &u.unit);
        ev.push_str("\"><td>");
        esc_into(ev, &u.metric);
        ev.push_str("</td><td>");
        esc_into(ev, &u.unit);
        let _ = write!(ev, "</td><td>{status}</td><td class=\"num\">");
        match u.score {
            Some(s) => {
                let _ = write!(ev, "{s:.3}");
            }
            None => ev.push('-'),
        }
        ev.push_str("</td><td class=\"evidence\">");
        pictures.of_unit_into(ev, u);
        unit_evidence_into(ev, u);
        ev.push_str("</td><td class=\"verdict\">");
        unit_verdict_into(ev, u, opts.max_answer_chars);
        ev.push_str("</td><td>");
        esc_into(ev, u.reason.as_deref().unwrap_or(""));
        ev.push_str("</td></tr>\n");
    }
    ev.push_str("</tbody></table>\n");
    super::packed::push_evidence(out, &evidence, opts.evidence, &r.path.display().to_string());
    out.push_str("</details>\n");
}

pub(super) const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.2em}th,td{border:1px solid #ccc;padding:3px 6px;vertical-align:top}\
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}\
.charts{display:flex;flex-wrap:wrap;gap:8px}figure.chart{margin:0}\
details.report{border:1px solid #ddd;margin:4px 0;padding:4px}details.report summary{cursor:pointer}\
tr.failed td{background:#fde8e8}tr.skipped td{background:#f6f6f6}\
.thumbs{display:flex;flex-wrap:wrap;gap:8px}figure.thumb{margin:0;width:240px;font-size:11px}\
.pic{background:#fff;object-fit:contain;border:1px solid #ddd;display:block}figure.thumb .pic{width:240px;height:180px}\
td.evidence .pic{width:200px;height:150px;margin-bottom:4px}\
.nopic,.nothumb{width:200px;min-height:40px;background:#eee;color:#666;font-size:11px;padding:4px;box-sizing:border-box;margin-bottom:4px}\
.fig-scores{font-variant-numeric:tabular-nums;color:#333}\
.note,.warn{color:#8a5a00}code{font-size:11px;white-space:pre-wrap;word-break:break-word}\
table.pairs td{text-align:center;font-size:12px;font-variant-numeric:tabular-nums}table.pairs th{font-size:12px}\
blockquote{margin:0 0 4px;padding-left:6px;border-left:3px solid #bbb}ul.sources{margin:0;padding-left:16px;font-size:12px}\
ol.source-list{margin:0 0 1em;padding-left:0;list-style:none;font-size:12px}ol.source-list li:target{background:#fff3c4}p.unpacking{color:#666}\
li.unread .state{color:#a00}li.read .state{color:#060}.caption{font-size:12px;color:#444}p.justification{margin:2px 0;font-size:12px}\
tr.zero td.num{color:#a00}\
table.report-metrics td:last-child,table.units td{overflow-wrap:anywhere}table.report-metrics td:last-child{max-width:48em}\
body:has(#only-failed:checked) tr.unit:not(.failed){display:none}\
body:has(#only-zero:checked) tr.unit:not(.zero){display:none}\
body:has(#only-failed:checked) tr.report-row:not(.failed){display:none}\
body:has(#only-zero:checked) tr.report-row:not(.zero){display:none}\
body:has(#only-failed:checked) tr.system-row:not(.failed){display:none}\
body:has(#only-zero:checked) tr.system-row:not(.zero){display:none}\
body:has(#only-failed:checked) details.system:not(.failed),body:has(#only-zero:checked) details.system:not(.zero){display:none}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(esc("数据 <b>é</b> ok"), "数据 &lt;b&gt;é&lt;/b&gt; ok");
        assert_eq!(esc(""), "");
        assert_eq!(esc("plain"), "plain");
    }

    #[test]
    fn charts_are_svg() {
        let s = bar_chart_svg("TA", &[("a".into(), 0.5), ("<b>".into(), 0.25)]).unwrap();
        assert!(s.starts_with("<svg"), "{}", &s[..40.min(s.len())]);
        assert!(!s.contains("<b>"));
        let p = profile_chart_svg(
            &["TA".into(), "VA".into()],
            &[
                ("a".into(), vec![Some(0.5), None]),
                ("b".into(), vec![Some(0.2), Some(0.4)]),
            ],
        )
        .unwrap();
        assert!(p.contains("<svg") && p.contains("polyline"));
    }

    #[test]
    fn one_system_gets_its_bar() {
        let bar = "fill=\"#3465A4\"";
        let one = bar_chart_svg("TA", &[("only".into(), 0.5)]).unwrap();
        assert_eq!(one.matches(bar).count(), 1, "{one}");
        assert!(one.contains("\nonly\n"), "{one}");
        let two = bar_chart_svg("TA", &[("a".into(), 0.5), ("b".into(), 0.25)]).unwrap();
        assert_eq!(two.matches(bar).count(), 2, "{two}");
    }
}
