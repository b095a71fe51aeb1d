//! The browser's integration tests, one binary (one link instead of four; see the
//! checkout's `tests/suite.rs`). Each file is a module; `tests/architecture.rs` at the
//! checkout's root checks that every file here is named below.

mod common;

mod capture;
mod charts;
mod hostile;
mod process;
mod reader;
mod reveal;
mod unknown;
