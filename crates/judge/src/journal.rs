//! The JSONL audit journal: one line per judge unit (cache hits, dry runs and budget
//! skips included). Lines never contain credentials: the API key travels only in the
//! `Authorization` header, which is never journalled. Images are recorded by digest
//! and size instead of their base64 payload, which would make the journal huge.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    Ok,
    CacheHit,
    Failed,
    DryRun,
    BudgetExhausted,
}

#[derive(Debug, Serialize)]
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

#[derive(Debug, Serialize)]
pub struct JournalMessage<'a> {
    pub role: Role,
    pub parts: Vec<JournalPart<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum JournalPart<'a> {
    /// Borrowed from the request: the journal line is written from it, not a copy.
    Text {
        text: &'a str,
    },
    Image {
        sha256: String,
        bytes: usize,
    },
}

pub fn journal_messages(messages: &[Message]) -> Vec<JournalMessage<'_>> {
    messages
        .iter()
        .map(|m| JournalMessage {
            role: m.role,
            parts: m
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text { text } => JournalPart::Text { text },
                    Part::Image { data_uri } => JournalPart::Image {
                        sha256: hex::encode(Sha256::digest(data_uri.as_bytes())),
                        bytes: data_uri.len(),
                    },
                })
                .collect(),
        })
        .collect()
}

/// Append-only JSONL file shared by all clones of a client. Each line is written and
/// flushed whole under the lock, so concurrent units never interleave.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Mutex<BufWriter<File>>,
}

impl Journal {
    pub fn open(path: &Path) -> Result<Self, JournalError> {
        let err = |source| JournalError {
            path: path.display().to_string(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(err)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(err)?;
        Ok(Self {
            path: path.to_path_buf(),
            file: Mutex::new(BufWriter::new(file)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append(&self, entry: &JournalEntry<'_>) -> Result<(), JournalError> {
        self.write_lines(&[encode(entry)])
    }

    /// Write whole lines (each ending in a newline) and flush once.
    pub fn write_lines(&self, lines: &[Vec<u8>]) -> Result<(), JournalError> {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        lines
            .iter()
            .try_for_each(|line| file.write_all(line))
            .and_then(|_| file.flush())
            .map_err(|source| JournalError {
                path: self.path.display().to_string(),
                source,
            })
    }
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
            journal
                .append(&JournalEntry {
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
                    request: journal_messages(&messages),
                    answer: Some(&answer),
                    raw: Some("{\"x\":1}"),
                    server_model: Some("gpt"),
                    usage: None,
                    cost_usd: None,
                    error: None,
                })
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
    }
}
