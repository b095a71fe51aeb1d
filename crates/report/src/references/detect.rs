//! Block-level recognition of entries: which blocks hold a labelled entry or a
//! URL-only line, annotated entries under headings, an unlabeled tail of URLs after
//! a list, and Markdown link definitions.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::blocks::{Block, BlockKind, Inline, LineIndex};
use crate::cues::is_reference_heading;
use crate::urls::{clean_url, is_web_url, loose_links, BARE_URL};

use super::entry::{
    inline_parse, parse_entry_line, strip_urls, tidy_title, EntryLine, ANCHOR_TAG, BRACKET_LABEL,
    BULLET, FOOTNOTE_LABEL, LENTICULAR_LABEL, NUMBER_LABEL, PAREN_LABEL,
};

/// A block that starts with a reference label and carries (or is followed by) a URL,
/// the shape of headless reference lists.
pub(super) fn entry_like(block: &Block, text: &str, from_html: bool) -> Option<EntryLine> {
    if !matches!(
        block.kind,
        BlockKind::Paragraph | BlockKind::ListItem { .. }
    ) {
        return None;
    }
    let lines = block_lines(block, text, from_html);
    let first = lines.first()?;
    let trimmed = ANCHOR_TAG.replace(first.trim_start(), "");
    if !(BRACKET_LABEL.is_match(&trimmed)
        || FOOTNOTE_LABEL.is_match(&trimmed)
        || LENTICULAR_LABEL.is_match(&trimmed))
    {
        return None;
    }
    parse_entry_line(first).filter(|e| !e.labels.is_empty())
}

pub(super) fn url_only_block(block: &Block, text: &str, from_html: bool) -> Option<String> {
    if !matches!(block.kind, BlockKind::Paragraph) {
        return None;
    }
    let lines = block_lines(block, text, from_html);
    let raw = lines.first()?.trim();
    if raw.contains(char::is_whitespace) {
        return None;
    }
    let e = parse_entry_line(raw)?;
    if e.url_only() {
        e.url
    } else {
        None
    }
}

/// The lines of a block as reference-entry candidates: the Markdown source lines,
/// or for HTML (whose source lines are tags) the block's content rewritten as
/// Markdown-like text with `[text](url)` links.
pub(super) fn block_lines(block: &Block, text: &str, from_html: bool) -> Vec<String> {
    if !from_html && !block.from_html {
        return text
            .get(block.span.clone())
            .unwrap_or("")
            .lines()
            .map(str::to_string)
            .collect();
    }
    let mut out = vec![String::new()];
    for inline in &block.inlines {
        let cur = out.last_mut().expect("never empty");
        match inline {
            Inline::Text { text, .. } | Inline::Code { text, .. } => cur.push_str(text),
            Inline::Link { url, text, .. } => {
                cur.push_str(&format!("[{}](<{}>)", text.replace(['[', ']'], ""), url));
            }
            Inline::FootnoteRef { label, .. } => cur.push_str(&format!("[^{label}]")),
            Inline::CellSep => cur.push_str(" | "),
            Inline::Break { .. } => out.push(String::new()),
            Inline::Image { .. } => {}
        }
    }
    out
}

/// Whether any line of a block reads as a reference entry.
pub(super) fn block_has_entry(block: &Block, text: &str, from_html: bool) -> bool {
    if !matches!(
        block.kind,
        BlockKind::Paragraph | BlockKind::ListItem { .. } | BlockKind::TableRow { .. }
    ) {
        return false;
    }
    block_lines(block, text, from_html)
        .iter()
        .any(|l| parse_entry_line(l).is_some())
}

/// A paragraph whose first line is a reference label and whose next lines are
/// entries (`Citations:` then `[1] https://...` lines, with no blank line between).
pub(super) fn label_paragraph(block: &Block, text: &str, from_html: bool) -> bool {
    let plain = block.plain_text();
    let Some(first) = plain.lines().next() else {
        return false;
    };
    if plain.lines().nth(1).is_none() || !is_reference_heading(first) {
        return false;
    }
    block_lines(block, text, from_html)
        .iter()
        .skip(1)
        .any(|l| parse_entry_line(l).is_some())
}

/// Whether one line reads as a reference entry that shows its URL: a bare URL, a
/// link whose text is the URL, or an entry that is one link and little else
/// (`- [Title](url)`, `2. [Title](url), 2024`). Body sentences that cite with an
/// inline link (`Sales rose ([site](url)).`) are not entries.
/// In a paragraph (not a list item) the line must also start with a label such
/// as `[3]` or `3.`, or hold little besides its link.
pub(super) fn url_entry_line(line: &str, paragraph: bool) -> bool {
    let Some(entry) = parse_entry_line(line) else {
        return false;
    };
    if entry.url.is_none() {
        return false;
    }
    let mut s = line.trim();
    s = &s[BULLET.find(s).map(|m| m.end()).unwrap_or(0)..];
    let mut labelled = false;
    for re in [
        &*BRACKET_LABEL,
        &*NUMBER_LABEL,
        &*LENTICULAR_LABEL,
        &*PAREN_LABEL,
    ] {
        if let Some(m) = re.find(s) {
            s = &s[m.end()..];
            labelled = true;
            break;
        }
    }
    // Citation tags (`[网页: URL]`) cite; they do not show an entry's URL.
    let untagged = URL_TAG.replace_all(s, "");
    let s: &str = &untagged;
    // Links the Markdown parser refused (spaces in the target) count as links.
    let mut owned = String::new();
    let mut last = 0;
    let mut links = Vec::new();
    for l in loose_links(s) {
        owned.push_str(crate::slice::cut(s, last, l.range.start));
        owned.push_str(&l.text);
        links.push((l.url, l.text));
        last = l.range.end;
    }
    owned.push_str(crate::slice::from(s, last));
    let (plain, parsed) = inline_parse(&owned);
    links.extend(parsed);
    let mut rest = BARE_URL.replace_all(&plain, "").into_owned();
    let mut visible = rest.len() != plain.len();
    for (url, t) in &links {
        if is_web_url(t) {
            visible = true;
        }
        if is_web_url(url) {
            rest = rest.replacen(t.as_str(), "", 1);
        }
    }
    if !visible && !links.iter().any(|(u, _)| is_web_url(u)) {
        return false;
    }
    let cjk = rest.chars().filter(|&c| crate::language::is_cjk(c)).count();
    let latin = rest
        .chars()
        .filter(|&c| c.is_alphabetic() && !crate::language::is_cjk(c))
        .count();
    let short = latin <= 12 && cjk <= 6;
    if paragraph && !labelled {
        return short;
    }
    visible || short
}

pub(super) static URL_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\[(?:网页|网站|网址|来源|链接|参考|source|web|url|link)\s*[:：]\s*[^\]\s]+\]")
        .unwrap()
});

pub(super) static SOURCE_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(sources?|references?|bibliography|citations?|reading|resources|links|literature)(?-u:\b)|来源|参考|文献|资料|链接|出处").unwrap()
});

/// One source of an annotated bibliography: its sub-heading's number and title and
/// the URL given under it.
pub(super) struct AnnotatedEntry {
    pub(super) label: Option<String>,
    pub(super) title: Option<String>,
    pub(super) url: String,
}

pub(super) static ENTRY_HEADING_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:\\?\[(\d{1,4})\\?\]|(\d{1,4})[.)、:：]?|\((\d{1,4})\))\s+").unwrap()
});

/// Sources written as sub-sections (`### 1) Title`, a `URL: ...` line, then notes
/// on the source): entries by sub-heading when at least three sub-headings, and
/// two thirds of them, give a URL within their first blocks. Keyed by the
/// sub-heading's block.
pub(super) fn annotated_entries(
    blocks: &[Block],
    section: Range<usize>,
    text: &str,
    from_html: bool,
) -> Option<HashMap<usize, AnnotatedEntry>> {
    let level = section
        .clone()
        .filter_map(|i| match blocks[i].kind {
            BlockKind::Heading(l) => Some(l),
            _ => None,
        })
        .min()?;
    let heads: Vec<usize> = section
        .clone()
        .filter(|&i| blocks[i].kind == BlockKind::Heading(level))
        .collect();
    if heads.len() < 3 {
        return None;
    }
    let mut out = HashMap::new();
    for (k, &hd) in heads.iter().enumerate() {
        let stop = heads.get(k + 1).copied().unwrap_or(section.end);
        // A sub-section listing several entries is a category of a plain list
        // ("### Papers", "### Datasets"), not one annotated source.
        let listed = blocks[hd + 1..stop]
            .iter()
            .filter(|b| {
                url_entry_block(b, text, from_html) || entry_like(b, text, from_html).is_some()
            })
            .count();
        if listed > 1 {
            return None;
        }
        // The URL comes with the source's description, before its notes, on a line
        // of its own (`URL: https://...`, `Link: [Title](https://...)`); a sentence
        // carrying a citation link is a report section, not an entry.
        let url = blocks[hd + 1..stop]
            .iter()
            .filter(|b| !matches!(b.kind, BlockKind::Heading(_)))
            .take(3)
            .find_map(|b| url_line(b, text, from_html));
        let Some(url) = url else { continue };
        let heading = blocks[hd].plain_text();
        let caps = ENTRY_HEADING_NUMBER.captures(&heading);
        let label = caps.as_ref().and_then(|c| {
            c.get(1)
                .or_else(|| c.get(2))
                .or_else(|| c.get(3))
                .map(|m| m.as_str().trim_start_matches('0').to_string())
                .filter(|l| !l.is_empty())
        });
        let rest = caps.map_or(heading.as_str(), |c| {
            &heading[c.get(0).map_or(0, |m| m.end())..]
        });
        let title = tidy_title(rest);
        out.insert(
            hd,
            AnnotatedEntry {
                label,
                title: (!title.is_empty()).then_some(title),
                url,
            },
        );
    }
    (out.len() >= 3 && out.len() * 3 >= heads.len() * 2).then_some(out)
}

/// The first web link of a parsed line, else the first bare URL in its text.
pub(super) fn first_url(plain: &str, links: &[(String, String)]) -> Option<String> {
    links
        .iter()
        .find(|(u, _)| is_web_url(u))
        .map(|(u, _)| clean_url(u))
        .or_else(|| BARE_URL.find(plain).map(|m| clean_url(m.as_str())))
}

/// The URL of a block line that is a URL and at most a short label: `URL:
/// https://...`, `**Link:** [Title](https://...)`, a bare URL. Link texts count as
/// the URL (a title), but not a numeric one (`[[3]](url)` is a citation marker).
pub(super) fn url_line(b: &Block, text: &str, from_html: bool) -> Option<String> {
    if !has_url(b) {
        return None;
    }
    for line in block_lines(b, text, from_html) {
        let (plain, links) = inline_parse(line.trim_start_matches(['-', '*', '+', ' ']));
        let Some(url) = first_url(&plain, &links) else {
            continue;
        };
        if links
            .iter()
            .any(|(_, t)| t.trim_matches(['[', ']', ' ']).parse::<u32>().is_ok())
        {
            return None;
        }
        // What is left once URLs and link texts go: a label of a few words.
        let mut rest = strip_urls(&plain);
        for (_, t) in &links {
            rest = rest.replacen(t.as_str(), "", 1);
        }
        let label = rest.trim().trim_end_matches([':', '：', ' ', '*']);
        let words = label.split_whitespace().count();
        if words <= 3 && label.chars().filter(|c| c.is_alphanumeric()).count() <= 24 {
            return Some(url);
        }
    }
    None
}

/// Whether a block holds a web link or a bare URL (a cheap test before reading
/// it as entries).
pub(super) fn has_url(b: &Block) -> bool {
    b.inlines.iter().any(|i| match i {
        Inline::Link { url, .. } => is_web_url(url),
        Inline::Text { text, .. } => BARE_URL.is_match(text),
        _ => false,
    })
}

/// A block made only of URL entries (one per line), or a list item holding one
/// entry over two lines (a title, then its URL after a line break).
pub(super) fn url_entry_block(block: &Block, text: &str, from_html: bool) -> bool {
    if !matches!(
        block.kind,
        BlockKind::Paragraph | BlockKind::ListItem { .. }
    ) {
        return false;
    }
    let lines: Vec<String> = block_lines(block, text, from_html)
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let paragraph = matches!(block.kind, BlockKind::Paragraph);
    if lines.is_empty() || lines.len() > 40 {
        return false;
    }
    if lines.iter().all(|l| url_entry_line(l, paragraph)) {
        return true;
    }
    // A list item that opens with its entry and goes on with notes (an annotated
    // bibliography): `1. **Title** (2021)` / `https://...` / `Useful for ...`.
    !paragraph
        && (url_entry_line(&lines[0], false)
            || lines.len() >= 2
                && parse_entry_line(&lines[1]).is_some_and(|e| e.url_only())
                && url_entry_line(
                    &format!("{} {}", lines[0].trim_end(), lines[1].trim()),
                    false,
                ))
}

/// The trailing run of URL entries with no label: blocks at the end of the report
/// (after at most two closing paragraphs without a URL) that are all entries
/// showing their URL, at least two of them.
pub(super) fn unlabeled_tail(
    blocks: &[Block],
    text: &str,
    from_html: bool,
    in_region: &[bool],
) -> Option<std::ops::Range<usize>> {
    let mut end = blocks.len();
    let mut skipped = 0;
    while end > 0 && skipped < 2 {
        let b = &blocks[end - 1];
        let closing = matches!(b.kind, BlockKind::Paragraph)
            && !in_region[end - 1]
            && !url_entry_block(b, text, from_html)
            && !b.inlines.iter().any(|i| match i {
                Inline::Link { url, .. } => is_web_url(url),
                Inline::Text { text, .. } => BARE_URL.is_match(text),
                _ => false,
            })
            && b.plain_text().chars().count() <= 400;
        if !closing {
            break;
        }
        end -= 1;
        skipped += 1;
    }
    let mut start = end;
    let mut entries = 0;
    let mut bracketed = 0;
    while start > 0 && !in_region[start - 1] && blocks[start - 1].footnote.is_none() {
        let b = &blocks[start - 1];
        let lines: Vec<String> = block_lines(b, text, from_html)
            .into_iter()
            .filter(|l| !l.trim().is_empty())
            .collect();
        // Body bullets that cite a URL at their end (`- Most buyers kept the old
        // model https://...`) are claims, not entries, even at the very end.
        let claims = matches!(b.kind, BlockKind::ListItem { .. })
            && lines
                .first()
                .is_some_and(|l| crate::extraction::listed_url_claim(l));
        if !claims && url_entry_block(b, text, from_html) {
            entries += lines.len();
            bracketed += lines
                .iter()
                .filter(|l| BRACKET_LABEL.is_match(l.trim_start()))
                .count();
        } else {
            break;
        }
        start -= 1;
    }
    // One `[1] Title. URL` entry alone at the end is a list too: a body sentence
    // does not open with a bracketed number.
    (entries >= 2 || entries == 1 && bracketed == 1).then_some(start..end)
}

pub(super) static LINK_DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^ {0,3}\[(\d{1,4})\]:\s*(?:<([^>\n]*)>|(\S+))(?:\s+(?:"([^"\n]*)"|'([^'\n]*)'|\(([^)\n]*)\)))?\s*$"#,
    )
    .unwrap()
});

/// Numbered link reference definitions outside every block (the Markdown parser
/// turns them into nothing): (line, label, URL, title).
pub(super) fn link_definitions(
    blocks: &[Block],
    text: &str,
    lines: &LineIndex,
) -> Vec<(usize, String, String, Option<String>)> {
    if !text.contains("]:") {
        return Vec::new();
    }
    let mut spans: Vec<std::ops::Range<usize>> = blocks.iter().map(|b| b.span.clone()).collect();
    spans.sort_by_key(|r| r.start);
    let inside = |off: usize| {
        let i = spans.partition_point(|r| r.start <= off);
        spans[..i].iter().rev().take(8).any(|r| r.contains(&off))
    };
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let l = line.trim_end_matches(['\n', '\r']);
        if !l.contains("]:") {
            continue;
        }
        let Some(c) = LINK_DEFINITION.captures(l) else {
            continue;
        };
        let url = c
            .get(2)
            .or_else(|| c.get(3))
            .map(|m| m.as_str())
            .unwrap_or("");
        if !is_web_url(url) || inside(start) {
            continue;
        }
        let title = c
            .get(4)
            .or_else(|| c.get(5))
            .or_else(|| c.get(6))
            .map(|m| m.as_str().trim().to_string())
            .filter(|t| !t.is_empty());
        out.push((
            lines.line_of(start),
            c[1].to_string(),
            clean_url(url),
            title,
        ));
    }
    out
}

/// A source entry of a chat answer converted by pandoc: a paragraph of citation
/// links (`[\\[1\\]](url#:~:text=…) [\\[4\\]](url)`) then the source's title,
/// followed by a paragraph that is the bare URL (`<https://…>`, `<file://…>`).
pub(super) struct PandocEntry {
    pub labels: Vec<String>,
    pub url: String,
    pub title: Option<String>,
}

static PANDOC_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\\?\[\s*(\d{1,4})\s*\\?\]\s*$").unwrap());

/// The entry a pandoc source pair starts at `links` (its URL paragraph is the
/// block after it).
pub(super) fn pandoc_entry(links: &Block, url_block: &Block, text: &str) -> Option<PandocEntry> {
    if !matches!(links.kind, BlockKind::Paragraph)
        || !matches!(url_block.kind, BlockKind::Paragraph)
    {
        return None;
    }
    let raw_url = text.get(url_block.span.clone())?.trim();
    let inner = raw_url.strip_prefix('<')?.strip_suffix('>')?;
    if inner.contains(char::is_whitespace) || !crate::urls::is_citable_url(inner) {
        return None;
    }
    // The links line: citation links first, then the title as plain text.
    let mut labels = Vec::new();
    let mut title = String::new();
    for inl in &links.inlines {
        match inl {
            Inline::Link { url, text: t, .. } if title.trim().is_empty() => {
                let label = PANDOC_LABEL.captures(t)?;
                if !crate::urls::is_citable_url(url) {
                    return None;
                }
                labels.push(label[1].to_string());
            }
            Inline::Text { text: t, .. } => title.push_str(t),
            Inline::Break { .. } => title.push(' '),
            _ => return None,
        }
    }
    if labels.is_empty() {
        return None;
    }
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(PandocEntry {
        labels,
        url: clean_url(inner),
        title: (!title.is_empty()).then_some(title),
    })
}
