//! Analysis of `tvir eval` output trees: leaderboards ([`aggregate`]), agreement
//! between evaluators ([`agree`]) and metric ablations re-scored from stored
//! judgments ([`ablate`]). All three read trees through [`load`] ([`load::LoadedRecord`],
//! [`load::EvalTree`]); `aggregate` uses `agree`'s statistics, never the reverse.
//! [`significance`] gives the leaderboards intervals, paired tests and rank groups;
//! it works on plain per-task scores and borrows only `agree`'s quantile.
//!
//! [`rating`] runs human-rating studies: it exports reports to Label Studio and reads
//! the raters' answers back for `agree`.
//!
//! Reads the records the evaluation engine writes ([`tvir_engine::record`]). It must
//! never depend on the command line or the test servers, and never calls a judge or
//! fetches a page. Everything it needs is in the output tree, except the study
//! export, which reloads each report (through `tvir_report`, as the engine did) to
//! show raters its text and pictures.

pub mod ablate;
pub mod aggregate;
pub mod agree;
pub mod load;
pub mod rating;
pub mod significance;
