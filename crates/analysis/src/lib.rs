//! Analysis of `tvir eval` output trees: leaderboards ([`aggregate`]), agreement
//! between evaluators ([`agree`]) and metric ablations re-scored from stored
//! judgments ([`ablate`]). All three read trees through [`load`] ([`load::LoadedRecord`],
//! [`load::EvalTree`]); `aggregate` uses `agree`'s statistics, never the reverse.
//!
//! Reads the records the evaluation engine writes ([`tvir_engine::record`]); never
//! calls a judge, fetches a page or parses a report.

pub mod ablate;
pub mod aggregate;
pub mod agree;
pub mod load;
