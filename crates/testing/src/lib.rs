//! Test-only helpers for tvir-eval: an in-process, OpenAI-compatible mock judge
//! ([`mock_judge::MockJudge`], with its Files and Batch API in [`mock_batch`]), a
//! local page server ([`page_server`]), and [`stubs`] standing in for the judge and
//! the fetcher with no server at all. Servers bind 127.0.0.1 only.
//!
//! The mock is layered so its modules never loop: [`mock_config`] (settings and
//! faults) and [`mock_answer`] (canned answers) at the bottom, [`mock_chat`] (the
//! chat handler and the shared state) above them, then [`mock_batch`] and finally
//! [`mock_judge`], which starts the server.
//!
//! A dev-dependency only: production crates must never depend on it normally
//! (`tests/architecture.rs` checks).

pub mod mock_answer;
pub mod mock_batch;
pub mod mock_chat;
pub mod mock_config;
pub mod mock_judge;
pub mod page_server;
pub mod prefix_cache;
pub mod stubs;
