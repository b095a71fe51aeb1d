//! The JSONL audit journal: one line per judge unit (cache hits, dry runs and budget
//! skips included). Lines never contain credentials: the API key travels only in the
//! `Authorization` header, which is never journalled. Images are recorded by digest
//! and size instead of their base64 payload, which would make the journal huge.
//!
//! Request texts are stored once: each distinct text part goes, the first time the
//! journal meets it, into the sibling texts file ([`texts_path`], one
//! `{"sha256","text"}` line per text), and journal lines refer to it by digest
//! (`{"type":"text_ref","sha256","bytes"}`). The same rubric paragraphs and, on
//! cache hits, whole requests repeat hundreds of thousands of times in a large run;
//! [`read_entries`] puts the texts back, byte for byte.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{Message, Part, Role, Usage};

#[derive(Debug, thiserror::Error)]
#[error("journal {path}: {source}")]
pub struct JournalError {
    pub path: String,
    #[source]
    pub source: std::io::Error,
}

/// How a unit ended, as written in the journal's `status` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    Ok,
    CacheHit,
    Failed,
    DryRun,
    BudgetExhausted,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct JournalEntry<'a> {
    /// RFC 3339 UTC time the unit ended.
    pub time: String,
    pub metric: &'a str,
    pub report: &'a str,
    pub unit: &'a str,
    pub sample: u32,
    pub model: &'a str,
    pub cache_key: &'a str,
    pub status: EntryStatus,
    pub cache_hit: bool,
    pub attempts: u32,
    /// Attempts that re-asked for an answer that did not validate.
    pub reasks: u32,
    pub latency_ms: u64,
    /// How structured output was requested on the final attempt.
    pub response_format: &'a str,
    pub request: Vec<JournalMessage<'a>>,
    pub answer: Option<&'a serde_json::Value>,
    pub raw: Option<&'a str>,
    pub server_model: Option<&'a str>,
    pub usage: Option<&'a Usage>,
    pub cost_usd: Option<f64>,
    pub error: Option<&'a str>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct JournalMessage<'a> {
    pub role: Role,
    pub parts: Vec<JournalPart<'a>>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JournalPart<'a> {
    /// Written by earlier versions (the whole text in every line); still read.
    Text {
        text: &'a str,
    },
    /// A text stored once in the texts file, by the SHA-256 of its UTF-8 bytes.
    TextRef {
        sha256: String,
        bytes: usize,
    },
    Image {
        sha256: String,
        bytes: usize,
    },
}

/// The digests of the texts already in a journal's texts file (shared by the units
/// that write journal lines, so each text is queued once).
pub type TextIndex = Arc<Mutex<HashSet<[u8; 32]>>>;

/// The texts file that goes with journal `path`: `judge-journal.jsonl` ->
/// `judge-journal.texts.jsonl`, and `judge-journal.jsonl.zst` ->
/// `judge-journal.texts.jsonl.zst` (compressed like its journal).
pub fn texts_path(path: &Path) -> PathBuf {
    let compressed = is_compressed(path);
    let plain = if compressed {
        path.with_extension("")
    } else {
        path.to_path_buf()
    };
    let stem = plain
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "journal".into());
    let zst = if compressed { ".zst" } else { "" };
    path.with_file_name(format!("{stem}.texts.jsonl{zst}"))
}

/// A journal (or texts file) whose name ends in `.zst` is a zstd stream: one frame
/// per run that appended to it, readable by `tvir journal` or `zstd -dc`.
pub fn is_compressed(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

/// zstd settings of the journal's streams: level 3 (fast), a 64 MiB window with
/// long-distance matching, so a text that differs from one written megabytes
/// earlier only by a few words (the same report excerpt under another system's
/// tag, the same rubric for another task) costs a few bytes. A window of at most
/// 128 MiB needs no option to decode (`zstd -dc` reads it as it is).
const ZSTD_LEVEL: i32 = 3;
const ZSTD_WINDOW_LOG: u32 = 26;

/// Where lines go: a buffered file, or a zstd stream whose frame is finished when
/// the journal is dropped (each batch is flushed whole, so a run that is killed
/// leaves every flushed line readable; the next open repairs the unfinished frame).
enum Sink {
    Plain(BufWriter<File>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sink::Plain(_) => "Sink::Plain",
            Sink::Zstd(_) => "Sink::Zstd",
        })
    }
}

impl Sink {
    fn open(path: &Path) -> std::io::Result<Self> {
        if !is_compressed(path) {
            return Ok(Sink::Plain(BufWriter::new(append_to(path)?)));
        }
        repair_unfinished(path)?;
        let mut encoder =
            zstd::stream::write::Encoder::new(BufWriter::new(append_to(path)?), ZSTD_LEVEL)?;
        encoder.window_log(ZSTD_WINDOW_LOG)?;
        encoder.long_distance_matching(true)?;
        Ok(Sink::Zstd(encoder))
    }

    fn write_all_flush(&mut self, lines: &[Vec<u8>]) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => {
                lines.iter().try_for_each(|l| w.write_all(l))?;
                w.flush()
            }
            Sink::Zstd(e) => {
                lines.iter().try_for_each(|l| e.write_all(l))?;
                e.flush()?;
                e.get_mut().flush()
            }
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Sink::Zstd(e) = self {
            if let Err(err) = e.do_finish().and_then(|()| e.get_mut().flush()) {
                tracing::warn!("finishing the journal's zstd stream: {err}");
            }
        }
    }
}

/// The lines of a journal or texts file, decompressed when its name ends in `.zst`.
pub fn open_lines(path: &Path) -> std::io::Result<Box<dyn BufRead>> {
    let file = File::open(path)?;
    Ok(if is_compressed(path) {
        Box::new(BufReader::new(zstd::stream::read::Decoder::new(file)?))
    } else {
        Box::new(BufReader::new(file))
    })
}

/// A zstd file whose last frame a killed run left unfinished is rewritten with the
/// whole lines it holds, so the frame the next run appends can be read after it.
fn repair_unfinished(path: &Path) -> std::io::Result<()> {
    if !path.is_file() || std::fs::metadata(path)?.len() == 0 {
        return Ok(());
    }
    let decodes = zstd::stream::read::Decoder::new(File::open(path)?)
        .and_then(|mut d| std::io::copy(&mut d, &mut std::io::sink()));
    if decodes.is_ok() {
        return Ok(());
    }
    let mut kept = Vec::new();
    if let Ok(mut d) = zstd::stream::read::Decoder::new(File::open(path)?) {
        // Everything decoded before the unfinished part; then cut to whole lines.
        let _ = std::io::Read::read_to_end(&mut d, &mut kept);
    }
    let whole = kept.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    kept.truncate(whole);
    let tmp = path.with_extension("zst.repair");
    std::fs::write(&tmp, zstd::bulk::compress(&kept, ZSTD_LEVEL)?)?;
    tracing::warn!(
        "{}: an earlier run ended before finishing it; kept its {} whole lines",
        path.display(),
        kept.iter().filter(|&&b| b == b'\n').count()
    );
    std::fs::rename(&tmp, path)
}

/// The request as journalled, and its texts with their digests (for [`new_texts`]).
#[allow(clippy::type_complexity)]
pub fn journal_messages(messages: &[Message]) -> (Vec<JournalMessage<'_>>, Vec<([u8; 32], &str)>) {
    let mut texts: Vec<([u8; 32], &str)> = Vec::new();
    let journalled = messages
        .iter()
        .map(|m| JournalMessage {
            role: m.role,
            parts: m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => {
                        let digest: [u8; 32] = Sha256::digest(text.as_bytes()).into();
                        texts.push((digest, text));
                        JournalPart::TextRef {
                            sha256: hex::encode(digest),
                            bytes: text.len(),
                        }
                    }
                    Part::Image { data_uri } => JournalPart::Image {
                        sha256: hex::encode(Sha256::digest(data_uri.as_bytes())),
                        bytes: data_uri.len(),
                    },
                })
                .collect(),
        })
        .collect();
    (journalled, texts)
}

/// The texts-file lines of the `texts` that `held` lacked (now marked as held: the
/// caller queues them before the journal line that refers to them).
pub fn new_texts(texts: Vec<([u8; 32], &str)>, held: &mut HashSet<[u8; 32]>) -> Vec<Vec<u8>> {
    texts
        .into_iter()
        .filter(|(digest, _)| held.insert(*digest))
        .map(|(digest, text)| {
            let mut line = serde_json::to_vec(&StoredText {
                sha256: hex::encode(digest),
                text: text.into(),
            })
            .unwrap_or_default();
            line.push(b'\n');
            line
        })
        .collect()
}

/// One line of the texts file.
#[derive(Debug, Serialize, serde::Deserialize)]
struct StoredText<'a> {
    sha256: String,
    #[serde(borrow)]
    text: std::borrow::Cow<'a, str>,
}

/// Append-only JSONL file shared by all clones of a client, with its texts file.
/// Each line is written and flushed whole under the lock, so concurrent units never
/// interleave; texts are flushed before the lines that refer to them. Every
/// client of a process that journals to the same path shares one open journal (a
/// zstd stream has one writer, whose frame is finished when the last one drops).
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
    files: Arc<JournalFiles>,
}

#[derive(Debug)]
struct JournalFiles {
    file: Mutex<Sink>,
    texts: Mutex<Sink>,
    index: TextIndex,
}

fn append_to(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// The journals open in this process, by path.
static OPEN: Mutex<Vec<(PathBuf, std::sync::Weak<JournalFiles>)>> = Mutex::new(Vec::new());

impl Journal {
    /// Opens (appends to) the journal and its texts file; the digests of the texts
    /// an earlier run stored are read back so they are not stored twice. A journal
    /// this process has open already is shared.
    pub fn open(path: &Path) -> Result<Self, JournalError> {
        let err = |p: &Path| {
            let p = p.display().to_string();
            move |source| JournalError { path: p, source }
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(err(path))?;
        }
        let key = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|(_, w)| w.strong_count() > 0);
        if let Some(files) = open
            .iter()
            .find(|(p, _)| *p == key)
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok(Self {
                path: path.to_path_buf(),
                files,
            });
        }
        let texts_at = texts_path(path);
        let mut held = HashSet::new();
        if texts_at.is_file() {
            if is_compressed(&texts_at) {
                repair_unfinished(&texts_at).map_err(err(&texts_at))?;
            }
            held = read_text_digests(&texts_at).map_err(err(&texts_at))?;
        }
        let file = Sink::open(path).map_err(err(path))?;
        let texts = Sink::open(&texts_at).map_err(err(&texts_at))?;
        let files = Arc::new(JournalFiles {
            file: Mutex::new(file),
            texts: Mutex::new(texts),
            index: Arc::new(Mutex::new(held)),
        });
        open.push((key, Arc::downgrade(&files)));
        Ok(Self {
            path: path.to_path_buf(),
            files,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The digests of the texts stored (or queued) so far.
    pub fn index(&self) -> TextIndex {
        self.files.index.clone()
    }

    pub fn append(
        &self,
        entry: &JournalEntry<'_>,
        new_texts: &[Vec<u8>],
    ) -> Result<(), JournalError> {
        self.write_lines(new_texts, &[encode(entry)])
    }

    /// Write texts-file lines, then journal lines (each ending in a newline), and
    /// flush each file once.
    pub fn write_lines(&self, texts: &[Vec<u8>], lines: &[Vec<u8>]) -> Result<(), JournalError> {
        let write = |file: &Mutex<Sink>, lines: &[Vec<u8>], path: &Path| {
            let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
            file.write_all_flush(lines).map_err(|source| JournalError {
                path: path.display().to_string(),
                source,
            })
        };
        if !texts.is_empty() {
            write(&self.files.texts, texts, &texts_path(&self.path))?;
        }
        write(&self.files.file, lines, &self.path)
    }
}

/// A texts file: text by digest (hex). Lines that do not parse are an error naming
/// the line; a digest that does not match its text is one too (the file was edited).
pub fn read_texts(path: &Path) -> std::io::Result<HashMap<String, String>> {
    read_texts_of(path, None)
}

/// [`read_texts`], keeping only the texts whose digests `wanted` holds (all with
/// `None`): a query of a few units of a large run holds only their texts in memory.
fn read_texts_of(
    path: &Path,
    wanted: Option<&HashSet<String>>,
) -> std::io::Result<HashMap<String, String>> {
    let invalid = |n: usize, what: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("line {}: {what}", n + 1),
        )
    };
    let mut out = HashMap::new();
    for (n, line) in open_lines(path)?.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let stored: StoredText<'_> =
            serde_json::from_str(&line).map_err(|e| invalid(n, e.to_string()))?;
        if wanted.is_some_and(|w| !w.contains(&stored.sha256)) {
            continue;
        }
        if hex::encode(Sha256::digest(stored.text.as_bytes())) != stored.sha256 {
            return Err(invalid(n, "text does not match its sha256".into()));
        }
        out.insert(stored.sha256, stored.text.into_owned());
    }
    Ok(out)
}

/// The digests of the texts a texts file holds (their texts are not kept: a
/// resumed run only needs to know which it need not store again).
fn read_text_digests(path: &Path) -> std::io::Result<HashSet<[u8; 32]>> {
    #[derive(serde::Deserialize)]
    struct Digest {
        sha256: String,
    }
    let mut out = HashSet::new();
    for (n, line) in open_lines(path)?.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let d: Digest = serde_json::from_str(&line).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("line {}: {e}", n + 1),
            )
        })?;
        let mut digest = [0u8; 32];
        if hex::decode_to_slice(&d.sha256, &mut digest).is_ok() {
            out.insert(digest);
        }
    }
    Ok(out)
}

/// Every line of the journal at `path` as JSON, with each `text_ref` part replaced
/// by the `text` part it stands for (lines of earlier versions, which carry their
/// texts, are returned as they are).
pub fn read_entries(path: &Path) -> Result<Vec<serde_json::Value>, JournalError> {
    read_entries_where(path, |_| true)
}

/// [`read_entries`] of the lines `keep` accepts (it sees each line as written, its
/// texts still references): the journal is read as a stream, then the texts file
/// for only the texts those lines refer to.
pub fn read_entries_where(
    path: &Path,
    keep: impl Fn(&serde_json::Value) -> bool,
) -> Result<Vec<serde_json::Value>, JournalError> {
    let err = |p: &Path| {
        let p = p.display().to_string();
        move |source| JournalError { path: p, source }
    };
    let file = open_lines(path).map_err(err(path))?;
    let mut out = Vec::new();
    let mut wanted = HashSet::new();
    for (n, line) in file.lines().enumerate() {
        let line = line.map_err(err(path))?;
        if line.trim().is_empty() {
            continue;
        }
        let entry: serde_json::Value = serde_json::from_str(&line).map_err(|e| {
            err(path)(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("line {}: {e}", n + 1),
            ))
        })?;
        if !keep(&entry) {
            continue;
        }
        for part in text_parts(&entry) {
            if part["type"] == "text_ref" {
                wanted.insert(part["sha256"].as_str().unwrap_or_default().to_string());
            }
        }
        out.push((n, entry));
    }
    let texts_at = texts_path(path);
    let texts = if texts_at.is_file() && !wanted.is_empty() {
        read_texts_of(&texts_at, Some(&wanted)).map_err(err(&texts_at))?
    } else {
        HashMap::new()
    };
    out.into_iter()
        .map(|(n, mut entry)| {
            let parts = entry
                .get_mut("request")
                .and_then(|r| r.as_array_mut())
                .into_iter()
                .flatten()
                .filter_map(|m| m.get_mut("parts").and_then(|p| p.as_array_mut()))
                .flatten();
            for part in parts.filter(|p| p["type"] == "text_ref") {
                let digest = part["sha256"].as_str().unwrap_or_default();
                let Some(text) = texts.get(digest) else {
                    return Err(err(path)(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "line {}: text {digest} is not in {}",
                            n + 1,
                            texts_at.display()
                        ),
                    )));
                };
                *part = serde_json::json!({"type": "text", "text": text});
            }
            Ok(entry)
        })
        .collect()
}

/// The message parts of a journal line's request.
fn text_parts(entry: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    entry["request"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["parts"].as_array())
        .flatten()
}

/// One journal line, newline included.
pub fn encode(entry: &JournalEntry<'_>) -> Vec<u8> {
    // Serialising plain data into a Vec cannot fail.
    let mut line = serde_json::to_vec(entry).unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_lines_and_summarises_images() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/journal.jsonl");
        let journal = Journal::open(&path).unwrap();
        let messages = vec![Message {
            role: Role::User,
            parts: vec![
                Part::Text { text: "hi".into() },
                Part::Image {
                    data_uri: "data:image/png;base64,AAAA".into(),
                },
            ],
        }];
        let answer = serde_json::json!({"x": 1});
        for status in [EntryStatus::Ok, EntryStatus::CacheHit] {
            let (request, texts) = journal_messages(&messages);
            let new = new_texts(texts, &mut journal.index().lock().unwrap());
            journal
                .append(
                    &JournalEntry {
                        time: "2026-01-01T00:00:00Z".into(),
                        metric: "m",
                        report: "r",
                        unit: "u",
                        sample: 0,
                        model: "gpt",
                        cache_key: "k",
                        status,
                        cache_hit: status == EntryStatus::CacheHit,
                        attempts: 1,
                        reasks: 0,
                        latency_ms: 3,
                        response_format: "json_schema",
                        request,
                        answer: Some(&answer),
                        raw: Some("{\"x\":1}"),
                        server_model: Some("gpt"),
                        usage: None,
                        cost_usd: None,
                        error: None,
                    },
                    &new,
                )
                .unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["status"], "cache_hit");
        let img = &lines[0]["request"][0]["parts"][1];
        assert_eq!(img["type"], "image");
        assert_eq!(img["bytes"], 26);
        assert!(!text.contains("AAAA"));
        // The text is stored once and referenced from both lines.
        assert_eq!(lines[0]["request"][0]["parts"][0]["type"], "text_ref");
        let texts = std::fs::read_to_string(texts_path(&path)).unwrap();
        assert_eq!(texts.lines().count(), 1);
        let entries = read_entries(&path).unwrap();
        for e in &entries {
            assert_eq!(
                e["request"][0]["parts"][0],
                serde_json::json!({"type": "text", "text": "hi"})
            );
        }
        // A second run appending to the same journal does not store the text again.
        drop(journal);
        let again = Journal::open(&path).unwrap();
        let (_, texts_again) = journal_messages(&messages);
        assert!(new_texts(texts_again, &mut again.index().lock().unwrap()).is_empty());
    }

    #[test]
    fn reads_lines_of_earlier_versions_and_names_missing_texts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("judge-journal.jsonl");
        let old = r#"{"metric":"m","request":[{"role":"user","parts":[{"type":"text","text":"whole"}]}]}"#;
        std::fs::write(&path, format!("{old}\n")).unwrap();
        let entries = read_entries(&path).unwrap();
        assert_eq!(entries[0]["request"][0]["parts"][0]["text"], "whole");
        let dangling = r#"{"request":[{"role":"user","parts":[{"type":"text_ref","sha256":"00","bytes":1}]}]}"#;
        std::fs::write(&path, format!("{dangling}\n")).unwrap();
        let e = read_entries(&path).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("texts.jsonl"), "{e}");
        // A texts file whose text was edited is refused, naming the line.
        std::fs::write(texts_path(&path), "{\"sha256\":\"00\",\"text\":\"x\"}\n").unwrap();
        let e = read_entries(&path).unwrap_err().to_string();
        assert!(e.contains("does not match"), "{e}");
    }

    fn one_entry<'a>(request: Vec<JournalMessage<'a>>, unit: &'a str) -> JournalEntry<'a> {
        JournalEntry {
            time: "2026-01-01T00:00:00Z".into(),
            metric: "m",
            report: "r",
            unit,
            sample: 0,
            model: "gpt",
            cache_key: "k",
            status: EntryStatus::Ok,
            cache_hit: false,
            attempts: 1,
            reasks: 0,
            latency_ms: 3,
            response_format: "json_schema",
            request,
            answer: None,
            raw: Some("{}"),
            server_model: None,
            usage: None,
            cost_usd: None,
            error: None,
        }
    }

    fn append_text(journal: &Journal, text: &str, unit: &str) {
        let messages = vec![Message {
            role: Role::User,
            parts: vec![Part::Text { text: text.into() }],
        }];
        let (request, texts) = journal_messages(&messages);
        let new = new_texts(texts, &mut journal.index().lock().unwrap());
        journal.append(&one_entry(request, unit), &new).unwrap();
    }

    /// A `.zst` journal: both files are zstd streams, a second open in the same
    /// process shares the first (one writer per stream), and a run killed before
    /// finishing its frame leaves every flushed line readable and appendable.
    #[test]
    fn compressed_journal_survives_an_unfinished_frame() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("judge-journal.jsonl.zst");
        assert_eq!(
            texts_path(&path),
            dir.path().join("judge-journal.texts.jsonl.zst")
        );
        let journal = Journal::open(&path).unwrap();
        let shared = Journal::open(&path).unwrap();
        append_text(&journal, "first text", "u1");
        append_text(&shared, "first text", "u2");
        drop((journal, shared));
        let raw = std::fs::read(&path).unwrap();
        assert_eq!(&raw[..4], &[0x28, 0xb5, 0x2f, 0xfd], "not a zstd frame");
        let entries = read_entries(&path).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1]["request"][0]["parts"][0]["text"], "first text");
        // Cut the frame's end off both files, as a killed run leaves them.
        for p in [path.clone(), texts_path(&path)] {
            let bytes = std::fs::read(&p).unwrap();
            std::fs::write(&p, &bytes[..bytes.len() - 3]).unwrap();
        }
        assert!(read_entries(&path).is_err());
        let again = Journal::open(&path).unwrap();
        append_text(&again, "first text", "u3");
        append_text(&again, "second text", "u4");
        drop(again);
        let entries = read_entries(&path).unwrap();
        let units: Vec<&str> = entries
            .iter()
            .map(|e| e["unit"].as_str().unwrap())
            .collect();
        assert_eq!(units, ["u1", "u2", "u3", "u4"]);
        assert_eq!(entries[3]["request"][0]["parts"][0]["text"], "second text");
        // Each text once in the texts file, across both runs.
        let mut texts = String::new();
        std::io::Read::read_to_string(&mut open_lines(&texts_path(&path)).unwrap(), &mut texts)
            .unwrap();
        assert_eq!(texts.lines().count(), 2, "{texts}");
    }
}
