//! The parser never panics and never blows up on damaged real reports (issue 26,
//! requirement 5).
//!
//! Every fixture report (`tests/fixtures/reports`) and, with `TVIR_CORPUS_DIR` set,
//! every corpus report is mutated many times by a deterministic seeded mutator and
//! each mutant is parsed, as its own format and (one mutant in four) as the other
//! one. A mutant stacks one to four edits, each at a random byte position snapped
//! to a character boundary (a `&str` cannot hold anything else, so the mutator
//! reaches "inside a character" only through what the parser computes, which is the
//! class of bug this test is for):
//!
//! - an insertion of a piece reports are made of or break on: brackets, citation
//!   markers (`[12]`, `【3】`, `^5`, `⁽²⁾`, `[^1]`), HTML tags, closed and unclosed,
//!   percent escapes (whole, cut, and of multi-byte characters), headings,
//!   reference-entry starts, and multi-byte characters (`。`, `é`, `😀`);
//! - a cut span, a duplicated span (copied to another random position), or a
//!   truncation.
//!
//! Two assertions:
//!
//! - **No panic.** Each parse runs under `catch_unwind`; a panic is recorded with
//!   its message and place, the base seed, the report and the exact edits, and the
//!   test fails listing them (the first ten). `TVIR_MUTATION_SEED` changes the base
//!   seed and `TVIR_MUTANTS` the number of mutants per report, for larger runs.
//! - **Bounded time per parse.** The parser has no deterministic work counter, so
//!   time is compared with the same report's unmutated parse, never with an
//!   absolute threshold: a mutant is a blow-up when it takes more than 50 times the
//!   original's parse time scaled by how much longer the mutant's text is, and more
//!   than 20 ms (below that, timer noise dominates). The edits change a report by a
//!   few hundred bytes at most (a duplicated span at most doubles it), so a linear
//!   parser stays well within the factor; a quadratic path hit by an edit does not.
//!   Times are the parsing thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not the
//!   wall clock: on this 2-core machine under a load of 16, wall-clock times made
//!   3 of 16,800 fixture mutants look 50 times slower than a 1 ms parse while they
//!   only waited for a core. A mutant over the bound is timed three more times and
//!   only the fastest counts.
//! - Corpus reports are long (a debug-build parse takes tens of milliseconds), so
//!   each corpus mutant first keeps a window of 2 to 12 KB of its report (half the
//!   time the end, where the reference list is) and is then edited; its time is
//!   compared with the unmutated window's.
//!
//! Run: `cargo test -p tvir-report --test parse_mutation` (fixtures), with
//! `TVIR_CORPUS_DIR=/work/shared/corpus` for the corpus too.

mod mutator;
// The checkout's one skip rule (`TVIR_REQUIRE_ALL_TESTS=1` turns a skip into a failure).
#[path = "../../../tests/common/skip.rs"]
mod skip_rule;
use skip_rule::skip;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mutator::{env_seed, env_usize, mutant, mutant_seed, timed, Edit};
use tvir_report::{load, parse_str, SourceFormat};

/// Mutants per fixture report (small reports, fast parses).
const FIXTURE_MUTANTS: usize = 300;
/// Mutants per corpus report (each a window of the report, see
/// [`mutator::random_window`]).
const CORPUS_MUTANTS: usize = 600;
/// A mutant slower than this many times the original (scaled by length) is a blow-up…
const BLOWUP_FACTOR: f64 = 50.0;
/// …when it also takes more than this (below it, noise dominates).
const BLOWUP_FLOOR: Duration = Duration::from_millis(20);

struct Source {
    name: String,
    root: PathBuf,
    path: PathBuf,
    format: SourceFormat,
    text: String,
}

fn report_sources(dir: &Path) -> Vec<Source> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !matches!(name, "report.md" | "report.html" | "report.htm") {
                continue;
            }
            let src = load::read_source(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            out.push(Source {
                name: p.strip_prefix(dir).unwrap_or(&p).display().to_string(),
                root: src.root,
                path: src.path,
                format: src.format,
                text: src.text,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn other(format: SourceFormat) -> SourceFormat {
    match format {
        SourceFormat::Markdown => SourceFormat::Html,
        SourceFormat::Html => SourceFormat::Markdown,
    }
}

/// Parse once under `catch_unwind`: the time it took, or the panic's message.
fn parse_once(src: &Source, text: &str, format: SourceFormat) -> Result<Duration, String> {
    timed(|| {
        parse_str(text, format, &src.path, &src.root);
    })
}

/// The median of three unmutated parses of a report as its own format.
fn baseline(src: &Source) -> Duration {
    let mut t: Vec<Duration> = (0..3)
        .map(|_| {
            parse_once(src, &src.text, src.format)
                .unwrap_or_else(|e| panic!("{}: the unmutated report panics: {e}", src.name))
        })
        .collect();
    t.sort();
    t[1]
}

#[derive(Default)]
struct Outcome {
    mutants: AtomicUsize,
    parses: AtomicUsize,
    failures: Mutex<Vec<String>>,
}

/// The fastest of three parses of `text` (a blow-up is confirmed on it, so a pause
/// of the machine during one parse does not count).
fn fastest(src: &Source, text: &str, format: SourceFormat) -> Duration {
    (0..3)
        .filter_map(|_| parse_once(src, text, format).ok())
        .min()
        .unwrap_or_default()
}

fn run_report(src: &Source, index: usize, count: usize, seed: u64, window: bool, out: &Outcome) {
    let base = baseline(src);
    for i in 0..count {
        let s = mutant_seed(seed, index, i);
        let (edits, text) = mutant(&src.text, s, window);
        let mut formats = vec![src.format];
        if s.is_multiple_of(4) {
            formats.push(other(src.format));
        }
        out.mutants.fetch_add(1, Ordering::Relaxed);
        for format in formats {
            out.parses.fetch_add(1, Ordering::Relaxed);
            let describe = |what: &str| {
                format!(
                    "{}: {what}\n    base seed {seed:#x}, report #{index}, mutant {i} (seed {s:#x}), \
                     parsed as {format:?}, edits {edits:?}",
                    src.name
                )
            };
            let took = match parse_once(src, &text, format) {
                Err(msg) => {
                    let failure = describe(&format!("panic {msg}"));
                    out.failures.lock().unwrap().push(failure);
                    continue;
                }
                Ok(took) => took,
            };
            // First against the whole report's time scaled to the mutant's length
            // (linear), then, if over, against the unmutated text it came from (a
            // window of the report, or the report) timed now.
            let ratio = text.len().max(1) as f64 / src.text.len().max(1) as f64;
            if took <= base.mul_f64(BLOWUP_FACTOR * ratio).max(BLOWUP_FLOOR) {
                continue;
            }
            let (own, own_len) = match edits.first() {
                Some(Edit::Window { start, end }) => {
                    let w = &src.text[*start..*end];
                    (fastest(src, w, format), w.len())
                }
                _ => (fastest(src, &src.text, format), src.text.len()),
            };
            let grown = (text.len() as f64 / own_len.max(1) as f64).max(1.0);
            let bound = own.mul_f64(BLOWUP_FACTOR * grown).max(BLOWUP_FLOOR);
            let best = fastest(src, &text, format);
            if best > bound {
                out.failures.lock().unwrap().push(describe(&format!(
                    "blow-up: {best:?} against {own:?} unmutated (bound {bound:?})"
                )));
            }
        }
    }
}

/// Mutate every report in `sources` (`count` mutants each, or `TVIR_MUTANTS`;
/// windows of them if `window`), over as many threads as the machine has, and fail
/// on any panic or blow-up.
fn mutate_all(label: &str, sources: &[Source], count: usize, window: bool) {
    let seed = env_seed();
    let count = env_usize("TVIR_MUTANTS").unwrap_or(count);
    let out = Outcome::default();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(src) = sources.get(i) else { break };
                run_report(src, i, count, seed, window, &out);
            });
        }
    });
    let failures = out.failures.into_inner().unwrap();
    eprintln!(
        "{label}: {} reports, {} mutants, {} parses, {} failures, {:.1?} on {threads} threads (seed {seed:#x})",
        sources.len(),
        out.mutants.load(Ordering::Relaxed),
        out.parses.load(Ordering::Relaxed),
        failures.len(),
        started.elapsed(),
    );
    // Failures grouped by where they happened (a panic's place, or "blow-up").
    let mut places: std::collections::BTreeMap<&str, usize> = Default::default();
    for f in &failures {
        let what = f.split_once(": ").map_or(f.as_str(), |(_, w)| w);
        let key = what.split(": ").next().unwrap_or(what);
        *places.entry(key).or_default() += 1;
    }
    for (place, n) in &places {
        eprintln!("  {n:>5}  {place}");
    }
    assert!(
        failures.is_empty(),
        "{label}: {} of {} mutants failed; the first ten:\n{}",
        failures.len(),
        out.mutants.load(Ordering::Relaxed),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/reports")
}

#[test]
fn fixture_mutants_never_panic_or_blow_up() {
    let sources = report_sources(&fixtures_dir());
    assert!(
        sources.len() >= 40,
        "only {} fixture reports",
        sources.len()
    );
    mutate_all("fixtures", &sources, FIXTURE_MUTANTS, false);
}

#[test]
fn corpus_mutants_never_panic_or_blow_up() {
    let Some(dir) = std::env::var_os("TVIR_CORPUS_DIR").map(PathBuf::from) else {
        skip("TVIR_CORPUS_DIR not set");
        return;
    };
    // The README's test command runs at the checkout's root with a relative path
    // (`../shared/corpus`); this test runs in crates/report, two folders down.
    let dir = if dir.is_relative() {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(dir)
    } else {
        dir
    };
    if !dir.join("reports").is_dir() {
        skip(&format!("no reports folder in {}", dir.display()));
        return;
    }
    let sources = report_sources(&dir.join("reports"));
    assert!(sources.len() >= 9, "only {} corpus reports", sources.len());
    mutate_all("corpus", &sources, CORPUS_MUTANTS, true);
}
