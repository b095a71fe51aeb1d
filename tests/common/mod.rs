//! Helpers shared by the integration tests (each test file includes this module).
//!
//! - [`charts`]: one report through `tvir eval --offline` with a seeded render cache and
//!   the mock judge (the chart tests);
//! - [`cli`]: the `tvir` binary with no judge configured from the developer's shell,
//!   `tvir eval` of the shipped example, and running it beside an async mock judge;
//! - [`client`]: the judge client's CS-shaped requests and mock configuration;
//! - [`judge`]: the in-process engine and `JudgeClient` against the mock judge;
//! - [`outputs`]: reading what a run wrote (JSON files, `report.json` without its
//!   timing, the journal's calls per metric);
//! - [`report`]: views of a parsed report;
//! - [`rust_source`]: our own sources as tokens (string literals, a function's body).

// Each test file includes `common`; not every one uses every helper.
#![allow(dead_code)]

pub mod charts;
pub mod cli;
pub mod client;
pub mod judge;
pub mod outputs;
pub mod report;
pub mod rust_source;

use std::path::PathBuf;

mod skip;
pub use skip::skip;

/// The real-report corpus, from `TVIR_CORPUS_DIR`. `None` (with a `skipped:` line
/// naming why, see [`skip`]) when the variable is unset or the folder does not exist, so the
/// README's test command passes in a clone that has no `../shared/corpus` beside it.
/// A relative path is taken from the package root, where `cargo test` runs tests.
pub fn corpus_dir() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("TVIR_CORPUS_DIR").map(PathBuf::from) else {
        skip("TVIR_CORPUS_DIR not set");
        return None;
    };
    if !dir.is_dir() {
        skip(&format!("corpus not found at {}", dir.display()));
        return None;
    }
    // CI passes a relative path (`../shared/corpus`); tests that run a command in
    // another working directory need it absolute.
    Some(std::fs::canonicalize(&dir).unwrap_or(dir))
}

/// The package root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shipped example benchmark (`examples/`: two systems, three tasks).
pub fn examples() -> PathBuf {
    repo().join("examples")
}

/// A report folder under `tests/fixtures/reports/`.
pub fn report_fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/reports").join(name)
}

/// A report of five facts over three sources, each fact citing its sources in its
/// own order (for prompt layout: shared source prefixes, canonical source order).
pub const WIND_AND_WATER: &str = "# Wind and water\n\n\
Offshore wind capacity rose sharply in 2024 [2][1].\n\n\
Hydropower output fell in the dry year of 2023 [3][1].\n\n\
Tidal projects stayed small throughout the decade [3].\n\n\
Grid storage orders doubled within two years [1][2].\n\n\
Pumped storage remained the largest store of energy [3].\n\n\
## References\n\n\
[1] Capacity review. https://one.example.org/capacity\n\
[2] Offshore survey. https://two.example.org/offshore\n\
[3] Water power outlook. https://three.example.org/water\n";
