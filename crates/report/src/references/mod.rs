//! Reference lists: where they are (headed sections, footnote definitions, headless
//! runs of `[N] ... URL` entries) and what each entry says (label, URL, title).
//!
//! This module owns the scan over the block list and the numbering of entries;
//! the line grammar and the block-level recognition are its submodules.

mod detect;
mod entry;

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::blocks::{Block, BlockKind, Inline, LineIndex};
use crate::cues::is_reference_heading;
use crate::model::{Reference, StructuralError};
use crate::urls::{clean_url, is_web_url, url_key, BARE_URL};

use detect::{
    annotated_entries, block_has_entry, block_lines, entry_like, first_url, has_url,
    label_paragraph, link_definitions, pandoc_entry, unlabeled_tail, url_entry_block,
    url_only_block, AnnotatedEntry, PandocEntry, SOURCE_WORD,
};
use entry::{inline_parse, strip_urls, tidy_title, EntryLine};

// The Markdown front end cuts paragraphs at entry lines.
pub(crate) use entry::parse_entry_line;

/// What the reference stage found.
#[derive(Debug, Default)]
pub(crate) struct ReferenceScan {
    pub references: Vec<Reference>,
    /// Blocks that belong to reference lists (they produce no facts).
    pub ref_blocks: HashSet<usize>,
    /// Whether the references were read from a list (as opposed to being none).
    pub has_list: bool,
    pub consistency: Vec<StructuralError>,
}

/// Find every reference list in the report and read its entries.
pub(crate) fn scan(
    blocks: &[Block],
    text: &str,
    lines: &LineIndex,
    from_html: bool,
) -> ReferenceScan {
    let mut in_region = vec![false; blocks.len()];
    // Annotated bibliographies (one sub-heading per source): their sections and
    // the entry each sub-heading gives, keyed by the sub-heading's block.
    let mut annotated: HashMap<usize, AnnotatedEntry> = HashMap::new();
    let mut annotated_sections: Vec<Range<usize>> = Vec::new();
    // 1. Sections under a reference heading (sub-headings stay inside).
    let mut i = 0;
    while i < blocks.len() {
        let b = &blocks[i];
        let heading_level = match &b.kind {
            BlockKind::Heading(l) if is_reference_heading(&b.plain_text()) => Some(*l),
            _ => None,
        };
        if let Some(level) = heading_level {
            in_region[i] = true;
            let mut j = i + 1;
            while j < blocks.len() {
                if let BlockKind::Heading(l) = blocks[j].kind {
                    if l <= level && !is_reference_heading(&blocks[j].plain_text()) {
                        break;
                    }
                }
                in_region[j] = true;
                j += 1;
            }
            if let Some(found) = annotated_entries(blocks, i + 1..j, text, from_html) {
                annotated_sections.push(i + 1..j);
                annotated.extend(found);
            }
            i = j;
        } else if matches!(b.kind, BlockKind::Paragraph)
            && (is_reference_heading(&b.plain_text()) || label_paragraph(b, text, from_html))
        {
            // A bold or plain line such as `**References**` or `参考文献：` heads a
            // list only if entries follow it (in the same paragraph or after it);
            // the list ends where entries stop.
            let mut j = i + 1;
            let mut skipped = 0;
            let mut found = label_paragraph(b, text, from_html);
            while j < blocks.len() {
                if block_has_entry(&blocks[j], text, from_html) {
                    found = true;
                } else if !found && skipped < 2 && !matches!(blocks[j].kind, BlockKind::Heading(_))
                {
                    skipped += 1;
                } else {
                    break;
                }
                j += 1;
            }
            if found {
                for r in in_region.iter_mut().take(j).skip(i) {
                    *r = true;
                }
                i = j;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    // 2. Headless runs: two or more consecutive `[N] ... URL` entries.
    let mut j = 0;
    while j < blocks.len() {
        if in_region[j] || entry_like(&blocks[j], text, from_html).is_none() {
            j += 1;
            continue;
        }
        let start = j;
        let mut entries = 0;
        let mut k = j;
        while k < blocks.len() {
            if entry_like(&blocks[k], text, from_html).is_some() {
                entries += 1;
            } else if url_only_block(&blocks[k], text, from_html).is_none() {
                break;
            }
            k += 1;
        }
        if entries >= 2 {
            for r in in_region.iter_mut().take(k).skip(start) {
                *r = true;
            }
        }
        j = k.max(j + 1);
    }

    // 2b. A section whose heading speaks of sources ("Official sources", "Most
    // useful references", "延伸阅读资料") and whose content is mostly URL entries,
    // or an annotated bibliography: one sub-heading per source, its URL on a line
    // of its own and notes on the source under it.
    let mut h = 0;
    while h < blocks.len() {
        let BlockKind::Heading(level) = blocks[h].kind else {
            h += 1;
            continue;
        };
        if in_region[h] || !SOURCE_WORD.is_match(&blocks[h].plain_text()) {
            h += 1;
            continue;
        }
        let mut end = h + 1;
        while end < blocks.len() && !matches!(blocks[end].kind, BlockKind::Heading(l) if l <= level)
        {
            end += 1;
        }
        let (mut entries, mut other) = (0, 0);
        let size = end - h - 1;
        for b in &blocks[h + 1..end] {
            if other * 3 > size {
                // Entries can no longer be two thirds of the section.
                break;
            }
            match b.kind {
                BlockKind::Paragraph | BlockKind::ListItem { .. } => {
                    if has_url(b) && url_entry_block(b, text, from_html) {
                        entries += 1;
                    } else {
                        other += 1;
                    }
                }
                BlockKind::Heading(_) => {}
                _ => other += 1,
            }
        }
        if entries >= 3 && entries >= 2 * other && !in_region[h..end].iter().any(|r| *r) {
            for r in in_region.iter_mut().take(end).skip(h) {
                *r = true;
            }
            h = end;
        } else if let Some(found) = (!in_region[h..end].iter().any(|r| *r))
            .then(|| annotated_entries(blocks, h + 1..end, text, from_html))
            .flatten()
        {
            for r in in_region.iter_mut().take(end).skip(h) {
                *r = true;
            }
            annotated_sections.push(h + 1..end);
            annotated.extend(found);
            h = end;
        } else {
            h += 1;
        }
    }

    // 2c. A pandoc export's source section: pairs of a citation-links-and-title
    // paragraph and a bare `<url>` paragraph, to the end of the report (one pair
    // suffices there: the shape is unmistakable).
    let mut pandoc: HashMap<usize, PandocEntry> = HashMap::new();
    {
        let mut k = blocks.len();
        while k >= 2 {
            match pandoc_entry(&blocks[k - 2], &blocks[k - 1], text) {
                Some(e) if !in_region[k - 2] && !in_region[k - 1] => {
                    pandoc.insert(k - 2, e);
                    in_region[k - 2] = true;
                    in_region[k - 1] = true;
                    k -= 2;
                }
                _ => break,
            }
        }
    }

    // 3. No label at all: a trailing run of numbered or bulleted entries that carry
    // URLs (after at most two closing remarks).
    if let Some(run) = unlabeled_tail(blocks, text, from_html, &in_region) {
        for r in in_region.iter_mut().take(run.end).skip(run.start) {
            *r = true;
        }
    }

    let mut scan = ReferenceScan::default();
    let mut collector = Collector::default();
    for (bi, block) in blocks.iter().enumerate() {
        if let Some(label) = &block.footnote {
            // Footnote definitions are entries wherever they sit.
            scan.ref_blocks.insert(bi);
            let raw = text.get(block.span.clone()).unwrap_or("");
            let (plain, links) = inline_parse(raw);
            let url = first_url(&plain, &links);
            let title = {
                let t = tidy_title(&strip_urls(&plain));
                (!t.is_empty()).then_some(t)
            };
            collector.push_labeled(
                vec![label.clone()],
                url,
                title,
                lines.line_of(block.span.start),
            );
            continue;
        }
        if !in_region[bi] {
            continue;
        }
        scan.ref_blocks.insert(bi);
        if let Some(e) = pandoc.remove(&bi) {
            let line = lines.line_of(block.span.start);
            collector.push_labeled(e.labels, Some(e.url), e.title, line);
            continue;
        }
        if bi > 0
            && text
                .get(block.span.clone())
                .is_some_and(|t| t.trim().starts_with('<'))
            && scan.ref_blocks.contains(&(bi - 1))
            && pandoc_entry(&blocks[bi - 1], block, text).is_some()
        {
            // The URL paragraph of a pandoc pair: read with its links line.
            continue;
        }
        if annotated_sections.iter().any(|r| r.contains(&bi)) {
            // One entry per sub-heading; the notes under it are not entries.
            if let Some(e) = annotated.remove(&bi) {
                let line = lines.line_of(block.span.start);
                match e.label {
                    Some(l) => collector.push_labeled(vec![l], Some(e.url), e.title, line),
                    None => collector.push_unnumbered(Some(e.url), e.title, line),
                }
            }
            continue;
        }
        match &block.kind {
            BlockKind::Heading(_) | BlockKind::Code { .. } | BlockKind::Figure { .. } => {}
            BlockKind::TableRow { header: true, .. } => {}
            BlockKind::TableRow { .. } => {
                let row = block.plain_text();
                let cells: Vec<&str> = row.split(" | ").map(str::trim).collect();
                let label = cells
                    .first()
                    .map(|c| c.trim_matches(|ch| ch == '[' || ch == ']'))
                    .filter(|c| !c.is_empty() && c.chars().all(|ch| ch.is_ascii_digit()));
                let url = block.inlines.iter().find_map(|i| match i {
                    Inline::Link { url, .. } if is_web_url(url) => Some(clean_url(url)),
                    _ => None,
                });
                let url = url.or_else(|| BARE_URL.find(&row).map(|m| clean_url(m.as_str())));
                let title = cells
                    .iter()
                    .skip(usize::from(label.is_some()))
                    .find(|c| !c.is_empty() && !is_web_url(c))
                    .map(|c| c.to_string());
                let line = lines.line_of(block.span.start);
                match label {
                    Some(l) => collector.push_labeled(vec![l.to_string()], url, title, line),
                    None if url.is_some() => collector.push_unnumbered(url, title, line),
                    None => {}
                }
            }
            _ => {
                let base_line = lines.line_of(block.span.start);
                // A title line without URL, then the URL alone on the next line.
                let mut pending_title: Option<String> = None;
                let lines_of_block = block_lines(block, text, from_html);
                for (off, line) in lines_of_block.iter().enumerate() {
                    let Some(mut entry) = parse_entry_line(line) else {
                        // An author-date entry with no link is an entry, unless
                        // the next line is its URL alone (then it is that URL's title).
                        let url_next = lines_of_block
                            .get(off + 1)
                            .and_then(|l| parse_entry_line(l))
                            .is_some_and(|e| e.url_only());
                        if let (false, Some(t)) = (url_next, entry::author_date_entry(line)) {
                            pending_title = None;
                            collector.push_unnumbered(None, Some(t), base_line + off);
                            continue;
                        }
                        let t = tidy_title(
                            &inline_parse(line.trim_start_matches(['-', '*', '+', ' '])).0,
                        );
                        pending_title = (!t.is_empty()).then_some(t);
                        continue;
                    };
                    if let Some(t) = pending_title.take() {
                        if entry.url_only() && collector.last_group_has_url() {
                            entry.title = Some(t);
                        }
                    }
                    collector.push_line(entry, base_line + off);
                }
            }
        }
    }
    // 4. Link reference definitions (`[3]: https://... "Title"`), which the Markdown
    // parser consumes without a trace: entries when their label is a number.
    if !from_html {
        for (line, label, url, title) in link_definitions(blocks, text, lines) {
            collector.push_labeled(vec![label], Some(url), title, line);
        }
    }
    scan.has_list = !collector.refs.is_empty();
    let (refs, errors) = collector.finish();
    scan.references = refs;
    scan.consistency = errors;
    scan
}

#[derive(Default)]
struct Collector {
    /// Entries in order; unnumbered ones have `idx` None until `finish`.
    refs: Vec<(Option<String>, Reference)>,
    /// Indices (into `refs`) of the last labelled group, which a following URL-only
    /// line completes.
    last_group: Vec<usize>,
}

impl Collector {
    fn push_labeled(
        &mut self,
        labels: Vec<String>,
        url: Option<String>,
        title: Option<String>,
        line: usize,
    ) {
        self.last_group.clear();
        for l in labels {
            self.last_group.push(self.refs.len());
            self.refs.push((
                Some(l.clone()),
                Reference {
                    idx: l,
                    url: url.clone(),
                    title: title.clone(),
                    line,
                },
            ));
        }
    }

    /// Whether a following URL-only line is a new entry rather than the URL of
    /// the last labelled group.
    fn last_group_has_url(&self) -> bool {
        self.last_group.is_empty()
            || self
                .last_group
                .iter()
                .any(|&g| self.refs[g].1.url.is_some())
    }

    fn push_unnumbered(&mut self, url: Option<String>, title: Option<String>, line: usize) {
        self.last_group.clear();
        self.refs.push((
            None,
            Reference {
                idx: String::new(),
                url,
                title,
                line,
            },
        ));
    }

    fn push_line(&mut self, entry: EntryLine, line: usize) {
        if entry.url_only() {
            let url = entry.url.clone();
            let group_missing = !self.last_group.is_empty()
                && self
                    .last_group
                    .iter()
                    .all(|&g| self.refs[g].1.url.is_none());
            if group_missing {
                for &g in &self.last_group {
                    self.refs[g].1.url = url.clone();
                }
                return;
            }
            // The URL repeated on the line after its entry (docx exports).
            if let Some(&g) = self.last_group.first() {
                if self.refs[g].1.url == url {
                    return;
                }
            }
            self.push_unnumbered(url, entry.title, line);
            return;
        }
        if entry.labels.is_empty() {
            self.push_unnumbered(entry.url, entry.title, line);
        } else {
            self.push_labeled(entry.labels, entry.url, entry.title, line);
        }
    }

    /// Number unnumbered entries (1, 2, ... when the report numbers nothing, else
    /// after the highest number), drop exact repeats (a report pasted twice) and
    /// report conflicting duplicates.
    fn finish(self) -> (Vec<Reference>, Vec<StructuralError>) {
        let max_numbered = self
            .refs
            .iter()
            .filter_map(|(l, _)| l.as_ref()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        let mut next = max_numbered + 1;
        let mut out: Vec<Reference> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut errors = Vec::new();
        let mut seen_unnumbered: HashSet<Option<String>> = HashSet::new();
        for (label, mut r) in self.refs {
            match label {
                Some(l) => r.idx = l,
                None => {
                    // The same unnumbered URL listed twice is one entry.
                    if r.url.is_some() && !seen_unnumbered.insert(r.url.as_deref().map(url_key)) {
                        continue;
                    }
                    r.idx = next.to_string();
                    next += 1;
                }
            }
            if let Some(&first) = seen.get(&r.idx) {
                // Several lists of the same entries (a title-only list and a URL
                // list, a list repeated in two sections) are one list: keep the URL
                // and title wherever they appear.
                let prev: &mut Reference = &mut out[first];
                match (&prev.url, &r.url) {
                    (None, Some(_)) => prev.url = r.url.clone(),
                    (Some(a), Some(b)) if url_key(a) != url_key(b) => {
                        errors.push(StructuralError {
                            code: "duplicate_reference_number".into(),
                            line: Some(r.line),
                            reason: format!(
                                "reference [{}] has two different URLs: line {} gives {} and line {} gives {}; the first is kept",
                                r.idx, prev.line, a, r.line, b
                            ),
                        });
                    }
                    _ => {}
                }
                if prev.title.is_none() {
                    prev.title = r.title.clone();
                }
                continue;
            }
            seen.insert(r.idx.clone(), out.len());
            out.push(r);
        }
        (out, errors)
    }
}
