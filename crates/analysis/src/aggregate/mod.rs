//! System-level aggregation of `eval` outputs (METRICS.md section 5): per-system
//! means of every metric, TA, VA, Overall, AEC and structural errors; mean and
//! standard deviation over runs; breakdowns by language, complexity and domain;
//! domain difficulty; intervals, pairwise tests and rank groups per level
//! (`uncertainty`); renderings as terminal table, Markdown, CSV, JSON and a
//! folder of static HTML pages (`site`).

pub mod agreement_tables;
pub mod html;
pub mod packed;
mod page_record;
mod pictures;
pub mod render;
pub mod site;
pub mod summary;
pub mod uncertainty;
mod uncertainty_html;
mod unit_html;

// The loader moved up to `crate::load` (agree and ablate read trees too); kept
// reachable here under its old path.
pub use crate::load;
pub use crate::load::{
    load_eval_tree, load_eval_tree_compact, load_tasks, AggregateError, EvalTree, LoadedRecord,
    RecordUnits, TaskInfo,
};
pub use summary::{summarize, Stat, Summary, SystemStats};
pub use uncertainty::add_significance;

use std::collections::BTreeMap;

/// Summarise an already loaded tree (the pure step after I/O).
pub fn summarize_tree(
    tree: &EvalTree,
    tasks: &BTreeMap<String, TaskInfo>,
    tasks_file: Option<&str>,
) -> Summary {
    summarize(
        &tree.root.display().to_string(),
        &tree.records,
        &tree.issues,
        tasks,
        tasks_file,
    )
}
