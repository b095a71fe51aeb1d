//! The flags of `tvir eval`, grouped under the headings `--help` shows. A doc
//! comment's first paragraph is the one line of `-h`; the paragraphs after it are
//! shown by `--help` only.

use std::path::PathBuf;

use tvir_engine::ImageSize;
use tvir_sources::FetchOptions;

use super::choices::parse_image_size;
use super::choices::*;
use crate::help_heading::{FIDELITY, INPUTS, JUDGE, LIMITS, OUTPUTS};

#[derive(Debug, clap::Args)]
pub struct EvalOptions {
    /// Reports: ROOT/{system}/{task_id}/report.md (or one report folder or file).
    #[arg(long, required_unless_present = "example", help_heading = INPUTS)]
    pub reports: Option<PathBuf>,
    /// Task file (TVIR-Bench query.json).
    #[arg(long, required_unless_present = "example", help_heading = INPUTS)]
    pub tasks: Option<PathBuf>,
    /// Output folder.
    #[arg(long, required_unless_present = "example", help_heading = OUTPUTS)]
    pub out: Option<PathBuf>,
    /// Evaluate the example benchmark built into the binary, writing into OUT.
    ///
    /// Two systems x three tasks; stands for --reports, --tasks and --out.
    #[arg(long, value_name = "OUT", conflicts_with_all = ["reports", "tasks", "out"], help_heading = INPUTS)]
    pub example: Option<PathBuf>,
    /// Only these systems (repeatable).
    #[arg(long = "system", help_heading = INPUTS)]
    pub systems: Vec<String>,
    /// Only these task ids (repeatable).
    #[arg(long = "task", help_heading = INPUTS)]
    pub task_ids: Vec<String>,
    /// Judge model name (also the output folder name).
    #[arg(long, env = "TVIR_JUDGE_MODEL", help_heading = JUDGE)]
    pub judge_model: Option<String>,
    /// Any OpenAI-compatible server, e.g. http://localhost:8000/v1.
    #[arg(long, env = "OPENAI_BASE_URL", help_heading = JUDGE)]
    pub base_url: Option<String>,
    /// Judge requests in flight.
    #[arg(long, default_value_t = 16, help_heading = LIMITS)]
    pub concurrency: usize,
    /// Judge requests per minute (default: unlimited).
    #[arg(long, value_name = "N", help_heading = LIMITS)]
    pub rpm: Option<u32>,
    /// Judge tokens per minute (default: unlimited).
    ///
    /// Each request's tokens are estimated before it is sent and corrected from the
    /// usage the server reports.
    #[arg(long, value_name = "N", help_heading = LIMITS)]
    pub tpm: Option<u32>,
    /// Independent judge samples (output folders get a -run{k} suffix).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100), help_heading = JUDGE)]
    pub runs: u32,
    /// Judge and page cache (SQLite); default in the user's cache directory.
    #[arg(long, help_heading = OUTPUTS)]
    pub cache: Option<PathBuf>,
    /// Settings file (default: ./tvir.toml when present).
    #[arg(long, value_name = "FILE", help_heading = INPUTS)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub browser: crate::config::BrowserArgs,
    #[command(flatten)]
    pub fetch: FetchOptions,
    /// Only judge-free metrics; judged metrics are reported as not evaluated.
    #[arg(long, help_heading = JUDGE)]
    pub no_judge: bool,
    /// Count judge calls and estimated tokens, call nothing.
    #[arg(long, help_heading = JUDGE)]
    pub dry_run: bool,
    /// Stop scheduling new judge calls once this much (USD) is spent.
    #[arg(long, help_heading = LIMITS)]
    pub max_cost: Option<f64>,
    /// Completion-token limit of every judge call.
    ///
    /// Default: derived from each rubric's answer schema, or the rubric's
    /// `max_tokens`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = LIMITS)]
    pub max_tokens: Option<u32>,
    /// Timeout of one judge attempt, in seconds (default 120).
    ///
    /// The timeout holds for prompts up to 4,096 tokens; longer prompts get it in
    /// proportion.
    #[arg(long, value_name = "SECS", help_heading = LIMITS)]
    pub judge_timeout: Option<f64>,
    /// Retries of a judge call after a transient error (timeout, 429, 5xx); default 9.
    #[arg(long, value_name = "N", help_heading = LIMITS)]
    pub judge_retries: Option<u32>,
    /// Skip the vision check and treat the judge as able to read images.
    #[arg(long, help_heading = JUDGE)]
    pub assume_vision: bool,
    /// Forget what earlier runs learnt about the judge server and model.
    ///
    /// Accepted parameters, vision, prompts too long for its context are learnt
    /// again, e.g. after the server was restarted with a longer context.
    #[arg(long, help_heading = JUDGE)]
    pub relearn_judge: bool,
    /// Folder of rubric TOML files overriding the built-in ones.
    #[arg(long, help_heading = INPUTS)]
    pub rubrics: Option<PathBuf>,
    /// Folder of prompt templates ({id}.j2) overriding the built-in ones.
    #[arg(long, help_heading = INPUTS)]
    pub prompts: Option<PathBuf>,
    /// Every setting of the reference evaluator at once [default: default].
    ///
    /// `reference`: extraction judge, dedup judge-all, fetcher serper, figure kinds
    /// path, aggregates present, rounding reference, settle none, CSC unreadable
    /// judge, answers json, MC band judge, prompt order reference. A flag given
    /// beside it overrides that one setting. Recorded in run.json and every
    /// report.json as "protocol".
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub protocol: Option<ProtocolArg>,
    /// Fact de-duplication: pre-filter, judge-all (reference), off. [default: prefilter]
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub dedup: Option<DedupArg>,
    /// Which facts duplicate pairs drop.
    ///
    /// reference: the later member of every duplicate pair, as the reference
    /// evaluator; first-kept: only a fact that duplicates an earlier kept fact.
    #[arg(long, value_enum, default_value_t = DedupKeepArg::Reference, help_heading = FIDELITY)]
    pub dedup_keep: DedupKeepArg,
    /// Keep the original captions for the report-level judges.
    #[arg(long, help_heading = FIDELITY)]
    pub no_caption_revision: bool,
    /// Judges that read revised captions.
    ///
    /// reference: IA, MC, WQ, ADB, FLC (the reference evaluator's code, the
    /// default); paper: IA and MC.
    #[arg(long, value_enum, default_value_t = RevisionScopeArg::Reference, help_heading = FIDELITY)]
    pub revision_scope: RevisionScopeArg,
    /// Count failed units as 0 instead of leaving them out of the mean.
    #[arg(long, help_heading = FIDELITY)]
    pub failed_as_zero: bool,
    /// Pixel size of figures sent to vision judges: original or N.
    ///
    /// original: as the reference evaluator (the long side still bounded at
    /// 8,000 px); N: the long side at most N pixels.
    #[arg(long, value_name = "original|N", default_value = "original", value_parser = parse_image_size, help_heading = FIDELITY)]
    pub image_size: ImageSize,
    /// Longest text (characters) shown per cited page; 0 = whole pages.
    ///
    /// A page longer than the cap, or than the judge's known context window allows,
    /// is cut to the passages closest to the claim, recorded in the unit's
    /// `source_cuts`.
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = FIDELITY)]
    pub source_chars: usize,
    /// Chart-Source Consistency when no cited page of a chart is readable. [default: judge]
    ///
    /// judge: asked with each page's fetch error as its text, as the reference
    /// evaluator and METRICS.md; zero: settled at 0, no call.
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub csc_unreadable: Option<CscUnreadableArg>,
    /// Pages that gave no text and remote figures that could not be downloaded. [default: ours]
    ///
    /// ours: a page is shown to CS/CSC with why it could not be read, and a figure
    /// that was not fetched is skipped; reference: the page text the reference's
    /// pipeline gives (empty for an empty page, its error line for a failed fetch),
    /// and such a figure scores 0 and counts.
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub unread: Option<UnreadArg>,
    /// How a figure's kind is decided. [default: content]
    ///
    /// content: its path, then file name, alt text and caption (ours); path: the
    /// path prefix alone, images/ or an address is an image, charts/ a chart, else
    /// unknown (the reference).
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub figure_kinds: Option<FigureKindsArg>,
    /// TA, VA and Overall when one of their metrics is not evaluated. [default: complete]
    ///
    /// complete: left empty (ours); present: the mean of the metrics present (the
    /// reference).
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub aggregates: Option<AggregatesArg>,
    /// Score precision. [default: full]
    ///
    /// full: ours; reference: every metric to 4 decimals, the aggregates again.
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub rounding: Option<RoundingArg>,
    /// Units whose answer is certain. [default: certain]
    ///
    /// certain: settled without a call, e.g. a fact none of whose pages could be
    /// read is unknown (ours); none: asked of the judge with the fetch errors as
    /// page text (the reference).
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub settle: Option<SettleArg>,
    /// How the judge answers. [default: schema]
    ///
    /// schema: a schema-constrained answer, json_schema (ours); json: plain JSON,
    /// json_object with the schema in the prompt, the reply parsed and checked (the
    /// reference).
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub answers: Option<AnswersArg>,
    /// Multimodal Composition's variety band. [default: code]
    ///
    /// code: computed from the answer's topic class and sub-type counts and
    /// enforced, a score outside it is scored at its nearest end (ours); judge: the
    /// judge applies it, its score stands (the reference).
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub mc_band: Option<McBandArg>,
    /// How each judge request is laid out. [default: cached]
    ///
    /// cached: a short system message shared between judges, the inputs before the
    /// instructions, cited pages by reference number, so requests share cacheable
    /// prefixes (ours); reference: the rubric as the system message, the inputs in
    /// the reference evaluator's order as the user message, cited pages in citation
    /// order. The same text either way.
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub prompt_order: Option<PromptOrderArg>,
    /// Who extracts references and facts: rules, judge or auto.
    ///
    /// rules: the parser; judge: the judge for every report; auto: the judge only
    /// for reports whose parse the self-check calls suspect. Default: auto when a
    /// judge is configured, else rules.
    #[arg(long, value_enum, help_heading = FIDELITY)]
    pub extraction: Option<ExtractionArg>,
    /// No progress bar.
    #[arg(long, help_heading = OUTPUTS)]
    pub quiet: bool,
    #[command(flatten)]
    pub batch: super::super::batch::BatchArgs,
}
