//! Analysis of `tvir eval` output trees: leaderboards (`aggregate`), agreement
//! between evaluators (`agree`) and metric ablations re-scored from stored
//! judgments (`ablate`); intervals, paired tests and rank groups for the
//! leaderboards (`significance`, which works on plain per-task scores and names
//! no other module).
//!
//! Reads the records the evaluation engine writes ([`tvir_engine::record`]); never
//! calls a judge, fetches a page or parses a report.

pub mod ablate;
pub mod aggregate;
pub mod agree;
pub mod significance;
