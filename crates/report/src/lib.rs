//! The report model and its deterministic parser for TVIR-Bench deep-research
//! reports. Give it a `report.md` or `report.html` (or a folder holding one) and it
//! returns a [`Report`]: the numbered reference list, the fact-citation pairs, the
//! figures with their captions and cited sources, and the structural errors. It
//! stands alone: anyone who needs citation extraction from a report can use this
//! crate without the rest of the suite.
//!
//! # Entry points and main types
//!
//! - [`load()`] reads a report folder or file (encoding, size limit, format) and
//!   parses it; [`parse_str`] parses text already in memory. Both are deterministic:
//!   the same input gives the same [`Report`]. Besides the report file they read
//!   only the folder's own script files an HTML page loads (bounded, never outside
//!   the folder), to see which elements those draw charts into.
//! - [`Report`] holds [`Reference`]s (the list entries), [`Fact`]s (a sentence and
//!   the entry numbers it cites), [`Figure`]s, [`PseudoVisual`]s (text diagrams),
//!   [`StructuralErrors`] and the parse's self-check, [`Extraction`] with its
//!   [`ExtractionVerdict`] (`ok` or `suspect`).
//! - [`ReportError`] is the only failure: an unreadable path, no report file, or a
//!   file over the size limit. Anything softer is a warning inside the report.
//! - [`output::ParseOutput`] is the `tvir parse --json` contract; [`gold`] scores
//!   a parse against a hand annotation.
//!
//! The example `facts` prints a report's references, facts and figures:
//! `cargo run -p tvir-report --example facts -- examples/system-a/ex001/report.md`.
//!
//! # How it parses
//!
//! Source text -> leaf blocks (Markdown via pulldown-cmark, HTML via scraper, HTML
//! blocks inside Markdown via the HTML path) -> reference lists -> figures
//! (captions, context, kind) -> fact-citation pairs -> structural errors. Inside,
//! the front ends (`markdown`, `html`) build on `blocks` and `cues`; the stages
//! (`references`, `figures`, `citations`, `extraction`) read the blocks; no module
//! names one that names it back.
//!
//! # What it must never depend on
//!
//! No network, no async runtime, no judge or model call, and no other `tvir-*`
//! crate: the other stages depend on this one, never the reverse. Its
//! dependencies are parsing and serialisation libraries only.

mod blocks;
mod citations;
mod cues;
mod extraction;
mod figures;
pub mod gold;
mod html;
mod jsx;
mod language;
pub mod load;
mod markdown;
pub mod model;
pub mod output;
mod page_scripts;
mod references;
pub mod render;
mod render_map;
mod residue;
mod slice;
mod urls;

pub use language::detect_language;
pub use model::*;
pub use urls::is_uploaded_file;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use blocks::{Block, BlockKind, Inline, LineIndex};
use citations::{flatten, FactInput, Glued, NameIndex, RawCite, Resolved, Resolver};

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
/// messages; `root` is where relative figure paths resolve and where the page's
/// own script files (`<script src="app.js">`) are read from.
pub fn parse_str(text: &str, format: SourceFormat, path: &Path, root: &Path) -> Report {
    parse_inner(text, format, path, root, None)
}

/// The 1-based line of each byte offset of `text` (built once, asked many times).
pub fn line_index(text: &str) -> impl Fn(usize) -> usize + '_ {
    let index = LineIndex::new(text);
    move |at| index.line_of(at)
}

/// [`parse_str`] after a browser rendered the report's [`render::RenderPlan`]: every
/// chart in `renders` (by the offset of its anchor element) is a figure of kind
/// `chart` with `render: "browser"`, at the place its element stands, captioned and
/// placed in context exactly as an `<img>` there would be (its configured title as
/// the caption of last resort). Deterministic like [`parse_str`].
pub fn parse_rendered(
    text: &str,
    format: SourceFormat,
    path: &Path,
    root: &Path,
    renders: &render::RenderMap,
) -> Report {
    parse_inner(text, format, path, root, Some(renders))
}

fn parse_inner(
    text: &str,
    format: SourceFormat,
    path: &Path,
    root: &Path,
    renders: Option<&render::RenderMap>,
) -> Report {
    // A `.md` whose content is an HTML page is read as the page it is.
    let format = match format {
        SourceFormat::Markdown if html::looks_like_document(text) => SourceFormat::Html,
        f => f,
    };
    // Which elements the page's own script files draw into, like its inline scripts.
    let scripts = page_scripts::folder_scripts(text, root);
    let mut blocks = match format {
        SourceFormat::Markdown => markdown::split_line_paragraphs(
            markdown::blocks_from_markdown_with_html(text, renders, &scripts),
            text,
        ),
        SourceFormat::Html => html::blocks_from_document(text, renders, &scripts),
    };
    if let Some(map) = renders {
        render_map::apply(&mut blocks, map);
    }
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
    // Next to a list, an inline link that names no entry is a new entry after the
    // list's last number.
    if has_list {
        append_link_entries(&blocks, &body, &lines, &mut refscan.references);
    }
    let body_texts: Vec<String> = body.iter().map(|&i| blocks[i].plain_text()).collect();
    let titles = refscan.references.iter().filter_map(|r| r.title.as_deref());
    let names = citations::named_numbers(body_texts.iter().map(String::as_str), titles);
    let mut resolver = Resolver::new(&refscan.references, has_list).with_names(names);
    if has_list {
        resolver = resolver.with_name_index(NameIndex::new(&refscan.references, text));
    }
    // Bare numerals glued to sentence ends count only in reports that use no
    // explicit marker that resolves (Gemini's style); elsewhere they are numbers.
    // A report whose math or tables were mangled may carry a few explicit markers
    // among hundreds of glued ones: the glued style wins when it is four times as
    // frequent.
    // Numerals a space before the period (`from the diet 2.`, `している 1。`) only
    // where a report writes them again and again and every one names an entry: a
    // lone number before a period is usually a quantity. They count with the glued
    // ones against the explicit markers (a Japanese Gemini export writes only these,
    // and a stray `[1-9]` in its text must not switch them off).
    let spaced = if has_list {
        spaced_markers(&blocks, &body, &resolver)
    } else {
        0
    };
    let allow_glued = has_list && {
        let (explicit, glued) = marker_styles(&blocks, &body, &resolver);
        let glued = glued + spaced;
        explicit == 0 || (glued >= 20 && glued >= 4 * explicit)
    };
    let allow_glued = match allow_glued {
        false => Glued::No,
        true if spaced >= 5 => Glued::Spaced,
        true => Glued::Tight,
    };

    let figscan = figures::extract_figures(&figures::FigureInput {
        blocks: &blocks,
        text,
        lines: &lines,
        root,
        ref_blocks: &refscan.ref_blocks,
        resolver: &resolver,
        renders,
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
    let mut repeat_spans = Vec::new();
    facts.retain(|f| {
        let first = seen.insert((f.fact.clone(), f.ref_idxs.clone()));
        if !first {
            repeat_spans.push(f.span.clone());
        }
        first
    });

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

    let language = detect_language(&body_texts.iter().fold(String::new(), |mut s, t| {
        s.push_str(t);
        s.push('\n');
        s
    }));
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
        repeat_spans,
        figures: &figscan.figures,
        errors: &errors,
        spaced_dialect: allow_glued == Glued::Spaced,
        names_resolved: factscan.names_resolved,
        names_unresolved: &factscan.names_unresolved,
        mention_names: resolver.name_index().mention_names(),
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

/// The inlines whose links can cite a page: a figure's caption (`Data: <a
/// href=url>operator</a>`) as well as a block's own content.
fn citing_inlines(b: &Block) -> std::borrow::Cow<'_, [Inline]> {
    match &b.kind {
        BlockKind::Figure {
            caption: Some(c), ..
        } if !c.is_empty() => {
            let mut all = b.inlines.clone();
            all.extend(c.iter().cloned());
            std::borrow::Cow::Owned(all)
        }
        _ => std::borrow::Cow::Borrowed(&b.inlines),
    }
}

fn references_from_links(blocks: &[Block], body: &[usize], lines: &LineIndex) -> Vec<Reference> {
    let mut first_line: HashMap<String, usize> = HashMap::new();
    let mut flats = Vec::new();
    for &i in body {
        let f = flatten(&citing_inlines(&blocks[i]), Glued::No);
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

/// Inline links (and bare URLs) in the body whose page is not in the reference
/// list become entries numbered after the list's highest number, in order of first
/// appearance, titled by the link text. Links to the report's own figures are not
/// sources (links to images and anchors never reach here as citations).
fn append_link_entries(
    blocks: &[Block],
    body: &[usize],
    lines: &LineIndex,
    refs: &mut Vec<Reference>,
) {
    let mut known: HashSet<String> = refs
        .iter()
        .filter_map(|r| r.url.as_deref().map(urls::url_key))
        .collect();
    let idxs: HashSet<String> = refs.iter().map(|r| r.idx.clone()).collect();
    let figure_pages: HashSet<String> = blocks
        .iter()
        .flat_map(|b| b.images())
        .filter_map(|i| match i {
            Inline::Image { src, .. } => Some(urls::url_key(src)),
            _ => None,
        })
        .collect();
    let mut next = refs
        .iter()
        .filter_map(|r| r.idx.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    for &i in body {
        let b = &blocks[i];
        let inlines = citing_inlines(b);
        // Only blocks that hold a link or a URL can add an entry.
        let has_url = inlines.iter().any(|inl| match inl {
            Inline::Link { .. } => true,
            Inline::Text { text, .. } => urls::BARE_URL.is_match(text),
            _ => false,
        });
        if !has_url {
            continue;
        }
        let f = flatten(&inlines, Glued::No);
        for c in f.cites.iter().flatten() {
            let url = match c {
                RawCite::Url(u) => u,
                RawCite::Linked(n, u) if !idxs.contains(n) => u,
                _ => continue,
            };
            let key = urls::url_key(url);
            if figure_pages.contains(&key) || !known.insert(key.clone()) {
                continue;
            }
            let title = inlines.iter().find_map(|inl| match inl {
                Inline::Link { url: u, text, .. }
                    if urls::url_key(u) == key && !urls::is_web_url(text) =>
                {
                    Some(text.trim().to_string()).filter(|t| !t.is_empty())
                }
                _ => None,
            });
            refs.push(Reference {
                idx: next.to_string(),
                url: Some(url.clone()),
                title,
                line: lines.line_of(b.span.start),
            });
            next += 1;
        }
    }
}

/// How many explicit markers (`[3]`, `[^3]`, numbered links) and how many glued
/// numerals (`offspring.1`) of the body name an entry of the list.
fn marker_styles(blocks: &[Block], body: &[usize], resolver: &Resolver) -> (usize, usize) {
    let (mut explicit, mut glued) = (0, 0);
    for &i in body {
        for c in flatten(&blocks[i].inlines, Glued::Tight)
            .cites
            .iter()
            .flatten()
        {
            let resolves = || matches!(resolver.resolve(c), Resolved::Ref(_));
            match c {
                RawCite::Num(_) | RawCite::Foot(_) | RawCite::Linked(_, _) if resolves() => {
                    explicit += 1
                }
                RawCite::Weak(_) if resolves() => glued += 1,
                _ => {}
            }
        }
        if explicit > 0 && glued == 0 && explicit >= 50 {
            // Plainly the explicit style; no need to read further.
            break;
        }
    }
    (explicit, glued)
}

/// How many `word N.` citations a report writes whose numbers all name an entry,
/// or 0 when more than a fifth of such numerals name none (then they are
/// quantities, and so may the rest be).
fn spaced_markers(blocks: &[Block], body: &[usize], resolver: &Resolver) -> usize {
    let (mut named, mut unnamed) = (0, 0);
    for &i in body {
        for (_, nums) in citations::spaced_numerals(&blocks[i].plain_text()) {
            let resolves = |x: &String| {
                matches!(
                    resolver.resolve(&RawCite::Weak(x.clone())),
                    Resolved::Ref(_)
                )
            };
            if nums.iter().all(resolves) {
                named += 1;
            } else {
                unnamed += 1;
            }
        }
    }
    if named >= 4 * unnamed {
        named
    } else {
        0
    }
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
