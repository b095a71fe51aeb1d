//! The rubric model as written in `rubrics/*.toml`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::RubricError;

/// What one judge call looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitKind {
    /// One deduplicated fact with its cited sources.
    Fact,
    /// All checklist items of a task in one call.
    Checklist,
    /// The whole report.
    Report,
    /// One figure (image or chart).
    Figure,
    /// One generated chart.
    Chart,
    /// Two facts citing the same sources (`fact_dedup`).
    FactPair,
    /// One window of the report text (judge extraction, `extract_*`).
    Window,
    /// One retrieved image figure (not a chart).
    Image,
}

impl UnitKind {
    pub fn name(self) -> &'static str {
        match self {
            UnitKind::Fact => "fact",
            UnitKind::Checklist => "checklist",
            UnitKind::Report => "report",
            UnitKind::Figure => "figure",
            UnitKind::Chart => "chart",
            UnitKind::FactPair => "fact_pair",
            UnitKind::Window => "window",
            UnitKind::Image => "image",
        }
    }

    /// The inputs a unit of this kind can be given.
    pub fn available_inputs(self) -> &'static [InputKind] {
        use InputKind::*;
        match self {
            UnitKind::Report => &[ReportText, TaskQuery],
            UnitKind::Checklist => &[ReportText, TaskQuery, Checklist],
            UnitKind::Fact => &[Fact, Sources],
            UnitKind::FactPair => &[Fact, OtherFact],
            UnitKind::Window => &[ReportText, Sources],
            UnitKind::Figure | UnitKind::Chart | UnitKind::Image => {
                &[FigureImage, Caption, Context, Sources, ChartData]
            }
        }
    }
}

/// Where a rubric's score goes: into TA (`text`), into VA (`visual`) or into neither
/// (`none`: reported on its own, or used by another metric, like CQ by FQ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Text,
    Visual,
    None,
}

/// Which report text a report-level or checklist rubric reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextSource {
    /// The report with invalid figures blanked.
    ReportText,
    /// The same, with the captions revised by caption revision (waits for
    /// `figure_caption_quality`).
    RevisedText,
}

/// The rules that settle a unit without a judge call: name, the unit kinds it
/// applies to, the input it needs (if any) and what it means.
pub const SETTLE_RULES: &[(&str, &[UnitKind], Option<InputKind>, &str)] = &[
    (
        "invalid_visual",
        &[UnitKind::Figure, UnitKind::Chart, UnitKind::Image],
        Some(InputKind::FigureImage),
        "the figure's file is missing, broken or undecodable",
    ),
    (
        "missing_caption",
        &[UnitKind::Figure, UnitKind::Chart, UnitKind::Image],
        Some(InputKind::Caption),
        "the figure has no caption",
    ),
    (
        "missing_context",
        &[UnitKind::Figure, UnitKind::Chart, UnitKind::Image],
        Some(InputKind::Context),
        "the figure has no surrounding text",
    ),
    (
        "no_usable_source",
        &[UnitKind::Figure, UnitKind::Chart, UnitKind::Image, UnitKind::Fact],
        Some(InputKind::Sources),
        "the figure cites no source, or none of its cited sources could be read; a fact cites only what no judge can read (a marker naming no entry, an uploaded file)",
    ),
    (
        "no_source_text",
        &[UnitKind::Fact],
        Some(InputKind::Sources),
        "none of the fact's cited sources could be read",
    ),
    (
        "no_valid_figure",
        &[UnitKind::Report],
        None,
        "the report has no valid figure",
    ),
    (
        "no_task",
        &[UnitKind::Report, UnitKind::Checklist],
        Some(InputKind::TaskQuery),
        "the report matches no task (without this rule such a unit fails)",
    ),
];

/// Inputs a rubric may ask for; the engine refuses to render a prompt whose inputs
/// are not supplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// The report text (with invalid figures blanked).
    ReportText,
    TaskQuery,
    Checklist,
    Fact,
    /// The second fact of a `fact_dedup` pair.
    OtherFact,
    Sources,
    FigureImage,
    Caption,
    Context,
    /// A rendered chart's series, labels and title as read from its chart library
    /// (JSON text; empty for a picture file or a library that exposes none).
    ChartData,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dimension {
    /// Snake-case key used in the answer's `scores` object.
    pub key: String,
    pub name: String,
    /// What the judge should look at for this dimension.
    #[serde(default)]
    pub guide: String,
    /// What each score band means, best band first (`{ band = "9-10", says = "..." }`);
    /// when given, the bands tile the scale.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<Anchor>,
}

/// One score band of a dimension and what earns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    /// `"LOW-HIGH"` (inclusive) or a single value.
    pub band: String,
    pub says: String,
}

impl Anchor {
    /// The band's inclusive bounds.
    pub fn bounds(&self) -> Option<(i64, i64)> {
        let (lo, hi) = match self.band.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let v = self.band.trim().parse().ok()?;
                (v, v)
            }
        };
        (lo <= hi).then_some((lo, hi))
    }
}

/// A dimension whose band is fixed by counts the judge reports (MC variety): the
/// judge fills a class field and count fields before its scores; the first rule
/// whose conditions hold gives the band; a score outside it is moved to the band's
/// nearest end ([`crate::band_of`], [`crate::band_note`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandRule {
    /// The dimension key the rule bands.
    pub dimension: String,
    /// Answer field holding the class (one of `classes`).
    pub class_field: String,
    pub class_description: String,
    pub classes: Vec<String>,
    /// Integer answer fields (0..=`max_count`), in the order the judge fills them.
    pub counts: Vec<CountField>,
    pub max_count: u64,
    /// Per class, the count field that is its dominant kind (classes without an
    /// entry have none).
    #[serde(default)]
    pub dominant: BTreeMap<String, String>,
    /// Tried in order; the first whose conditions all hold gives the band.
    pub rules: Vec<BandCase>,
    /// Whether a score outside the band is moved to its nearest end in code (ours,
    /// the default) or stands as the judge gave it, the band being the judge's to
    /// apply as in the reference evaluator (`enforce = false`, `tvir eval --mc-band
    /// judge`).
    #[serde(default = "enforced", skip_serializing_if = "is_enforced")]
    pub enforce: bool,
}

fn enforced() -> bool {
    true
}

fn is_enforced(v: &bool) -> bool {
    *v
}

/// An integer field the judge fills for a [`BandRule`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountField {
    pub name: String,
    pub description: String,
}

/// One case of a [`BandRule`]: conditions (all must hold; an absent one always
/// holds) and the band `[low, high]` they give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandCase {
    /// The class is one of these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<String>>,
    /// Exactly this many count fields are above 0 (kinds present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kinds: Option<u64>,
    /// Every count field is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub each_at_least: Option<u64>,
    /// The largest count field is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_at_least: Option<u64>,
    /// The class's dominant count field is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dominant_at_least: Option<u64>,
    /// The sum of the count fields is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_at_least: Option<u64>,
    pub band: [i64; 2],
    /// The case in words, as the prompt states it.
    pub says: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictLabel {
    pub label: String,
    /// Per-unit score of this verdict.
    pub value: f64,
    #[serde(default)]
    pub guide: String,
}

/// One band of an issue-count mapping table: `min..=max` issues -> `score`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    pub min: u64,
    /// Inclusive; absent for the last, open-ended band.
    pub max: Option<u64>,
    pub score: f64,
}

/// How a `Dimensions` answer missing a dimension scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartialRule {
    /// The dimensions present summed over the full maximum.
    Sum,
}

/// The shape of the answer and how it maps to a per-unit score in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AnswerSpec {
    /// One label; per-unit score = the label's value.
    Verdict {
        #[serde(default = "default_verdict_field")]
        field: String,
        labels: Vec<VerdictLabel>,
    },
    /// An object `"1".."K"` of `{"score": v}` with v one of `values`; one unit per item,
    /// per-unit score = v.
    Items {
        #[serde(default = "default_items_field")]
        field: String,
        values: Vec<f64>,
    },
    /// Integer scores per dimension in `min..=max`; per-unit score =
    /// sum / (max x number of dimensions).
    Dimensions {
        #[serde(default = "default_scores_field")]
        field: String,
        min: i64,
        max: i64,
        dimensions: Vec<Dimension>,
        /// A dimension banded by counts the judge reports (MC variety).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        band_rule: Option<BandRule>,
        /// `"sum"`: the per-unit score is the sum of the dimensions the answer
        /// holds over the full maximum (max x every declared dimension), a missing
        /// one adding nothing, as the reference's caption judge sums what comes
        /// back; absent (the default): an answer missing a dimension is invalid.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partial: Option<PartialRule>,
    },
    /// A count of issues (with the issues listed); per-unit score =
    /// table(count) / scale.
    IssueCount {
        #[serde(default = "default_count_field")]
        field: String,
        #[serde(default = "default_issues_field")]
        list_field: String,
        table: Vec<Band>,
        scale: f64,
    },
    /// A yes/no answer (no score; used by `fact_dedup`).
    Boolean {
        #[serde(default = "default_boolean_field")]
        field: String,
    },
    /// Extraction of a report's structure (no score): the reference list or the
    /// fact-citation pairs of one window of the text. The window is at most
    /// `max_report_chars` long; consecutive windows share `overlap_chars`.
    Extraction {
        part: ExtractionPart,
        overlap_chars: usize,
    },
}

/// What an extraction rubric asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtractionPart {
    /// `{"references": [{"idx", "url", "title"}]}`.
    References,
    /// `{"facts": [{"fact", "ref_idxs"}]}`.
    Facts,
}

fn default_verdict_field() -> String {
    "verdict".into()
}
fn default_items_field() -> String {
    "items".into()
}
fn default_scores_field() -> String {
    "scores".into()
}
fn default_count_field() -> String {
    "total_issues".into()
}
fn default_issues_field() -> String {
    "issues".into()
}
fn default_boolean_field() -> String {
    "duplicate".into()
}

/// An extra string field the judge must fill (e.g. FCQ's `revised_caption`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraField {
    pub name: String,
    pub description: String,
}

/// Caption-revision settings (FCQ only): a figure whose dimension scores include one
/// at or below `threshold` gets the judge's revision from `field`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevisionSpec {
    pub field: String,
    pub threshold: i64,
}

/// Deterministic pre-filter of `fact_dedup`: token-set similarity at or above
/// `duplicate_at` merges without asking, below `distinct_below` keeps both without
/// asking; in between the judge decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefilterSpec {
    pub duplicate_at: f64,
    pub distinct_below: f64,
}

/// How a judge request is laid out (`tvir eval --prompt-order`). The content is the
/// same in every layout; only where each part of it stands changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptOrder {
    /// The template's own `system` and `user` blocks (ours): a short system message
    /// shared between judges, the inputs before the instructions, so requests share
    /// cacheable prompt prefixes.
    #[default]
    Cached,
    /// The reference evaluator's: the rubric's instructions as the system message,
    /// the inputs in the reference's order as the user message (each rubric's
    /// `[layout.reference]`).
    Reference,
}

impl PromptOrder {
    /// The name the command line, the templates (`prompt_order`) and `run.json` use.
    pub fn name(self) -> &'static str {
        match self {
            PromptOrder::Cached => "cached",
            PromptOrder::Reference => "reference",
        }
    }
}

/// Which named blocks of a prompt template make the system message and which the
/// user message, in order. Each block is rendered on its own and the blocks of a
/// message are joined with a blank line; a block that renders empty is left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptLayout {
    pub system: Vec<String>,
    pub user: Vec<String>,
}

impl PromptLayout {
    /// Every block named, system first.
    pub fn blocks(&self) -> impl Iterator<Item = &str> {
        self.system.iter().chain(&self.user).map(String::as_str)
    }

    fn check(&self, order: &str) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        if self.system.is_empty() || self.user.is_empty() {
            return Err(format!(
                "layout `{order}` needs at least one block in `system` and one in `user`"
            ));
        }
        for b in self.blocks() {
            if b == "system" || b == "user" {
                return Err(format!(
                    "layout `{order}` names block `{b}`, which holds the default layout's whole message"
                ));
            }
            if !seen.insert(b) {
                return Err(format!("layout `{order}` names block `{b}` twice"));
            }
        }
        Ok(())
    }
}

/// The layouts a rubric's template offers besides its own `system` and `user`
/// blocks (`[layout.reference]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptLayouts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<PromptLayout>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rubric {
    /// Metric file name (or `fact_dedup`); also the schema name.
    pub id: String,
    pub title: String,
    pub unit: UnitKind,
    pub inputs: Vec<InputKind>,
    /// Report score when there is no unit to judge (no facts, no chart, ...).
    pub empty_score: Option<f64>,
    /// Per-unit scores given by rule without a judge call, keyed by rule name:
    /// `missing_caption`, `missing_context`, `invalid_visual`, `no_usable_source`,
    /// `no_source_text`, `no_valid_figure`.
    #[serde(default)]
    pub rules: BTreeMap<String, f64>,
    /// Longest source text (characters) sent per cited reference; absent = the
    /// whole page. The engine cuts a longer page by its one rule (the passages
    /// closest to the claim) and records the cut in the unit.
    pub max_source_chars: Option<usize>,
    /// Longest report text (characters) sent to report-level judges.
    pub max_report_chars: Option<usize>,
    pub answer: AnswerSpec,
    #[serde(default)]
    pub extra_fields: Vec<ExtraField>,
    pub revision: Option<RevisionSpec>,
    pub prefilter: Option<PrefilterSpec>,
    /// Completion-token limit of this rubric's judge calls, replacing the one derived
    /// from the answer schema (`--max-tokens` / `tvir.toml` still win).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Where the score goes (TA, VA or neither); absent for rubrics that give no
    /// metric (`fact_dedup`, `extract_*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    /// Rubrics (or named steps that are rubrics, like `fact_dedup`) whose units
    /// must be settled before this one's are planned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// Which text a report-level or checklist rubric reads (default `report_text`;
    /// `revised_text` waits for caption revision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<TextSource>,
    /// How this rubric compares with the reference evaluator, element by element
    /// (`[[fidelity]]` rows; `docs/fidelity.md` is generated from them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fidelity: Vec<crate::fidelity::FidelityRow>,
    /// Where the template's named blocks go under `--prompt-order reference`
    /// (`[layout.reference]`); a rubric without one keeps its template's own layout
    /// there too.
    #[serde(default)]
    pub layout: PromptLayouts,
}

impl Rubric {
    pub fn from_toml(text: &str, path: &str) -> Result<Self, RubricError> {
        let rubric: Rubric = toml::from_str(text).map_err(|e| RubricError::Invalid {
            path: path.into(),
            message: e.to_string(),
        })?;
        rubric.check().map_err(|message| RubricError::Invalid {
            path: path.into(),
            message,
        })?;
        rubric
            .check_plan()
            .map_err(|(key, message)| RubricError::Invalid {
                path: at_line(path, text, &key),
                message,
            })?;
        Ok(rubric)
    }

    fn check(&self) -> Result<(), String> {
        if let Some(l) = &self.layout.reference {
            l.check("reference")?;
        }
        let in_unit = |x: f64| (0.0..=1.0).contains(&x);
        match &self.answer {
            AnswerSpec::Verdict { labels, .. } => {
                if labels.is_empty() {
                    return Err("verdict answer needs at least one label".into());
                }
                if let Some(l) = labels.iter().find(|l| !in_unit(l.value)) {
                    return Err(format!("verdict `{}` value must lie in [0, 1]", l.label));
                }
            }
            AnswerSpec::Items { values, .. } => {
                if values.is_empty() || values.iter().any(|v| !in_unit(*v)) {
                    return Err("item values must be non-empty and lie in [0, 1]".into());
                }
            }
            AnswerSpec::Dimensions {
                min,
                max,
                dimensions,
                band_rule,
                ..
            } => {
                if dimensions.is_empty() {
                    return Err("dimensions answer needs at least one dimension".into());
                }
                for d in dimensions {
                    check_anchors(&d.key, &d.anchors, *min, *max)?;
                }
                if let Some(rule) = band_rule {
                    check_band_rule(rule, dimensions, *min, *max)?;
                }
                if !(0 <= *min && min < max) {
                    return Err(format!(
                        "dimension scale {min}..{max} must satisfy 0 <= min < max"
                    ));
                }
                let mut keys: Vec<&str> = dimensions.iter().map(|d| d.key.as_str()).collect();
                keys.sort_unstable();
                keys.dedup();
                if keys.len() != dimensions.len() {
                    return Err("dimension keys must be unique".into());
                }
            }
            AnswerSpec::IssueCount { table, scale, .. } => {
                if *scale <= 0.0 {
                    return Err("issue-count scale must be positive".into());
                }
                // Bands must tile 0.. without gaps and end open.
                let mut next = 0u64;
                for (i, band) in table.iter().enumerate() {
                    if band.min != next {
                        return Err(format!("mapping table band {i} must start at {next}"));
                    }
                    if !(0.0..=*scale).contains(&band.score) {
                        return Err(format!("mapping table band {i} score outside 0..={scale}"));
                    }
                    match band.max {
                        Some(max) if max >= band.min => next = max + 1,
                        Some(_) => return Err(format!("mapping table band {i} has max < min")),
                        None if i + 1 == table.len() => return Ok(()),
                        None => return Err("only the last mapping band may be open".into()),
                    }
                }
                return Err("mapping table must end with an open band (no max)".into());
            }
            AnswerSpec::Boolean { .. } => {}
            AnswerSpec::Extraction { overlap_chars, .. } => {
                let window = self.max_report_chars.unwrap_or(0);
                if window < 1000 || *overlap_chars * 2 > window {
                    return Err(format!(
                        "an extraction rubric needs max_report_chars >= 1000 and overlap_chars <= half of it (got {window} and {overlap_chars})"
                    ));
                }
            }
        }
        if let Some(rev) = &self.revision {
            if !self.extra_fields.iter().any(|f| f.name == rev.field) {
                return Err(format!(
                    "revision field `{}` is not an extra field",
                    rev.field
                ));
            }
        }
        if let Some(p) = &self.prefilter {
            if !(0.0..=1.0).contains(&p.distinct_below)
                || !(0.0..=1.0).contains(&p.duplicate_at)
                || p.distinct_below > p.duplicate_at
            {
                return Err("prefilter needs 0 <= distinct_below <= duplicate_at <= 1".into());
            }
        }
        if self.max_tokens == Some(0) {
            return Err("max_tokens must be at least 1".into());
        }
        if let Some(x) = self.empty_score {
            if !in_unit(x) {
                return Err("empty_score must lie in [0, 1]".into());
            }
        }
        if let Some((k, _)) = self.rules.iter().find(|(_, v)| !in_unit(**v)) {
            return Err(format!("rule `{k}` score must lie in [0, 1]"));
        }
        for (i, row) in self.fidelity.iter().enumerate() {
            row.check()
                .map_err(|m| format!("[[fidelity]] row {} ({}): {m}", i + 1, row.element))?;
        }
        Ok(())
    }

    /// The plan declarations checked against each other: inputs the unit kind can
    /// be given, known rules that apply to the unit kind and its inputs, `reads`
    /// only on text units. Errors name the offending key (for a line number).
    pub fn check_plan(&self) -> Result<(), (String, String)> {
        let available = self.unit.available_inputs();
        if let Some(i) = self.inputs.iter().find(|i| !available.contains(i)) {
            let name = serde_json::to_value(i).unwrap_or_default();
            return Err((
                "inputs".into(),
                format!(
                    "input {name} is not available to `{}` units (they can read: {})",
                    self.unit.name(),
                    available
                        .iter()
                        .map(|a| serde_json::to_value(a).unwrap_or_default().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        for rule in self.rules.keys() {
            let Some((_, kinds, needs, _)) = SETTLE_RULES.iter().find(|r| r.0 == rule) else {
                return Err((
                    rule.clone(),
                    format!(
                        "unknown rule `{rule}` (known rules: {})",
                        SETTLE_RULES
                            .iter()
                            .map(|r| r.0)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            if !kinds.contains(&self.unit) {
                return Err((
                    rule.clone(),
                    format!(
                        "rule `{rule}` does not apply to `{}` units",
                        self.unit.name()
                    ),
                ));
            }
            if let Some(input) = needs {
                if !self.needs(*input) {
                    let name = serde_json::to_value(input).unwrap_or_default();
                    return Err((
                        rule.clone(),
                        format!("rule `{rule}` is a condition on input {name}, which this rubric does not read"),
                    ));
                }
            }
        }
        if self.reads.is_some() && !matches!(self.unit, UnitKind::Report | UnitKind::Checklist) {
            return Err((
                "reads".into(),
                "`reads` is for report and checklist units only".into(),
            ));
        }
        if self.revision.is_some() && self.unit != UnitKind::Figure {
            return Err((
                "unit".into(),
                "caption revision (`[revision]`) needs `figure` units".into(),
            ));
        }
        let items = matches!(self.answer, AnswerSpec::Items { .. });
        if items != (self.unit == UnitKind::Checklist) {
            return Err((
                "unit".into(),
                "checklist units and the `items` answer go together".into(),
            ));
        }
        if self.after.iter().any(|a| a == &self.id) {
            return Err((
                "after".into(),
                format!("dependency cycle: `{}` waits for itself", self.id),
            ));
        }
        Ok(())
    }

    /// Whether the rubric gives a metric (a per-unit score), as opposed to a step
    /// (`fact_dedup`'s yes/no, the extraction rubrics).
    pub fn is_metric(&self) -> bool {
        !matches!(
            self.answer,
            AnswerSpec::Boolean { .. } | AnswerSpec::Extraction { .. }
        )
    }

    /// Per-unit score of a rule (`missing_caption`, ...), 0 when the rubric is silent.
    pub fn rule_score(&self, rule: &str) -> f64 {
        self.rules.get(rule).copied().unwrap_or(0.0)
    }

    pub fn needs(&self, input: InputKind) -> bool {
        self.inputs.contains(&input)
    }

    pub fn is_vision(&self) -> bool {
        self.needs(InputKind::FigureImage)
    }

    /// The named blocks a request is laid out from under `order`; None means the
    /// template's own `system` and `user` blocks.
    pub fn layout_for(&self, order: PromptOrder) -> Option<&PromptLayout> {
        match order {
            PromptOrder::Cached => None,
            PromptOrder::Reference => self.layout.reference.as_ref(),
        }
    }
}

/// Anchors, when given, tile `min..=max` without gaps or overlaps.
fn check_anchors(key: &str, anchors: &[Anchor], min: i64, max: i64) -> Result<(), String> {
    if anchors.is_empty() {
        return Ok(());
    }
    let mut bounds = Vec::new();
    for a in anchors {
        let b = a.bounds().ok_or_else(|| {
            format!(
                "dimension `{key}`: anchor band `{}` is not LOW-HIGH",
                a.band
            )
        })?;
        bounds.push(b);
    }
    bounds.sort_unstable();
    let mut next = min;
    for (lo, hi) in bounds {
        if lo != next {
            return Err(format!(
                "dimension `{key}`: anchors must tile {min}..={max}; a band should start at {next}"
            ));
        }
        next = hi + 1;
    }
    if next != max + 1 {
        return Err(format!(
            "dimension `{key}`: anchors must tile {min}..={max}; they end at {}",
            next - 1
        ));
    }
    Ok(())
}

/// A band rule names a dimension and known count fields, its bands lie on the
/// scale, and some case matches every class and every combination of counts.
fn check_band_rule(rule: &BandRule, dims: &[Dimension], min: i64, max: i64) -> Result<(), String> {
    if !dims.iter().any(|d| d.key == rule.dimension) {
        return Err(format!("band_rule names no dimension `{}`", rule.dimension));
    }
    if rule.classes.is_empty() || rule.counts.is_empty() || rule.max_count == 0 {
        return Err("band_rule needs classes, count fields and max_count >= 1".into());
    }
    for (class, field) in &rule.dominant {
        if !rule.classes.contains(class) || !rule.counts.iter().any(|c| &c.name == field) {
            return Err(format!(
                "band_rule dominant `{class}` = `{field}` names an unknown class or count"
            ));
        }
    }
    for case in &rule.rules {
        let [lo, hi] = case.band;
        if !(min <= lo && lo <= hi && hi <= max) {
            return Err(format!(
                "band_rule band {lo}-{hi} is not inside {min}..={max}"
            ));
        }
        if let Some(c) = case
            .classes
            .iter()
            .flatten()
            .find(|c| !rule.classes.contains(c))
        {
            return Err(format!("band_rule case names an unknown class `{c}`"));
        }
    }
    // Exhaustive: every class with every count combination up to a small bound.
    let n = rule.counts.len() as u32;
    let top = rule.max_count.min(6) + 1;
    for class in &rule.classes {
        for combo in 0..top.pow(n) {
            let counts: Vec<u64> = (0..n).map(|i| combo / top.pow(i) % top).collect();
            if crate::band::band_case(rule, class, &counts).is_none() {
                return Err(format!(
                    "band_rule: no case matches class `{class}` with counts {counts:?}"
                ));
            }
        }
    }
    Ok(())
}

/// `path:LINE` for the first line of `text` that sets `key` (`key = ...`), or
/// `path` when there is none.
pub fn at_line(path: &str, text: &str, key: &str) -> String {
    match key_line(text, key) {
        Some(n) => format!("{path}:{n}"),
        None => path.to_string(),
    }
}

/// The 1-based line of `text` that sets `key`.
pub fn key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.strip_prefix(key)
                .or_else(|| l.strip_prefix(&format!("\"{key}\"")))
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}
