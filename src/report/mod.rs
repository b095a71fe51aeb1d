//! Loading and deterministic parsing of a report into the [`Report`] model:
//! reference entries, fact-citation pairs, figures and structural errors.
//!
//! The pipeline: source text -> leaf blocks (Markdown via pulldown-cmark, HTML via
//! scraper, HTML blocks inside Markdown via the HTML path) -> reference lists ->
//! figures (captions, context, kind) -> fact-citation pairs -> structural errors.

mod blocks;
mod citations;
mod extraction;
mod figures;
pub mod gold;
mod html;
mod language;
pub mod load;
pub mod model;
pub mod output;
mod references;
mod urls;

pub use language::detect_language;
pub use model::*;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use blocks::{Block, BlockKind, LineIndex};
use citations::{flatten, FactInput, RawCite, Resolved, Resolver};

/// Errors that stop a report from being parsed at all (anything softer is a warning
/// or a structural error inside the [`Report`]).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("{path}: no report.md or report.html in this folder")]
    NoReportFile { path: String },
    #[error("{path}: report is {size} bytes, over the {limit}-byte limit")]
    TooLarge { path: String, size: u64, limit: u64 },
}

/// Load and parse a report folder (`report.md` or `report.html`) or a single file.
pub fn load(path: &Path) -> Result<Report, ReportError> {
    let src = load::read_source(path)?;
    let mut report = parse_str(&src.text, src.format, &src.path, &src.root);
    report.warnings.splice(0..0, src.warnings);
    Ok(report)
}

/// Parse report text that is already in memory. `path` names the report in
/// messages; `root` is where relative figure paths resolve.
pub fn parse_str(text: &str, format: SourceFormat, path: &Path, root: &Path) -> Report {
    let blocks = match format {
        SourceFormat::Markdown => blocks::blocks_from_markdown(text),
        SourceFormat::Html => html::blocks_from_document(text),
    };
    let lines = LineIndex::new(text);
    let mut refscan = references::scan(&blocks, text, &lines, format == SourceFormat::Html);
    let body: Vec<usize> = (0..blocks.len())
        .filter(|i| {
            !refscan.ref_blocks.contains(i) && !matches!(blocks[*i].kind, BlockKind::Code { .. })
        })
        .collect();

    // A report with no list: one reference per distinct cited URL, in order.
    if refscan.references.is_empty() {
        refscan.references = references_from_links(&blocks, &body, &lines);
    }
    let has_list = refscan.has_list;
    let resolver = Resolver::new(&refscan.references, has_list);
    // Bare numerals glued to sentence ends count only in reports that use no
    // explicit marker that resolves (Gemini's style); elsewhere they are numbers.
    let allow_glued = has_list && !explicit_markers_resolve(&blocks, &body, &resolver);

    let figscan = figures::extract_figures(&figures::FigureInput {
        blocks: &blocks,
        text,
        lines: &lines,
        root,
        ref_blocks: &refscan.ref_blocks,
        resolver: &resolver,
    });
    let mut excluded: HashSet<usize> = refscan.ref_blocks.clone();
    excluded.extend(figscan.non_fact_blocks.iter().copied());
    let factscan = citations::extract_facts(&FactInput {
        blocks: &blocks,
        text,
        lines: &lines,
        excluded: &excluded,
        resolver: &resolver,
        allow_glued,
    });

    let mut facts = factscan.facts;
    // A report pasted twice repeats its sentences verbatim; keep the first.
    let mut seen = HashSet::new();
    facts.retain(|f| seen.insert((f.fact.clone(), f.ref_idxs.clone())));

    let mut errors = StructuralErrors::default();
    errors.traceability.extend(factscan.traceability);
    errors.traceability.extend(figscan.traceability);
    errors.traceability.extend(citations_without_url(
        &facts,
        &figscan.figures,
        &refscan.references,
    ));
    errors.consistency.extend(refscan.consistency);
    errors
        .consistency
        .extend(merge_dangling(factscan.consistency));
    errors
        .consistency
        .extend(missing_reference_numbers(&refscan.references, has_list));
    errors.consistency.extend(figscan.consistency);
    errors.completeness.extend(figscan.completeness);
    for list in [
        &mut errors.traceability,
        &mut errors.consistency,
        &mut errors.completeness,
    ] {
        list.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
    }

    let language = detect_language(&body_text(&blocks, &body));
    let extraction = extraction::check(&extraction::CheckInput {
        text,
        format,
        has_list,
        list_spans: refscan
            .ref_blocks
            .iter()
            .map(|&i| blocks[i].span.clone())
            .collect(),
        skip_spans: blocks
            .iter()
            .filter(|b| matches!(b.kind, BlockKind::Code { .. }))
            .map(|b| b.span.clone())
            .collect(),
        references: &refscan.references,
        facts: &facts,
        figures: &figscan.figures,
        errors: &errors,
    });
    Report {
        path: path.to_path_buf(),
        root: root.to_path_buf(),
        format,
        text: text.to_string(),
        language,
        references: refscan.references,
        facts,
        figures: figscan.figures,
        pseudo_visuals: figscan.pseudo_visuals,
        structural_errors: errors,
        warnings: Vec::new(),
        extraction,
    }
}

fn body_text(blocks: &[Block], body: &[usize]) -> String {
    let mut s = String::new();
    for &i in body {
        s.push_str(&blocks[i].plain_text());
        s.push('\n');
    }
    s
}

fn references_from_links(blocks: &[Block], body: &[usize], lines: &LineIndex) -> Vec<Reference> {
    let mut first_line: HashMap<String, usize> = HashMap::new();
    let mut flats = Vec::new();
    for &i in body {
        let f = flatten(&blocks[i].inlines, false);
        for group in &f.cites {
            for c in group {
                if let RawCite::Url(u) | RawCite::Linked(_, u) = c {
                    first_line
                        .entry(urls::url_key(u))
                        .or_insert_with(|| lines.line_of(blocks[i].span.start));
                }
            }
        }
        flats.push(f);
    }
    citations::urls_in_order(&flats)
        .into_iter()
        .enumerate()
        .map(|(n, url)| Reference {
            idx: (n + 1).to_string(),
            line: first_line.get(&urls::url_key(&url)).copied().unwrap_or(1),
            url: Some(url),
            title: None,
        })
        .collect()
}

fn explicit_markers_resolve(blocks: &[Block], body: &[usize], resolver: &Resolver) -> bool {
    body.iter().any(|&i| {
        flatten(&blocks[i].inlines, false)
            .cites
            .iter()
            .flatten()
            .any(|c| {
                matches!(
                    c,
                    RawCite::Num(_) | RawCite::Foot(_) | RawCite::Linked(_, _)
                ) && matches!(resolver.resolve(c), Resolved::Ref(_))
            })
    })
}

/// One error per absent entry, with where it is first cited and how often.
fn merge_dangling(errors: Vec<StructuralError>) -> Vec<StructuralError> {
    let mut order: Vec<String> = Vec::new();
    let mut by_reason: HashMap<String, (StructuralError, usize)> = HashMap::new();
    for e in errors {
        match by_reason.get_mut(&e.reason) {
            Some((_, n)) => *n += 1,
            None => {
                order.push(e.reason.clone());
                by_reason.insert(e.reason.clone(), (e, 1));
            }
        }
    }
    order
        .into_iter()
        .filter_map(|r| by_reason.remove(&r))
        .map(|(mut e, n)| {
            if n > 1 {
                e.reason = format!("{} ({n} times, first here)", e.reason);
            }
            e
        })
        .collect()
}

fn missing_reference_numbers(refs: &[Reference], has_list: bool) -> Vec<StructuralError> {
    if !has_list {
        return Vec::new();
    }
    let nums: HashSet<u64> = refs.iter().filter_map(|r| r.idx.parse().ok()).collect();
    let Some(&max) = nums.iter().max() else {
        return Vec::new();
    };
    if max > 5000 {
        return Vec::new();
    }
    let missing: Vec<String> = (1..max)
        .filter(|n| !nums.contains(n))
        .map(|n| n.to_string())
        .collect();
    if missing.is_empty() {
        return Vec::new();
    }
    vec![StructuralError {
        code: "missing_reference_numbers".into(),
        line: refs.first().map(|r| r.line),
        reason: format!(
            "reference list skips number(s) {} (highest is {max})",
            missing.join(", ")
        ),
    }]
}

fn citations_without_url(
    facts: &[Fact],
    figures: &[Figure],
    refs: &[Reference],
) -> Vec<StructuralError> {
    let no_url: HashSet<&str> = refs
        .iter()
        .filter(|r| r.url.as_deref().is_none_or(|u| u.trim().is_empty()))
        .map(|r| r.idx.as_str())
        .collect();
    let mut reported = HashSet::new();
    let mut out = Vec::new();
    let cited = facts
        .iter()
        .map(|f| (&f.ref_idxs, f.line))
        .chain(figures.iter().map(|f| (&f.ref_idxs, f.line)));
    for (idxs, line) in cited {
        for i in idxs {
            if no_url.contains(i.as_str()) && reported.insert(i.clone()) {
                out.push(StructuralError {
                    code: "citation_without_url".into(),
                    line: Some(line),
                    reason: format!("cited reference [{i}] has no URL to check it against"),
                });
            }
        }
    }
    out
}
