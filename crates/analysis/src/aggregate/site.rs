//! The folder `tvir summarize --format html` writes (`OUT/summary/`, or the folder
//! of `--html-out`): `index.html` first (leaderboards, charts, intervals and groups,
//! breakdowns, agreement, and one row per system with filters), one page per system
//! under `systems/` listing its reports (with filters), one page per report under
//! `reports/` holding its evidence (units, verdicts, justifications, figures), each
//! picture once under `pictures/`, one `style.css`. A leaderboard of more than
//! [`INLINE_MAX_SYSTEMS`](super::html::INLINE_MAX_SYSTEMS) systems puts each level's
//! chart, intervals and pairwise matrix, and its breakdowns, on pages under
//! `levels/{judge}/`. Every link is relative and nothing runs a script, so the
//! folder opens over `file://`, offline, and can be copied whole. A page is loaded
//! only when its link is followed, so the first page holds a row per system, never
//! one per report, however many reports there are.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::html::{agreement_section, esc, judge_section, report_section, HtmlOptions};
use super::html::{ExtraPage, ReportSections, STYLE};
use super::packed::{EvidenceEncoding, SCRIPT, SCRIPT_FILE};
use super::page_record::PageRecord;
use super::pictures::PictureFolder;
use super::summary::Summary;
use crate::load::{read_record_text, LoadedRecord};
use tvir_images::ImageLimits;

/// Marks a page as written by this module, so an old summary folder may be replaced
/// and any other folder is never emptied.
const GENERATOR: &str = "<meta name=\"generator\" content=\"tvir summarize\">";

/// Folder of the report pages inside the summary folder.
pub const REPORTS_DIR: &str = "reports";
/// Folder of the per-system lists of reports.
pub const SYSTEMS_DIR: &str = "systems";
/// Folder of the pages of levels and breakdowns of leaderboards of many systems.
pub const LEVELS_DIR: &str = "levels";

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteStats {
    /// `index.html`, the page that opens first.
    pub index: PathBuf,
    pub index_bytes: u64,
    pub report_pages: usize,
    pub pictures: usize,
    /// Every file of the folder.
    pub total_bytes: u64,
}

/// A folder or file name as a name that needs no escaping in a URL or on any file
/// system: ASCII letters, digits, `.` and `-` kept, every other byte `_` and two hex
/// digits (so two different names never meet).
fn safe_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || (b == b'.' && !out.is_empty()) {
            out.push(b as char);
        } else {
            let _ = write!(out, "_{b:02x}");
        }
    }
    out
}

/// The page of a report, relative to the summary folder.
fn report_page_path(r: &LoadedRecord) -> String {
    format!(
        "{REPORTS_DIR}/{}/{}/{}-run{}.html",
        safe_name(&r.system),
        safe_name(&r.task_id),
        safe_name(&r.judge_model),
        r.run
    )
}

/// The list of a system's reports, relative to the summary folder.
fn system_page_path(system: &str) -> String {
    format!("{SYSTEMS_DIR}/{}.html", safe_name(system))
}

fn page_head(title: &str, to_root: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">{GENERATOR}<title>{}</title><link rel=\"stylesheet\" href=\"{to_root}style.css\"></head><body>\n",
        esc(title)
    )
}

/// The folder to write into: created, or emptied when it holds an earlier summary;
/// any other folder with files in it is refused.
fn prepare(dir: &Path) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{}: {e}", dir.display());
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir).map_err(err)?.peekable();
        if entries.peek().is_some() {
            let index = std::fs::read_to_string(dir.join("index.html")).unwrap_or_default();
            if !index.contains(GENERATOR) {
                return Err(format!(
                    "{}: folder is not empty and holds no earlier summary; give an empty or new folder",
                    dir.display()
                ));
            }
            std::fs::remove_dir_all(dir).map_err(err)?;
        }
    }
    std::fs::create_dir_all(dir).map_err(err)
}

/// A score in [0, 1] as a percentage with two decimals, `-` when not evaluated.
pub(super) fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.2}", x * 100.0))
        .unwrap_or_else(|| "-".into())
}

/// Effective citations (AEC) with one decimal, `-` when not evaluated.
pub(super) fn aec(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into())
}

/// One report's page, written into `out` (cleared first, so one buffer serves every
/// page a thread writes): what it shows beyond the compact record (units,
/// structural errors, thumbnails) read again from its `report.json` when the tree
/// was loaded compact (units dropped), so no more than the reports being written
/// are held in memory; only the page's fields are read ([`PageRecord`]).
fn report_page(
    out: &mut String,
    i: usize,
    r: &LoadedRecord,
    opts: &HtmlOptions,
    limits: &ImageLimits,
    folder: &PictureFolder,
) {
    out.clear();
    let to_root = "../../../";
    let text = if r.record.units.is_empty() && r.units.scored + r.units.failed + r.units.skipped > 0
    {
        read_record_text(&r.path)
    } else {
        // Loaded whole (or without units): the page reads the record in memory.
        serde_json::to_string(&r.record).map_err(|e| e.to_string())
    };
    let page = match text
        .as_deref()
        .map_err(Clone::clone)
        .and_then(PageRecord::parse)
    {
        Ok(page) => page,
        Err(e) => {
            out.push_str(&page_head("Report", to_root));
            let _ = writeln!(
                out,
                "<p class=\"warn\">{}: cannot be read again: {}</p></body></html>",
                esc(&r.path.display().to_string()),
                esc(&e)
            );
            return;
        }
    };
    out.push_str(&page_head(
        &format!(
            "{} / {} / {} run {}",
            r.system, r.task_id, r.judge_model, r.run
        ),
        to_root,
    ));
    let _ = writeln!(
        out,
        "<p><a href=\"{to_root}index.html\">&larr; summary</a> &middot; <a href=\"{to_root}{}\">{} reports</a> &middot; <code>{}</code></p>",
        system_page_path(&r.system),
        esc(&r.system),
        esc(&r.path.display().to_string())
    );
    // Filters without script: the stylesheet hides the other units.
    out.push_str("<p class=\"filters\"><label><input type=\"checkbox\" id=\"only-failed\"> only failed units</label> <label><input type=\"checkbox\" id=\"only-zero\"> only units scored 0</label></p>\n");
    report_section(out, i, r, &page, opts, limits, folder, to_root);
    if opts.evidence == EvidenceEncoding::Packed {
        let _ = writeln!(out, "<script src=\"{to_root}{SCRIPT_FILE}\"></script>");
    }
    out.push_str("</body></html>\n");
}

/// One system's list of reports (its page under `systems/`): one row each with its
/// scores and a link to its page; the filters keep the reports with a failed unit
/// or a unit scored 0. `records` are the system's, in order.
fn system_page(system: &str, records: &[&LoadedRecord]) -> String {
    let to_root = "../";
    let mut out = page_head(&format!("{system}: reports"), to_root);
    let _ = writeln!(
        out,
        "<p><a href=\"{to_root}index.html#reports\">&larr; summary</a></p>\n<h2 id=\"reports\">{}: {} report records</h2>",
        esc(system),
        records.len()
    );
    out.push_str("<p>Each report's units, verdicts, justifications and figures are on its own page (the task link).</p>\n");
    out.push_str("<p class=\"filters\"><label><input type=\"checkbox\" id=\"only-failed\"> only reports with a failed unit</label> <label><input type=\"checkbox\" id=\"only-zero\"> only reports with a unit scored 0</label></p>\n");
    out.push_str("<table class=\"reports\"><thead><tr><th>Task</th><th>Judge</th><th>Run</th><th>Overall</th><th>TA</th><th>VA</th><th>AEC</th><th>Failed units</th><th>Units scored 0</th></tr></thead><tbody>\n");
    for r in records {
        let rec = &r.record;
        let mut class = String::from("report-row");
        if r.units.failed > 0 {
            class.push_str(" failed");
        }
        if r.units.zero > 0 {
            class.push_str(" zero");
        }
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td><a href=\"{to_root}{}\">{}</a></td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            report_page_path(r),
            esc(&r.task_id),
            esc(&r.judge_model),
            r.run,
            pct(rec.overall),
            pct(rec.ta),
            pct(rec.va),
            aec(rec.effective_citations),
            r.units.failed,
            r.units.zero,
        );
    }
    out.push_str("</tbody></table>\n</body></html>\n");
    out
}

/// The systems of `order` (sorted by system), each with its records.
fn by_system<'a, 'b>(order: &'b [&'a LoadedRecord]) -> Vec<(&'a str, &'b [&'a LoadedRecord])> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let system = order[start].system.as_str();
        let end = start
            + order[start..]
                .iter()
                .take_while(|r| r.system == system)
                .count();
        out.push((system, &order[start..end]));
        start = end;
    }
    out
}

/// The reports part of the first page: one row per system with how many of its
/// reports have a failed unit or a unit scored 0, linking the system's list of
/// reports (whose rows link each report's page); the filters keep the systems with
/// such a report. However many reports there are, the first page holds one row per
/// system.
fn report_list(order: &[&LoadedRecord], total: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<section id=\"reports\"><h2>Reports ({} of {total} records)</h2>",
        order.len()
    );
    if order.is_empty() {
        out.push_str("</section>\n");
        return out;
    }
    out.push_str("<p>Each system's reports are listed on its page (the system link), each report's units, verdicts, justifications and figures on the report's own page.</p>\n");
    out.push_str("<p class=\"filters\"><label><input type=\"checkbox\" id=\"only-failed\"> only systems with a report with a failed unit</label> <label><input type=\"checkbox\" id=\"only-zero\"> only systems with a report with a unit scored 0</label></p>\n");
    out.push_str("<table class=\"systems\"><thead><tr><th>System</th><th>Report records</th><th>with a failed unit</th><th>with a unit scored 0</th></tr></thead><tbody>\n");
    for (system, records) in by_system(order) {
        let failed = records.iter().filter(|r| r.units.failed > 0).count();
        let zero = records.iter().filter(|r| r.units.zero > 0).count();
        let mut class = String::from("system-row");
        if failed > 0 {
            class.push_str(" failed");
        }
        if zero > 0 {
            class.push_str(" zero");
        }
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td><a href=\"{}\">{}</a></td><td class=\"num\">{}</td><td class=\"num\">{failed}</td><td class=\"num\">{zero}</td></tr>",
            system_page_path(system),
            esc(system),
            records.len()
        );
    }
    out.push_str("</tbody></table>\n</section>\n");
    out
}

/// The first page; pages it links (levels and breakdowns of leaderboards of many
/// systems) are added to `pages`.
fn index_page(
    summary: &Summary,
    order: &[&LoadedRecord],
    total: usize,
    pages: &mut Vec<ExtraPage>,
) -> String {
    let agreements = &summary.agreements;
    let mut out = page_head("TVIR evaluation summary", "");
    let _ = write!(
        out,
        "<h1>TVIR evaluation summary</h1>\n<p>Output folder: <code>{}</code>{}</p>\n<p>Scores on the 0-100 scale; with several runs, mean ±sample standard deviation over runs. AEC and structural errors are counts per report.</p>\n",
        esc(&summary.root),
        summary
            .tasks_file
            .as_ref()
            .map(|t| format!(" &middot; tasks: <code>{}</code>", esc(t)))
            .unwrap_or_default()
    );
    out.push_str("<nav><ul>");
    for j in &summary.judges {
        let _ = write!(
            out,
            "<li><a href=\"#judge-{}\">Judge {}</a></li>",
            esc(&j.judge_model),
            esc(&j.judge_model)
        );
    }
    if !agreements.is_empty() {
        out.push_str("<li><a href=\"#agreement\">Agreement</a></li>");
    }
    out.push_str("<li><a href=\"#reports\">Reports</a></li></ul></nav>\n");
    for j in &summary.judges {
        let judge = safe_name(&j.judge_model);
        let path_of = |name: &str| format!("{LEVELS_DIR}/{judge}/{}.html", safe_name(name));
        out.push_str(&judge_section(j, &path_of, pages));
    }
    if !agreements.is_empty() {
        out.push_str(&agreement_section(agreements));
    }
    if !summary.load_issues.is_empty() || !summary.notes.is_empty() {
        out.push_str("<section id=\"issues\"><h2>Problems and notes</h2><ul>");
        for i in &summary.load_issues {
            let _ = write!(
                out,
                "<li>unreadable: <code>{}</code>: {}</li>",
                esc(&i.path),
                esc(&i.message)
            );
        }
        for n in &summary.notes {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul></section>\n");
    }
    out.push_str(&report_list(order, total));
    out.push_str("</body></html>\n");
    out
}

fn write(dir: &Path, rel: &str, text: &str) -> Result<u64, String> {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text.len() as u64)
}

/// Write the summary folder `dir` (see the module docs). Report pages are made in
/// parallel, each from its own `report.json` when `records` were loaded compact.
pub fn write_site(
    summary: &Summary,
    records: &[LoadedRecord],
    opts: &HtmlOptions,
    dir: &Path,
) -> Result<SiteStats, String> {
    prepare(dir)?;
    let limits = ImageLimits::default();
    let mut order: Vec<&LoadedRecord> = match opts.sections {
        ReportSections::None => Vec::new(),
        _ => records.iter().collect(),
    };
    order.sort_by(|a, b| {
        (&a.system, &a.task_id, &a.judge_model, a.run).cmp(&(
            &b.system,
            &b.task_id,
            &b.judge_model,
            b.run,
        ))
    });
    if opts.sections == ReportSections::FirstRun {
        order.dedup_by(|later, first| {
            (&later.system, &later.task_id, &later.judge_model)
                == (&first.system, &first.task_id, &first.judge_model)
        });
    }
    let folder = PictureFolder::new(dir);
    let pages: Vec<Result<u64, String>> = order
        .par_iter()
        .enumerate()
        .map_init(
            || String::with_capacity(1 << 16),
            |page, (i, r)| {
                report_page(page, i, r, opts, &limits, &folder);
                write(dir, &report_page_path(r), page)
            },
        )
        .collect();
    let mut total_bytes = 0;
    for p in pages {
        total_bytes += p?;
    }
    for (system, records) in by_system(&order) {
        total_bytes += write(
            dir,
            &system_page_path(system),
            &system_page(system, records),
        )?;
    }
    total_bytes += write(dir, "style.css", STYLE)?;
    if opts.evidence == EvidenceEncoding::Packed {
        total_bytes += write(dir, SCRIPT_FILE, SCRIPT)?;
    }
    let mut extra = Vec::new();
    let index = index_page(summary, &order, records.len(), &mut extra);
    let index_bytes = write(dir, "index.html", &index)?;
    total_bytes += index_bytes;
    for page in &extra {
        // Pages of `levels/{judge}/`: two folders below the summary.
        let text = format!(
            "{}<p><a href=\"../../index.html\">&larr; summary</a></p>\n{}</body></html>\n",
            page_head(&page.title, "../../"),
            page.body
        );
        total_bytes += write(dir, &page.path, &text)?;
    }
    let pictures_dir = dir.join(super::pictures::PICTURES_DIR);
    if let Ok(entries) = std::fs::read_dir(&pictures_dir) {
        total_bytes += entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum::<u64>();
    }
    Ok(SiteStats {
        index: dir.join("index.html"),
        index_bytes,
        report_pages: order.len(),
        pictures: folder.count(),
        total_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_safe_and_distinct() {
        assert_eq!(safe_name("system-a"), "system-a");
        assert_eq!(safe_name("a b/c"), "a_20b_2fc");
        assert_eq!(safe_name(".."), "_2e.");
        assert_ne!(safe_name("a_20"), safe_name("a "));
    }

    #[test]
    fn a_folder_that_is_not_a_summary_is_never_emptied() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let e = prepare(dir.path()).unwrap_err();
        assert!(e.contains("not empty"), "{e}");
        assert!(dir.path().join("notes.txt").is_file());
        let old = dir.path().join("old");
        std::fs::create_dir_all(old.join("reports")).unwrap();
        std::fs::write(old.join("index.html"), page_head("x", "")).unwrap();
        prepare(&old).unwrap();
        assert!(!old.join("reports").exists());
    }
}
