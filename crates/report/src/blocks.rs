//! The intermediate block model both front ends produce: a flat list of leaf blocks
//! (headings, paragraphs, list items, table rows, code, figures) with their inline
//! content and byte spans in the source. References, citations and figures are all
//! read from this list, so Markdown and HTML reports share every later rule.

use std::ops::Range;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BlockKind {
    Heading(u8),
    Paragraph,
    /// `number` is the label written in the source for ordered items.
    ListItem {
        number: Option<u64>,
    },
    TableRow {
        table: usize,
        header: bool,
    },
    Code {
        info: String,
    },
    /// A `<figure>` element (or an HTML block holding images): its images are among
    /// the inlines, its caption separately.
    Figure {
        caption: Option<Vec<Inline>>,
        caption_span: Option<Range<usize>>,
        id: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Block {
    pub kind: BlockKind,
    pub span: Range<usize>,
    pub inlines: Vec<Inline>,
    /// Label of the footnote definition this block sits in.
    pub footnote: Option<String>,
    /// Element id (HTML `id=`) when one was given, e.g. `fig3` on a caption.
    pub html_id: Option<String>,
    /// Built by the HTML front end (its source lines are tags, not Markdown).
    pub from_html: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Inline {
    /// Plain text; `sup` marks text inside `<sup>`.
    Text {
        text: String,
        span: Range<usize>,
        sup: bool,
    },
    Link {
        url: String,
        text: String,
        span: Range<usize>,
    },
    Image {
        src: String,
        alt: String,
        span: Range<usize>,
        /// Declared size (`width=`/`height=` attributes), used to spot tracking pixels.
        width: Option<u32>,
        height: Option<u32>,
    },
    FootnoteRef {
        label: String,
        span: Range<usize>,
    },
    Code {
        text: String,
        span: Range<usize>,
    },
    /// A line break; `hard` for `<br>` and Markdown hard breaks, which end a
    /// sentence unit, soft ones are plain whitespace.
    Break {
        span: Range<usize>,
        hard: bool,
    },
    /// Boundary between two table cells.
    CellSep,
}

impl Inline {
    pub fn span(&self) -> Option<Range<usize>> {
        match self {
            Inline::Text { span, .. }
            | Inline::Link { span, .. }
            | Inline::Image { span, .. }
            | Inline::FootnoteRef { span, .. }
            | Inline::Code { span, .. }
            | Inline::Break { span, .. } => Some(span.clone()),
            Inline::CellSep => None,
        }
    }
}

impl Block {
    pub fn new(kind: BlockKind, span: Range<usize>) -> Self {
        Block {
            kind,
            span,
            inlines: Vec::new(),
            footnote: None,
            html_id: None,
            from_html: false,
        }
    }

    /// Plain text of the block: links by their text, images dropped, breaks as
    /// newlines, cells separated by ` | `.
    pub fn plain_text(&self) -> String {
        inline_text(&self.inlines)
    }

    pub fn images(&self) -> impl Iterator<Item = &Inline> {
        self.inlines
            .iter()
            .filter(|i| matches!(i, Inline::Image { .. }))
    }
}

/// Plain text of a run of inlines.
pub(crate) fn inline_text(inlines: &[Inline]) -> String {
    let mut out = String::new();
    for inline in inlines {
        match inline {
            Inline::Text { text, .. } | Inline::Code { text, .. } => out.push_str(text),
            Inline::Link { text, .. } => out.push_str(text),
            Inline::FootnoteRef { label, .. } => {
                out.push_str("[^");
                out.push_str(label);
                out.push(']');
            }
            Inline::Break { .. } => out.push('\n'),
            Inline::CellSep => out.push_str(" | "),
            Inline::Image { .. } => {}
        }
    }
    out.trim().to_string()
}

/// Byte offsets of line starts, for 1-based line numbers of byte offsets.
#[derive(Debug, Clone)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_maps_offsets() {
        let idx = LineIndex::new("a\nbc\n\nd");
        assert_eq!(idx.line_of(0), 1);
        assert_eq!(idx.line_of(2), 2);
        assert_eq!(idx.line_of(3), 2);
        assert_eq!(idx.line_of(5), 3);
        assert_eq!(idx.line_of(6), 4);
    }
}
