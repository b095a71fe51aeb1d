//! tvir-eval: evaluation suite for text-visual interleaved deep-research reports
//! (TVIR-Bench) and for the RepoRef reference-grounding benchmark.
//!
//! Modules follow the data flow: `report` (parse) -> `sources` (fetch) and `images`
//! (decode, IQ) -> `judge` (LLM client) driven by `rubric` + `eval` -> `aggregate`
//! -> `agree` (evaluator agreement, ablations). `reporef` is the second benchmark.

pub mod ablate;
pub mod aggregate;
pub mod agree;
pub mod batch;
pub mod cli;
pub mod config;
pub mod eval;
pub mod example;
pub mod images;
pub mod judge;
pub mod reporef;
pub mod report;
pub mod rubric;
pub mod sources;
pub mod store;
pub mod testing;
