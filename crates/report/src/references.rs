//! Reference lists: where they are (headed sections, footnote definitions, headless
//! runs of `[N] ... URL` entries) and what each entry says (label, URL, title).

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::LazyLock;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use regex::Regex;

use super::blocks::{Block, BlockKind, Inline, LineIndex};
use super::cues::is_reference_heading;
use super::model::{Reference, StructuralError};
use super::urls::{clean_url, is_web_url, loose_links, url_key, BARE_URL};

static ANCHOR_TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i)^\s*<a\s+[^>]*>\s*</a>\s*"#).unwrap());
/// An inline tag wrapping an entry's label in Markdown with raw HTML
/// (`<span id="ref-1" class="ref-label">[1]</span> Author. Title. URL`): opening
/// tags without a link target before the label, closing tags after it.
static LABEL_OPEN_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)^\s*<(?:span|sup|b|strong|em|i|cite|small|label|a)(?:\s+[^>]*)?>\s*"#)
        .unwrap()
});
static LABEL_CLOSE_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)^\s*</(?:span|sup|b|strong|em|i|cite|small|label|a)\s*>\s*"#).unwrap()
});
static BULLET: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:>\s*)*(?:[-*+•]\s+)?").unwrap());
static FOOTNOTE_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[\^([^\]\s]+)\]:?\s*").unwrap());
static BRACKET_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\\?\[(\d{1,4})\\?\]\s*").unwrap());
static LENTICULAR_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^【(\d{1,4})】\s*").unwrap());
static NUMBER_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d{1,4})\\?[.)、．]\s*").unwrap());
static PAREN_LABEL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\((\d{1,4})\)\s*").unwrap());
static WHOLE_LINK_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d{1,4})\.\s*(.*)$").unwrap());
static IEEE_NOISE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\[online\]\.?|available( online)?\s*(at)?\s*:|accessed\s*:?[^.]*\.?|retrieved from:?",
    )
    .unwrap()
});

/// One parsed line of a reference list.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EntryLine {
    pub labels: Vec<String>,
    pub url: Option<String>,
    pub title: Option<String>,
}

impl EntryLine {
    fn url_only(&self) -> bool {
        self.labels.is_empty() && self.url.is_some() && self.title.is_none()
    }
}

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

/// Plain text and links of one line of Markdown inline content.
fn inline_parse(line: &str) -> (String, Vec<(String, String)>) {
    let mut plain = String::new();
    let mut links: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    for ev in Parser::new_ext(line, opts) {
        match ev {
            Event::Start(Tag::Link { dest_url, .. }) => {
                current = Some((dest_url.to_string(), String::new()));
            }
            Event::End(TagEnd::Link) => {
                if let Some(l) = current.take() {
                    plain.push_str(&l.1);
                    links.push(l);
                }
            }
            Event::Text(t) | Event::Code(t) => match current.as_mut() {
                Some(l) => l.1.push_str(&t),
                None => plain.push_str(&t),
            },
            Event::SoftBreak | Event::HardBreak => plain.push(' '),
            _ => {}
        }
    }
    (plain, links)
}

/// Parse one line of a reference list.
pub(crate) fn parse_entry_line(line: &str) -> Option<EntryLine> {
    let mut s = line.trim();
    // `<a id="ref3"></a>` anchors and list bullets.
    while let Some(m) = ANCHOR_TAG.find(s) {
        s = &s[m.end()..];
    }
    s = &s[BULLET.find(s).map(|m| m.end()).unwrap_or(0)..];
    while let Some(m) = ANCHOR_TAG.find(s) {
        s = &s[m.end()..];
    }
    let mut wrapped = false;
    while let Some(m) = LABEL_OPEN_TAG.find(s) {
        if m.as_str().to_ascii_lowercase().contains("href") {
            break;
        }
        s = &s[m.end()..];
        wrapped = true;
    }
    if s.is_empty() {
        return None;
    }
    let mut labels = Vec::new();
    if let Some(c) = FOOTNOTE_LABEL.captures(s) {
        labels.push(c[1].to_string());
        s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
    } else if let Some(c) = LENTICULAR_LABEL.captures(s) {
        labels.push(c[1].to_string());
        s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
    } else if BRACKET_LABEL.is_match(s) {
        while let Some(c) = BRACKET_LABEL.captures(s) {
            labels.push(c[1].to_string());
            s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
        }
    } else if let Some(c) = NUMBER_LABEL.captures(s) {
        labels.push(c[1].to_string());
        s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
    } else if let Some(c) = PAREN_LABEL.captures(s) {
        labels.push(c[1].to_string());
        s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
    }
    while wrapped && !labels.is_empty() {
        let Some(m) = LABEL_CLOSE_TAG.find(s) else {
            break;
        };
        s = &s[m.end()..];
    }
    // Links whose target holds spaces, which the Markdown parser refuses.
    let mut rest = s.to_string();
    let mut loose = Vec::new();
    if rest.contains("](") {
        let found: Vec<_> = loose_links(s)
            .into_iter()
            .filter(|l| l.url.contains(char::is_whitespace))
            .collect();
        if !found.is_empty() {
            let mut out = String::new();
            let mut last = 0;
            for l in &found {
                out.push_str(&s[last..l.range.start]);
                out.push_str(&l.text.replace(['[', ']'], ""));
                out.push(' ');
                last = l.range.end;
            }
            out.push_str(&s[last..]);
            rest = out;
            loose = found.into_iter().map(|l| (l.url, l.text)).collect();
        }
    }
    let (plain, mut links) = inline_parse(&rest);
    links.extend(loose);
    let mut title_from_link = None;
    // A whole entry wrapped in one link: `[3. Title](url)`.
    if labels.is_empty() {
        if let Some((_, text)) = links.first() {
            let t = text.trim();
            if let Some(c) = WHOLE_LINK_LABEL.captures(t) {
                if plain.trim_start().starts_with(t) {
                    labels.push(c[1].to_string());
                    title_from_link = Some(c[2].trim().to_string());
                }
            }
        }
    }
    let link_url = links
        .iter()
        .find(|(u, _)| is_web_url(u))
        .map(|(u, t)| (clean_url(u), t.clone()));
    // A full http(s) address beats a bare `www.site` mention (often the site name).
    let bare = BARE_URL
        .find_iter(&plain)
        .find(|m| !m.as_str().to_ascii_lowercase().starts_with("www."))
        .or_else(|| BARE_URL.find(&plain))
        .map(|m| clean_url(m.as_str()));
    let url = link_url.as_ref().map(|(u, _)| u.clone()).or(bare.clone());
    // Title: the link's text when it is not itself a URL, else the plain text with
    // URLs and list boilerplate removed.
    let title = title_from_link.or_else(|| {
        if let Some((_, t)) = &link_url {
            let t = t.trim();
            let others: String = plain.replace(t, "");
            let others = tidy_title(&strip_urls(&others));
            if !t.is_empty() && !is_web_url(t) && !t.chars().all(|c| c.is_ascii_digit()) {
                if others.chars().count() > t.chars().count() {
                    return Some(others);
                }
                return Some(t.to_string());
            }
            let o = others;
            return (!o.is_empty()).then_some(o);
        }
        let t = tidy_title(&strip_urls(&plain));
        (!t.is_empty()).then_some(t)
    });
    let title = title.filter(|t| !t.is_empty() && !is_web_url(t));
    if labels.is_empty() && url.is_none() {
        return None;
    }
    Some(EntryLine { labels, url, title })
}

fn strip_urls(s: &str) -> String {
    BARE_URL.replace_all(s, " ").into_owned()
}

static RETRIEVED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[,，]?\s*(檢索日期|检索日期|访问日期|訪問日期|accessed( on)?|retrieved( on)?)\s*[:：]?[^\]]*?\d{4}\s*[,，]?\s*$").unwrap()
});

fn tidy_title(s: &str) -> String {
    let s = IEEE_NOISE.replace_all(s, " ");
    let s = RETRIEVED.replace(s.trim(), "");
    let collapsed: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed
        .trim_matches(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '-' | '–' | '—' | '|' | ':' | ',' | ';' | '，' | '：' | '(' | ')' | '[' | ']'
                )
        })
        .to_string()
}

/// A block that starts with a reference label and carries (or is followed by) a URL,
/// the shape of headless reference lists.
fn entry_like(block: &Block, text: &str, from_html: bool) -> Option<EntryLine> {
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

fn url_only_block(block: &Block, text: &str, from_html: bool) -> Option<String> {
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
fn block_lines(block: &Block, text: &str, from_html: bool) -> Vec<String> {
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
fn block_has_entry(block: &Block, text: &str, from_html: bool) -> bool {
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
fn label_paragraph(block: &Block, text: &str, from_html: bool) -> bool {
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
fn url_entry_line(line: &str, paragraph: bool) -> bool {
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
        owned.push_str(&s[last..l.range.start]);
        owned.push_str(&l.text);
        links.push((l.url, l.text));
        last = l.range.end;
    }
    owned.push_str(&s[last..]);
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
    let cjk = rest.chars().filter(|&c| super::language::is_cjk(c)).count();
    let latin = rest
        .chars()
        .filter(|&c| c.is_alphabetic() && !super::language::is_cjk(c))
        .count();
    let short = latin <= 12 && cjk <= 6;
    if paragraph && !labelled {
        return short;
    }
    visible || short
}

static URL_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\[(?:网页|网站|网址|来源|链接|参考|source|web|url|link)\s*[:：]\s*[^\]\s]+\]")
        .unwrap()
});

static SOURCE_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(sources?|references?|bibliography|citations?|reading|resources|links|literature)(?-u:\b)|来源|参考|文献|资料|链接|出处").unwrap()
});

/// One source of an annotated bibliography: its sub-heading's number and title and
/// the URL given under it.
struct AnnotatedEntry {
    label: Option<String>,
    title: Option<String>,
    url: String,
}

static ENTRY_HEADING_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:\\?\[(\d{1,4})\\?\]|(\d{1,4})[.)、:：]?|\((\d{1,4})\))\s+").unwrap()
});

/// Sources written as sub-sections (`### 1) Title`, a `URL: ...` line, then notes
/// on the source): entries by sub-heading when at least three sub-headings, and
/// two thirds of them, give a URL within their first blocks. Keyed by the
/// sub-heading's block.
fn annotated_entries(
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
fn first_url(plain: &str, links: &[(String, String)]) -> Option<String> {
    links
        .iter()
        .find(|(u, _)| is_web_url(u))
        .map(|(u, _)| clean_url(u))
        .or_else(|| BARE_URL.find(plain).map(|m| clean_url(m.as_str())))
}

/// The URL of a block line that is a URL and at most a short label: `URL:
/// https://...`, `**Link:** [Title](https://...)`, a bare URL. Link texts count as
/// the URL (a title), but not a numeric one (`[[3]](url)` is a citation marker).
fn url_line(b: &Block, text: &str, from_html: bool) -> Option<String> {
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
fn has_url(b: &Block) -> bool {
    b.inlines.iter().any(|i| match i {
        Inline::Link { url, .. } => is_web_url(url),
        Inline::Text { text, .. } => BARE_URL.is_match(text),
        _ => false,
    })
}

/// A block made only of URL entries (one per line), or a list item holding one
/// entry over two lines (a title, then its URL after a line break).
fn url_entry_block(block: &Block, text: &str, from_html: bool) -> bool {
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
fn unlabeled_tail(
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
                .is_some_and(|l| super::extraction::listed_url_claim(l));
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

static LINK_DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^ {0,3}\[(\d{1,4})\]:\s*(?:<([^>\n]*)>|(\S+))(?:\s+(?:"([^"\n]*)"|'([^'\n]*)'|\(([^)\n]*)\)))?\s*$"#,
    )
    .unwrap()
});

/// Numbered link reference definitions outside every block (the Markdown parser
/// turns them into nothing): (line, label, URL, title).
fn link_definitions(
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
                for (off, line) in block_lines(block, text, from_html).iter().enumerate() {
                    let Some(mut entry) = parse_entry_line(line) else {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_styles() {
        let e = parse_entry_line("<a id=\"ref9\"></a> [9] ResearchGate (2024). Memory loop. https://www.researchgate.net/figure/x_fig2").unwrap();
        assert_eq!(e.labels, vec!["9"]);
        assert_eq!(
            e.url.as_deref(),
            Some("https://www.researchgate.net/figure/x_fig2")
        );
        assert_eq!(
            e.title.as_deref(),
            Some("ResearchGate (2024). Memory loop.")
        );

        let e = parse_entry_line("[2] [13] https://a.org/p").unwrap();
        assert_eq!(e.labels, vec!["2", "13"]);
        assert_eq!(e.url.as_deref(), Some("https://a.org/p"));
        assert_eq!(e.title, None);

        let e = parse_entry_line("3. Stock Assessment \\- MDPI, 檢索日期：4月 24, 2025， [https://www.mdpi.com/a\\_b](https://www.mdpi.com/a\\_b)").unwrap();
        assert_eq!(e.labels, vec!["3"]);
        assert_eq!(e.url.as_deref(), Some("https://www.mdpi.com/a_b"));
        assert!(e.title.unwrap().starts_with("Stock Assessment - MDPI"));

        let e = parse_entry_line("- [Tangbao - Wikipedia](https://en.wikipedia.org/wiki/Tangbao)")
            .unwrap();
        assert!(e.labels.is_empty());
        assert_eq!(e.title.as_deref(), Some("Tangbao - Wikipedia"));

        let e = parse_entry_line(
            "[4] \"Deep Nets,\" Example Site. [Online]. Available: https://ex.com/deep.",
        )
        .unwrap();
        assert_eq!(e.url.as_deref(), Some("https://ex.com/deep"));
        assert_eq!(e.title.as_deref(), Some("\"Deep Nets,\" Example Site."));

        let e = parse_entry_line("[5\\. A Whole Entry Title](https://ex.com/w)").unwrap();
        assert_eq!(e.labels, vec!["5"]);
        assert_eq!(e.title.as_deref(), Some("A Whole Entry Title"));

        let e = parse_entry_line("[^1_4]: https://ex.com/f").unwrap();
        assert_eq!(e.labels, vec!["1_4"]);

        assert_eq!(parse_entry_line("[References listed in the report]"), None);
    }
}
