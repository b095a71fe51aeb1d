//! What a run is asked to do: [`EvalSettings`] and the modes it carries. Plain
//! data, below every part of the engine, so the extraction and run modules can
//! both read it without naming each other.

use crate::dedup::DedupMode;
use crate::score::ScoreOptions;
use tvir_images::ImageLimits;

/// Which extractor produces references and facts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExtractionMode {
    /// The deterministic parser only.
    #[default]
    Rules,
    /// The judge for every report.
    Judge,
    /// The judge only for reports the self-check calls `suspect`.
    Auto,
}

/// Whether judges are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum JudgeMode {
    Judge,
    /// Judge-free metrics only; judged ones are not evaluated.
    NoJudge,
    /// Build every request, count it, call nothing.
    DryRun,
}

/// Which report-level judges read the caption-revised text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RevisionScope {
    /// IA and MC (the paper).
    Paper,
    /// IA, MC, WQ, ADB and FLC (the reference evaluator).
    Reference,
}

#[derive(Debug, Clone)]
pub struct EvalSettings {
    /// Output folder name of the judge (`{judge_model}` in the layout).
    pub judge_model: String,
    pub runs: u32,
    /// Judge requests in flight across all reports.
    pub concurrency: usize,
    /// Reports prepared (parsed, decoded, fetched) at once.
    pub report_parallelism: usize,
    pub mode: JudgeMode,
    pub dedup: DedupMode,
    pub caption_revision: bool,
    pub revision_scope: RevisionScope,
    pub image_limits: ImageLimits,
    /// Longest side of figures sent to vision judges.
    pub judge_image_max_side: u32,
    pub score: ScoreOptions,
    /// Who extracts references and facts: the parser, the judge, or the judge for
    /// suspect parses only.
    pub extraction: ExtractionMode,
}

impl Default for EvalSettings {
    fn default() -> Self {
        Self {
            judge_model: "judge".into(),
            runs: 1,
            concurrency: 16,
            report_parallelism: 8,
            mode: JudgeMode::Judge,
            dedup: DedupMode::Prefilter,
            caption_revision: true,
            revision_scope: RevisionScope::Paper,
            image_limits: ImageLimits::default(),
            judge_image_max_side: 1024,
            score: ScoreOptions::default(),
            extraction: ExtractionMode::Rules,
        }
    }
}
