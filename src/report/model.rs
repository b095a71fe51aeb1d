//! The report model every later stage consumes. Field names follow
//! `spec/INTERFACE.md` (`tvir parse --json`).

use std::ops::Range;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Zh,
    En,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceFormat {
    Markdown,
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FigureKind {
    Image,
    Chart,
    Unknown,
}

/// One entry of the report's reference list. `idx` is the label as written
/// ("3", "1_4" for footnote `[^1_4]`); unnumbered lists get "1", "2", ... in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub idx: String,
    pub url: Option<String>,
    pub title: Option<String>,
    /// 1-based line in the source file.
    pub line: usize,
}

/// A body sentence (or list item, table row, heading, whole table) carrying citations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// The unit's text with citation markers removed.
    pub fact: String,
    pub ref_idxs: Vec<String>,
    pub line: usize,
    /// Byte range of the unit in [`Report::text`].
    pub span: Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Path (relative to the report folder) or URL, as written.
    pub content: String,
    pub kind: FigureKind,
    pub caption: Option<String>,
    pub context: Option<String>,
    /// Citations inside the caption/legend only (the chart's data sources).
    pub ref_idxs: Vec<String>,
    pub line: usize,
    /// The figure's own number when the caption or label gives one ("2" in "Figure 2").
    pub number: Option<String>,
    pub alt: Option<String>,
    /// Byte range of the image element (markdown image, `<img>` or whole `<figure>`)
    /// in [`Report::text`]; used to blank invalid figures.
    pub span: Range<usize>,
    /// Byte range of the caption text in [`Report::text`] (inside `<figcaption>` or
    /// the caption line), used to replace it with a revised caption in place.
    pub caption_span: Option<Range<usize>>,
}

/// A text diagram (Mermaid, ASCII art): listed, never scored as a figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PseudoVisual {
    pub kind: String,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuralError {
    /// Stable machine-readable code, e.g. `uncited_quantitative`, `missing_image_file`.
    pub code: String,
    pub line: Option<usize>,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StructuralErrors {
    pub traceability: Vec<StructuralError>,
    pub consistency: Vec<StructuralError>,
    pub completeness: Vec<StructuralError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The report file (`.../report.md`).
    pub path: PathBuf,
    /// Folder that relative figure paths resolve against.
    pub root: PathBuf,
    pub format: SourceFormat,
    /// Decoded source text (BOM removed). Spans index into this.
    pub text: String,
    pub language: Language,
    pub references: Vec<Reference>,
    pub facts: Vec<Fact>,
    pub figures: Vec<Figure>,
    pub pseudo_visuals: Vec<PseudoVisual>,
    pub structural_errors: StructuralErrors,
    /// Non-fatal problems met while loading (lossy UTF-8, etc.), each naming the file.
    pub warnings: Vec<String>,
}
