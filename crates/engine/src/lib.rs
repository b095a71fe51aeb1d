//! The tvir-eval evaluation engine: given reports, their tasks and a rubric set, it
//! produces every per-report record (judged units, scores, usage, timings) and
//! writes the output files. `tvir eval` drives it; `tvir ablate` re-scores its
//! stored records.
//!
//! Main types:
//!
//! - [`Engine`]: what a run shares (rubrics, judge, pages, settings, counters);
//!   [`Engine::evaluate_each`] / [`Engine::evaluate_all`] run a list of jobs;
//! - [`EvalSettings`] with [`JudgeMode`], [`DedupMode`], [`DedupKeep`],
//!   [`RevisionScope`], [`ImageSize`], [`UnreadableSources`], [`ExtractionMode`] and
//!   [`ScoreOptions`]: what a run is asked to do;
//! - [`ReportJob`] and [`Task`] ([`input`]): a report found on disk and the
//!   benchmark task it answers;
//! - [`record`]: the records written and read back ([`record::ReportRecord`],
//!   [`record::UnitRecord`], metric files);
//! - the seams tests substitute: [`Pages`] (network), [`FigureOps`] (images),
//!   [`ReportLoader`] (parsing), [`Progress`] (the progress bar);
//! - [`Renderer`] ([`render`]): charts drawn by script, rendered in a headless
//!   browser (through `tvir-browser`) or found in the render cache.
//!
//! Data flow, per report: **render** ([`render`]: only for a report whose charts a
//! script draws; the report is parsed again with those charts as figures) ->
//! **plan** ([`plan`]: the units of each rubric, from its
//! declarations alone) -> **run** ([`flow`] loads the report and gathers
//! [`evidence`] once; [`run`] judges each sample's units in dependency order
//! through [`judging`], with caption revision, fact de-duplication and optional
//! judge [`extract`]ion as named steps; cited pages shown whole, or cut by [`fit`]'s
//! one recorded rule when a cap or the judge's context window forces it) -> **score** ([`score::rescore`]: every
//! number from the stored answers, as `tvir ablate` recomputes them) -> **write**
//! ([`output`]).
//!
//! This crate must never depend on the command line (clap argument types, exit
//! codes, terminal output), on the analysis crate (leaderboards and agreement read
//! the files written here, not the other way round), or on the test servers of
//! `tvir-testing`. It has no clap dependency: the command layer mirrors the option
//! enums ([`DedupMode`], [`RevisionScope`], [`ExtractionMode`]) for its flags.

pub mod dedup;
pub mod engine;
pub mod evidence;
pub mod extract;
pub mod figure_ops;
pub mod figures;
pub mod fit;
pub mod flow;
pub mod input;
pub mod judging;
pub mod network;
pub mod outcome;
pub mod output;
pub mod pages;
pub mod plan;
pub mod record;
pub mod render;
mod render_requests;
pub mod run;
pub mod score;
pub mod settings;
pub mod stats;
pub mod text;
pub mod timing;

pub use dedup::{DedupKeep, DedupMode};
pub use engine::{Engine, ReportLoader};
pub use figure_ops::{FigureOps, ImagePipeline};
pub use input::{discover, load_tasks, match_task, parse_tasks, ReportJob, Task};
pub use outcome::PENDING_REASON;
pub use pages::{FigureFailure, Pages, ResourceBytes, ResourceFailure};
pub use render::{BrowserChoice, RenderSettings, Renderer};
pub use score::{rescore, round4, Aggregates, IqWeights, Rounding, ScoreOptions};
pub use settings::{
    EvalSettings, ExtractionMode, FigureKinds, ImageSize, JudgeMode, ProtocolRecord, RevisionScope,
    Settle, Unread, UnreadableSources, IMAGE_SAFETY_MAX_SIDE,
};
pub use stats::{NoProgress, Progress, RunStats};
