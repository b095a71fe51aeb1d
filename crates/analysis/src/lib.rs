//! Analysis of `tvir eval` output trees: leaderboards ([`aggregate`]), agreement
//! between evaluators ([`agree`]) and metric ablations re-scored from stored
//! judgments ([`ablate`]). All three read trees through [`load`] ([`load::LoadedRecord`],
//! [`load::EvalTree`]); `aggregate` uses `agree`'s statistics, never the reverse.
//! [`significance`] gives the leaderboards intervals, paired tests and rank groups;
//! it works on plain per-task scores and borrows only `agree`'s quantile.
//!
//! Reads the records the evaluation engine writes ([`tvir_engine::record`]). It must
//! never depend on the command line or the test servers, and never calls a judge,
//! fetches a page or parses a report: everything it needs is in the output tree.

pub mod ablate;
pub mod aggregate;
pub mod agree;
pub mod load;
pub mod rating;
pub mod significance;
