//! The document walk: containers are descended, leaves (headings, paragraphs, list
//! items, table rows, code) become blocks with located spans, and the walk tracks
//! whether it is inside the reference section.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use scraper::{ElementRef, Node};

use crate::blocks::{inline_text, Block, BlockKind, Inline};
use crate::cues::is_reference_heading;

use super::element::{has_token, shown_picture};
use super::figures::{figure_caption, figure_next_caption, CaptionAt};
use super::page::{
    entry_number, is_drawing_svg, is_navigation, script_visual, PageInfo, REF_CONTAINER,
    REF_ID_NUMBER,
};
use super::{Locator, BLOCK_CONTAINERS, LEAVES, SKIPPED};

pub(super) static LABELLED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*[\[(（【]?\d{1,4}[\])）】.]").unwrap());

pub(super) struct HtmlWalker<'a> {
    pub(super) loc: Locator<'a>,
    pub(super) blocks: Vec<Block>,
    pub(super) table_count: usize,
    pub(super) page: PageInfo,
    /// Level of the reference heading whose section the walk is in.
    pub(super) ref_heading: Option<u8>,
    /// Depth of reference-section containers (`<section id="sources">`) around the walk.
    pub(super) ref_container: usize,
    /// Charts a browser drew, by anchor offset (a re-parse after rendering).
    pub(super) renders: Option<&'a crate::render_map::RenderMap>,
}

pub(super) fn first_text_snippet(inlines: &[Inline]) -> Option<String> {
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
    pub(super) fn walk_children(&mut self, el: ElementRef<'_>) {
        // Loose text directly inside a container becomes a paragraph of its own.
        let mut loose: Vec<Inline> = Vec::new();
        let kids: Vec<_> = el.children().collect();
        // Caption and source-line siblings already read with the figure before them.
        let mut consumed: Vec<ElementRef<'_>> = Vec::new();
        // The next sibling element after `k` not yet read, unless visible text
        // comes first.
        let next_after = |k: usize, consumed: &[ElementRef<'_>]| {
            kids[k + 1..]
                .iter()
                .filter(|n| ElementRef::wrap(**n).is_none_or(|e| !consumed.contains(&e)))
                .find(|n| match n.value() {
                    Node::Text(t) => !t.trim().is_empty(),
                    Node::Comment(_) => false,
                    _ => true,
                })
                .and_then(|n| ElementRef::wrap(*n))
        };
        for (k, child) in kids.iter().enumerate() {
            match child.value() {
                Node::Text(t) if !t.trim().is_empty() => {
                    // Located like running text, so a block made of loose text (a
                    // `<div class="reference-item">[3] Title <a>`) spans its words.
                    let inl = self.text_node(t, false);
                    loose.extend(inl);
                }
                Node::Element(e) => {
                    let name = e.name();
                    let Some(child_el) = ElementRef::wrap(*child) else {
                        continue;
                    };
                    if consumed.contains(&child_el) {
                        continue;
                    }
                    if is_navigation(child_el) {
                        continue;
                    }
                    // A frame or component showing a local picture is that picture.
                    if let Some(src) = shown_picture(child_el) {
                        let inline = self.picture_inline(child_el, src);
                        loose.push(inline);
                        continue;
                    }
                    if let Some(kind) = script_visual(child_el, &self.page) {
                        self.flush_loose(&mut loose, "div");
                        self.script_visual_block(child_el, kind);
                        continue;
                    }
                    if SKIPPED.contains(&name) && name != "svg" {
                        continue;
                    }
                    // The next sibling element, unless text a reader sees comes first.
                    let next = kids[k + 1..]
                        .iter()
                        .find(|n| match n.value() {
                            Node::Text(t) => !t.trim().is_empty(),
                            Node::Comment(_) => false,
                            _ => true,
                        })
                        .and_then(|n| ElementRef::wrap(*n));
                    if name == "figure" {
                        // A `<figure>` with no caption of its own, captioned by the
                        // line after it (`<p class="caption">Figure 1: ...`).
                        if let Some(n) = figure_next_caption(child_el, next) {
                            self.flush_loose(&mut loose, "div");
                            consumed.push(n);
                            self.figure_wrapper(child_el, CaptionAt::Next(n));
                            self.source_after(next_after(k, &consumed), &mut consumed);
                            continue;
                        }
                    } else if let Some(cap) = figure_caption(child_el, next) {
                        self.flush_loose(&mut loose, "div");
                        if let CaptionAt::Next(n) = cap {
                            consumed.push(n);
                        }
                        self.figure_wrapper(child_el, cap);
                        self.source_after(next_after(k, &consumed), &mut consumed);
                        continue;
                    }
                    if name == "svg" {
                        if is_drawing_svg(child_el) {
                            let inline = self.svg_inline(child_el);
                            loose.push(inline);
                        }
                        continue;
                    }
                    if BLOCK_CONTAINERS.contains(&name) || LEAVES.contains(&name) {
                        self.flush_loose(&mut loose, "div");
                        let before = self.blocks.len();
                        self.element(child_el);
                        let made_figure = self.blocks.len() > before
                            && self
                                .blocks
                                .last()
                                .is_some_and(|b| matches!(b.kind, BlockKind::Figure { .. }));
                        if name == "figure" && made_figure {
                            self.source_after(next_after(k, &consumed), &mut consumed);
                        }
                    } else {
                        let mut inl = Vec::new();
                        self.inline_element(child_el, false, &mut inl);
                        loose.extend(inl);
                    }
                }
                _ => {}
            }
        }
        self.flush_loose(&mut loose, "div");
    }

    pub(super) fn in_ref_section(&self) -> bool {
        self.ref_heading.is_some() || self.ref_container > 0
    }

    pub(super) fn flush_loose(&mut self, loose: &mut Vec<Inline>, _tag: &str) {
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

    pub(super) fn element(&mut self, el: ElementRef<'_>) {
        let name = el.value().name();
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let level = name[1..].parse().unwrap_or(1);
                let from = self.loc.cursor;
                let mut inl = Vec::new();
                self.collect_inlines(el, false, &mut inl);
                if is_reference_heading(&inline_text(&inl)) {
                    self.ref_heading = Some(level);
                } else if self.ref_heading.is_some_and(|l| level <= l) {
                    self.ref_heading = None;
                }
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
                // Entries of a reference list carry their number as written text, so
                // the list reader sees `[3] Title URL` whatever numbered it.
                let by_id = el.value().id().is_some_and(|i| REF_ID_NUMBER.is_match(i));
                let label = if self.in_ref_section() || by_id {
                    let text = inline_text(&inl);
                    entry_number(el).filter(|_| !LABELLED.is_match(&text))
                } else {
                    None
                };
                self.push_leaf(
                    BlockKind::ListItem { number: None },
                    Some("li"),
                    inl,
                    el.value().id(),
                    from,
                );
                if let (Some(n), Some(b)) = (label, self.blocks.last_mut()) {
                    let at = b.span.start;
                    b.inlines.insert(
                        0,
                        Inline::Text {
                            text: format!("[{n}] "),
                            span: at..at,
                            sup: false,
                        },
                    );
                }
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
                block.from_html = true;
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
            _ => {
                let is_ref = has_token(el.value(), &REF_CONTAINER);
                self.ref_container += usize::from(is_ref);
                let outer = self.ref_heading;
                self.walk_children(el);
                self.ref_container -= usize::from(is_ref);
                if outer.is_none()
                    && matches!(name, "section" | "article" | "aside" | "footer" | "details")
                {
                    self.ref_heading = None;
                }
            }
        }
    }

    pub(super) fn push_leaf(
        &mut self,
        kind: BlockKind,
        tag: Option<&str>,
        inlines: Vec<Inline>,
        id: Option<&str>,
        from: usize,
    ) {
        let after_inlines = self.loc.cursor;
        self.loc.cursor = from.min(self.loc.cursor);
        // A leaf with nothing in it may be one the parser made up (a stray `</p>`
        // becomes an empty `<p>`): looking for its tag would take the next one
        // written, far ahead, and every later element would be placed after it.
        let tag = tag.filter(|_| !inlines.is_empty());
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
        block.from_html = true;
        self.blocks.push(block);
    }
}

pub(super) fn clamp_inline(i: Inline, outer: &Range<usize>) -> Inline {
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
