//! What `tvir eval` writes per report (`report.json`) and per metric
//! (`{metric}.json`). `summarize`, `agree` and `ablate` read these types back, so
//! they are the contract between the eval and analysis stages.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Metric file names, in the order the paper lists them.
pub const METRIC_NAMES: [&str; 12] = [
    "citation_support",
    "instruction_alignment",
    "writing_quality",
    "analytical_depth_breadth",
    "factual_logical_consistency",
    "multimodal_composition",
    "chart_quality",
    "image_quality",
    "figure_quality",
    "figure_caption_quality",
    "figure_context_integration",
    "chart_source_consistency",
];

/// The metric names of `records`: [`METRIC_NAMES`] first, then any other metric
/// they hold (added through `--rubrics DIR`), by name.
pub fn metric_names_of<'a>(records: impl IntoIterator<Item = &'a ReportRecord>) -> Vec<String> {
    let mut names: Vec<String> = METRIC_NAMES.iter().map(|s| s.to_string()).collect();
    let mut extra = std::collections::BTreeSet::new();
    for r in records {
        for m in r.metrics.keys() {
            if !METRIC_NAMES.contains(&m.as_str()) {
                extra.insert(m.clone());
            }
        }
    }
    names.extend(extra);
    names
}

/// Metrics entering TA and VA by default.
pub const TA_METRICS: [&str; 5] = [
    "citation_support",
    "instruction_alignment",
    "writing_quality",
    "analytical_depth_breadth",
    "factual_logical_consistency",
];
pub const VA_METRICS: [&str; 5] = [
    "multimodal_composition",
    "figure_quality",
    "figure_caption_quality",
    "figure_context_integration",
    "chart_source_consistency",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnitStatus {
    Scored,
    Failed,
    Skipped,
}

/// One judged or computed unit (fact, checklist item, report, figure, chart, image).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UnitRecord {
    pub metric: String,
    /// Stable unit id within the report, e.g. `fact:3`, `figure:2`, `report`.
    pub unit: String,
    pub status: UnitStatus,
    pub reason: Option<String>,
    /// Per-unit score in [0, 1] as METRICS.md defines it (null unless scored).
    pub score: Option<f64>,
    /// The judge's validated answer (verdict, scores, total_issues, ...), kept so
    /// that `ablate` can re-score without calling the judge.
    pub answer: Option<serde_json::Value>,
    pub justification: Option<String>,
    /// Unit inputs worth auditing (fact text, ref idxs, figure path, image components).
    #[serde(default)]
    pub detail: serde_json::Value,
}

/// How a metric ended for one report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetricStatus {
    /// Computed (possibly 0 by an edge-case rule such as "no chart").
    Evaluated,
    /// Not computed in this run (`--no-judge`, `--dry-run`, budget, all units failed).
    NotEvaluated,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MetricRecord {
    pub score: Option<f64>,
    pub status: MetricStatus,
    pub item_count: usize,
    pub scored_item_count: usize,
    pub failed_item_count: usize,
    pub skipped_item_count: usize,
    /// scored / item_count (1.0 when there are no items).
    pub coverage: f64,
    pub note: Option<String>,
}

/// The judge's usage as written into records (defined by the judge's accounting,
/// which fills it).
pub use tvir_judge::accounting::UsageRecord;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StructuralErrorCounts {
    pub traceability: usize,
    pub consistency: usize,
    pub completeness: usize,
}

/// `OUT/{system}/{task_id}/{judge_model}/report.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReportRecord {
    pub system: String,
    pub task_id: String,
    /// Judge model folder name (with `-run{k}` when `--runs` > 1).
    pub judge_model: String,
    /// 1-based run index.
    pub run: u32,
    pub language: Option<String>,
    pub complexity: Option<String>,
    pub domain: Option<String>,
    /// Keyed by metric file name.
    pub metrics: BTreeMap<String, MetricRecord>,
    pub ta: Option<f64>,
    /// 0 for a text-only report (every visual metric scores 0); null only when a
    /// visual metric is not evaluated.
    pub va: Option<f64>,
    pub overall: Option<f64>,
    /// Sum of CS unit scores (supported 1, partial 0.5); null when CS not evaluated.
    pub effective_citations: Option<f64>,
    pub structural_error_counts: StructuralErrorCounts,
    pub structural_errors: tvir_report::StructuralErrors,
    pub units: Vec<UnitRecord>,
    pub usage: UsageRecord,
    /// Figures counts used by FQ and the text-only rule.
    pub n_images: usize,
    pub n_charts: usize,
    /// Every parsed figure (images, charts, unknown kind, broken ones): 0 means a
    /// text-only report, whose VA and Overall are null.
    #[serde(default)]
    pub n_figures: usize,
    /// Why the report could not be evaluated at all (unreadable, unparseable); the
    /// failed `report_load` unit says the same.
    #[serde(default)]
    pub error: Option<String>,
    /// The parse's self-check and which method produced the references and facts
    /// (null for a report that could not be read, and in results written before it
    /// existed).
    #[serde(default)]
    pub extraction: Option<tvir_report::Extraction>,
    /// What the render stage did for charts drawn by script (absent when the
    /// report needs no browser).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<RenderRecord>,
    /// Each figure's picture for the HTML summary, in figure order: a bounded JPEG
    /// thumbnail beside this `report.json` (absent in results written before it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thumbnails: Vec<ThumbnailRecord>,
    /// The protocol the run followed and every setting it implies (absent in
    /// records written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ProtocolRecord>,
    /// Every source the units cite, once: its address, title, how much text it gave
    /// and how its fetch ended. A unit's `detail.sources` names each of its sources
    /// by `idx` with the characters the judge was given (`judge_chars`, left out when
    /// the judge was given the whole page, `chars`); the rest is here, so a fact
    /// citing many sources does not repeat them fact after fact.
    /// Absent in records written before it existed (their units carry every field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<SourceRecord>,
}

/// One cited source of a report ([`ReportRecord::sources`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SourceRecord {
    /// The reference's label in the report (`"3"`, a key, a name).
    pub idx: String,
    pub url: Option<String>,
    pub title: Option<String>,
    /// Characters of page text the source gave.
    pub chars: u64,
    /// How its fetch ended: `ok`, `refused`, `blocked`, `failed`, `unavailable`,
    /// `no_url`, `no_reference`.
    pub fetch: String,
    /// Why it gave no text, when it gave none.
    pub reason: Option<String>,
}

/// The fields of a unit's source entry that [`ReportRecord::sources`] holds once.
const SOURCE_FIELDS: [&str; 5] = ["url", "title", "chars", "fetch", "reason"];

/// The thumbnail of one figure (`tvir summarize --format html` embeds it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThumbnailRecord {
    /// The figure's unit name (`figure:N`).
    pub unit: String,
    /// The figure's `content` (path, address or chart element).
    pub content: String,
    /// The JPEG, relative to this `report.json`:
    /// `figures/fig-N-HASH.jpg` (HASH: the first 12 hex digits of the figure's
    /// SHA-256, so a changed figure never shows an old picture); null when the
    /// figure has no picture.
    pub path: Option<String>,
    /// Why there is no thumbnail (the figure is broken, was not fetched, or its
    /// thumbnail could not be written).
    pub reason: Option<String>,
    /// The figure's bytes, for the output stage to make the thumbnail from when the
    /// file is not there yet (not serialised).
    #[serde(skip)]
    pub bytes: Option<std::sync::Arc<Vec<u8>>>,
    /// The SHA-256 of those bytes (hex), the thumbnail's key in the store (not
    /// serialised).
    #[serde(skip)]
    pub hash: Option<String>,
}

/// Folder of a report's thumbnails and rendered charts, beside `report.json`.
pub const FIGURES_DIR: &str = "figures";

/// The `render` block of `report.json`: how a report's script-drawn charts were
/// rendered and where each one's picture is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RenderRecord {
    /// `rendered`, `cached` (no browser started for it), `unavailable` (no
    /// browser: its charts are not evaluated) or `failed` (the page crashed or hung).
    pub status: String,
    /// Why charts are missing, with the remedy.
    pub reason: Option<String>,
    /// The browser version the pictures come from.
    pub browser: Option<String>,
    /// Each rendered chart, in figure order.
    pub charts: Vec<RenderedChartRecord>,
    /// Why the render is incomplete: charts it lost to the page's time limit or a
    /// browser failure rather than to the page (each also a failed unit saying so).
    /// Absent when the render is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// Charts expected that no figure stands for (`line`, `what`, `reason`).
    pub unrendered: Vec<serde_json::Value>,
    /// Notes of the render (timeouts, dialogs, refused or missing resources).
    pub notes: Vec<String>,
}

/// One rendered chart of a report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RenderedChartRecord {
    /// The figure's unit name (`figure:N`).
    pub unit: String,
    /// The figure's `content` (document and element).
    pub content: String,
    pub library: String,
    /// The PNG the judges saw, relative to this `report.json` (`figures/chart-N.png`).
    pub png: String,
    pub width: u32,
    pub height: u32,
    /// The chart's data as read from its library.
    pub chart_data: Option<serde_json::Value>,
    /// The PNG bytes, written by the output stage (not serialised).
    #[serde(skip)]
    pub bytes: Option<std::sync::Arc<Vec<u8>>>,
}

/// Metric name of the unit recording that a report could not be read at all; its
/// `reason` says why. A record holding a failed `report_load` unit has no scores.
pub const REPORT_LOAD: &str = "report_load";

impl ReportRecord {
    /// Why the report could not be evaluated at all (unreadable, unparseable).
    pub fn load_error(&self) -> Option<&str> {
        if let Some(e) = &self.error {
            return Some(e);
        }
        self.units
            .iter()
            .find(|u| u.metric == REPORT_LOAD && u.status == UnitStatus::Failed)
            .map(|u| u.reason.as_deref().unwrap_or("report could not be read"))
    }

    /// The record without its units and structural error lists (counts kept): what
    /// summaries and the terminal table need, a few kilobytes whatever the report.
    pub fn compact(mut self) -> ReportRecord {
        if self.error.is_none() {
            self.error = self.load_error().map(str::to_string);
        }
        self.units = Vec::new();
        self.structural_errors = Default::default();
        self.thumbnails = Vec::new();
        self.sources = Vec::new();
        self
    }

    /// Moves the fields every unit repeats about a cited source (address, title,
    /// characters, fetch outcome) into [`ReportRecord::sources`], once per source;
    /// each unit keeps the source's `idx` and its `judge_chars` when the judge was
    /// not given the whole page. An entry whose fields differ from the table's
    /// stays whole in its unit (nothing is lost).
    /// Idempotent, so a record finished again (a batch collected) stays the same.
    pub fn factor_sources(&mut self) {
        let mut table: Vec<SourceRecord> = std::mem::take(&mut self.sources);
        // Position of each label in the table (a report may cite hundreds).
        let mut at: std::collections::HashMap<String, usize> = table
            .iter()
            .enumerate()
            .map(|(k, s)| (s.idx.clone(), k))
            .collect();
        for u in &mut self.units {
            let Some(list) = u.detail.get_mut("sources").and_then(|v| v.as_array_mut()) else {
                continue;
            };
            for entry in list {
                let Some(m) = entry.as_object_mut() else {
                    continue;
                };
                if !SOURCE_FIELDS.iter().any(|f| m.contains_key(*f)) {
                    continue;
                }
                let Some(source) = source_of(m) else {
                    continue;
                };
                let chars = source.chars;
                match at.get(&source.idx).map(|&k| &table[k]) {
                    Some(known) if *known != source => continue,
                    Some(_) => {}
                    None => {
                        at.insert(source.idx.clone(), table.len());
                        table.push(source);
                    }
                }
                for f in SOURCE_FIELDS {
                    m.remove(f);
                }
                // The judge was given the whole page: `chars` says how much.
                if m.get("judge_chars").and_then(|v| v.as_u64()) == Some(chars) {
                    m.remove("judge_chars");
                }
            }
        }
        self.sources = table;
    }

    /// A unit's cited sources with every field, from its detail and
    /// [`ReportRecord::sources`] (records of either form: earlier ones carry every
    /// field in the unit).
    pub fn unit_sources(&self, unit: &UnitRecord) -> Vec<serde_json::Value> {
        let Some(list) = unit.detail.get("sources").and_then(|v| v.as_array()) else {
            return Vec::new();
        };
        list.iter()
            .map(|entry| {
                let mut whole = entry.clone();
                let idx = entry.get("idx").and_then(|v| v.as_str());
                let known = idx.and_then(|i| self.sources.iter().find(|s| s.idx == i));
                if let (Some(m), Some(known)) = (whole.as_object_mut(), known) {
                    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(known) {
                        for (k, v) in fields {
                            m.entry(k).or_insert(v);
                        }
                    }
                    m.entry("judge_chars").or_insert(known.chars.into());
                }
                whole
            })
            .collect()
    }

    /// Failed units that are failures of the run (judge or input problems), not
    /// properties of the report: broken figures score 0 in IQ and are not counted.
    pub fn failed_unit_count(&self) -> usize {
        self.units
            .iter()
            .filter(|u| u.status == UnitStatus::Failed && u.metric != "image_quality")
            .count()
    }

    /// Every figure of the report (images, charts, unknown kind, broken ones). 0 means
    /// a text-only report (VA 0; a system of such reports has no VA).
    pub fn figure_count(&self) -> usize {
        self.n_figures
    }

    /// Whether the self-check called the rules parse of this report suspect.
    pub fn extraction_suspect(&self) -> bool {
        self.extraction.as_ref().is_some_and(|e| e.is_suspect())
    }
}

/// A unit's source entry as a [`SourceRecord`] (None when it lacks `idx` or
/// `fetch`, or a field has another type: such an entry stays in its unit).
fn source_of(m: &serde_json::Map<String, serde_json::Value>) -> Option<SourceRecord> {
    let text = |k: &str| match m.get(k) {
        None | Some(serde_json::Value::Null) => Some(None),
        Some(serde_json::Value::String(s)) => Some(Some(s.clone())),
        Some(_) => None,
    };
    Some(SourceRecord {
        idx: m.get("idx")?.as_str()?.to_string(),
        url: text("url")?,
        title: text("title")?,
        chars: m.get("chars")?.as_u64()?,
        fetch: m.get("fetch")?.as_str()?.to_string(),
        reason: text("reason")?,
    })
}

/// How one unit ended, as much of it as a summary needs ([`ReportRecord::from_json_compact`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitOutcome {
    pub status: UnitStatus,
    pub score: Option<f64>,
}

impl ReportRecord {
    /// Reads a `report.json` straight into its [compact](ReportRecord::compact) form,
    /// with each unit's status and score: the units' answers, details and
    /// justifications, the structural error lists and the thumbnails are skipped by
    /// the parser instead of being built and dropped (a third of `tvir summarize`'s
    /// time at 10,000 reports). Equal to `serde_json::from_str` then `compact()`
    /// (tested); the skipped parts are only checked for being well-formed JSON.
    pub fn from_json_compact(text: &str) -> serde_json::Result<(ReportRecord, Vec<UnitOutcome>)> {
        use serde::de::IgnoredAny;
        #[derive(Deserialize)]
        struct Unit {
            metric: String,
            #[allow(dead_code)]
            unit: IgnoredAny,
            status: UnitStatus,
            reason: Option<String>,
            score: Option<f64>,
        }
        #[derive(Deserialize)]
        struct Compact {
            system: String,
            task_id: String,
            judge_model: String,
            run: u32,
            language: Option<String>,
            complexity: Option<String>,
            domain: Option<String>,
            metrics: BTreeMap<String, MetricRecord>,
            ta: Option<f64>,
            va: Option<f64>,
            overall: Option<f64>,
            effective_citations: Option<f64>,
            structural_error_counts: StructuralErrorCounts,
            #[allow(dead_code)]
            structural_errors: IgnoredAny,
            units: Vec<Unit>,
            usage: UsageRecord,
            n_images: usize,
            n_charts: usize,
            #[serde(default)]
            n_figures: usize,
            #[serde(default)]
            error: Option<String>,
            #[serde(default)]
            extraction: Option<tvir_report::Extraction>,
            #[serde(default)]
            render: Option<RenderRecord>,
            #[serde(default)]
            protocol: Option<ProtocolRecord>,
        }
        let c: Compact = serde_json::from_str(text)?;
        let error = c.error.or_else(|| {
            c.units
                .iter()
                .find(|u| u.metric == REPORT_LOAD && u.status == UnitStatus::Failed)
                .map(|u| {
                    u.reason
                        .clone()
                        .unwrap_or_else(|| "report could not be read".to_owned())
                })
        });
        let outcomes = c
            .units
            .iter()
            .map(|u| UnitOutcome {
                status: u.status,
                score: u.score,
            })
            .collect();
        // Every field named: a field added to `ReportRecord` fails to compile here
        // until the compact reader knows it.
        let record = ReportRecord {
            system: c.system,
            task_id: c.task_id,
            judge_model: c.judge_model,
            run: c.run,
            language: c.language,
            complexity: c.complexity,
            domain: c.domain,
            metrics: c.metrics,
            ta: c.ta,
            va: c.va,
            overall: c.overall,
            effective_citations: c.effective_citations,
            structural_error_counts: c.structural_error_counts,
            structural_errors: Default::default(),
            units: Vec::new(),
            usage: c.usage,
            n_images: c.n_images,
            n_charts: c.n_charts,
            n_figures: c.n_figures,
            error,
            extraction: c.extraction,
            render: c.render,
            thumbnails: Vec::new(),
            protocol: c.protocol,
            sources: Vec::new(),
        };
        Ok((record, outcomes))
    }
}

/// `OUT/{system}/{task_id}/{judge_model}/{metric}.json`, the reference evaluator's
/// layout (its summary script reads these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MetricFile {
    pub normalized_score: Option<f64>,
    pub item_count: usize,
    pub scored_item_count: usize,
    pub evaluation_results: Vec<serde_json::Value>,
}

/// The protocol a run follows and every setting it implies, as `run.json` and each
/// `report.json` record it (`"protocol"`), so runs made under different protocols
/// are not put in one leaderboard by accident.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct ProtocolRecord {
    /// `default` (ours) or `reference` (the reference evaluator's).
    pub name: String,
    /// Every setting the protocol fixes, by flag name (without `--`), with the value
    /// the run used.
    pub settings: std::collections::BTreeMap<String, String>,
    /// The settings given by a flag beside `--protocol`, which override it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
}

impl ProtocolRecord {
    /// `reference (aggregates=present, ...; overridden: extraction)`.
    pub fn describe(&self) -> String {
        let settings: Vec<String> = self
            .settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut out = format!("{} ({})", self.name, settings.join(", "));
        if !self.overrides.is_empty() {
            out.push_str(&format!("; overridden: {}", self.overrides.join(", ")));
        }
        out
    }
}
