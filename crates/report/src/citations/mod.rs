//! Citation markers and fact-citation pairs: each body unit (sentence, list-item
//! sentence, heading, table row or whole table) is flattened to text with a
//! sentinel where each marker sits, split into sentences, and every sentence with a
//! resolvable marker becomes a [`Fact`].
//!
//! This module owns the attachment of markers to facts; the grammar, the
//! resolution and the sentence splitting are its submodules.

mod byname;
mod markers;
mod resolve;
mod sentences;
mod spaced;

use std::collections::HashSet;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::blocks::{Block, BlockKind, LineIndex};
use crate::model::{Fact, StructuralError};

use markers::{cell_citations, cell_end_numerals, is_citation_column, Flat};
use sentences::{clean_fact_text, split_sentences};

// What the parser root and the figure stage use.
pub(crate) use byname::NameIndex;
pub(crate) use markers::{
    flatten, spaced_numerals, takes_spaced_marker, urls_in_order, Glued, RawCite, LABEL_NOUNS,
};
pub(crate) use resolve::{Resolved, Resolver};
pub(crate) use spaced::{latin_tail, named_numbers};

/// Inputs for fact extraction.
pub(crate) struct FactInput<'a> {
    pub blocks: &'a [Block],
    pub text: &'a str,
    pub lines: &'a LineIndex,
    /// Blocks that never produce facts (reference lists, captions, pseudo-visuals).
    pub excluded: &'a HashSet<usize>,
    pub resolver: &'a Resolver,
    pub allow_glued: Glued,
}

/// What fact extraction produced.
#[derive(Debug, Default)]
pub(crate) struct FactScan {
    pub facts: Vec<Fact>,
    /// Citations by name that named an entry.
    pub names_resolved: usize,
    /// Author-date shapes (a name and a year) that named no entry, as written.
    pub names_unresolved: Vec<String>,
    pub traceability: Vec<StructuralError>,
    pub consistency: Vec<StructuralError>,
}

static QUANTITATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[0-9](?:[0-9,.]*[0-9])?\s*(?:%|％|percent|per cent|百分点|倍|亿|万|千|million|billion|trillion|thousand|tons?|tonnes?|吨|元|美元|港元|欧元|kg|km|mb|gb|tb|bps|x(?-u:\b))|[$€£¥￥]\s?[0-9]|[0-9]+\.[0-9]+")
        .unwrap()
});

fn resolve_all(
    resolver: &Resolver,
    cites: &[RawCite],
    line: usize,
    dangling: &mut Vec<StructuralError>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in cites {
        match resolver.resolve(c) {
            Resolved::Ref(i) => {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
            // A marker naming no entry still makes its sentence a cited unit (CS
            // settles it as "no usable source"); the consistency error stays.
            Resolved::Dangling(i) => {
                dangling.push(StructuralError {
                    code: "marker_without_entry".into(),
                    line: Some(line),
                    reason: format!("citation marker [{i}] names no entry of the reference list"),
                });
                if !out.contains(&i) {
                    out.push(i);
                }
            }
            Resolved::NotACitation => {}
        }
    }
    out
}

/// Flatten a unit and turn its citations by name into markers; ambiguous ones
/// are reported with every candidate, unresolved author-date shapes counted.
fn flatten_unit(input: &FactInput<'_>, b: &Block, glued: Glued, scan: &mut FactScan) -> Flat {
    let mut flat = flatten(&b.inlines, glued);
    let named = byname::mark_names(&mut flat, input.resolver.name_index());
    if named.cites.is_empty() && named.unresolved.is_empty() {
        return flat;
    }
    let line = input.lines.line_of(b.span.start);
    for c in &named.cites {
        scan.names_resolved += 1;
        if c.ambiguous {
            scan.consistency.push(StructuralError {
                code: "ambiguous_citation".into(),
                line: Some(line),
                reason: format!(
                    "citation {} matches {} entries ([{}]); all of them are kept as candidates",
                    c.written,
                    c.idxs.len(),
                    c.idxs.join("], [")
                ),
            });
        }
    }
    scan.names_unresolved.extend(named.unresolved);
    flat
}

fn table_caption_like(b: &Block) -> bool {
    static CAP: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^[*_\s]*(table|tab\.|表|数据来源|资料来源|来源|source|sources|note)\s*[\d一二三四五六七八九十:：.]").unwrap()
    });
    // A "Note:" of several sentences (`Note: Revenue rose 10% [2]. Guidance is
    // flat [2].`) is a paragraph of claims with their own markers, not a caption.
    static NOTE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)^[*_\s]*note\b").unwrap());
    static SENTENCE_END: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[.!?。！？](?:\s*\[[^\]]*\])*\s+\S").unwrap());
    let text = b.plain_text();
    if NOTE.is_match(&text) && SENTENCE_END.is_match(&text) {
        return false;
    }
    matches!(b.kind, BlockKind::Paragraph) && CAP.is_match(&text)
}

/// Extract fact-citation pairs and the sentence-level structural errors.
pub(crate) fn extract_facts(input: &FactInput<'_>) -> FactScan {
    let mut scan = FactScan::default();
    let blocks = input.blocks;
    let mut i = 0;
    // The last body unit seen: markers standing alone cite it.
    let mut prev: Option<PrevUnit> = None;
    // The units of the list items right before the current block: a paragraph of
    // markers alone under a list cites every item of it.
    let mut list_run: Vec<PrevUnit> = Vec::new();
    // `uncited_quantitative` errors withdrawn because later markers cite the unit.
    let mut resolved_trace: HashSet<usize> = HashSet::new();
    while i < blocks.len() {
        let b = &blocks[i];
        if input.excluded.contains(&i) {
            i += 1;
            continue;
        }
        match &b.kind {
            BlockKind::TableRow { table, .. } => {
                prev = None;
                let table = *table;
                let start = i;
                while i < blocks.len()
                    && matches!(blocks[i].kind, BlockKind::TableRow { table: t, .. } if t == table)
                {
                    i += 1;
                }
                table_facts(input, start..i, &mut scan);
                continue;
            }
            BlockKind::Heading(_) => {
                prev = None;
                let flat = flatten_unit(input, b, input.allow_glued, &mut scan);
                let line = input.lines.line_of(b.span.start);
                let cites: Vec<RawCite> = flat.cites.iter().flatten().cloned().collect();
                let idxs = resolve_all(input.resolver, &cites, line, &mut scan.consistency);
                let text = clean_fact_text(&flat.text);
                if !idxs.is_empty() && !text.is_empty() {
                    scan.facts.push(Fact {
                        fact: text,
                        ref_idxs: idxs,
                        line,
                        span: b.span.clone(),
                    });
                }
            }
            BlockKind::Paragraph | BlockKind::ListItem { .. } => {
                // A caption-like line next to a table belongs to the table.
                let next_is_table = blocks
                    .get(i + 1)
                    .is_some_and(|n| matches!(n.kind, BlockKind::TableRow { .. }));
                let prev_is_table =
                    i > 0 && matches!(blocks[i - 1].kind, BlockKind::TableRow { .. });
                if (next_is_table || prev_is_table) && table_caption_like(b) {
                    i += 1;
                    continue;
                }
                let flat = flatten_unit(input, b, input.allow_glued, &mut scan);
                let sentences = split_sentences(&flat);
                let is_item = matches!(b.kind, BlockKind::ListItem { .. });
                let after_item = i > 0
                    && matches!(blocks[i - 1].kind, BlockKind::ListItem { .. })
                    && !input.excluded.contains(&(i - 1));
                if is_item && !after_item {
                    list_run.clear();
                }
                // `[1][2][3]` in a paragraph of its own under a list (ODR-style
                // writers): the markers cite each item of the list.
                if !is_item && after_item && list_run.len() > 1 && {
                    let text = clean_fact_text(&flat.text);
                    !flat.cites.is_empty()
                        && (text.chars().all(|c| !c.is_alphanumeric())
                            || LABEL_ONLY.is_match(&text))
                } {
                    let line = input.lines.line_of(b.span.start);
                    let cites: Vec<RawCite> = flat.cites.iter().flatten().cloned().collect();
                    let idxs = resolve_all(input.resolver, &cites, line, &mut scan.consistency);
                    if !idxs.is_empty() {
                        for u in list_run.iter_mut() {
                            let fi = match u.fact {
                                Some(fi) => fi,
                                None => {
                                    if let Some(t) = u.trace.take() {
                                        resolved_trace.insert(t);
                                    }
                                    scan.facts.push(Fact {
                                        fact: u.text.clone(),
                                        ref_idxs: Vec::new(),
                                        line: u.line,
                                        span: u.span.clone(),
                                    });
                                    u.fact = Some(scan.facts.len() - 1);
                                    scan.facts.len() - 1
                                }
                            };
                            let f = &mut scan.facts[fi];
                            for idx in &idxs {
                                if !f.ref_idxs.contains(idx) {
                                    f.ref_idxs.push(idx.clone());
                                }
                            }
                        }
                        prev = list_run.last().cloned();
                        list_run.clear();
                        i += 1;
                        continue;
                    }
                }
                if !is_item {
                    list_run.clear();
                }
                for s in sentences {
                    let src_start = flat.src(s.range.start);
                    let src_end = flat.src(s.range.end.saturating_sub(1)) + 1;
                    let line = input.lines.line_of(src_start);
                    let idxs = resolve_all(input.resolver, &s.cites, line, &mut scan.consistency);
                    let span = snap_to_chars(input.text, src_start..src_end.max(src_start));
                    let markers_alone = s.text.is_empty()
                        || s.text.chars().all(|c| !c.is_alphanumeric())
                        || LABEL_ONLY.is_match(&s.text);
                    // `URL: https://...`, `GitHub: https://...`: a line naming where a
                    // source is (annotated source lists), not a claim that cites it.
                    if url_label(&s.text, &s.cites) {
                        continue;
                    }
                    // `*Product URL:* [Title](url)` on its own line under the claim in
                    // the same item or paragraph: it names the claim's source.
                    let markers_alone = markers_alone
                        || prev.as_ref().is_some_and(|p| p.span.start >= b.span.start)
                            && s.cites.iter().all(|c| matches!(c, RawCite::Url(_)))
                            && link_label_line(input.text.get(span.clone()).unwrap_or(""));
                    if idxs.is_empty() {
                        if markers_alone {
                            continue;
                        }
                        let trace = (!s.text.is_empty() && QUANTITATIVE.is_match(&s.text))
                            .then_some(scan.traceability.len());
                        prev = Some(PrevUnit {
                            text: s.text.clone(),
                            line,
                            span: span.clone(),
                            fact: None,
                            trace,
                        });
                        if is_item {
                            list_run.extend(prev.clone());
                        }
                        if trace.is_some() {
                            scan.traceability.push(StructuralError {
                                code: "uncited_quantitative".into(),
                                line: Some(line),
                                reason: format!(
                                    "quantitative statement without a citation: {}",
                                    excerpt(&s.text)
                                ),
                            });
                        }
                        continue;
                    }
                    if markers_alone {
                        // Markers alone (after a line break, in their own paragraph,
                        // or behind a `Sources:` label): they cite the unit before.
                        let target = match prev.as_mut() {
                            Some(p) => match p.fact {
                                Some(fi) => Some(fi),
                                None => {
                                    if let Some(t) = p.trace.take() {
                                        resolved_trace.insert(t);
                                    }
                                    scan.facts.push(Fact {
                                        fact: p.text.clone(),
                                        ref_idxs: Vec::new(),
                                        line: p.line,
                                        span: p.span.clone(),
                                    });
                                    p.fact = Some(scan.facts.len() - 1);
                                    p.fact
                                }
                            },
                            None => scan.facts.len().checked_sub(1),
                        };
                        if let Some(fi) = target {
                            let f = &mut scan.facts[fi];
                            for idx in idxs {
                                if !f.ref_idxs.contains(&idx) {
                                    f.ref_idxs.push(idx);
                                }
                            }
                        }
                        // Keep the list's copy of that unit in step.
                        if let (Some(p), Some(l)) = (prev.as_ref(), list_run.last_mut()) {
                            if l.span == p.span {
                                l.fact = p.fact;
                                l.trace = p.trace;
                            }
                        }
                        continue;
                    }
                    prev = Some(PrevUnit {
                        text: s.text.clone(),
                        line,
                        span: span.clone(),
                        fact: Some(scan.facts.len()),
                        trace: None,
                    });
                    if is_item {
                        list_run.extend(prev.clone());
                    }
                    scan.facts.push(Fact {
                        fact: s.text,
                        ref_idxs: idxs,
                        line,
                        span,
                    });
                }
            }
            _ => {}
        }
        i += 1;
    }
    if !resolved_trace.is_empty() {
        let mut k = 0;
        scan.traceability.retain(|_| {
            k += 1;
            !resolved_trace.contains(&(k - 1))
        });
    }
    scan
}

/// A body unit already seen, which a following run of bare markers may cite.
#[derive(Clone)]
struct PrevUnit {
    text: String,
    line: usize,
    span: Range<usize>,
    /// Index of its fact, once it has one.
    fact: Option<usize>,
    /// Index of its `uncited_quantitative` error, if one was raised.
    trace: Option<usize>,
}

/// A unit that is only a source label before its markers (`Sources: [2][5]`).
/// A unit that is a short label ending in a colon and cites only by URL.
fn url_label(text: &str, cites: &[RawCite]) -> bool {
    let label = text.trim_end_matches([' ', '.']);
    !cites.is_empty()
        && cites.iter().all(|c| matches!(c, RawCite::Url(_)))
        && label.ends_with([':', '：'])
        && label.split_whitespace().count() <= 3
        && label.chars().filter(|c| c.is_alphanumeric()).count() <= 24
}

/// A line that is a short source label and links only (`*Product URL:* [Title](url)`,
/// `- **Source**: [Site](url), [Site](url)`), in Markdown source.
fn link_label_line(raw: &str) -> bool {
    let Some(c) = LINK_LABEL_LINE.captures(raw.trim()) else {
        return false;
    };
    let label = c.get(1).map_or("", |m| m.as_str());
    label.split_whitespace().count() <= 3 && SOURCE_LABEL_WORD.is_match(label)
}

static LINK_LABEL_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-*+]\s+)?[*_]{0,2}([^\s:：*_\[][^:：*_\[]{0,23}?)[*_]{0,2}\s*[:：]\s*[*_]{0,2}\s*(?:\[[^\]]*\]\([^)\s]*\)[\s,;，、]*)+$").unwrap()
});

static SOURCE_LABEL_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(?:url|link|source|sources|page|thread|web\s?site|site|reference|ref|via)(?-u:\b)|来源|链接|出处").unwrap()
});

static LABEL_ONLY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[(（\[]?\s*(sources?|refs?\.?|references?|citations?|cited|via|来源|资料来源|数据来源|信息来源|参考|参考文献|参考资料|出处|引用)\s*[:：]?\s*[)）\]]?\s*[.。]?$").unwrap()
});

/// Widen a byte range to char boundaries inside `text` (offsets mapped through
/// unescaped text can land inside a multi-byte character).
pub(crate) fn snap_to_chars(text: &str, r: Range<usize>) -> Range<usize> {
    let mut start = r.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = r.end.clamp(start, text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

fn excerpt(s: &str) -> String {
    let mut e: String = s.chars().take(80).collect();
    if s.chars().count() > 80 {
        e.push('…');
    }
    e
}

/// Facts of one table: a citation on a row makes a fact of that row; a citation in
/// a caption or source line next to the table makes one fact of the whole table.
fn table_facts(input: &FactInput<'_>, rows: Range<usize>, scan: &mut FactScan) {
    let blocks = input.blocks;
    let header = &blocks[rows.start];
    // A table whose header row is blank names its columns in the first body row.
    let header_text = header.plain_text();
    let blank = header_text.split(" | ").all(|c| c.trim().is_empty());
    let named = match blocks.get(rows.start + 1) {
        Some(first) if blank && rows.len() > 1 => first.plain_text(),
        _ => header_text,
    };
    let cite_col = if matches!(header.kind, BlockKind::TableRow { header: true, .. }) {
        named.split(" | ").position(is_citation_column)
    } else {
        None
    };
    let table_span = blocks[rows.start].span.start..blocks[rows.end - 1].span.end;
    let table_text: String = blocks[rows.clone()]
        .iter()
        .map(|b| b.plain_text())
        .collect::<Vec<_>>()
        .join("\n");
    // Whole-table citation from an adjacent caption/source line.
    for adj in [rows.start.checked_sub(1), Some(rows.end)]
        .into_iter()
        .flatten()
    {
        let Some(b) = blocks.get(adj) else { continue };
        if input.excluded.contains(&adj) || !table_caption_like(b) {
            continue;
        }
        let flat = flatten_unit(input, b, input.allow_glued, scan);
        let cites: Vec<RawCite> = flat.cites.iter().flatten().cloned().collect();
        let line = input.lines.line_of(table_span.start);
        let idxs = resolve_all(input.resolver, &cites, line, &mut scan.consistency);
        if !idxs.is_empty() {
            scan.facts.push(Fact {
                fact: table_text.clone(),
                ref_idxs: idxs,
                line,
                span: table_span.clone(),
            });
        }
    }
    for b in &blocks[rows.clone()] {
        let is_header = matches!(b.kind, BlockKind::TableRow { header: true, .. });
        // Spaced numerals (`…可能 7。`) cite in cells too, in reports written so.
        let spaced = input.allow_glued == Glued::Spaced;
        let glued = if spaced { Glued::Spaced } else { Glued::No };
        let flat = flatten_unit(input, b, glued, scan);
        let mut cites: Vec<RawCite> = flat.cites.iter().flatten().cloned().collect();
        let mut text = clean_fact_text(&flat.text);
        if spaced && !is_header {
            let mut cells: Vec<String> = text.split(" | ").map(str::to_string).collect();
            for cell in &mut cells {
                let named = |n: &String| {
                    matches!(
                        input.resolver.resolve(&RawCite::Weak(n.clone())),
                        Resolved::Ref(_)
                    )
                };
                // `Wi-Fi 7` in a cell is a name when the report writes it again.
                let name = |at: usize, n: &[String]| match n {
                    [one] if cell[..at].ends_with(|c: char| c.is_ascii_alphanumeric()) => {
                        let word = cell[..at].rsplit(' ').next().unwrap_or("");
                        input
                            .resolver
                            .resolve(&RawCite::AfterName(one.clone(), latin_tail(word)))
                            == Resolved::NotACitation
                    }
                    _ => false,
                };
                if let Some((at, nums)) =
                    cell_end_numerals(cell).filter(|(at, n)| n.iter().all(named) && !name(*at, n))
                {
                    cites.extend(nums.into_iter().map(RawCite::Weak));
                    cell.truncate(at);
                }
            }
            text = cells.join(" | ");
        }
        if let (Some(col), false) = (cite_col, is_header) {
            let row_text = b.plain_text();
            let cells: Vec<&str> = row_text.split(" | ").map(str::trim).collect();
            if let Some(cell) = cells.get(col) {
                if let Some(c) = cell_citations(cell) {
                    cites.extend(c);
                    let kept: Vec<&str> = cells
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| *k != col)
                        .map(|(_, c)| *c)
                        .collect();
                    text = kept.join(" | ");
                }
            }
        }
        if cites.is_empty() {
            continue;
        }
        let line = input.lines.line_of(b.span.start);
        let idxs = resolve_all(input.resolver, &cites, line, &mut scan.consistency);
        if !idxs.is_empty() && !text.is_empty() {
            scan.facts.push(Fact {
                fact: text,
                ref_idxs: idxs,
                line,
                span: b.span.clone(),
            });
        }
    }
}
