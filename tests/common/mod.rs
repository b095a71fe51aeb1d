//! Helpers shared by the integration tests (each test file includes this module).

pub mod report;

use std::path::PathBuf;

/// The real-report corpus, from `TVIR_CORPUS_DIR`. `None` (with a `skipped:` line
/// naming why) when the variable is unset or the folder does not exist, so the
/// README's test command passes in a clone that has no `../shared/corpus` beside it.
/// A relative path is taken from the package root, where `cargo test` runs tests.
// Not every test file that includes `common` reads the corpus.
#[allow(dead_code)]
pub fn corpus_dir() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("TVIR_CORPUS_DIR").map(PathBuf::from) else {
        eprintln!("skipped: TVIR_CORPUS_DIR not set");
        return None;
    };
    if !dir.is_dir() {
        eprintln!("skipped: corpus not found at {}", dir.display());
        return None;
    }
    // CI passes a relative path (`../shared/corpus`); tests that run a command in
    // another working directory need it absolute.
    Some(std::fs::canonicalize(&dir).unwrap_or(dir))
}
