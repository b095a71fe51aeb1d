//! Markdown front end: pulldown-cmark events become leaf blocks, raw HTML inside
//! Markdown goes through the HTML front end, and paragraphs that pack several
//! reference entries or captions on consecutive lines are cut into one block each.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd, TextMergeWithOffset};
use regex::Regex;

use crate::blocks::{Block, BlockKind, Inline};
use crate::html;
use crate::render_map::RenderMap;

/// The Markdown options real reports need: GFM tables, footnotes, strikethrough.
/// Smart punctuation, math, sub/superscript and wiki links would rewrite ordinary
/// report text, so they stay off.
pub(crate) fn markdown_options() -> Options {
    let mut o = Options::empty();
    o.insert(Options::ENABLE_TABLES);
    o.insert(Options::ENABLE_FOOTNOTES);
    o.insert(Options::ENABLE_STRIKETHROUGH);
    o.insert(Options::ENABLE_TASKLISTS);
    o
}

/// Citation markers and nothing else: what writers put after a closing fence.
static FENCE_MARKERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*(?:\\?\[\s*\d{1,4}(?:\s*[,，、-]\s*\d{1,4})*\s*\\?\]\s*|【\s*\d{1,4}\s*】\s*|\[\^[^\]\s]{1,20}\]\s*)+$",
    )
    .unwrap()
});

/// Writers close a code fence and cite the block on one line (a fence followed by
/// `[21]`). CommonMark reads that line as code, so the fence never closes and the
/// rest of the report, reference list included, becomes code. Such a line closes
/// its fence here: the markers after it are blanked with spaces, so every byte
/// offset stays where it was.
pub(crate) fn close_cited_fences(text: &str) -> Cow<'_, str> {
    if !text.contains("```") && !text.contains("~~~") {
        return Cow::Borrowed(text);
    }
    let mut open: Option<(u8, usize)> = None;
    let mut blank: Vec<Range<usize>> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let t = body.trim_start();
        let at = start + (body.len() - t.len());
        let fence_char = t
            .as_bytes()
            .first()
            .copied()
            .filter(|c| matches!(c, b'`' | b'~'));
        let run = fence_char.map_or(0, |c| t.bytes().take_while(|&b| b == c).count());
        match (open, fence_char) {
            // A backtick fence's info string holds no backtick.
            (None, Some(c)) if run >= 3 && (c == b'~' || !t[run..].contains('`')) => {
                open = Some((c, run));
            }
            (Some((c, n)), Some(f)) if f == c && run >= n => {
                let rest = &t[run..];
                if rest.trim().is_empty() {
                    open = None;
                } else if FENCE_MARKERS.is_match(rest) {
                    blank.push(at + run..at + t.len());
                    open = None;
                }
            }
            _ => {}
        }
    }
    if blank.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for r in blank {
        out.push_str(crate::slice::cut(text, last, r.start));
        out.extend(std::iter::repeat_n(' ', r.end.saturating_sub(r.start)));
        last = r.end;
    }
    out.push_str(crate::slice::from(text, last));
    Cow::Owned(out)
}

static IMG_TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)^<img(?-u:\b)").unwrap());
/// A start tag's name (a component's in any case).
static START_TAG_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^<([A-Za-z][\w.:-]*)").unwrap());
static A_OPEN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)^<a(?-u:\b)").unwrap());
static A_CLOSE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)^</a\s*>").unwrap());
static BR_TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)^<br(?-u:\b)").unwrap());
static SUP_OPEN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)^<sup(?-u:\b)").unwrap());
static SUP_CLOSE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)^</sup\s*>").unwrap());
static LIST_NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(\d{1,9})[.)]").unwrap());

struct LinkFrame {
    url: String,
    text: String,
    start: usize,
    /// Opened by an inline `<a href>` tag rather than Markdown syntax.
    from_html: bool,
}

struct ImageFrame {
    src: String,
    alt: String,
    start: usize,
}

struct MdBuilder<'a> {
    text: &'a str,
    blocks: Vec<Block>,
    current: Option<Block>,
    /// Whether the current block is a list item that has received no content yet
    /// (a loose item's first paragraph joins it).
    item_fresh: bool,
    list_ordered: Vec<bool>,
    footnote: Option<String>,
    links: Vec<LinkFrame>,
    image: Option<ImageFrame>,
    sup_depth: usize,
    table_count: usize,
    in_table_head: bool,
    code: Option<(String, Range<usize>, String)>,
    html: Option<(String, Range<usize>)>,
    renders: Option<&'a RenderMap>,
    /// The page's local script files (see [`crate::page_scripts`]).
    scripts: &'a [String],
}

impl<'a> MdBuilder<'a> {
    fn flush(&mut self) {
        if let Some(mut block) = self.current.take() {
            if let Some(last) = block.inlines.iter().rev().find_map(Inline::span) {
                block.span.end = block.span.end.max(last.end);
            }
            block.footnote = self.footnote.clone();
            self.blocks.push(block);
        }
        self.item_fresh = false;
    }

    fn open(&mut self, kind: BlockKind, span: Range<usize>) {
        self.flush();
        self.current = Some(Block::new(kind, span));
    }

    fn push_inline(&mut self, inline: Inline, span: &Range<usize>) {
        if self.current.is_none() {
            // Text outside any leaf (e.g. after a nested list inside an item).
            self.current = Some(Block::new(BlockKind::Paragraph, span.clone()));
        }
        if let Some(b) = self.current.as_mut() {
            b.inlines.push(inline);
        }
        self.item_fresh = false;
    }

    fn text(&mut self, t: &str, span: Range<usize>) {
        if let Some(img) = self.image.as_mut() {
            img.alt.push_str(t);
            return;
        }
        if let Some(link) = self.links.last_mut() {
            link.text.push_str(t);
            return;
        }
        let sup = self.sup_depth > 0;
        self.push_inline(
            Inline::Text {
                text: t.to_string(),
                span: span.clone(),
                sup,
            },
            &span,
        );
    }

    fn inline_html(&mut self, raw: &str, span: Range<usize>) {
        let tag = raw.trim();
        if IMG_TAG.is_match(tag) {
            let attrs = html::parse_tag_attrs(tag);
            let inline = Inline::Image {
                src: attrs.get("src").cloned().unwrap_or_default(),
                alt: attrs.get("alt").cloned().unwrap_or_default(),
                span: span.clone(),
                width: attrs.get("width").and_then(|w| html::parse_dimension(w)),
                height: attrs.get("height").and_then(|h| html::parse_dimension(h)),
            };
            self.push_inline(inline, &span);
        } else if let Some(src) = START_TAG_NAME.captures(tag).and_then(|c| {
            let attrs = html::parse_tag_attrs(tag);
            html::picture_shown_by(
                &c[1].to_ascii_lowercase(),
                attrs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            )
        }) {
            // A frame or component showing a local picture is that picture.
            let attrs = html::parse_tag_attrs(tag);
            let alt = ["alt", "title", "aria-label", "caption"]
                .iter()
                .find_map(|k| attrs.get(*k).map(|t| t.trim()).filter(|t| !t.is_empty()))
                .unwrap_or("")
                .to_string();
            let inline = Inline::Image {
                src,
                alt,
                span: span.clone(),
                width: attrs.get("width").and_then(|w| html::parse_dimension(w)),
                height: attrs.get("height").and_then(|h| html::parse_dimension(h)),
            };
            self.push_inline(inline, &span);
        } else if BR_TAG.is_match(tag) {
            self.push_inline(
                Inline::Break {
                    span: span.clone(),
                    hard: true,
                },
                &span,
            );
        } else if SUP_OPEN.is_match(tag) {
            self.sup_depth += 1;
        } else if SUP_CLOSE.is_match(tag) {
            self.sup_depth = self.sup_depth.saturating_sub(1);
        } else if A_OPEN.is_match(tag) {
            let attrs = html::parse_tag_attrs(tag);
            // Only links that leave the document become link inlines; internal
            // anchors (`#ref3`, `#fig2`) let their text through as plain text.
            if let Some(href) = attrs.get("href").filter(|h| !h.starts_with('#')) {
                self.links.push(LinkFrame {
                    url: href.clone(),
                    text: String::new(),
                    start: span.start,
                    from_html: true,
                });
            }
        } else if A_CLOSE.is_match(tag) && self.links.last().is_some_and(|l| l.from_html) {
            self.close_link(span.end);
        }
    }

    fn close_link(&mut self, end: usize) {
        if let Some(frame) = self.links.pop() {
            let span = frame.start..end;
            let inline = Inline::Link {
                url: frame.url,
                text: frame.text,
                span: span.clone(),
            };
            if let Some(outer) = self.links.last_mut() {
                // Nested links do not exist in Markdown; keep the text at least.
                if let Inline::Link { text, .. } = &inline {
                    outer.text.push_str(text);
                }
            } else {
                self.push_inline(inline, &span);
            }
        }
    }

    fn event(&mut self, event: Event<'_>, range: Range<usize>) {
        if let Some((raw, span)) = self.html.as_mut() {
            match event {
                Event::Html(h) | Event::InlineHtml(h) | Event::Text(h) => {
                    raw.push_str(&h);
                    span.end = span.end.max(range.end);
                    return;
                }
                Event::End(TagEnd::HtmlBlock) => {
                    let (raw, span) = self.html.take().unwrap_or_default();
                    self.flush();
                    let base = span.start;
                    let mut blocks =
                        html::blocks_from_fragment(&raw, base, self.renders, self.scripts);
                    for b in &mut blocks {
                        b.footnote = self.footnote.clone();
                    }
                    self.blocks.extend(blocks);
                    return;
                }
                _ => {}
            }
        }
        if let Some((code, span, _)) = self.code.as_mut() {
            match event {
                Event::Text(t) => {
                    code.push_str(&t);
                    span.end = span.end.max(range.end);
                    return;
                }
                Event::End(TagEnd::CodeBlock) => {
                    let (code, span, info) = self.code.take().unwrap_or_default();
                    self.flush();
                    let mut block = Block::new(BlockKind::Code { info }, span.start..range.end);
                    block.inlines.push(Inline::Code { text: code, span });
                    self.current = Some(block);
                    self.flush();
                    return;
                }
                _ => {}
            }
        }
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(tag) => self.end(tag, range),
            Event::Text(t) => self.text(&t, range),
            Event::Code(t) => {
                if let Some(link) = self.links.last_mut() {
                    link.text.push_str(&t);
                } else if let Some(img) = self.image.as_mut() {
                    img.alt.push_str(&t);
                } else {
                    self.push_inline(
                        Inline::Code {
                            text: t.to_string(),
                            span: range.clone(),
                        },
                        &range,
                    );
                }
            }
            Event::InlineHtml(h) | Event::Html(h) => self.inline_html(&h, range),
            Event::SoftBreak | Event::HardBreak => {
                let hard = matches!(event, Event::HardBreak);
                if let Some(link) = self.links.last_mut() {
                    link.text.push(' ');
                } else if let Some(img) = self.image.as_mut() {
                    img.alt.push(' ');
                } else if self.current.is_some() {
                    self.push_inline(
                        Inline::Break {
                            span: range.clone(),
                            hard,
                        },
                        &range,
                    );
                }
            }
            Event::FootnoteReference(label) => {
                if let Some(link) = self.links.last_mut() {
                    link.text.push_str(&format!("[^{label}]"));
                } else {
                    self.push_inline(
                        Inline::FootnoteRef {
                            label: label.to_string(),
                            span: range.clone(),
                        },
                        &range,
                    );
                }
            }
            Event::Rule => self.flush(),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>, range: Range<usize>) {
        match tag {
            Tag::Paragraph => {
                if self.item_fresh && self.current.is_some() {
                    // First paragraph of a loose list item: it is the item's text.
                    self.item_fresh = false;
                } else {
                    self.open(BlockKind::Paragraph, range);
                }
            }
            Tag::Heading { level, id, .. } => {
                self.open(BlockKind::Heading(level as u8), range);
                if let (Some(b), Some(id)) = (self.current.as_mut(), id) {
                    b.html_id = Some(id.to_string());
                }
            }
            Tag::List(start) => {
                self.flush();
                self.list_ordered.push(start.is_some());
            }
            Tag::Item => {
                let ordered = self.list_ordered.last().copied().unwrap_or(false);
                let number = if ordered {
                    self.text
                        .get(range.clone())
                        .and_then(|t| LIST_NUMBER.captures(t))
                        .and_then(|c| c[1].parse().ok())
                } else {
                    None
                };
                self.open(BlockKind::ListItem { number }, range);
                self.item_fresh = true;
            }
            Tag::Table(_) => {
                self.flush();
                self.table_count += 1;
            }
            Tag::TableHead => {
                self.in_table_head = true;
                self.open(
                    BlockKind::TableRow {
                        table: self.table_count,
                        header: true,
                    },
                    range,
                );
            }
            Tag::TableRow => {
                self.open(
                    BlockKind::TableRow {
                        table: self.table_count,
                        header: false,
                    },
                    range,
                );
            }
            Tag::TableCell => {
                if let Some(b) = self.current.as_mut() {
                    if !b.inlines.is_empty() {
                        b.inlines.push(Inline::CellSep);
                    }
                }
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((String::new(), range.clone(), info));
            }
            Tag::HtmlBlock => {
                self.flush();
                self.html = Some((String::new(), range.start..range.start));
            }
            Tag::FootnoteDefinition(label) => {
                self.flush();
                self.footnote = Some(label.to_string());
            }
            Tag::Link { dest_url, .. } => {
                self.links.push(LinkFrame {
                    url: dest_url.to_string(),
                    text: String::new(),
                    start: range.start,
                    from_html: false,
                });
            }
            Tag::Image { dest_url, .. } => {
                self.image = Some(ImageFrame {
                    src: dest_url.to_string(),
                    alt: String::new(),
                    start: range.start,
                });
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd, range: Range<usize>) {
        match tag {
            TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item => self.flush(),
            TagEnd::TableHead => {
                self.in_table_head = false;
                self.flush();
            }
            TagEnd::TableRow | TagEnd::Table => self.flush(),
            TagEnd::List(_) => {
                self.flush();
                self.list_ordered.pop();
            }
            TagEnd::FootnoteDefinition => {
                self.flush();
                self.footnote = None;
            }
            TagEnd::Link => {
                // A Markdown link may still hold an unclosed inline `<a>`; close both.
                while self.links.last().is_some_and(|l| l.from_html) {
                    self.close_link(range.end);
                }
                self.close_link(range.end);
            }
            TagEnd::Image => {
                if let Some(frame) = self.image.take() {
                    let span = frame.start..range.end;
                    let inline = Inline::Image {
                        src: frame.src,
                        alt: frame.alt,
                        span: span.clone(),
                        width: None,
                        height: None,
                    };
                    self.push_inline(inline, &span);
                }
            }
            _ => {}
        }
    }
}

/// Parse Markdown into leaf blocks. HTML blocks inside it go through the HTML front
/// end with their offsets kept.
pub(crate) fn blocks_from_markdown(
    text: &str,
    renders: Option<&RenderMap>,
    scripts: &[String],
) -> Vec<Block> {
    let text = &*close_cited_fences(text);
    let parser = Parser::new_ext(text, markdown_options()).into_offset_iter();
    let mut builder = MdBuilder {
        text,
        blocks: Vec::new(),
        current: None,
        item_fresh: false,
        list_ordered: Vec::new(),
        footnote: None,
        links: Vec::new(),
        image: None,
        sup_depth: 0,
        table_count: 0,
        in_table_head: false,
        code: None,
        html: None,
        renders,
        scripts,
    };
    for (event, range) in TextMergeWithOffset::new(parser) {
        builder.event(event, range);
    }
    // Unclosed frames at the end of a truncated document.
    while !builder.links.is_empty() {
        builder.close_link(text.len());
    }
    builder.flush();
    builder.blocks
}

/// Splits paragraphs whose lines are units of their own into one block per line.
///
/// Two shapes need it, both written with no blank line where Markdown wants one:
/// a reference label in the middle of a paragraph (`... last claim [4].`, then
/// `References:`, then the entries), which is split before the label so the label
/// heads its list; and plain-text exports that put each paragraph, heading or list
/// entry on one line of its own and join them with single newlines, so a whole
/// report reads as a handful of paragraphs. The second shape is recognised per
/// paragraph: at least three lines, and at least three in five of its line ends
/// close a sentence or an entry (a period, a closing bracket, a colon, a URL).
/// Hard-wrapped prose ends most lines mid-sentence and is left as it is, and a
/// line that starts in lower case continues the line before it in either shape.
pub(crate) fn split_line_paragraphs(blocks: Vec<Block>, text: &str) -> Vec<Block> {
    if !blocks.iter().any(|b| {
        matches!(b.kind, BlockKind::Paragraph | BlockKind::ListItem { .. })
            && b.inlines.iter().any(|i| matches!(i, Inline::Break { .. }))
    }) {
        return blocks;
    }
    let mut out: Vec<Block> = Vec::with_capacity(blocks.len());
    for b in blocks {
        // Under a reference label the lines are entries, which the list reader
        // takes line by line; the paragraph stays whole so the label keeps it.
        let under_label = |out: &[Block]| {
            out.last().is_some_and(|p| {
                matches!(p.kind, BlockKind::Heading(_) | BlockKind::Paragraph)
                    && crate::cues::is_reference_heading(&p.plain_text())
            })
        };
        match line_cuts(&b, text) {
            Some(cuts) if !under_label(&out) => out.extend(cut_block(b, &cuts)),
            _ => out.push(b),
        }
    }
    out
}

/// Indices (into the block's inlines) of the breaks to cut at, if any.
fn line_cuts(b: &Block, text: &str) -> Option<Vec<usize>> {
    if b.from_html || !matches!(b.kind, BlockKind::Paragraph | BlockKind::ListItem { .. }) {
        return None;
    }
    let breaks: Vec<usize> = b
        .inlines
        .iter()
        .enumerate()
        .filter(|(_, i)| matches!(i, Inline::Break { .. }))
        .map(|(k, _)| k)
        .collect();
    if breaks.is_empty() {
        return None;
    }
    // The source line before each break and the one after it.
    let line_at = |from: usize, to: usize| text.get(from..to).unwrap_or("").trim();
    let mut lines = Vec::with_capacity(breaks.len() + 1);
    let mut start = b.span.start;
    for &k in &breaks {
        let span = b.inlines[k].span().unwrap_or(start..start);
        lines.push(line_at(start, span.start.max(start)));
        start = span.end;
    }
    lines.push(line_at(start.min(b.span.end), b.span.end));
    let continues = |l: &str| {
        l.trim_start_matches(|c: char| c == '>' || c.is_whitespace())
            .chars()
            .next()
            .is_none_or(|c| c.is_lowercase())
    };
    // A label line (`References:`) with an entry after it in the same paragraph.
    let label = matches!(b.kind, BlockKind::Paragraph)
        .then(|| {
            (1..lines.len()).find(|&k| {
                crate::cues::is_reference_heading(lines[k])
                    && lines[k + 1..]
                        .iter()
                        .any(|l| crate::references::parse_entry_line(l).is_some())
            })
        })
        .flatten();
    // A title line whose URL follows on the next line closes an entry too.
    let closed = (0..lines.len() - 1)
        .filter(|&n| line_closes(lines[n]) || starts_with_url(lines[n + 1]))
        .count();
    // List items keep their lines: an entry's title, URL and notes under one
    // bullet belong together.
    let by_line = matches!(b.kind, BlockKind::Paragraph)
        && lines.len() >= 3
        && closed * 5 >= (lines.len() - 1) * 3;
    let cuts: Vec<usize> = breaks
        .iter()
        .enumerate()
        .filter(|&(n, _)| {
            Some(n + 1) == label
                || (by_line && (!continues(lines[n + 1]) || is_math_fence(lines[n])))
        })
        .map(|(_, &k)| k)
        .collect();
    (!cuts.is_empty()).then_some(cuts)
}

/// A line that only opens or closes display math (`\[`, `\]`, `$$`).
fn is_math_fence(line: &str) -> bool {
    matches!(line, "\\[" | "\\]" | "$$")
}

fn starts_with_url(line: &str) -> bool {
    line.starts_with("http://") || line.starts_with("https://")
}

/// Whether a source line ends a sentence or an entry.
fn line_closes(line: &str) -> bool {
    let l = line.trim_end_matches(['*', '_', ' ']);
    if l.rsplit(char::is_whitespace)
        .next()
        .is_some_and(starts_with_url)
    {
        return true;
    }
    l.ends_with([
        '.', '!', '?', ':', ';', ')', ']', '"', '\u{201d}', '\u{2019}', '\u{3002}', '\u{ff01}',
        '\u{ff1f}', '\u{ff1a}', '\u{ff09}', '\u{3011}',
    ])
}

/// Cuts a block at the given break inlines; the pieces after the first are
/// paragraphs.
fn cut_block(b: Block, cuts: &[usize]) -> Vec<Block> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut inlines = b.inlines.into_iter().enumerate().peekable();
    let mut start = b.span.start;
    let mut kind = b.kind;
    let mut html_id = b.html_id;
    for &cut in cuts.iter().chain(std::iter::once(&usize::MAX)) {
        let mut piece = Vec::new();
        let mut end = b.span.end;
        while let Some((k, inline)) = inlines.next_if(|(k, _)| *k <= cut) {
            if k == cut {
                end = inline.span().map_or(end, |s| s.start);
                break;
            }
            piece.push(inline);
        }
        let mut block = Block::new(kind.clone(), start..end.max(start));
        block.inlines = piece;
        block.footnote = b.footnote.clone();
        block.html_id = html_id.take();
        out.push(block);
        // The next piece starts at its first inline.
        start = inlines
            .peek()
            .and_then(|(_, i)| i.span())
            .map_or(b.span.end, |s| s.start);
        kind = BlockKind::Paragraph;
    }
    out
}

static HTML_REGION_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^ {0,3}<(div|section|main|article|header|footer|aside|nav|details|figure|table|body|center|blockquote)(?:[\s>/]|$)").unwrap()
});
/// A blank line followed by an indented tag: where CommonMark ends an HTML block and
/// turns the rest of the markup into an indented code block.
static BROKEN_BY_INDENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\n[ \t]*\n(?: {4,}|\t)[ \t]*<").unwrap());

/// End (exclusive) of the element whose start tag `<name` is at `start`, matching
/// nested elements of the same name; None when it is never closed.
fn matching_close(text: &str, start: usize, name: &str) -> Option<usize> {
    let lower_open = format!("<{name}");
    let lower_close = format!("</{name}");
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = start;
    while i < text.len() {
        let lt = text[i..].find('<').map(|p| p + i)?;
        let tail = &bytes[lt..];
        let is = |pat: &str| {
            tail.len() > pat.len()
                && tail[..pat.len()].eq_ignore_ascii_case(pat.as_bytes())
                && matches!(tail[pat.len()], b' ' | b'\t' | b'\n' | b'\r' | b'>' | b'/')
        };
        if is(&lower_close) {
            depth = depth.saturating_sub(1);
            let end = text[lt..].find('>').map(|g| lt + g + 1)?;
            if depth == 0 {
                return Some(end);
            }
            i = end;
        } else if is(&lower_open) {
            depth += 1;
            i = lt + 1;
        } else {
            i = lt + 1;
        }
    }
    None
}

/// Byte ranges of HTML blocks inside Markdown that CommonMark would cut apart at a
/// blank line followed by indented markup (deeply indented page layouts pasted into
/// a `.md`): each runs from its opening line to the end of the line holding its
/// matching close tag. Fenced code is left alone.
pub(crate) fn indented_html_regions(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    let mut pos = 0;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let line = &text[pos..line_end];
        let trimmed = line.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            }
            pos = line_end;
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
        } else if trimmed.starts_with("~~~") {
            fence = Some("~~~");
        } else if let Some(c) = HTML_REGION_START.captures(line) {
            let name = c[1].to_ascii_lowercase();
            let tag_at = pos + line.len() - trimmed.len();
            if let Some(end) = matching_close(text, tag_at, &name) {
                let region_end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
                if BROKEN_BY_INDENT.is_match(&text[pos..region_end]) {
                    out.push(pos..region_end);
                    pos = region_end;
                    continue;
                }
            }
        }
        pos = line_end;
    }
    out
}

/// Blocks of a Markdown report, with HTML blocks that indentation would break read
/// as HTML: those regions are blanked (newlines kept, so offsets hold) for the
/// Markdown parser and parsed by the HTML front end instead.
pub(crate) fn blocks_from_markdown_with_html(
    text: &str,
    renders: Option<&RenderMap>,
    scripts: &[String],
) -> Vec<Block> {
    // The rendered page reads the same plain values (see `render`), so the two
    // agree on where each tag is.
    let text = &*crate::jsx::with_plain_values(text);
    let regions = indented_html_regions(text);
    if regions.is_empty() {
        return blocks_from_markdown(text, renders, scripts);
    }
    let mut blanked = text.as_bytes().to_vec();
    for r in &regions {
        for b in &mut blanked[r.clone()] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    // Only ASCII spaces replaced whole multi-byte sequences, so this stays UTF-8.
    let blanked = String::from_utf8(blanked).unwrap_or_default();
    let mut blocks = blocks_from_markdown(&blanked, renders, scripts);
    for r in regions {
        blocks.extend(html::blocks_from_fragment(
            &text[r.clone()],
            r.start,
            renders,
            scripts,
        ));
    }
    blocks.sort_by_key(|b| b.span.start);
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(blocks: &[Block]) -> Vec<String> {
        blocks.iter().map(|b| format!("{:?}", b.kind)).collect()
    }

    /// A local picture file shown by a frame or a component, in an HTML block or
    /// inline, is that picture (one figure each, at its own line); a remote one, a
    /// page, a link or a plain element's data attribute is not.
    #[test]
    fn a_frame_or_component_showing_a_local_picture_is_an_image_figure() {
        let md = "# T\n\nCapacity grew [1].\n\n<iframe src=\"charts/a.svg\" width=\"600\" height=\"400\"></iframe>\n\n\
                  It grew again [1] <object data=\"charts/b.svg\" type=\"image/svg+xml\"></object>\n\n\
                  <ChartFrame src=\"charts/c.png\" title=\"Costs by year\" />\n\n\
                  <embed src=\"charts/d.svg\" />\n\n\
                  <iframe src=\"https://example.org/e.svg\"></iframe>\n\n\
                  <div data-bg=\"f.png\"></div> <a href=\"g.png\">a link</a>\n\n\
                  <Diagram src={'charts/h.svg'} alt={`Lanes`} height={300} />\n\n\
                  <Figure src=\"charts/i.svg\" caption=\"Ridership\" />\n\n<video src=\"j.png\"></video>\n\n\
                  <figure src=\"k.svg\"><img src=\"charts/k.png\" alt=\"Kiosks\"></figure>\n\n\
                  ## References\n\n1. Office https://example.org/a\n";
        let r = crate::parse_str(
            md,
            crate::SourceFormat::Markdown,
            std::path::Path::new("r/report.mdx"),
            std::path::Path::new("r"),
        );
        let got: Vec<(&str, usize, Option<&str>)> = r
            .figures
            .iter()
            .map(|f| (f.content.as_str(), f.line, f.caption.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("charts/a.svg", 5, None),
                ("charts/b.svg", 7, None),
                ("charts/c.png", 9, Some("Costs by year")),
                ("charts/d.svg", 11, None),
                ("charts/h.svg", 17, Some("Lanes")),
                ("charts/i.svg", 19, Some("Ridership")),
                ("charts/k.png", 23, Some("Kiosks"))
            ]
        );
        assert!(r.pseudo_visuals.is_empty(), "{:?}", r.pseudo_visuals);
    }

    /// An SVG file shown by a frame or component with no caption from the report is
    /// captioned by its own `<title>`; the same file as a Markdown image is not (a
    /// reader of the report sees no caption there, nor does the reference's parse).
    #[test]
    fn an_svg_shown_by_a_frame_is_captioned_by_its_own_title() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("charts")).unwrap();
        std::fs::write(
            dir.path().join("charts/a.svg"),
            "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"300\" height=\"200\">\n\
             <desc>drawn by hand</desc>\n<title>Fares  by zone &amp; year</title><rect width=\"9\" height=\"9\"/></svg>\n",
        )
        .unwrap();
        let md =
            "Fares rose [1].\n\n<iframe src=\"charts/a.svg\"></iframe>\n\n![](charts/a.svg)\n\n\
                  <Plot file=\"charts/a.svg\" caption=\"Fares, as the office reports them\" />\n\n\
                  <Plot file={\"charts/a.svg\"} />\n\n\
                  ## References\n\n1. Office https://example.org/a\n";
        let r = crate::parse_str(
            md,
            crate::SourceFormat::Markdown,
            &dir.path().join("report.mdx"),
            dir.path(),
        );
        let got: Vec<(Option<&str>, Option<&str>)> = r
            .figures
            .iter()
            .map(|f| (f.caption.as_deref(), f.caption_source.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (Some("Fares by zone & year"), Some("chart file title")),
                (None, None),
                (Some("Fares, as the office reports them"), None),
                (Some("Fares by zone & year"), Some("chart file title"))
            ]
        );
    }

    #[test]
    fn a_fence_closed_with_a_citation_closes() {
        let md = "Intro [1].\n\n```bash\nrm -rf x\n``` [2]\n\nAfter the code [3].\n\n~~~\ny\n~~~【4】\n\nEnd.\n";
        let blocks = blocks_from_markdown(md, None, &[]);
        let k = kinds(&blocks);
        assert_eq!(
            k.iter().filter(|k| k.starts_with("Code")).count(),
            2,
            "{k:?}"
        );
        let after = blocks
            .iter()
            .find(|b| b.plain_text().contains("After the code"))
            .expect("text after the fence is a paragraph again");
        assert_eq!(after.kind, BlockKind::Paragraph);
        assert_eq!(md[after.span.clone()].trim_end(), "After the code [3].");
        assert!(blocks.iter().any(|b| b.plain_text() == "End."));
        // Text after a fence that is not markers keeps CommonMark's reading.
        let md = "```\ncode\n``` not a marker\nstill code\n```\n";
        let blocks = blocks_from_markdown(md, None, &[]);
        assert_eq!(blocks.len(), 1, "{:?}", kinds(&blocks));
        assert!(matches!(close_cited_fences(md), Cow::Borrowed(_)));
    }

    #[test]
    fn paragraphs_lists_and_tables_become_leaf_blocks() {
        let md = "# T\n\nA para [1].\n\n- one\n- two\n\n1. first\n2. second\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
        let blocks = blocks_from_markdown(md, None, &[]);
        let k = kinds(&blocks);
        assert_eq!(k[0], "Heading(1)");
        assert_eq!(k[1], "Paragraph");
        assert_eq!(k[2], "ListItem { number: None }");
        assert_eq!(k[4], "ListItem { number: Some(1) }");
        assert_eq!(k[5], "ListItem { number: Some(2) }");
        assert!(k[6].starts_with("TableRow"));
        assert_eq!(blocks[7].plain_text(), "1 | 2");
        assert_eq!(blocks[1].plain_text(), "A para [1].");
    }

    #[test]
    fn inline_html_anchor_and_image_and_sup() {
        let md = "Text <a href=\"#ref1\">[1]</a> and <sup>2</sup> <img src=\"a.png\" alt=\"x\" width=\"1\">.\n";
        let blocks = blocks_from_markdown(md, None, &[]);
        assert_eq!(blocks.len(), 1);
        let b = &blocks[0];
        assert!(b.plain_text().contains("[1]"));
        assert!(b
            .inlines
            .iter()
            .any(|i| matches!(i, Inline::Text { text, sup: true, .. } if text == "2")));
        assert!(b
            .inlines
            .iter()
            .any(|i| matches!(i, Inline::Image { src, width: Some(1), .. } if src == "a.png")));
    }

    #[test]
    fn loose_list_item_keeps_its_paragraph() {
        let md = "- first item\n\n- second item\n";
        let blocks = blocks_from_markdown(md, None, &[]);
        assert_eq!(blocks.len(), 2);
        assert!(matches!(blocks[0].kind, BlockKind::ListItem { .. }));
        assert_eq!(blocks[1].plain_text(), "second item");
    }
}
