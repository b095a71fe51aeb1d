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
    /// `browser` for a chart a script drew, rendered by the suite (`content` then
    /// names the document and element: `report.html#sales`); absent for a
    /// picture file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<String>,
    /// A rendered chart's series, labels and title as read from its library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart_data: Option<serde_json::Value>,
    /// Where a rendered chart's caption came from: `figcaption`, `caption line`,
    /// `configuration` (the chart's own title), `heading` (the visible title over
    /// the chart in its own container), `chart file title` or `none`; for a picture
    /// file, `chart file title` when it is an SVG a frame or component shows,
    /// captioned by its own `<title>`, else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption_source: Option<String>,
}

/// A visual drawn only when the report is viewed (Mermaid, a script-drawn chart) or a
/// text diagram (ASCII art): listed, never scored as a figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PseudoVisual {
    /// `chart` (script-drawn charts and Mermaid), `diagram` (PlantUML, dot) or
    /// `ascii_art`.
    pub kind: String,
    pub line: usize,
    /// The source notation when it is known (`mermaid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StructuralError {
    /// Stable machine-readable code, e.g. `uncited_quantitative`, `missing_image_file`.
    pub code: String,
    pub line: Option<usize>,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// The parse's self-check: counts, `ok`/`suspect` verdict with reasons, and
    /// which method produced the references and facts.
    #[serde(default)]
    pub extraction: Extraction,
}

impl Report {
    /// Why a cited label gives a judge nothing to read, when it cannot: the label
    /// names no entry of the reference list, or its entry is a file the author
    /// uploaded (`file://…`, `sandbox:/…`). Such citations are still cited units;
    /// Citation Support settles them as "no usable source" (`METRICS.md` §1), never
    /// as a failed fetch.
    pub fn unusable_citation(&self, idx: &str) -> Option<String> {
        let entries: Vec<&Reference> = self.references.iter().filter(|r| r.idx == idx).collect();
        let Some(first) = entries.first() else {
            return Some(format!(
                "marker [{idx}] names no entry of the reference list"
            ));
        };
        let uploaded = |r: &&Reference| r.url.as_deref().is_some_and(crate::urls::is_uploaded_file);
        entries.iter().all(uploaded).then(|| {
            format!(
                "[{idx}] cites a file the author uploaded ({}), which a judge cannot open",
                first.url.as_deref().unwrap_or_default()
            )
        })
    }
}

/// Which extractor produced a report's references and fact-citation pairs.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ExtractionMethod {
    /// The deterministic parser.
    #[default]
    Rules,
    /// The judge (`--extraction judge|auto`); figures stay deterministic.
    Judge,
}

#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ExtractionVerdict {
    #[default]
    Ok,
    /// The rules parse looks wrong from the inside; `reasons` say why.
    Suspect,
}

/// What the self-check counted in the rules parse (see `docs/parser.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExtractionCounts {
    /// Citation-like numbers in the body: `[N]`, `[N, M]`, `[N-M]`, `[^N]`, `【N】`,
    /// `<sup>N</sup>`, `<a href="#...">N</a>` (one per number named).
    pub markers_seen: usize,
    /// ... of which name an entry of the reference list.
    pub markers_resolved: usize,
    /// ... of which name no entry (pointing nowhere).
    pub markers_unresolved: usize,
    /// Resolving markers that sit in no cited unit and no figure caption.
    pub markers_unattached: usize,
    /// Entries of the reference list (0 when the report has no list).
    pub list_entries: usize,
    /// List entries that no fact and no figure cites.
    pub entries_never_cited: usize,
    /// Fact-citation pairs.
    pub cited_units: usize,
    /// Body sentences with a quantity and no citation (`uncited_quantitative`).
    pub uncited_quantitative: usize,
    /// Lines outside any reference list that look like reference entries (in runs
    /// of three or more).
    pub unlisted_reference_lines: usize,
    /// Cited units that look like reference entries (URL or `[N] Title. Site. URL`).
    pub facts_like_entries: usize,
    /// `<img>` tags in the source (logos and icons aside).
    pub img_tags: usize,
    /// Cited units with (almost) no text of their own: bare markers or a label such
    /// as "Sources:".
    #[serde(default)]
    pub units_without_text: usize,
    /// Citations by name (author-date, key, source name) that named an entry.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub names_resolved: usize,
    /// Author-date shapes (a capitalised name and a year) that named no entry.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub names_unresolved: usize,
    /// Citation-shaped text that no reference entry, marker or link citation
    /// consumed, counted by shape, independently of the grammar (absent when none).
    #[serde(default, skip_serializing_if = "ResidueCounts::is_empty")]
    pub residue: ResidueCounts,
    /// Cited units inside a section whose heading names sources ("References
    /// (Excerpt)", "Sources: …") outside any list taken as the reference list:
    /// entries read as claims (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub units_in_source_sections: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Citation residue by class: what looks like a citation outside every reference
/// list, code block, figure and cited unit (see `docs/parser.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResidueCounts {
    /// Numerals a space before, or glued after, sentence-end punctuation in any
    /// script (`grew 1.`, `growth.1`, `している 1。`, `増えた1。`), or ending a table cell.
    pub numerals: usize,
    /// Superscript numbers (`rose³`, `⁽³⁾`, `^3`).
    pub superscripts: usize,
    /// Bracketed, braced or parenthesised numbers in forms the grammar does not
    /// read (`{3}`, `<3>`, `[ref 3]`, `(Source 3)`, `(3)` at a sentence end).
    pub brackets: usize,
    /// Inline links with empty or generic text (`[](url)`, `[source](url)`, a domain).
    pub links: usize,
    /// Links to uploaded or sandboxed files (`file://…`, `sandbox:/…`).
    pub files: usize,
    /// Lines near the end that are mostly links.
    pub link_lines: usize,
}

impl ResidueCounts {
    pub fn total(&self) -> usize {
        self.numerals
            + self.superscripts
            + self.brackets
            + self.links
            + self.files
            + self.link_lines
    }

    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }
}

/// The judge extraction attempt of one report (`--extraction judge|auto`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JudgeExtraction {
    /// `used`, `rejected` (validation failed, rules parse kept), `failed` (a call
    /// failed), `skipped` (dry run, no judge, budget), `pending` (batch mode: an
    /// answer is still in a wave; never in final outputs).
    pub status: String,
    pub windows: usize,
    /// Judge requests made (cached answers included).
    pub calls: usize,
    /// Why the answer was not used, when it was not.
    pub reason: Option<String>,
    /// Where the reference list came from: `rules` or `judge`.
    pub references_from: Option<String>,
    pub references: usize,
    pub facts: usize,
    /// Answers a schema bound cut (a grammar-constrained server stops a string or a
    /// list at its bound), each with what was done about it: a fact completed to the
    /// end of its sentence in the report, a URL restored from the report, a list that
    /// filled its bound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuts: Vec<String>,
}

/// The `extraction` block of `tvir parse` and `report.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Extraction {
    /// Which method produced the references and facts in use.
    pub method: ExtractionMethod,
    /// The self-check's verdict on the rules parse.
    pub verdict: ExtractionVerdict,
    pub reasons: Vec<String>,
    pub counts: ExtractionCounts,
    /// Present when the judge was asked to extract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeExtraction>,
}

impl Extraction {
    pub fn is_suspect(&self) -> bool {
        self.verdict == ExtractionVerdict::Suspect
    }
}
