//! The rubric crate's integration tests, one binary (see the checkout's
//! `tests/suite.rs`); `tests/architecture.rs` at the checkout's root checks that every
//! file here is named below.

mod fidelity_doc;
mod prompt_order;
mod schema_grammar;
