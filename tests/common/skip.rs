//! The one rule for a test that cannot run here (no corpus, no Chromium, no chart
//! libraries): it says why on a `skipped:` line and passes; with
//! `TVIR_REQUIRE_ALL_TESTS=1` (set by `.ci/run`) it fails instead, so CI proves that
//! the corpus and browser tests really ran rather than passing them as skipped.
//! Included by path by the crates' own tests (`crates/browser/tests/common`,
//! `crates/report/tests/parse_mutation.rs`).

pub fn skip(why: &str) {
    if std::env::var_os("TVIR_REQUIRE_ALL_TESTS").is_some_and(|v| v == "1") {
        panic!("TVIR_REQUIRE_ALL_TESTS=1, yet this test would be skipped: {why}");
    }
    println!("skipped: {why}");
}
