//! The clap value enums of `tvir eval`, each mirroring an engine setting variant for
//! variant (the engine stays free of the command line), and their conversions.

use tvir_engine::{
    Aggregates, DedupKeep, DedupMode, ExtractionMode, FigureKinds, ImageSize, JudgeMode,
    RevisionScope, Rounding, Settle, Unread, UnreadableSources, IMAGE_SAFETY_MAX_SIDE,
};
use tvir_rubric::PromptOrder;

// The engine's option enums carry no clap derive (the engine stays free of the
// command line); these mirror them, variant for variant, with the same help.

/// `--dedup`: [`DedupMode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DedupArg {
    /// Deterministic pre-filter; only ambiguous pairs reach the judge.
    Prefilter,
    /// Ask the judge about every pair whose cited lists are equal as written (reference behaviour).
    JudgeAll,
    /// Pre-filter only; ambiguous pairs are kept as distinct (no judge).
    Off,
}

impl From<DedupArg> for DedupMode {
    fn from(a: DedupArg) -> Self {
        match a {
            DedupArg::Prefilter => DedupMode::Prefilter,
            DedupArg::JudgeAll => DedupMode::JudgeAll,
            DedupArg::Off => DedupMode::Off,
        }
    }
}

/// `--dedup-keep`: [`DedupKeep`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DedupKeepArg {
    /// Drop the later member of every duplicate pair (the reference evaluator).
    Reference,
    /// Drop a fact only when it duplicates an earlier fact that is kept.
    FirstKept,
}

impl From<DedupKeepArg> for DedupKeep {
    fn from(a: DedupKeepArg) -> Self {
        match a {
            DedupKeepArg::Reference => DedupKeep::Reference,
            DedupKeepArg::FirstKept => DedupKeep::FirstKept,
        }
    }
}

/// `--unread`: [`Unread`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UnreadArg {
    /// A page that gave no text is shown with why it could not be read; a remote
    /// figure not fetched leaves its units skipped (ours).
    Ours,
    /// The page text the reference's pipeline gives the judge (empty for an empty
    /// or missing page, its error line for a failed fetch); a remote figure that
    /// could not be downloaded scores 0.
    Reference,
}

impl From<UnreadArg> for Unread {
    fn from(a: UnreadArg) -> Self {
        match a {
            UnreadArg::Ours => Unread::Ours,
            UnreadArg::Reference => Unread::Reference,
        }
    }
}

/// `--csc-unreadable`: [`UnreadableSources`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CscUnreadableArg {
    /// Settled at 0 without a call (our former rule).
    Zero,
    /// Asked with each unreadable page's fetch error as its text (the reference
    /// evaluator and METRICS.md).
    Judge,
}

impl From<CscUnreadableArg> for UnreadableSources {
    fn from(a: CscUnreadableArg) -> Self {
        match a {
            CscUnreadableArg::Zero => UnreadableSources::Zero,
            CscUnreadableArg::Judge => UnreadableSources::Judge,
        }
    }
}

/// `--image-size original|N` (N >= 1 pixels, at most the safety bound).
pub(crate) fn parse_image_size(s: &str) -> Result<ImageSize, String> {
    if s.eq_ignore_ascii_case("original") {
        return Ok(ImageSize::Original);
    }
    match s.parse::<u32>() {
        Ok(n) if (1..=IMAGE_SAFETY_MAX_SIDE).contains(&n) => Ok(ImageSize::MaxSide(n)),
        _ => Err(format!(
            "expected `original` or a long side in pixels from 1 to {IMAGE_SAFETY_MAX_SIDE}"
        )),
    }
}

/// `--revision-scope`: [`RevisionScope`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RevisionScopeArg {
    /// IA and MC (the paper's wording).
    Paper,
    /// IA, MC, WQ, ADB and FLC (the reference evaluator's code).
    Reference,
}

impl From<RevisionScopeArg> for RevisionScope {
    fn from(a: RevisionScopeArg) -> Self {
        match a {
            RevisionScopeArg::Paper => RevisionScope::Paper,
            RevisionScopeArg::Reference => RevisionScope::Reference,
        }
    }
}

/// `--extraction`: [`ExtractionMode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExtractionArg {
    /// The deterministic parser only.
    Rules,
    /// The judge for every report.
    Judge,
    /// The judge only for reports the self-check calls `suspect`.
    Auto,
}

impl From<ExtractionArg> for ExtractionMode {
    fn from(a: ExtractionArg) -> Self {
        match a {
            ExtractionArg::Rules => ExtractionMode::Rules,
            ExtractionArg::Judge => ExtractionMode::Judge,
            ExtractionArg::Auto => ExtractionMode::Auto,
        }
    }
}

/// `--protocol`: which evaluator's settings the run follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtocolArg {
    /// Ours: every default of this suite.
    Default,
    /// The reference evaluator's: every setting `--protocol reference` implies.
    Reference,
}

/// `--figure-kinds`: [`FigureKinds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FigureKindsArg {
    /// By path, then file name, alt text and caption (ours).
    Content,
    /// By path prefix alone (the reference).
    Path,
}

impl From<FigureKindsArg> for FigureKinds {
    fn from(a: FigureKindsArg) -> Self {
        match a {
            FigureKindsArg::Content => FigureKinds::Content,
            FigureKindsArg::Path => FigureKinds::Path,
        }
    }
}

/// `--aggregates`: [`Aggregates`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AggregatesArg {
    /// Empty when a metric is missing (ours).
    Complete,
    /// The mean of the metrics present (the reference).
    Present,
}

impl From<AggregatesArg> for Aggregates {
    fn from(a: AggregatesArg) -> Self {
        match a {
            AggregatesArg::Complete => Aggregates::Complete,
            AggregatesArg::Present => Aggregates::Present,
        }
    }
}

/// `--rounding`: [`Rounding`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RoundingArg {
    /// Full precision (ours).
    Full,
    /// 4 decimals per metric, aggregates rounded again (the reference).
    Reference,
}

impl From<RoundingArg> for Rounding {
    fn from(a: RoundingArg) -> Self {
        match a {
            RoundingArg::Full => Rounding::Full,
            RoundingArg::Reference => Rounding::Reference,
        }
    }
}

/// `--settle`: [`Settle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SettleArg {
    /// Certain answers settled without a call (ours).
    Certain,
    /// Every unit asked (the reference).
    None,
}

impl From<SettleArg> for Settle {
    fn from(a: SettleArg) -> Self {
        match a {
            SettleArg::Certain => Settle::Certain,
            SettleArg::None => Settle::None,
        }
    }
}

/// `--answers`: how the judge is asked to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AnswersArg {
    /// A schema-constrained answer (`json_schema`; ours).
    Schema,
    /// Plain JSON (`json_object`), the reply parsed and checked (the reference).
    Json,
}

/// `--mc-band`: who applies Multimodal Composition's variety band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McBandArg {
    /// The band computed from the answer's class and counts is enforced in code: a
    /// variety score outside it is scored at its nearest end (ours).
    Code,
    /// The judge applies the band; its variety score stands (the reference).
    Judge,
}

/// `--prompt-order`: how a judge request is laid out ([`PromptOrder`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PromptOrderArg {
    /// The template's own layout: shared system message, inputs first (ours).
    Cached,
    /// The rubric as the system message, the inputs as the user message (the
    /// reference).
    Reference,
}

impl From<PromptOrderArg> for PromptOrder {
    fn from(a: PromptOrderArg) -> Self {
        match a {
            PromptOrderArg::Cached => PromptOrder::Cached,
            PromptOrderArg::Reference => PromptOrder::Reference,
        }
    }
}

/// The aggregates a run uses: as asked (`--aggregates`, default complete), except
/// that a run that judges nothing (`--dry-run`, `--no-judge`) leaves TA, VA and
/// Overall empty: the mean of the metrics present would be the pixel metrics'.
pub fn aggregates_for(mode: JudgeMode, asked: Option<AggregatesArg>) -> Aggregates {
    match mode {
        JudgeMode::Judge => asked.unwrap_or(AggregatesArg::Complete).into(),
        JudgeMode::DryRun | JudgeMode::NoJudge => Aggregates::Complete,
    }
}
