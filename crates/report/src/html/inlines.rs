//! Inline content: text nodes located in the source and cut at citation markers,
//! images, links, and the in-page anchors that are citations or mere decoration.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use scraper::{ElementRef, Node};

use crate::blocks::Inline;

use super::element::{
    collapse_ws, decode_text, image_source, is_cite_element, parse_dimension, shown_picture,
    text_capped, CITE_CLASS, CITE_TEXT, ENTITY,
};
use super::page::{is_drawing_svg, is_navigation, NON_REF_TARGET, REF_ID_NUMBER, REF_TARGET};
use super::walk::HtmlWalker;
use super::SKIPPED;

impl HtmlWalker<'_> {
    /// A text node of the tree as inlines located in the source (moving the cursor
    /// to it); whitespace-only text keeps the cursor's position.
    pub(super) fn text_node(&mut self, t: &str, sup: bool) -> Vec<Inline> {
        let text = collapse_ws(t);
        if text.is_empty() {
            return Vec::new();
        }
        let needle: String = text.trim().chars().take(12).collect();
        match self.loc.seek(&needle) {
            Some(p) => self.text_pieces(text, p, sup),
            None => {
                let span = self.loc.abs(self.loc.cursor..self.loc.cursor);
                vec![Inline::Text { text, span, sup }]
            }
        }
    }

    /// A text node found at `p` in the fragment, as inlines whose spans cover its
    /// source: one piece per source line, so a sentence in the middle of a long
    /// paragraph maps to its own bytes (a span of the node's first bytes only made
    /// every later sentence collapse onto the node's start, and the self-check then
    /// found the sentence's markers attached to nothing). When the source does not
    /// rebuild the parsed text (entities the decoder does not know), the whole node
    /// is one piece with proportional offsets.
    pub(super) fn text_pieces(&self, text: String, p: usize, sup: bool) -> Vec<Inline> {
        let raw = self.loc.raw;
        let p = crate::slice::floor(raw, p);
        let end = raw[p..].find('<').map_or(raw.len(), |i| p + i);
        let seg = &raw[p..end];
        let lead = text.len() - text.trim_start().len();
        let trail = text.trim_end().len() < text.len();
        let mut pieces: Vec<(String, Range<usize>)> = Vec::new();
        let mut off = p;
        for line in seg.split_inclusive('\n') {
            let t0 = line.trim_start();
            let start = off + (line.len() - t0.len());
            let t1 = t0.trim_end();
            if !t1.is_empty() {
                // Entities are pieces of their own, so offsets after them stay exact.
                let mut line_pieces: Vec<(String, Range<usize>)> = Vec::new();
                let mut last = 0;
                for m in ENTITY.find_iter(t1) {
                    if m.start() > last {
                        line_pieces.push((
                            t1[last..m.start()].to_string(),
                            start + last..start + m.start(),
                        ));
                    }
                    line_pieces.push((decode_text(m.as_str()), start + m.start()..start + m.end()));
                    last = m.end();
                }
                if last < t1.len() {
                    line_pieces.push((t1[last..].to_string(), start + last..start + t1.len()));
                }
                line_pieces = line_pieces
                    .into_iter()
                    .map(|(t, r)| (collapse_ws(&t), r))
                    .collect();
                // A line's pieces join with nothing between them, lines with a space.
                if let Some(first) = line_pieces.first_mut() {
                    if !pieces.is_empty() {
                        first.0.insert(0, ' ');
                        first.1.start = first.1.start.saturating_sub(1);
                    }
                }
                pieces.extend(line_pieces);
            }
            off += line.len();
        }
        let mut rebuilt = " ".repeat(lead);
        rebuilt.push_str(&pieces.iter().map(|(t, _)| t.as_str()).collect::<String>());
        if trail {
            rebuilt.push(' ');
        }
        if pieces.is_empty() || rebuilt != text {
            return vec![Inline::Text {
                text,
                span: self.loc.abs(p..end.max(p)),
                sup,
            }];
        }
        let n = pieces.len();
        pieces
            .into_iter()
            .enumerate()
            .map(|(i, (t, r))| {
                let mut piece = String::new();
                let mut start = r.start;
                if i == 0 && lead > 0 {
                    piece.push(' ');
                    start = start.saturating_sub(1);
                }
                piece.push_str(&t);
                if i + 1 == n && trail {
                    piece.push(' ');
                }
                Inline::Text {
                    text: piece,
                    span: self.loc.abs(start..r.end),
                    sup,
                }
            })
            .collect()
    }

    pub(super) fn image_inline(&mut self, img: ElementRef<'_>) -> Inline {
        let v = img.value();
        let src = image_source(v);
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

    pub(super) fn collect_inlines(&mut self, el: ElementRef<'_>, sup: bool, out: &mut Vec<Inline>) {
        for child in el.children() {
            match child.value() {
                Node::Text(t) => {
                    let inl = self.text_node(t, sup);
                    out.extend(inl);
                }
                Node::Element(_) => {
                    if let Some(c) = ElementRef::wrap(child) {
                        self.inline_element(c, sup, out);
                    }
                }
                _ => {}
            }
        }
    }

    /// One element inside running text: images, breaks, superscripts, code, links
    /// (in-page citation anchors included) and anything else by its content.
    pub(super) fn inline_element(&mut self, c: ElementRef<'_>, sup: bool, out: &mut Vec<Inline>) {
        let e = c.value();
        let name = e.name();
        if name == "svg" && is_drawing_svg(c) {
            let inline = self.svg_inline(c);
            out.push(inline);
            return;
        }
        if let Some(src) = shown_picture(c) {
            let inline = self.picture_inline(c, src);
            out.push(inline);
            return;
        }
        if SKIPPED.contains(&name) || matches!(name, "ul" | "ol") {
            return;
        }
        if name != "a" && is_navigation(c) {
            return;
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
            "sup" => {
                // Separators and brackets around citation anchors
                // (`<sup>[<a>1</a>, <a>2</a>]</sup>`) are no sentence text.
                let mut inner = Vec::new();
                self.collect_inlines(c, true, &mut inner);
                let cites = inner
                    .iter()
                    .any(|i| matches!(i, Inline::Text { text, .. } if CITE_TEXT.is_match(text)));
                if cites {
                    inner.retain(|i| match i {
                        Inline::Text { text, .. } => {
                            let t = text.trim();
                            t.is_empty()
                                || !t.chars().all(|ch| ",;，；、[]【】()（）-–—".contains(ch))
                        }
                        _ => true,
                    });
                }
                out.extend(inner);
            }
            // `<cite>4</cite>`, `<span class="citation">4</span>`,
            // `<span data-ref="4">[4]</span>`: a number marked as a citation by its
            // element, class or data attribute reads like a superscript.
            "cite" | "span" | "small" | "mark" if is_cite_element(c) => {
                self.collect_inlines(c, true, out)
            }
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
                if is_anchor_decoration(c) {
                    return;
                }
                if href.is_empty() || href.starts_with('#') {
                    // A second reference to the same footnote (`[2:1]` pointing at
                    // `#fn2`) cites entry 2.
                    if let Some(n) = self.repeat_reference(c) {
                        let p = self.loc.cursor;
                        let span = match text_capped(c, 24)
                            .and_then(|t| self.loc.find_from(p, t.trim()))
                        {
                            Some(at) => self.loc.abs(at..at + 1),
                            None => self.loc.abs(p..p),
                        };
                        out.push(Inline::Text {
                            text: format!("[{n}]"),
                            span,
                            sup: true,
                        });
                        return;
                    }
                    // A number pointing into the reference section cites
                    // that entry, like a superscript.
                    let cite = self.is_cite_anchor(c);
                    self.collect_inlines(c, sup || cite, out);
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
                // A break only after content: `<li>\n<p>` (loose lists, footnote
                // lists) must not open with an empty line, which split each entry in
                // two (a label line and an unlabelled line numbered after the list).
                let has_content = out.iter().any(|i| match i {
                    Inline::Text { text, .. } => !text.trim().is_empty(),
                    Inline::Break { .. } | Inline::CellSep => false,
                    _ => true,
                });
                if has_content {
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

    /// An in-page anchor whose text is a number (`3`, `[3]`) and whose target is in
    /// the reference section, names an entry (`#ref-3`), or whose class marks a
    /// citation.
    /// `<a href="#fn2">[2:1]</a>`: the repeated-reference form of footnote
    /// renderers; the entry number when the target names that entry.
    pub(super) fn repeat_reference(&self, a: ElementRef<'_>) -> Option<u64> {
        static REPEAT: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^\s*\[?(\d{1,4}):\d{1,3}\]?\s*$").unwrap());
        let target = a.value().attr("href")?.strip_prefix('#')?;
        let text = text_capped(a, 24)?;
        let n: u64 = REPEAT.captures(&text)?[1].parse().ok()?;
        let by_id: u64 = REF_ID_NUMBER.captures(target)?[1].parse().ok()?;
        (n == by_id).then_some(n)
    }

    pub(super) fn is_cite_anchor(&self, a: ElementRef<'_>) -> bool {
        let v = a.value();
        let target = v.attr("href").unwrap_or("").trim_start_matches('#');
        if NON_REF_TARGET.is_match(target) {
            return false;
        }
        let Some(text) = text_capped(a, 24) else {
            return false;
        };
        CITE_TEXT.is_match(&text)
            && (self.page.ref_ids.contains(target)
                || REF_TARGET.is_match(target)
                || v.attr("class").is_some_and(|k| CITE_CLASS.is_match(k)))
    }
}

/// Heading permalinks (`¶`, `#`) and footnote back-links (`↩`): not text.
pub(super) fn is_anchor_decoration(a: ElementRef<'_>) -> bool {
    let class = a.value().attr("class").unwrap_or("");
    if class.split_whitespace().any(|c| {
        matches!(
            c,
            "anchor-link"
                | "headerlink"
                | "header-anchor"
                | "anchor"
                | "footnote-backref"
                | "permalink"
        )
    }) {
        return true;
    }
    text_capped(a, 3).is_some_and(|t| {
        matches!(
            t.trim(),
            "¶" | "#" | "§" | "🔗" | "↩" | "↩\u{fe0e}" | "↑" | "⤴"
        )
    })
}
