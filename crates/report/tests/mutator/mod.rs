#![allow(dead_code)] // each test file including it uses a part
//! The seeded mutator of the parser's mutation test (`parse_mutation.rs`), shared
//! with the page-text mutation test at the top of the checkout
//! (`tests/page_mutation.rs`, which includes this file by path): edits, their
//! reproduction, the seed from the environment, and panics caught quietly with their
//! message and place.

use std::fmt;
use std::panic::{self, AssertUnwindSafe};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Base seed; a mutant's own seed mixes it with the input's index and the mutant's.
pub const DEFAULT_SEED: u64 = 0x7a1f_2026;

/// Pieces inserted at random places.
pub const PIECES: &[&str] = &[
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
pub enum Edit {
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
pub fn snap(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Characters the parser decides on: half the edits land right before or after one.
pub const LANDMARKS: &[char] = &[
    '%', '[', ']', '(', ')', '<', '>', '|', '\n', '.', '。', ':', '#', '!', '*', '^', '【', '】',
    '"', '/', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
];

/// A random character boundary: uniform, or (half the time) just before or after
/// the first landmark at or after a uniform one.
pub fn position(text: &str, rng: &mut ChaCha8Rng) -> usize {
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
pub fn random_char(rng: &mut ChaCha8Rng) -> char {
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
pub fn random_piece(rng: &mut ChaCha8Rng) -> String {
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

pub fn random_edit(text: &str, rng: &mut ChaCha8Rng) -> Edit {
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

pub fn apply(text: &mut String, edit: &Edit) {
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
pub fn mutant(original: &str, seed: u64, window: bool) -> (Vec<Edit>, String) {
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
pub fn random_window(text: &str, rng: &mut ChaCha8Rng) -> Edit {
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

pub fn mutant_seed(base: u64, report: usize, i: usize) -> u64 {
    // SplitMix-style mixing so neighbouring mutants get unrelated streams.
    let mut z = base ^ ((report as u64) << 32) ^ i as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

pub fn env_seed() -> u64 {
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

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    /// Set inside [`catch`]: only those panics are kept quiet.
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

/// CPU time this thread has used. Parse times are compared in CPU time, not on
/// the wall clock: on a machine shared with other work a thread that waits for a
/// core would otherwise look like a slow parse.
pub fn thread_cpu() -> std::time::Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Run `f` and return the CPU time it took, or the panic it raised (see [`catch`]).
pub fn timed(f: impl FnOnce()) -> Result<std::time::Duration, String> {
    let start = thread_cpu();
    catch(f).map(|()| thread_cpu().saturating_sub(start))
}

/// Run `f`, catching a panic as its message and place (`file:line: message`)
/// without printing it; panics elsewhere print as usual.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    quiet_panics();
    IN_PARSE.with(|p| p.set(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    IN_PARSE.with(|p| p.set(false));
    result.map_err(|_| {
        LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_default()
    })
}
