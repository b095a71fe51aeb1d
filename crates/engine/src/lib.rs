//! The evaluation run, in three parts:
//!
//! - **plan** ([`plan`]): the units of every rubric, built from the rubric's
//!   declarations (unit kind, inputs, settle rules, `reads`, `after`), with no code
//!   per metric;
//! - **run** ([`run`], on the engine of [`pipeline`]: judge pool, cache, evidence
//!   gathering, accounting): the units of each report in dependency order, with the
//!   named steps (caption revision, fact de-duplication, image quality from pixels);
//! - **score** ([`score::rescore`]): every number from the stored answers, as
//!   `tvir ablate` recomputes them.
//!
//! Outputs are written by [`output`].

pub mod dedup;
pub mod extract;
pub mod figures;
pub mod input;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod record;
pub mod run;
pub mod score;
pub mod text;
pub mod timing;

pub use dedup::DedupMode;
pub use extract::ExtractionMode;
pub use input::{discover, load_tasks, match_task, parse_tasks, ReportJob, Task};
pub use pipeline::{
    Engine, EvalSettings, FigureFailure, FigureOps, ImagePipeline, JudgeMode, NoProgress, Pages,
    Progress, ReportLoader, RevisionScope, RunStats, PENDING_REASON,
};
pub use score::{rescore, IqWeights, ScoreOptions};
