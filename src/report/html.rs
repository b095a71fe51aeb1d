//! HTML front end: whole HTML reports and HTML blocks inside Markdown become the same
//! leaf blocks as Markdown. The HTML parser keeps no source positions, so spans are
//! recovered by locating each element's distinctive text in the source, moving
//! forward only; where that fails the enclosing element's span is used.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use scraper::{ElementRef, Html, Node};

use super::blocks::{Block, BlockKind, Inline};

static ATTR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?s)([A-Za-z_:][-A-Za-z0-9_:.]*)\s*(?:=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?"#,
    )
    .unwrap()
});

/// Attributes of one start tag (`<img src="a" alt='b'>`), names lowercased, values
/// with the common entities decoded.
pub(crate) fn parse_tag_attrs(tag: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let inner = tag.trim_start_matches('<');
    // Skip the tag name.
    let rest = inner
        .find(|c: char| c.is_whitespace())
        .map(|i| &inner[i..])
        .unwrap_or("");
    let rest = rest.trim_end_matches('>').trim_end_matches('/');
    for cap in ATTR.captures_iter(rest) {
        let name = cap[1].to_ascii_lowercase();
        let value = cap
            .get(2)
            .or_else(|| cap.get(3))
            .or_else(|| cap.get(4))
            .map(|m| decode_entities(m.as_str()))
            .unwrap_or_default();
        out.entry(name).or_insert(value);
    }
    out
}

/// Decode the handful of entities that appear in attribute values.
fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

/// `"300"`, `"300px"` -> 300; percentages and junk -> None.
pub(crate) fn parse_dimension(v: &str) -> Option<u32> {
    let v = v.trim().trim_end_matches("px").trim();
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| x.min(u32::MAX as f64) as u32)
}

/// Elements whose content is never report text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "head", "title", "meta", "link", "svg", "iframe",
    "button", "select", "textarea",
];
const BLOCK_CONTAINERS: &[&str] = &[
    "html",
    "body",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "nav",
    "ul",
    "ol",
    "dl",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "blockquote",
    "details",
    "center",
    "form",
    "fieldset",
    "hgroup",
];
const LEAVES: &[&str] = &[
    "p",
    "li",
    "dt",
    "dd",
    "summary",
    "caption",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "tr",
    "figure",
    "figcaption",
    "address",
];

/// Finds source positions of elements, moving forward through the fragment.
struct Locator<'a> {
    raw: &'a str,
    base: usize,
    cursor: usize,
}

impl Locator<'_> {
    /// Position (in the fragment) of `needle` at or after the cursor; the cursor moves
    /// to it.
    fn seek(&mut self, needle: &str) -> Option<usize> {
        if needle.is_empty() {
            return None;
        }
        let found = self.raw.get(self.cursor..)?.find(needle)? + self.cursor;
        self.cursor = found;
        Some(found)
    }

    fn find_from(&self, from: usize, needle: &str) -> Option<usize> {
        if needle.is_empty() {
            return None;
        }
        Some(self.raw.get(from..)?.find(needle)? + from)
    }

    fn abs(&self, r: Range<usize>) -> Range<usize> {
        self.base + r.start..self.base + r.end
    }

    /// Start tag `<name` at or after the cursor; the element's span runs to its
    /// matching close tag when one follows (nesting of the same name is rare in the
    /// leaves we locate), else to the end of the start tag.
    fn element(&mut self, name: &str) -> Option<Range<usize>> {
        let open = format!("<{name}");
        let mut from = self.cursor;
        let start = loop {
            let pos = self.find_from(from, &open)?;
            let next = self.raw[pos + open.len()..].chars().next();
            if matches!(next, Some(c) if c.is_whitespace() || c == '>' || c == '/') {
                break pos;
            }
            from = pos + open.len();
        };
        self.cursor = start;
        let close = format!("</{name}");
        let end = match self.find_from(start, &close) {
            Some(c) => self.raw[c..]
                .find('>')
                .map(|g| c + g + 1)
                .unwrap_or(self.raw.len()),
            None => self.raw[start..]
                .find('>')
                .map(|g| start + g + 1)
                .unwrap_or(self.raw.len()),
        };
        Some(start..end)
    }
}

struct HtmlWalker<'a> {
    loc: Locator<'a>,
    blocks: Vec<Block>,
    table_count: usize,
}

fn first_text_snippet(inlines: &[Inline]) -> Option<String> {
    inlines.iter().find_map(|i| match i {
        Inline::Text { text, .. } => {
            let t = text.trim();
            if t.is_empty() {
                None
            } else {
                Some(t.chars().take(12).collect())
            }
        }
        _ => None,
    })
}

impl<'a> HtmlWalker<'a> {
    fn walk_children(&mut self, el: ElementRef<'_>) {
        // Loose text directly inside a container becomes a paragraph of its own.
        let mut loose: Vec<Inline> = Vec::new();
        for child in el.children() {
            match child.value() {
                Node::Text(t) if !t.trim().is_empty() => {
                    loose.push(Inline::Text {
                        text: collapse_ws(t),
                        span: 0..0,
                        sup: false,
                    });
                }
                Node::Element(e) => {
                    let name = e.name();
                    let Some(child_el) = ElementRef::wrap(child) else {
                        continue;
                    };
                    if SKIPPED.contains(&name) {
                        continue;
                    }
                    if BLOCK_CONTAINERS.contains(&name) || LEAVES.contains(&name) {
                        self.flush_loose(&mut loose, "div");
                        self.element(child_el);
                    } else {
                        let mut inl = Vec::new();
                        self.collect_inlines(child_el, false, &mut inl);
                        loose.extend(inl);
                    }
                }
                _ => {}
            }
        }
        self.flush_loose(&mut loose, "div");
    }

    fn flush_loose(&mut self, loose: &mut Vec<Inline>, _tag: &str) {
        if loose.iter().all(|i| match i {
            Inline::Text { text, .. } => text.trim().is_empty(),
            Inline::Break { .. } => true,
            _ => false,
        }) {
            loose.clear();
            return;
        }
        let inlines = std::mem::take(loose);
        let from = self.loc.cursor;
        self.push_leaf(BlockKind::Paragraph, None, inlines, None, from);
    }

    fn element(&mut self, el: ElementRef<'_>) {
        let name = el.value().name();
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let level = name[1..].parse().unwrap_or(1);
                let from = self.loc.cursor;
                let mut inl = Vec::new();
                self.collect_inlines(el, false, &mut inl);
                self.push_leaf(
                    BlockKind::Heading(level),
                    Some(name),
                    inl,
                    el.value().id(),
                    from,
                );
            }
            "p" | "dt" | "dd" | "summary" | "caption" | "address" | "figcaption" => {
                let from = self.loc.cursor;
                let mut inl = Vec::new();
                self.collect_inlines(el, false, &mut inl);
                self.push_leaf(BlockKind::Paragraph, Some(name), inl, el.value().id(), from);
            }
            "li" => {
                let from = self.loc.cursor;
                let mut inl = Vec::new();
                self.collect_inlines(el, false, &mut inl);
                self.push_leaf(
                    BlockKind::ListItem { number: None },
                    Some("li"),
                    inl,
                    el.value().id(),
                    from,
                );
                // Nested lists are their own items.
                for child in el.children().filter_map(ElementRef::wrap) {
                    if matches!(child.value().name(), "ul" | "ol") {
                        self.element(child);
                    }
                }
            }
            "pre" => {
                let text: String = el.text().collect();
                let span = self
                    .loc
                    .element("pre")
                    .unwrap_or(self.loc.cursor..self.loc.cursor);
                let abs = self.loc.abs(span);
                let mut block = Block::new(
                    BlockKind::Code {
                        info: String::new(),
                    },
                    abs.clone(),
                );
                block.inlines.push(Inline::Code { text, span: abs });
                self.blocks.push(block);
            }
            "tr" => {
                let header = el
                    .children()
                    .filter_map(ElementRef::wrap)
                    .all(|c| c.value().name() == "th");
                let from = self.loc.cursor;
                let mut inl = Vec::new();
                for (i, cell) in el
                    .children()
                    .filter_map(ElementRef::wrap)
                    .filter(|c| matches!(c.value().name(), "td" | "th"))
                    .enumerate()
                {
                    if i > 0 {
                        inl.push(Inline::CellSep);
                    }
                    self.collect_inlines(cell, false, &mut inl);
                }
                let table = self.table_count;
                self.push_leaf(
                    BlockKind::TableRow { table, header },
                    Some("tr"),
                    inl,
                    None,
                    from,
                );
            }
            "table" => {
                self.table_count += 1;
                self.walk_children(el);
            }
            "figure" => self.figure(el),
            _ => self.walk_children(el),
        }
    }

    fn figure(&mut self, el: ElementRef<'_>) {
        let fig_span = self.loc.element("figure");
        let mut images = Vec::new();
        let mut caption: Option<Vec<Inline>> = None;
        let mut caption_span = None;
        let mut caption_id = None;
        for node in el.descendants() {
            let Some(child) = ElementRef::wrap(node) else {
                continue;
            };
            match child.value().name() {
                "img" => images.push(self.image_inline(child)),
                "figcaption" if caption.is_none() => {
                    let mut inl = Vec::new();
                    let cap_start = self.loc.cursor;
                    if let Some(open) = self.loc.element("figcaption") {
                        let inner_start = self.loc.raw[open.start..]
                            .find('>')
                            .map(|g| open.start + g + 1)
                            .unwrap_or(open.start);
                        let inner_end = self.loc.raw[..open.end]
                            .rfind("</figcaption")
                            .unwrap_or(open.end)
                            .max(inner_start);
                        caption_span = Some(self.loc.abs(inner_start..inner_end));
                    } else {
                        self.loc.cursor = cap_start;
                    }
                    self.collect_inlines(child, false, &mut inl);
                    caption_id = child.value().id().map(str::to_string);
                    caption = Some(inl);
                }
                _ => {}
            }
        }
        let span = fig_span
            .clone()
            .map(|s| self.loc.abs(s))
            .or_else(|| images.first().and_then(Inline::span))
            .unwrap_or(self.loc.base..self.loc.base);
        if let Some(s) = &fig_span {
            self.loc.cursor = self.loc.cursor.max(s.end.min(self.loc.raw.len()));
        }
        let mut block = Block::new(
            BlockKind::Figure {
                caption,
                caption_span,
                id: el.value().id().map(str::to_string).or(caption_id),
            },
            span,
        );
        block.inlines = images;
        self.blocks.push(block);
    }

    fn image_inline(&mut self, img: ElementRef<'_>) -> Inline {
        let v = img.value();
        let src = v.attr("src").unwrap_or("").to_string();
        let alt = v.attr("alt").unwrap_or("").to_string();
        let at = self.loc.element("img");
        let span = at
            .clone()
            .map(|r| self.loc.abs(r))
            .unwrap_or(self.loc.base + self.loc.cursor..self.loc.base + self.loc.cursor);
        if let Some(r) = at {
            self.loc.cursor = r.end;
        }
        Inline::Image {
            src,
            alt,
            span,
            width: v.attr("width").and_then(parse_dimension),
            height: v.attr("height").and_then(parse_dimension),
        }
    }

    fn collect_inlines(&mut self, el: ElementRef<'_>, sup: bool, out: &mut Vec<Inline>) {
        for child in el.children() {
            match child.value() {
                Node::Text(t) => {
                    let text = collapse_ws(t);
                    if text.is_empty() {
                        continue;
                    }
                    let needle: String = text.trim().chars().take(12).collect();
                    let span = match self.loc.seek(&needle) {
                        Some(p) => self.loc.abs(p..p + needle.len()),
                        None => self.loc.abs(self.loc.cursor..self.loc.cursor),
                    };
                    out.push(Inline::Text { text, span, sup });
                }
                Node::Element(e) => {
                    let Some(c) = ElementRef::wrap(child) else {
                        continue;
                    };
                    let name = e.name();
                    if SKIPPED.contains(&name) || matches!(name, "ul" | "ol") {
                        continue;
                    }
                    match name {
                        "img" => {
                            let inline = self.image_inline(c);
                            out.push(inline);
                        }
                        "br" => {
                            let p = self.loc.cursor;
                            out.push(Inline::Break {
                                span: self.loc.abs(p..p),
                                hard: true,
                            });
                        }
                        "sup" => self.collect_inlines(c, true, out),
                        "code" => {
                            let text: String = c.text().collect();
                            let p = self.loc.cursor;
                            out.push(Inline::Code {
                                text,
                                span: self.loc.abs(p..p),
                            });
                        }
                        "a" => {
                            let href = e.attr("href").unwrap_or("");
                            if href.is_empty() || href.starts_with('#') {
                                self.collect_inlines(c, sup, out);
                            } else {
                                let text = collapse_ws(&c.text().collect::<String>());
                                let start = self.loc.element("a");
                                let span = start
                                    .map(|r| self.loc.abs(r))
                                    .unwrap_or(self.loc.abs(self.loc.cursor..self.loc.cursor));
                                out.push(Inline::Link {
                                    url: href.to_string(),
                                    text: text.trim().to_string(),
                                    span,
                                });
                                // Images inside the link (badges, thumbnails) still count.
                                for img in c
                                    .descendants()
                                    .filter_map(ElementRef::wrap)
                                    .filter(|d| d.value().name() == "img")
                                {
                                    let inline = self.image_inline(img);
                                    out.push(inline);
                                }
                            }
                        }
                        "p" | "div" | "li" | "figcaption" => {
                            if !out.is_empty() {
                                let p = self.loc.cursor;
                                out.push(Inline::Break {
                                    span: self.loc.abs(p..p),
                                    hard: true,
                                });
                            }
                            self.collect_inlines(c, sup, out);
                        }
                        _ => self.collect_inlines(c, sup, out),
                    }
                }
                _ => {}
            }
        }
    }

    fn push_leaf(
        &mut self,
        kind: BlockKind,
        tag: Option<&str>,
        inlines: Vec<Inline>,
        id: Option<&str>,
        from: usize,
    ) {
        let after_inlines = self.loc.cursor;
        self.loc.cursor = from.min(self.loc.cursor);
        let located = tag.and_then(|t| {
            let save = self.loc.cursor;
            // Locate by the element's text first (robust when tags repeat), then by tag.
            let by_text = first_text_snippet(&inlines).and_then(|s| {
                let p = self.loc.find_from(save, &s)?;
                let open = self.loc.raw[..p].rfind(&format!("<{t}"))?;
                (open >= save).then_some(open)
            });
            if let Some(open) = by_text {
                self.loc.cursor = open;
            }
            let r = self.loc.element(t);
            if r.is_none() {
                self.loc.cursor = save;
            }
            r
        });
        let span = match located {
            Some(r) => self.loc.abs(r),
            None => {
                let spans: Vec<Range<usize>> = inlines
                    .iter()
                    .filter_map(Inline::span)
                    .filter(|s| !s.is_empty())
                    .collect();
                match (spans.first(), spans.last()) {
                    (Some(a), Some(b)) => a.start..b.end.max(a.start),
                    _ => self.loc.abs(self.loc.cursor..self.loc.cursor),
                }
            }
        };
        self.loc.cursor = self.loc.cursor.max(after_inlines);
        // Inline spans found before the leaf was located may lie outside it; clamp.
        let inlines = inlines
            .into_iter()
            .map(|i| clamp_inline(i, &span))
            .collect();
        let mut block = Block::new(kind, span);
        block.inlines = inlines;
        block.html_id = id.map(str::to_string);
        self.blocks.push(block);
    }
}

fn clamp_inline(i: Inline, outer: &Range<usize>) -> Inline {
    let fix = |s: Range<usize>| {
        if s.start >= outer.start && s.end <= outer.end {
            s
        } else {
            outer.start..outer.start
        }
    };
    match i {
        Inline::Text { text, span, sup } => Inline::Text {
            text,
            span: fix(span),
            sup,
        },
        other => other,
    }
}

fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last_ws = false;
    for c in s.chars() {
        if c.is_whitespace() {
            if !last_ws {
                out.push(' ');
            }
            last_ws = true;
        } else {
            out.push(c);
            last_ws = false;
        }
    }
    out
}

/// Blocks of an HTML fragment that starts at byte `base` of the report text.
pub(crate) fn blocks_from_fragment(raw: &str, base: usize, _full: &str) -> Vec<Block> {
    let doc = Html::parse_fragment(raw);
    let mut walker = HtmlWalker {
        loc: Locator {
            raw,
            base,
            cursor: 0,
        },
        blocks: Vec::new(),
        table_count: 10_000,
    };
    walker.walk_children(doc.root_element());
    walker.blocks
}

/// Blocks of a whole HTML report.
pub(crate) fn blocks_from_document(text: &str) -> Vec<Block> {
    let doc = Html::parse_document(text);
    let mut walker = HtmlWalker {
        loc: Locator {
            raw: text,
            base: 0,
            cursor: 0,
        },
        blocks: Vec::new(),
        table_count: 0,
    };
    let root = doc.root_element();
    match root
        .children()
        .filter_map(ElementRef::wrap)
        .find(|e| e.value().name() == "body")
    {
        Some(body) => walker.walk_children(body),
        None => walker.walk_children(root),
    }
    walker.blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_are_parsed_in_any_quoting() {
        let a = parse_tag_attrs(r#"<img src="a b.png" alt='x &amp; y' width=30 hidden>"#);
        assert_eq!(a["src"], "a b.png");
        assert_eq!(a["alt"], "x & y");
        assert_eq!(a["width"], "30");
        assert_eq!(a["hidden"], "");
    }

    #[test]
    fn figure_fragment_gives_caption_span() {
        let raw = "<figure>\n  <img src=\"images/a.png\" alt=\"A\">\n  <figcaption id=\"fig1\">Figure 1: A thing. Source: <a href=\"#ref2\">[2]</a></figcaption>\n</figure>";
        let blocks = blocks_from_fragment(raw, 100, "");
        assert_eq!(blocks.len(), 1);
        let BlockKind::Figure {
            caption,
            caption_span,
            id,
        } = &blocks[0].kind
        else {
            panic!("not a figure: {:?}", blocks[0].kind)
        };
        assert_eq!(id.as_deref(), Some("fig1"));
        let cs = caption_span.clone().unwrap();
        assert_eq!(
            &raw[cs.start - 100..cs.end - 100],
            "Figure 1: A thing. Source: <a href=\"#ref2\">[2]</a>"
        );
        let cap = super::super::blocks::inline_text(caption.as_ref().unwrap());
        assert_eq!(cap, "Figure 1: A thing. Source: [2]");
        assert_eq!(blocks[0].span, 100..100 + raw.len());
        let img = blocks[0].images().next().unwrap().span().unwrap();
        assert!(raw[img.start - 100..img.end - 100].starts_with("<img"));
    }

    #[test]
    fn document_headings_paragraphs_lists_tables() {
        let doc = "<html><head><title>x</title></head><body><h1>Title</h1><p>Para <sup>3</sup>.</p><ul><li>one</li><li>two</li></ul><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table></body></html>";
        let blocks = blocks_from_document(doc);
        let kinds: Vec<_> = blocks.iter().map(|b| format!("{:?}", b.kind)).collect();
        assert_eq!(kinds[0], "Heading(1)");
        assert_eq!(kinds[1], "Paragraph");
        assert!(kinds[2].starts_with("ListItem"));
        assert!(kinds[4].contains("header: true"));
        assert_eq!(blocks[5].plain_text(), "1 | 2");
        assert_eq!(&doc[blocks[0].span.clone()], "<h1>Title</h1>");
    }
}
