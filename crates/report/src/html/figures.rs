//! Figures in the tree: caption and source-line elements, figure wrappers, and the
//! walker's reading of `<figure>`, inline `<svg>` drawings and script-drawn charts
//! into figure and pseudo-visual blocks.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use scraper::{ElementRef, Node};

use crate::blocks::{Block, BlockKind, Inline};
use crate::cues::{is_decorative, CAPTION_LINE};

use super::element::{
    collapse_ws, has_token, parse_dimension, parse_tag_attrs, text_capped, text_of, visible_chars,
};
use super::page::{is_drawing_svg, svg_alt, svg_data_uri, CAPTION_CLASS};
use super::walk::HtmlWalker;
use super::{BLOCK_CONTAINERS, LEAVES, SKIPPED};

/// Whether an element is a caption: `<figcaption>`, a caption class, or a numbered
/// caption text (`Figure 3: ...`, `图 2：...`) in a short text element.
pub(super) fn is_caption_element(el: ElementRef<'_>) -> bool {
    let v = el.value();
    if v.name() == "figcaption" || has_token(v, &CAPTION_CLASS) {
        // A caption never holds the picture itself (`class="captioned-image"`).
        return !el
            .descendants()
            .filter_map(ElementRef::wrap)
            .any(|d| matches!(d.value().name(), "img" | "svg" | "canvas"));
    }
    if !matches!(
        v.name(),
        "p" | "div" | "span" | "em" | "i" | "small" | "strong" | "b" | "center" | "cite"
    ) {
        return false;
    }
    // A caption line holds inline content only (a layout row whose text happens to
    // start with a caption is no caption).
    let has_blocks = el
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .any(|d| {
            let n = d.value().name();
            BLOCK_CONTAINERS.contains(&n)
                || LEAVES.contains(&n)
                || matches!(n, "img" | "svg" | "canvas" | "div" | "p")
        });
    !has_blocks
        && text_capped(el, 400).is_some_and(|t| CAPTION_LINE.is_match(collapse_ws(&t).trim()))
}

/// A short line that is wholly emphasized (`<p><em>...</em></p>`, `<em>...</em>`):
/// an unnumbered caption when it sits right under an image.
pub(super) fn is_emphasized_line(el: ElementRef<'_>) -> bool {
    let name = el.value().name();
    let Some(t) = text_capped(el, 300) else {
        return false;
    };
    let n = collapse_ws(&t).trim().chars().count();
    if !(3..=300).contains(&n) {
        return false;
    }
    if matches!(name, "em" | "i" | "small") {
        return true;
    }
    if !matches!(name, "p" | "div") {
        return false;
    }
    let mut kids = el.children().filter(|c| match c.value() {
        Node::Text(t) => !t.trim().is_empty(),
        Node::Element(_) => true,
        _ => false,
    });
    let only = kids.next();
    kids.next().is_none()
        && only
            .and_then(ElementRef::wrap)
            .is_some_and(|c| matches!(c.value().name(), "em" | "i" | "small"))
}

/// A visual inside an element that is a figure: a non-decorative `<img>` or a
/// drawing `<svg>`.
pub(super) fn is_visual(el: ElementRef<'_>) -> bool {
    let v = el.value();
    match v.name() {
        "img" => !is_decorative(
            v.attr("src").unwrap_or(""),
            v.attr("alt").unwrap_or(""),
            v.attr("width").and_then(parse_dimension),
            v.attr("height").and_then(parse_dimension),
        ),
        "svg" => is_drawing_svg(el),
        _ => false,
    }
}

pub(super) fn visuals_in(el: ElementRef<'_>) -> usize {
    std::iter::once(el)
        .chain(el.descendants().skip(1).filter_map(ElementRef::wrap))
        .filter(|e| is_visual(*e))
        .count()
}

/// Visible text of an element outside captions and visuals, counted up to just
/// past `max`.
pub(super) fn prose_outside_captions(el: ElementRef<'_>, max: usize) -> usize {
    let mut n = 0;
    for node in el.descendants() {
        let Node::Text(t) = node.value() else {
            continue;
        };
        let excluded = node.ancestors().filter_map(ElementRef::wrap).any(|a| {
            let name = a.value().name();
            matches!(name, "script" | "style" | "svg" | "noscript")
                || is_caption_element(a) && a != el
        });
        if !excluded {
            n += visible_chars(t);
            if n > max {
                break;
            }
        }
    }
    n
}

/// A caption read from the source: its inlines, the span of its inner text and the
/// span of the whole element.
pub(super) type CaptionRead = (Vec<Inline>, Option<Range<usize>>, Option<Range<usize>>);

/// The caption found for a figure wrapper.
pub(super) enum CaptionAt<'d> {
    Inside(ElementRef<'d>),
    Next(ElementRef<'d>),
}

/// A figure wrapper (an `<img>`/`<svg>` itself, or an element holding visuals and
/// at most a short label besides its caption) and where its caption is.
/// Append a source line's inlines to a figure caption (a space between); the
/// caption span stays the caption's, or becomes the source line's when the figure
/// had no caption.
pub(super) fn append_source(
    caption: &mut Vec<Inline>,
    caption_span: &mut Option<Range<usize>>,
    source: Vec<Inline>,
    source_span: Option<Range<usize>>,
) {
    if source.is_empty() {
        return;
    }
    let has_text = caption.iter().any(|i| match i {
        Inline::Text { text, .. } => !text.trim().is_empty(),
        Inline::Image { .. } | Inline::CellSep | Inline::Break { .. } => false,
        _ => true,
    });
    if has_text {
        let at = caption
            .last()
            .and_then(Inline::span)
            .map_or(0..0, |r| r.end..r.end);
        caption.push(Inline::Text {
            text: " ".to_string(),
            span: at,
            sup: false,
        });
    } else {
        caption.clear();
        *caption_span = source_span;
    }
    caption.extend(source);
}

/// A class token of a figure's source line (`<p class="chart-source">`).
pub(super) static SOURCE_CLASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(sources?|credits?|attribution|source[-_](line|note|text))$|^(fig|figure|img|image|chart|graph|plot|data|table)[-_]?(sources?|credits?)$").unwrap()
});
/// The text of a source line: `Source: ...`, `Data: ...`, `来源：...`.
pub(super) static SOURCE_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[\s(（]*(sources?|data(?: sources?)?|credits?|数据来源|资料来源|图片来源|来源|出处)\s*[:：]").unwrap()
});

/// A short line of inline content naming where a figure's data comes from, by its
/// class (`source`, `chart-source`, `fig-credit`) or its text (`Source: ...`).
pub(super) fn is_source_line(el: ElementRef<'_>) -> bool {
    let v = el.value();
    if !matches!(
        v.name(),
        "p" | "div" | "span" | "small" | "em" | "i" | "cite" | "footer"
    ) || visuals_in(el) > 0
    {
        return false;
    }
    let inline_only = !el
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .any(|d| {
            let n = d.value().name();
            matches!(
                n,
                "p" | "div" | "ul" | "ol" | "table" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6"
            )
        });
    let Some(t) = text_capped(el, 300) else {
        return false;
    };
    inline_only && (has_token(v, &SOURCE_CLASS) || SOURCE_TEXT.is_match(collapse_ws(&t).trim()))
}

/// The caption line after a `<figure>` that holds pictures and no caption of its own.
pub(super) fn figure_next_caption<'d>(
    fig: ElementRef<'d>,
    next: Option<ElementRef<'d>>,
) -> Option<ElementRef<'d>> {
    if visuals_in(fig) == 0 {
        return None;
    }
    let own_caption = fig
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .any(|d| d.value().name() == "figcaption" || is_caption_element(d));
    if own_caption {
        return None;
    }
    let next = next?;
    (visuals_in(next) == 0 && (is_caption_element(next) || is_emphasized_line(next)))
        .then_some(next)
}

pub(super) fn figure_caption<'d>(
    el: ElementRef<'d>,
    next: Option<ElementRef<'d>>,
) -> Option<CaptionAt<'d>> {
    if matches!(el.value().name(), "figure" | "table" | "ul" | "ol" | "tr") {
        return None;
    }
    if visuals_in(el) == 0 || prose_outside_captions(el, 40) > 40 || is_caption_element(el) {
        return None;
    }
    // Paragraphs, list items, headings or a drawn chart besides the picture make the
    // element a section of the report, not a figure.
    let holds_prose = el
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .any(|d| {
            let n = d.value().name();
            let blockish = matches!(
                n,
                "p" | "li"
                    | "h1"
                    | "h2"
                    | "h3"
                    | "h4"
                    | "h5"
                    | "h6"
                    | "table"
                    | "blockquote"
                    | "pre"
                    | "dd"
                    | "dt"
            );
            if n == "canvas" {
                return true;
            }
            blockish
                && !is_caption_element(d)
                && !is_source_line(d)
                && !d
                    .ancestors()
                    .filter_map(ElementRef::wrap)
                    .take_while(|a| *a != el)
                    .any(is_caption_element)
                && visible_chars(&text_of(d)) > 0
        });
    if holds_prose {
        return None;
    }
    let inside = el
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .find(|d| is_caption_element(*d) && visuals_in(*d) == 0);
    if let Some(c) = inside {
        return Some(CaptionAt::Inside(c));
    }
    let next = next?;
    (visuals_in(next) == 0 && (is_caption_element(next) || is_emphasized_line(next)))
        .then_some(CaptionAt::Next(next))
}

impl HtmlWalker<'_> {
    /// A source line right after a figure (`<p class="source">Source: ... [2]</p>`):
    /// read into the figure's caption, so its citations are the figure's sources,
    /// and not read again as a paragraph.
    pub(super) fn source_after<'d>(
        &mut self,
        next: Option<ElementRef<'d>>,
        consumed: &mut Vec<ElementRef<'d>>,
    ) {
        let Some(src_el) = next.filter(|n| is_source_line(*n)) else {
            return;
        };
        if !self
            .blocks
            .last()
            .is_some_and(|b| matches!(b.kind, BlockKind::Figure { .. }))
        {
            return;
        }
        let (inl, inner, elem) = self.read_caption(src_el);
        consumed.push(src_el);
        let Some(block) = self.blocks.last_mut() else {
            return;
        };
        if let BlockKind::Figure {
            caption,
            caption_span,
            ..
        } = &mut block.kind
        {
            let mut cap = caption.take().unwrap_or_default();
            append_source(&mut cap, caption_span, inl, inner);
            *caption = Some(cap);
        }
        if let Some(e) = elem {
            block.span = block.span.start.min(e.start)..block.span.end.max(e.end);
        }
    }

    /// A chart drawn at view time or a Mermaid source: a code block of that kind,
    /// which the figure stage lists as a pseudo-visual and no stage reads as text.
    pub(super) fn script_visual_block(&mut self, el: ElementRef<'_>, kind: &str) {
        let name = el.value().name();
        let id = el.value().id();
        let find_tag = |mut from: usize| loop {
            let p = self.loc.find_from(from, &format!("<{name}"))?;
            let tag_end = self.loc.raw[p..].find('>').map(|g| p + g).unwrap_or(p);
            let tag = &self.loc.raw[p..tag_end];
            if id.is_none_or(|i| parse_tag_attrs(tag).get("id").is_some_and(|t| t == i)) {
                return Some(p);
            }
            from = p + 1;
        };
        // An id names one element: when the cursor has drifted past it (markup the
        // parser repairs, such as a `<p>` inside a `<p>`, leaves elements no source
        // tag stands for), the element is still found where it is written.
        let start = find_tag(self.loc.cursor).or_else(|| id.and_then(|_| find_tag(0)));
        let span = match start {
            Some(p) => {
                self.loc.cursor = p;
                self.loc.element(name).unwrap_or(p..p)
            }
            None => self.loc.cursor..self.loc.cursor,
        };
        self.loc.cursor = self.loc.cursor.max(span.end);
        let abs = self.loc.abs(span);
        let text: String = el.text().collect();
        let mut block = Block::new(
            BlockKind::Code {
                info: kind.to_string(),
            },
            abs.clone(),
        );
        block.inlines.push(Inline::Code { text, span: abs });
        block.from_html = true;
        self.blocks.push(block);
    }

    /// A frame or component showing the local picture `src` ([`shown_picture`]) as an
    /// image of that file, placed at its start tag (found by the file's name, as a
    /// component's name is written in any case).
    pub(super) fn picture_inline(&mut self, el: ElementRef<'_>, src: String) -> Inline {
        let at = self.loc.find_from(self.loc.cursor, &src).and_then(|p| {
            let open = self.loc.raw[..p].rfind('<')?;
            let end = self.loc.raw[p..]
                .find('>')
                .map_or(p + src.len(), |g| p + g + 1);
            (open >= self.loc.cursor).then_some(open..end)
        });
        let span = match at {
            Some(r) => {
                self.loc.cursor = r.end;
                self.loc.abs(r)
            }
            None => self.loc.abs(self.loc.cursor..self.loc.cursor),
        };
        let v = el.value();
        let alt = ["alt", "title", "aria-label", "caption"]
            .iter()
            .find_map(|k| v.attr(k).map(str::trim).filter(|t| !t.is_empty()))
            .unwrap_or("")
            .to_string();
        Inline::Image {
            src,
            alt,
            span,
            width: v.attr("width").and_then(parse_dimension),
            height: v.attr("height").and_then(parse_dimension),
        }
    }

    /// An inline `<svg>` drawing as an image whose content is the SVG itself.
    pub(super) fn svg_inline(&mut self, el: ElementRef<'_>) -> Inline {
        let at = self.loc.element("svg");
        let (span, src) = match at {
            Some(r) => {
                let src = svg_data_uri(&self.loc.raw[r.clone()]);
                self.loc.cursor = r.end;
                (self.loc.abs(r), src)
            }
            None => (
                self.loc.abs(self.loc.cursor..self.loc.cursor),
                svg_data_uri(&el.html()),
            ),
        };
        Inline::Image {
            src,
            alt: svg_alt(el),
            span,
            width: None,
            height: None,
        }
    }

    /// Read a caption element at or after the cursor: its inlines, the span of its
    /// inner text and the span of the whole element.
    pub(super) fn read_caption(&mut self, c: ElementRef<'_>) -> CaptionRead {
        let name = c.value().name();
        let from = self.loc.cursor;
        let snippet: String = collapse_ws(&text_of(c)).trim().chars().take(12).collect();
        let open = self.loc.find_from(from, &snippet).and_then(|p| {
            self.loc.raw[from..p]
                .rfind(&format!("<{name}"))
                .map(|o| from + o)
        });
        if let Some(o) = open {
            self.loc.cursor = o;
        }
        let elem = self.loc.element(name);
        let inner = elem.clone().map(|r| {
            let inner_start = self.loc.raw[r.start..]
                .find('>')
                .map(|g| r.start + g + 1)
                .unwrap_or(r.start)
                .min(r.end);
            let inner_end = self.loc.raw[..r.end]
                .rfind(&format!("</{name}"))
                .unwrap_or(r.end)
                .max(inner_start);
            self.loc.abs(inner_start..inner_end)
        });
        if elem.is_none() {
            self.loc.cursor = from;
        }
        let mut inl = Vec::new();
        self.collect_inlines(c, false, &mut inl);
        if let Some(r) = &elem {
            self.loc.cursor = self.loc.cursor.max(r.end);
        }
        (inl, inner, elem.map(|r| self.loc.abs(r)))
    }

    /// Visuals of a figure wrapper, in document order, with its caption when the
    /// caption sits inside.
    pub(super) fn gather_visuals(
        &mut self,
        el: ElementRef<'_>,
        caption_el: ElementRef<'_>,
        images: &mut Vec<Inline>,
        caption: &mut Option<CaptionRead>,
    ) {
        if el == caption_el {
            *caption = Some(self.read_caption(el));
            return;
        }
        if is_source_line(el) {
            return;
        }
        match el.value().name() {
            "img" => {
                let inline = self.image_inline(el);
                images.push(inline);
                return;
            }
            "svg" => {
                if is_drawing_svg(el) {
                    let inline = self.svg_inline(el);
                    images.push(inline);
                }
                return;
            }
            n if SKIPPED.contains(&n) => return,
            _ => {}
        }
        for child in el.children().filter_map(ElementRef::wrap) {
            self.gather_visuals(child, caption_el, images, caption);
        }
    }

    /// A figure built from a wrapper (`<div class="figure">`, `<p>` holding an image,
    /// a bare `<img>`) and its class- or text-marked caption.
    pub(super) fn figure_wrapper(&mut self, el: ElementRef<'_>, cap: CaptionAt<'_>) {
        let mut images = Vec::new();
        let mut caption = None;
        let caption_el = match cap {
            CaptionAt::Inside(c) | CaptionAt::Next(c) => c,
        };
        self.gather_visuals(el, caption_el, &mut images, &mut caption);
        if let CaptionAt::Next(c) = cap {
            caption = Some(self.read_caption(c));
        }
        let (mut cap_inl, mut caption_span, cap_elem) = caption.unwrap_or_default();
        // A source line inside the wrapper (`<p class="chart-source">Data: ...`)
        // belongs to the caption: its citations are the figure's sources.
        let source = el
            .descendants()
            .skip(1)
            .filter_map(ElementRef::wrap)
            .find(|d| {
                *d != caption_el && is_source_line(*d) && !d.ancestors().any(|a| a == *caption_el)
            });
        if let Some(src_el) = source {
            let save = self.loc.cursor;
            self.loc.cursor = images
                .iter()
                .filter_map(Inline::span)
                .map(|r| r.start.saturating_sub(self.loc.base))
                .min()
                .unwrap_or(save)
                .min(save);
            let (inl, inner, _) = self.read_caption(src_el);
            self.loc.cursor = self.loc.cursor.max(save);
            append_source(&mut cap_inl, &mut caption_span, inl, inner);
        }
        let mut spans: Vec<Range<usize>> = images.iter().filter_map(Inline::span).collect();
        spans.extend(cap_elem);
        let span = match (
            spans.iter().map(|s| s.start).min(),
            spans.iter().map(|s| s.end).max(),
        ) {
            (Some(a), Some(b)) => a..b.max(a),
            _ => self.loc.abs(self.loc.cursor..self.loc.cursor),
        };
        let id = el
            .value()
            .id()
            .or_else(|| caption_el.value().id())
            .map(str::to_string);
        let mut block = Block::new(
            BlockKind::Figure {
                caption: Some(cap_inl),
                caption_span,
                id,
            },
            span,
        );
        block.inlines = images;
        block.from_html = true;
        self.blocks.push(block);
    }

    pub(super) fn figure(&mut self, el: ElementRef<'_>) {
        let fig_span = self.loc.element("figure");
        let mut images = Vec::new();
        let mut caption: Option<Vec<Inline>> = None;
        let mut caption_span = None;
        let mut caption_id = None;
        let mut chart = None;
        let mut source: Option<ElementRef<'_>> = None;
        for node in el.descendants() {
            let Some(child) = ElementRef::wrap(node) else {
                continue;
            };
            match child.value().name() {
                "img" => images.push(self.image_inline(child)),
                "svg" if is_drawing_svg(child) => images.push(self.svg_inline(child)),
                "canvas" if chart.is_none() => chart = Some(child),
                _ if source.is_none()
                    && is_source_line(child)
                    && !child
                        .ancestors()
                        .filter_map(ElementRef::wrap)
                        .any(|a| a.value().name() == "figcaption" || is_caption_element(a)) =>
                {
                    source = Some(child);
                }
                name if caption.is_none()
                    && (name == "figcaption" || is_caption_element(child))
                    && visuals_in(child) == 0 =>
                {
                    let mut inl = Vec::new();
                    let cap_start = self.loc.cursor;
                    if let Some(open) = self.loc.element(name) {
                        let inner_start = self.loc.raw[open.start..]
                            .find('>')
                            .map(|g| open.start + g + 1)
                            .unwrap_or(open.start);
                        let inner_end = self.loc.raw[..open.end]
                            .rfind(&format!("</{name}"))
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
        // Charts a browser drew inside the `<figure>` are its pictures.
        if let (Some(map), Some(fs)) = (self.renders, fig_span.as_ref()) {
            let abs = self.loc.abs(fs.clone());
            for at in map.anchors_in(&abs) {
                images.extend(map.inlines(at, at..at));
            }
        }
        if images.is_empty() {
            if let Some(c) = chart {
                // A script-drawn chart in a `<figure>`: listed, with the figure's line.
                let save = self.loc.cursor;
                self.loc.cursor = fig_span.as_ref().map_or(save, |s| s.start);
                self.script_visual_block(c, "chart");
                self.loc.cursor = save.max(fig_span.as_ref().map_or(save, |s| s.end));
                return;
            }
        }
        if let Some(src_el) = source {
            let save = self.loc.cursor;
            self.loc.cursor = fig_span.as_ref().map_or(save, |s| s.start);
            let mut inl = Vec::new();
            self.collect_inlines(src_el, false, &mut inl);
            self.loc.cursor = save;
            let mut cap = caption.take().unwrap_or_default();
            append_source(&mut cap, &mut caption_span, inl, None);
            caption = Some(cap);
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
        block.from_html = true;
        self.blocks.push(block);
    }
}
