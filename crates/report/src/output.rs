//! The `tvir parse --json` object (INTERFACE.md), separate from the model so that
//! internal fields (spans, numbers, paths) do not leak into the contract.

use serde::Serialize;

use super::model::{Extraction, FigureKind, Language, PseudoVisual, Report, StructuralErrors};

#[derive(Debug, Clone, Serialize)]
pub struct ParseOutput {
    pub report: String,
    pub language: Language,
    pub references: Vec<ReferenceOut>,
    pub facts: Vec<FactOut>,
    pub figures: Vec<FigureOut>,
    pub structural_errors: StructuralErrors,
    /// Additive: text diagrams found (not figures).
    pub pseudo_visuals: Vec<PseudoVisual>,
    /// Additive: non-fatal loading problems.
    pub warnings: Vec<String>,
    /// Additive: the parse's self-check (method, counts, `ok`/`suspect` with reasons).
    pub extraction: Extraction,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReferenceOut {
    pub idx: String,
    pub url: Option<String>,
    pub title: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FactOut {
    pub fact: String,
    pub ref_idxs: Vec<String>,
    pub line: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct FigureOut {
    pub content: String,
    pub kind: FigureKind,
    pub caption: Option<String>,
    pub context: Option<String>,
    pub ref_idxs: Vec<String>,
    pub line: usize,
    /// Additive: `browser` for a chart the suite rendered (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub render: Option<String>,
    /// Additive: a rendered chart's data as read from its library.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chart_data: Option<serde_json::Value>,
    /// Additive: where a rendered chart's caption came from, or `chart file title`
    /// for an SVG a frame or component shows, captioned by its own `<title>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caption_source: Option<String>,
}

impl ParseOutput {
    pub fn from_report(r: &Report) -> Self {
        ParseOutput {
            report: r.path.display().to_string(),
            language: r.language,
            references: r
                .references
                .iter()
                .map(|x| ReferenceOut {
                    idx: x.idx.clone(),
                    url: x.url.clone(),
                    title: x.title.clone(),
                })
                .collect(),
            facts: r
                .facts
                .iter()
                .map(|f| FactOut {
                    fact: f.fact.clone(),
                    ref_idxs: f.ref_idxs.clone(),
                    line: f.line,
                })
                .collect(),
            figures: r
                .figures
                .iter()
                .map(|f| FigureOut {
                    content: f.content.clone(),
                    kind: f.kind,
                    caption: f.caption.clone(),
                    context: f.context.clone(),
                    ref_idxs: f.ref_idxs.clone(),
                    line: f.line,
                    render: f.render.clone(),
                    chart_data: f.chart_data.clone(),
                    caption_source: f.caption_source.clone(),
                })
                .collect(),
            structural_errors: r.structural_errors.clone(),
            pseudo_visuals: r.pseudo_visuals.clone(),
            warnings: r.warnings.clone(),
            extraction: r.extraction.clone(),
        }
    }
}
