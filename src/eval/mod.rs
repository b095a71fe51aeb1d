//! The evaluation run: planning judge units for every report, dependencies (FCQ
//! before caption revision before the text judges), fact de-duplication, scoring
//! through [`score::rescore`], and writing outputs.

pub mod dedup;
pub mod extract;
pub mod figures;
pub mod input;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod record;
pub mod score;
pub mod text;
pub mod timing;

pub use dedup::DedupMode;
pub use extract::ExtractionMode;
pub use input::{discover, load_tasks, match_task, parse_tasks, ReportJob, Task};
pub use pipeline::{
    ClientJudge, Engine, EvalSettings, FigureFailure, FigureOps, ImagePipeline, Judge, JudgeMode,
    NoProgress, Pages, Progress, ReportLoader, RevisionScope, RunStats, PENDING_REASON,
};
pub use score::{rescore, IqWeights, ScoreOptions};
