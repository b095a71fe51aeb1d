//! Page text never panics or blows up on damaged pages (issue 26, requirement 5,
//! for the other code that slices text by byte offsets): every fixture page
//! (`tests/fixtures/pages`) and every HTML fixture report, mutated by the parser's
//! seeded mutator (`crates/report/tests/mutator`, included by path), goes through
//! readable-text extraction (`tvir_sources::extract::html_to_text`) and the fitting
//! of that text to a judge's budget (`tvir_engine::fit::passages`, `cut_page`).
//!
//! As in `crates/report/tests/parse_mutation.rs`: a panic fails the test with the
//! seed, the page and the edits; CPU time is compared with the unmutated page's
//! (more than 50 times it, scaled by the mutant's length, and more than 20 ms,
//! confirmed on the fastest of three runs), never with an absolute threshold.
//! `TVIR_MUTANTS` and `TVIR_MUTATION_SEED` change the run.

#[path = "../crates/report/tests/mutator/mod.rs"]
mod mutator;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mutator::{env_seed, env_usize, mutant, mutant_seed};

/// Mutants per page.
const MUTANTS: usize = 500;
const BLOWUP_FACTOR: f64 = 50.0;
const BLOWUP_FLOOR: Duration = Duration::from_millis(20);

/// The page's readable text, then the text fitted to a small budget around a claim.
fn extract_and_fit(html: &str) {
    let page = tvir_sources::extract::html_to_text(html, Some("https://example.org/a/"));
    let claim: BTreeSet<String> = ["market", "growth", "2023", "battery", "市场"]
        .iter()
        .map(|w| w.to_string())
        .collect();
    let ps = tvir_engine::fit::passages(&page.text);
    assert!(ps.iter().all(|&(a, b)| page.text.get(a..b).is_some()));
    let _ = tvir_engine::fit::cut_page(&page.text, &claim, 200);
}

fn timed(html: &str) -> Result<Duration, String> {
    mutator::timed(|| extract_and_fit(html))
}

fn fastest(html: &str) -> Duration {
    (0..3)
        .filter_map(|_| timed(html).ok())
        .min()
        .unwrap_or_default()
}

fn pages() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("pages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for e in std::fs::read_dir(root.join("reports")).unwrap() {
        let p = e.unwrap().path().join("report.html");
        if p.is_file() {
            files.push(p);
        }
    }
    files.sort();
    files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .map(|p| {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            (p.strip_prefix(&root).unwrap().display().to_string(), text)
        })
        .collect()
}

#[test]
fn page_mutants_never_panic_or_blow_up() {
    let pages = pages();
    assert!(pages.len() >= 10, "only {} pages", pages.len());
    let seed = env_seed();
    let count = env_usize("TVIR_MUTANTS").unwrap_or(MUTANTS);
    let started = Instant::now();
    let mut failures = Vec::new();
    let mut mutants = 0;
    for (index, (name, html)) in pages.iter().enumerate() {
        let base = fastest(html);
        for i in 0..count {
            let s = mutant_seed(seed, index, i);
            let (edits, text) = mutant(html, s, false);
            mutants += 1;
            let describe = |what: String| {
                format!(
                    "{name}: {what}\n    base seed {seed:#x}, page #{index}, mutant {i} \
                     (seed {s:#x}), edits {edits:?}"
                )
            };
            match timed(&text) {
                Err(msg) => failures.push(describe(format!("panic {msg}"))),
                Ok(took) => {
                    let grown = (text.len() as f64 / html.len().max(1) as f64).max(1.0);
                    let bound = base.mul_f64(BLOWUP_FACTOR * grown).max(BLOWUP_FLOOR);
                    if took > bound && fastest(&text) > bound {
                        failures.push(describe(format!(
                            "blow-up: {took:?} against {base:?} unmutated (bound {bound:?})"
                        )));
                    }
                }
            }
        }
    }
    eprintln!(
        "pages: {} pages, {mutants} mutants, {} failures, {:.1?} (seed {seed:#x})",
        pages.len(),
        failures.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} of {mutants} page mutants failed; the first ten:\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
