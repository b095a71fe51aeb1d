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
//!   absolute wall-clock threshold: a mutant is a blow-up when it takes more than
//!   50 times the original's parse time scaled by how much longer the mutant's
//!   text is, and more than 20 ms (below that, timer noise and a scheduler pause
//!   dominate). The edits change a report by a few hundred bytes at most (a
//!   duplicated span at most doubles it), so a linear parser stays well within the
//!   factor; a quadratic path hit by an edit does not. A mutant over the bound is
//!   timed three more times and only the fastest counts, so a pause of the machine
//!   does not fail the test.
//!
//! Run: `cargo test -p tvir-report --test parse_mutation` (fixtures), with
//! `TVIR_CORPUS_DIR=/work/shared/corpus` for the corpus too.

use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tvir_report::{load, parse_str, SourceFormat};

/// Base seed; a mutant's own seed mixes it with the report's index and the mutant's.
const DEFAULT_SEED: u64 = 0x7a1f_2026;
/// Mutants per fixture report (small reports, fast parses).
const FIXTURE_MUTANTS: usize = 300;
/// Mutants per corpus report (each a window of the report, see [`random_window`]).
const CORPUS_MUTANTS: usize = 600;
/// A mutant slower than this many times the original (scaled by length) is a blow-up…
const BLOWUP_FACTOR: f64 = 50.0;
/// …when it also takes more than this (below it, noise dominates).
const BLOWUP_FLOOR: Duration = Duration::from_millis(20);

/// Pieces inserted at random places.
const PIECES: &[&str] = &[
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    "<",
    ">",
    "[12]",
    "[1]",
    "[1, 3]",
    "[2-5]",
    "【3】",
    "【4†source】",
    "^5",
    "^[6]",
    "⁽²⁾",
    "¹²",
    "[^1]",
    "[^1]: ",
    "<sup>",
    "</sup>",
    "<sup>7</sup>",
    "<a href=\"#ref-1\">",
    "</a>",
    "<a href=\"",
    "<div>",
    "</div>",
    "<p>",
    "<table><tr><td>",
    "</td>",
    "<figure>",
    "<figcaption>",
    "</figure>",
    "<img src=\"",
    "<img src=\"x%E4%B8%AD.png\">",
    "\">",
    "<br>",
    "<!--",
    "-->",
    "<script>",
    "<canvas id=\"c\">",
    "%",
    "%E",
    "%E4%B8",
    "%C3%A9",
    "%zz",
    "](",
    "![",
    "![a](b%C3.png)",
    "](http://",
    "https://",
    "http://x.org/%E4%B8%AD",
    "file://",
    "sandbox:/",
    "\n",
    "\n\n",
    "\n\n## References\n\n",
    "\n## 参考文献\n",
    "\n[1] ",
    "\n1. ",
    "\n- ",
    "\n* [",
    "\n> ",
    "\n|",
    "|",
    "| --- |",
    "```",
    "`",
    "*",
    "**",
    "_",
    "#",
    "\\",
    "。",
    "．",
    "！",
    "é",
    "😀",
    "ß",
    "İ",
    "\u{200b}",
    "\u{feff}",
    "\u{e000}",
    "中文",
    " 1。",
    ".1 ",
    "Figure 1:",
    "图 1：",
    "Source:",
    "Sources",
    "&amp;",
    "&#x4e2d;",
    "&",
    ";",
    "\"",
    "'",
    "\t",
    "\r\n",
    "  ",
];

/// One edit of a mutant, with everything needed to redo it.
#[derive(Clone)]
enum Edit {
    Insert {
        at: usize,
        piece: String,
    },
    Cut {
        start: usize,
        end: usize,
    },
    Duplicate {
        start: usize,
        end: usize,
        at: usize,
    },
    Truncate {
        at: usize,
    },
    /// Keep only these bytes (the first edit of a corpus mutant).
    Window {
        start: usize,
        end: usize,
    },
}

impl fmt::Debug for Edit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Edit::Insert { at, piece } => write!(f, "insert {piece:?} at byte {at}"),
            Edit::Cut { start, end } => write!(f, "cut bytes {start}..{end}"),
            Edit::Duplicate { start, end, at } => {
                write!(f, "copy bytes {start}..{end} to byte {at}")
            }
            Edit::Truncate { at } => write!(f, "truncate at byte {at}"),
            Edit::Window { start, end } => write!(f, "keep bytes {start}..{end}"),
        }
    }
}

/// The nearest character boundary at or before `i`.
fn snap(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Characters the parser decides on: half the edits land right before or after one.
const LANDMARKS: &[char] = &[
    '%', '[', ']', '(', ')', '<', '>', '|', '\n', '.', '。', ':', '#', '!', '*', '^', '【', '】',
    '"', '/', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
];

/// A random character boundary: uniform, or (half the time) just before or after
/// the first landmark at or after a uniform one.
fn position(text: &str, rng: &mut ChaCha8Rng) -> usize {
    let at = snap(text, rng.random_range(0..=text.len()));
    if rng.random_bool(0.5) {
        return at;
    }
    let found = text[at..]
        .find(LANDMARKS)
        .map(|i| at + i)
        .or_else(|| text.find(LANDMARKS));
    match found {
        Some(i) if rng.random_bool(0.5) => i,
        Some(i) => i + text[i..].chars().next().map_or(0, char::len_utf8),
        None => at,
    }
}

/// A random character: one, two, three or four bytes long in UTF-8.
fn random_char(rng: &mut ChaCha8Rng) -> char {
    let c = match rng.random_range(0..5u32) {
        0 => char::from_u32(rng.random_range(0x80..0x800u32)),
        1 => char::from_u32(rng.random_range(0x800..0xd800u32)),
        2 => char::from_u32(rng.random_range(0x1_0000..0x1_fbffu32)),
        3 => ['。', 'é', '😀', '中', '（', '）', '［', '］']
            .get(rng.random_range(0..8))
            .copied(),
        _ => char::from_u32(rng.random_range(0x20..0x7fu32)),
    };
    c.unwrap_or('\u{fffd}')
}

/// A piece to insert: one of [`PIECES`], as it is or (two times in five) with a
/// random, usually multi-byte, character inside it, so syntax is followed by a
/// character of any width at every offset (`%E` then `é`, `[1` then `。`); or a
/// short run of random characters.
fn random_piece(rng: &mut ChaCha8Rng) -> String {
    if rng.random_bool(0.15) {
        return (0..rng.random_range(1..=3))
            .map(|_| random_char(rng))
            .collect();
    }
    let mut piece = PIECES[rng.random_range(0..PIECES.len())].to_string();
    if rng.random_bool(0.4) {
        let at = snap(&piece, rng.random_range(0..=piece.len()));
        piece.insert(at, random_char(rng));
    }
    piece
}

fn random_edit(text: &str, rng: &mut ChaCha8Rng) -> Edit {
    let pos = |rng: &mut ChaCha8Rng| position(text, rng);
    // A span of up to 200 bytes, so cuts hit markers, tags and entry lines whole or
    // in part rather than whole sections.
    let span = |rng: &mut ChaCha8Rng| {
        let a = pos(rng);
        let b = snap(text, a + rng.random_range(0..200usize));
        (a, b.max(a))
    };
    match rng.random_range(0..100u32) {
        0..65 => Edit::Insert {
            at: pos(rng),
            piece: random_piece(rng),
        },
        65..80 => {
            let (start, end) = span(rng);
            Edit::Cut { start, end }
        }
        80..95 => {
            let (start, end) = span(rng);
            Edit::Duplicate {
                start,
                end,
                at: pos(rng),
            }
        }
        _ => Edit::Truncate { at: pos(rng) },
    }
}

fn apply(text: &mut String, edit: &Edit) {
    match *edit {
        Edit::Insert { at, ref piece } => text.insert_str(at, piece),
        Edit::Cut { start, end } => {
            text.replace_range(start..end, "");
        }
        Edit::Duplicate { start, end, at } => {
            let copy = text[start..end].to_string();
            text.insert_str(at, &copy);
        }
        Edit::Truncate { at } => text.truncate(at),
        Edit::Window { start, end } => *text = text[start..end].to_string(),
    }
}

/// A mutant: its seed, its edits (in order) and the resulting text.
fn mutant(original: &str, seed: u64, window: bool) -> (Vec<Edit>, String) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut text = original.to_string();
    let mut edits = Vec::with_capacity(5);
    if window {
        let e = random_window(&text, &mut rng);
        apply(&mut text, &e);
        edits.push(e);
    }
    for _ in 0..rng.random_range(1..=4) {
        let e = random_edit(&text, &mut rng);
        apply(&mut text, &e);
        edits.push(e);
    }
    (edits, text)
}

/// A window of a long report, so its mutants parse in milliseconds: half the time
/// its last 2 to 12 KB (the reference list and the body before it), else 2 to 12 KB
/// from anywhere, both cut at character boundaries.
fn random_window(text: &str, rng: &mut ChaCha8Rng) -> Edit {
    let len = rng.random_range(2048..12288usize);
    let start = if rng.random_bool(0.5) {
        text.len().saturating_sub(len)
    } else {
        rng.random_range(0..=text.len().saturating_sub(len))
    };
    let start = snap(text, start);
    Edit::Window {
        start,
        end: snap(text, start + len),
    }
}

fn mutant_seed(base: u64, report: usize, i: usize) -> u64 {
    // SplitMix-style mixing so neighbouring mutants get unrelated streams.
    let mut z = base ^ ((report as u64) << 32) ^ i as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

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
    let t = Instant::now();
    IN_PARSE.with(|p| p.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        parse_str(text, format, &src.path, &src.root);
    }));
    IN_PARSE.with(|p| p.set(false));
    result.map(|()| t.elapsed()).map_err(|_| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_default()
    })
}

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    /// Set while a mutant is parsed: only those panics are kept quiet.
    static IN_PARSE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Replace the panic hook with one that keeps the message and place for the
/// report instead of printing a backtrace per mutant.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !IN_PARSE.with(std::cell::Cell::get) {
                return default(info);
            }
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let place = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{place}: {msg}")));
        }))
    });
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

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn env_seed() -> u64 {
    std::env::var("TVIR_MUTATION_SEED")
        .ok()
        .and_then(|v| {
            let v = v.trim();
            match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => v.parse().ok(),
            }
        })
        .unwrap_or(DEFAULT_SEED)
}

/// Mutate every report in `sources` (`count` mutants each, or `TVIR_MUTANTS`;
/// windows of them if `window`), over as many threads as the machine has, and fail
/// on any panic or blow-up.
fn mutate_all(label: &str, sources: &[Source], count: usize, window: bool) {
    quiet_panics();
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
        eprintln!("skipped: TVIR_CORPUS_DIR not set");
        return;
    };
    if !dir.join("reports").is_dir() {
        eprintln!("skipped: no reports folder in {}", dir.display());
        return;
    }
    let sources = report_sources(&dir.join("reports"));
    assert!(sources.len() >= 9, "only {} corpus reports", sources.len());
    mutate_all("corpus", &sources, CORPUS_MUTANTS, true);
}
