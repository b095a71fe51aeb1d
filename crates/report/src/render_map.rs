//! The render map: charts a browser found, by the byte offset of their anchor
//! element in the report text, and how they enter the blocks (placeholder images
//! the figure stage turns into figures of kind `chart`). Used by the front ends and
//! the figure stage; knows nothing of either.

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::blocks::{Block, BlockKind, Inline};

/// Prefix of the placeholder `src` a rendered chart carries between the front ends
/// and the figure stage (`tvir-rendered:<offset>:<k>`); never in a report.
pub(crate) const RENDERED_SRC: &str = "tvir-rendered:";

/// One chart a browser found, as the parser needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderedFigure {
    /// The figure's `content`: the document and element it was taken from
    /// (`report.html#sales`, `charts/x.html#chart > svg`).
    pub content: String,
    /// The caption shown next to the chart in its own document (a chart inside a
    /// frame), when the report text gives none.
    pub caption: Option<String>,
    /// The chart's title from its configuration: the caption when the page gives
    /// none.
    pub title: Option<String>,
    /// The visible title labelling the chart's own container (a card's heading, a
    /// title element, a bold line above it): the caption of last resort.
    #[serde(default)]
    pub heading: Option<String>,
    /// Where `caption` came from when it is set (`figcaption`, `caption line`).
    #[serde(default)]
    pub caption_source: Option<String>,
    /// The chart's data as read from its library (`chart_data` of the figure).
    pub chart_data: Option<serde_json::Value>,
}

impl RenderedFigure {
    /// The caption the chart shows when the report text gives none: its own
    /// caption, else its configured title, else the visible title over it.
    pub fn caption_text(&self) -> Option<&str> {
        [&self.caption, &self.title, &self.heading]
            .into_iter()
            .flatten()
            .map(|s| s.trim())
            .find(|s| !s.is_empty())
    }

    /// Where [`Self::caption_text`] comes from: `figcaption` or `caption line` (the
    /// chart's own document), `configuration`, `heading`, or `none`.
    pub fn caption_text_source(&self) -> &str {
        let set = |s: &Option<String>| s.as_deref().is_some_and(|t| !t.trim().is_empty());
        if set(&self.caption) {
            self.caption_source.as_deref().unwrap_or("caption line")
        } else if set(&self.title) {
            "configuration"
        } else if set(&self.heading) {
            "heading"
        } else {
            "none"
        }
    }
}

/// Rendered charts by the offset of their anchor element in the report text; several
/// under one anchor are in page order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RenderMap {
    pub charts: BTreeMap<usize, Vec<RenderedFigure>>,
}

impl RenderMap {
    pub fn is_empty(&self) -> bool {
        self.charts.is_empty()
    }

    /// The chart a placeholder `src` names.
    pub(crate) fn lookup(&self, src: &str) -> Option<&RenderedFigure> {
        let (at, k) = placeholder(src)?;
        self.charts.get(&at)?.get(k)
    }

    /// Placeholder image inlines of the charts anchored at `at`, each spanning `span`.
    pub(crate) fn inlines(&self, at: usize, span: Range<usize>) -> Vec<Inline> {
        self.charts.get(&at).map_or_else(Vec::new, |charts| {
            charts
                .iter()
                .enumerate()
                .map(|(k, c)| Inline::Image {
                    src: format!("{RENDERED_SRC}{at}:{k}"),
                    alt: c.caption_text().unwrap_or_default().to_string(),
                    span: span.clone(),
                    width: None,
                    height: None,
                })
                .collect()
        })
    }

    /// Anchors inside `span`, in order.
    pub(crate) fn anchors_in(&self, span: &Range<usize>) -> Vec<usize> {
        self.charts.range(span.clone()).map(|(at, _)| *at).collect()
    }
}

/// `(offset, k)` of a placeholder `src`.
pub(crate) fn placeholder(src: &str) -> Option<(usize, usize)> {
    let rest = src.strip_prefix(RENDERED_SRC)?;
    let (at, k) = rest.split_once(':')?;
    Some((at.parse().ok()?, k.parse().ok()?))
}

/// Puts every rendered chart into the blocks: an image or code block (a script
/// target, a spec, a `![...](chart.html)`) starting at an anchor becomes the charts
/// anchored there, and charts no block took (an element inside running text)
/// become a block of their own at their place.
pub(crate) fn apply(blocks: &mut Vec<Block>, map: &RenderMap) {
    if map.is_empty() {
        return;
    }
    let mut taken: HashSet<usize> = HashSet::new();
    for b in blocks.iter() {
        for i in &b.inlines {
            if let Inline::Image { src, .. } = i {
                if let Some((at, _)) = placeholder(src) {
                    taken.insert(at);
                }
            }
        }
    }
    for b in blocks.iter_mut() {
        if let BlockKind::Code { .. } = b.kind {
            let at = b.span.start;
            if map.charts.contains_key(&at) && !taken.contains(&at) {
                taken.insert(at);
                let inlines = map.inlines(at, b.span.clone());
                let mut para = Block::new(BlockKind::Paragraph, b.span.clone());
                para.inlines = inlines;
                para.from_html = b.from_html;
                para.footnote = b.footnote.clone();
                *b = para;
            }
            continue;
        }
        let mut changed = false;
        let mut out = Vec::with_capacity(b.inlines.len());
        for i in std::mem::take(&mut b.inlines) {
            match &i {
                Inline::Image { span, src, .. }
                    if !src.starts_with(RENDERED_SRC)
                        && map.charts.contains_key(&span.start)
                        && !taken.contains(&span.start) =>
                {
                    taken.insert(span.start);
                    out.extend(map.inlines(span.start, span.clone()));
                    changed = true;
                }
                _ => out.push(i),
            }
        }
        b.inlines = out;
        let _ = changed;
    }
    for (&at, _) in map.charts.iter().filter(|(at, _)| !taken.contains(at)) {
        let mut para = Block::new(BlockKind::Paragraph, at..at);
        para.inlines = map.inlines(at, at..at);
        let pos = blocks.partition_point(|b| b.span.start <= at);
        blocks.insert(pos, para);
    }
}
