//! What a run is asked to do: [`EvalSettings`] and the modes it carries. Plain
//! data, below every part of the engine, so the extraction and run modules can
//! both read it without naming each other.

use crate::dedup::{DedupKeep, DedupMode};
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
    /// IA and MC (the paper's wording).
    Paper,
    /// IA, MC, WQ, ADB and FLC (the reference evaluator's code; the default).
    Reference,
}

/// What a chart whose cited pages all came back unreadable scores under a rubric
/// declaring the `no_usable_source` rule (CSC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnreadableSources {
    /// Settled by the rule without a call (our former rule).
    Zero,
    /// Asked anyway, each unreadable page shown with its fetch error as its text,
    /// as the reference evaluator does (METRICS.md section 3; the default).
    Judge,
}

/// What the run makes of a cited page that gave no text and of a remote figure
/// that could not be downloaded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unread {
    /// Ours: a page that gave no text is shown to CS and CSC with why it could not
    /// be read (never as evidence); a remote figure not fetched in this run (offline,
    /// a transient failure) leaves its units skipped, with the reason.
    #[default]
    Ours,
    /// As the reference evaluator's pipeline: CS and CSC see the page text as
    /// fetched (an empty page, a blocked page, a missing entry: empty text), a failed
    /// fetch as its error line (`Error extracting web content: …`); a remote figure
    /// that could not be downloaded is an invalid figure, scored 0 and counted, with
    /// the download error on its units.
    Reference,
}

/// How a figure's kind (image or chart) is decided.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FigureKinds {
    /// By the parser from its path, then its file name, alt text and caption (ours).
    #[default]
    Content,
    /// By path prefix alone, as the reference: `images/` or an http(s) address is
    /// an image, `charts/` a chart, anything else unknown (no CQ, no IQ).
    Path,
}

/// Whether units whose answer is certain are settled without a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Settle {
    /// Settled by the rubric's rule (ours): a fact none of whose cited pages could be
    /// read is `unknown` (0) without a call.
    #[default]
    Certain,
    /// Asked of the judge as the reference does, each unreadable page shown with
    /// its fetch error as its text.
    None,
}

pub use crate::record::ProtocolRecord;

/// The pixel size of figures sent to vision judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageSize {
    /// As the figure is (the reference evaluator), up to [`IMAGE_SAFETY_MAX_SIDE`].
    Original,
    /// Long side at most this many pixels (never upscaled).
    MaxSide(u32),
}

/// The hard bound on the long side of a figure sent to a judge under
/// `--image-size original` (a named departure: the reference sends any size;
/// providers refuse or shrink larger images anyway, e.g. Anthropic's 8,000 px).
pub const IMAGE_SAFETY_MAX_SIDE: u32 = 8000;

impl ImageSize {
    /// The long-side bound the encoder applies.
    pub fn max_side(self) -> u32 {
        match self {
            ImageSize::Original => IMAGE_SAFETY_MAX_SIDE,
            ImageSize::MaxSide(n) => n.clamp(1, IMAGE_SAFETY_MAX_SIDE),
        }
    }

    /// `original` or the number, as the run manifest records it.
    pub fn name(self) -> String {
        match self {
            ImageSize::Original => "original".into(),
            ImageSize::MaxSide(n) => n.to_string(),
        }
    }
}

impl serde::Serialize for ImageSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
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
    /// Which member of a duplicate chain is dropped.
    pub dedup_keep: DedupKeep,
    pub caption_revision: bool,
    pub revision_scope: RevisionScope,
    pub image_limits: ImageLimits,
    /// Pixel size of figures sent to vision judges.
    pub image_size: ImageSize,
    /// Longest text (characters) shown per cited page; None = whole (the page is
    /// still cut to fit the judge's context window when that is known).
    pub source_chars: Option<usize>,
    /// CSC when every cited page is unreadable.
    pub csc_unreadable: UnreadableSources,
    /// Unreadable pages and undownloadable figures: ours or the reference's way.
    pub unread: Unread,
    pub score: ScoreOptions,
    /// Who extracts references and facts: the parser, the judge, or the judge for
    /// suspect parses only.
    pub extraction: ExtractionMode,
    /// How figure kinds are decided.
    pub figure_kinds: FigureKinds,
    /// Whether certain answers are settled without a call.
    pub settle: Settle,
    /// The protocol and its settings, recorded in every record (None: not recorded,
    /// as in records written before it existed).
    pub protocol: Option<ProtocolRecord>,
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
            dedup_keep: DedupKeep::Reference,
            caption_revision: true,
            revision_scope: RevisionScope::Reference,
            image_limits: ImageLimits::default(),
            image_size: ImageSize::Original,
            source_chars: None,
            csc_unreadable: UnreadableSources::Judge,
            unread: Unread::Ours,
            score: ScoreOptions::default(),
            extraction: ExtractionMode::Rules,
            figure_kinds: FigureKinds::Content,
            settle: Settle::Certain,
            protocol: None,
        }
    }
}
