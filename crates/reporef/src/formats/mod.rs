//! Loading RepoRef's released files. Whole-file problems (missing, unreadable, too
//! large) are errors; problems with one line or one trace are [`Diagnostic`]s naming
//! the file and line, and that unit is skipped so the rest still scores.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

mod traces;

pub use traces::{load_trace_dir, parse_trace, RunRecord, StepFacts, TraceFacts};

use super::aliases::{AliasMaps, ArtifactIndex};
use super::url::{parse_artifact, ArtifactRef};
use super::ReporefError;

/// Largest JSONL / CSV / JSON file we read (the extended set's instances file is a
/// few tens of MB).
pub const MAX_TABLE_BYTES: u64 = 512 * 1024 * 1024;
/// Largest single trace file.
pub const MAX_TRACE_BYTES: u64 = 64 * 1024 * 1024;

/// A problem with one unit of input, reported as `file:line: message`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based; `None` when the problem concerns the whole file or no line is known.
    pub line: Option<usize>,
    pub message: String,
    /// True when the unit was dropped (a failed unit); false for notes that do not
    /// change what is scored.
    pub skipped: bool,
}

impl Diagnostic {
    pub fn skipped(file: &Path, line: Option<usize>, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line,
            message: message.into(),
            skipped: true,
        }
    }
    pub fn note(file: &Path, line: Option<usize>, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line,
            message: message.into(),
            skipped: false,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: ", self.file.display())?,
            None => write!(f, "{}: ", self.file.display())?,
        }
        f.write_str(&self.message)?;
        if self.skipped {
            f.write_str(" (skipped)")?;
        }
        Ok(())
    }
}

/// RepoRef's three entity types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntityType {
    Issue,
    Pr,
    Commit,
}

impl EntityType {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "issue" | "issues" => Some(Self::Issue),
            "pr" | "pull" | "pulls" | "pull_request" | "pullrequest" => Some(Self::Pr),
            "commit" | "commits" => Some(Self::Commit),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Issue => "issue",
            Self::Pr => "pr",
            Self::Commit => "commit",
        }
    }
}

/// One line of `gold.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoldRecord {
    pub id: String,
    pub gold_url: String,
    pub repo: Option<String>,
    pub entity_type: Option<EntityType>,
    pub entity_id: Option<String>,
    pub original_url: Option<String>,
}

/// The gold set in file order, with an id index.
#[derive(Debug, Clone, Default)]
pub struct GoldSet {
    pub records: Vec<GoldRecord>,
    index: HashMap<String, usize>,
}

impl GoldSet {
    pub fn new(records: Vec<GoldRecord>) -> Self {
        let index = records
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.clone(), i))
            .collect();
        Self { records, index }
    }
    pub fn get(&self, id: &str) -> Option<&GoldRecord> {
        self.index.get(id).map(|&i| &self.records[i])
    }
    pub fn contains(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }
    pub fn len(&self) -> usize {
        self.records.len()
    }
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// Per-instance attributes used for breakdowns (from metadata.csv and/or
/// instances.jsonl).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct InstanceMeta {
    pub entity_type: Option<EntityType>,
    pub capability_bucket: Option<String>,
    pub difficulty: Option<String>,
    pub connection_strength: Option<String>,
}

/// Reads a file into memory, refusing anything larger than `cap` bytes.
pub fn read_bounded(path: &Path, cap: u64) -> Result<String, ReporefError> {
    let io = |source| ReporefError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if size > cap {
        return Err(ReporefError::TooLarge {
            path: path.to_path_buf(),
            size,
            cap,
        });
    }
    let mut buf = Vec::with_capacity(size as usize);
    file.take(cap + 1).read_to_end(&mut buf).map_err(io)?;
    if buf.len() as u64 > cap {
        return Err(ReporefError::TooLarge {
            path: path.to_path_buf(),
            size: buf.len() as u64,
            cap,
        });
    }
    String::from_utf8(buf).map_err(|e| ReporefError::Format {
        path: path.to_path_buf(),
        message: format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
    })
}

/// Non-blank lines of a JSONL file parsed as JSON objects; bad lines become
/// diagnostics.
fn jsonl_objects(
    path: &Path,
    text: &str,
    diags: &mut Vec<Diagnostic>,
) -> Vec<(usize, serde_json::Map<String, Value>)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => out.push((lineno, map)),
            Ok(other) => diags.push(Diagnostic::skipped(
                path,
                Some(lineno),
                format!("expected a JSON object, found {}", json_kind(&other)),
            )),
            Err(e) => diags.push(Diagnostic::skipped(
                path,
                Some(lineno),
                format!("malformed JSON: {}", json_error_text(&e)),
            )),
        }
    }
    out
}

/// serde_json's message without its trailing " at line L column C", so a JSONL
/// diagnostic (which names the file line itself) does not also say "line 1".
fn json_error_text(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => format!("{} (column {})", &text[..i], e.column()),
        None => text,
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An id field: a string, or a number written as its decimal text.
fn id_field(map: &serde_json::Map<String, Value>, key: &str) -> Result<String, String> {
    match map.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::String(_)) => Err(format!("`{key}` is empty")),
        Some(other) => Err(format!(
            "`{key}` must be a string, found {}",
            json_kind(other)
        )),
        None => Err(format!("missing field `{key}`")),
    }
}

/// An optional string field: absent or null is `None`; other types are an error.
fn opt_string(map: &serde_json::Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(format!(
            "`{key}` must be a string, found {}",
            json_kind(other)
        )),
    }
}

/// Loads `gold.jsonl`. Entity type, when absent or unknown, is read off the gold URL.
pub fn load_gold(path: &Path, diags: &mut Vec<Diagnostic>) -> Result<GoldSet, ReporefError> {
    let text = read_bounded(path, MAX_TABLE_BYTES)?;
    let mut records: Vec<GoldRecord> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (lineno, map) in jsonl_objects(path, &text, diags) {
        let parsed = (|| -> Result<GoldRecord, String> {
            let id = id_field(&map, "id")?;
            let gold_url = opt_string(&map, "gold_url")?
                .filter(|u| !u.trim().is_empty())
                .ok_or("missing field `gold_url`")?;
            let declared = opt_string(&map, "entity_type")?;
            let entity_type = declared.as_deref().and_then(EntityType::parse).or_else(|| {
                parse_artifact(&gold_url).map(|a| match a.target {
                    ArtifactRef::Issue(_) => EntityType::Issue,
                    ArtifactRef::Pull(_) => EntityType::Pr,
                    ArtifactRef::Commit(_) => EntityType::Commit,
                })
            });
            Ok(GoldRecord {
                id,
                gold_url,
                repo: opt_string(&map, "repo")?,
                entity_type,
                entity_id: opt_string(&map, "entity_id")?,
                original_url: opt_string(&map, "original_url")?.filter(|u| !u.trim().is_empty()),
            })
        })();
        match parsed {
            Ok(rec) => {
                if parse_artifact(&rec.gold_url).is_none() {
                    diags.push(Diagnostic::note(
                        path,
                        Some(lineno),
                        format!("gold_url {:?} is not a GitHub issue, pull request or commit URL: only exact and alias matches are possible", rec.gold_url),
                    ));
                }
                if let Some(&first) = seen.get(&rec.id) {
                    diags.push(Diagnostic::skipped(
                        path,
                        Some(lineno),
                        format!("duplicate gold id {:?} (first on line {first})", rec.id),
                    ));
                    continue;
                }
                seen.insert(rec.id.clone(), lineno);
                records.push(rec);
            }
            Err(msg) => diags.push(Diagnostic::skipped(path, Some(lineno), msg)),
        }
    }
    if records.is_empty() {
        return Err(ReporefError::Format {
            path: path.to_path_buf(),
            message: "no valid gold records".into(),
        });
    }
    Ok(GoldSet::new(records))
}

/// One prediction line.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictionLine {
    pub id: String,
    pub line: usize,
    /// `None` for a null or empty prediction.
    pub predicted: Option<String>,
}

/// Loads `predictions.jsonl`: unknown ids and repeated ids (after the first) are
/// reported and skipped.
pub fn load_predictions(
    path: &Path,
    gold: &GoldSet,
    diags: &mut Vec<Diagnostic>,
) -> Result<Vec<PredictionLine>, ReporefError> {
    let text = read_bounded(path, MAX_TABLE_BYTES)?;
    let mut out = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (lineno, map) in jsonl_objects(path, &text, diags) {
        let id = match id_field(&map, "id") {
            Ok(id) => id,
            Err(msg) => {
                diags.push(Diagnostic::skipped(path, Some(lineno), msg));
                continue;
            }
        };
        if !map.contains_key("predicted_url") {
            diags.push(Diagnostic::skipped(
                path,
                Some(lineno),
                format!("missing field `predicted_url` for id {id:?}"),
            ));
            continue;
        }
        let predicted = match opt_string(&map, "predicted_url") {
            Ok(p) => p.filter(|s| !s.trim().is_empty()),
            Err(msg) => {
                diags.push(Diagnostic::skipped(path, Some(lineno), msg));
                continue;
            }
        };
        if !gold.contains(&id) {
            diags.push(Diagnostic::skipped(
                path,
                Some(lineno),
                format!("unknown id {id:?} (not in gold)"),
            ));
            continue;
        }
        if let Some(&first) = seen.get(&id) {
            diags.push(Diagnostic::skipped(
                path,
                Some(lineno),
                format!("duplicate prediction for id {id:?} (first on line {first} is used)"),
            ));
            continue;
        }
        seen.insert(id.clone(), lineno);
        out.push(PredictionLine {
            id,
            line: lineno,
            predicted,
        });
    }
    Ok(out)
}

/// Loads `instances.jsonl` (only the fields used for breakdowns).
pub fn load_instances(
    path: &Path,
    diags: &mut Vec<Diagnostic>,
) -> Result<HashMap<String, InstanceMeta>, ReporefError> {
    let text = read_bounded(path, MAX_TABLE_BYTES)?;
    let mut out = HashMap::new();
    for (lineno, map) in jsonl_objects(path, &text, diags) {
        let parsed = (|| -> Result<(String, InstanceMeta), String> {
            let id = id_field(&map, "id")?;
            let et = opt_string(&map, "entity_type")?;
            let entity_type = match et.as_deref() {
                Some(s) => {
                    Some(EntityType::parse(s).ok_or_else(|| format!("unknown entity_type {s:?}"))?)
                }
                None => None,
            };
            let capability_bucket =
                opt_string(&map, "capability_bucket")?.filter(|s| !s.trim().is_empty());
            Ok((
                id,
                InstanceMeta {
                    entity_type,
                    capability_bucket,
                    ..Default::default()
                },
            ))
        })();
        match parsed {
            Ok((id, meta)) => {
                if out.insert(id.clone(), meta).is_some() {
                    diags.push(Diagnostic::note(
                        path,
                        Some(lineno),
                        format!("id {id:?} repeated: the last line wins"),
                    ));
                }
            }
            Err(msg) => diags.push(Diagnostic::skipped(path, Some(lineno), msg)),
        }
    }
    Ok(out)
}

/// Loads `metadata.csv` (header row required; columns found by name).
pub fn load_metadata(
    path: &Path,
    diags: &mut Vec<Diagnostic>,
) -> Result<HashMap<String, InstanceMeta>, ReporefError> {
    let text = read_bounded(path, MAX_TABLE_BYTES)?;
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| ReporefError::Format {
            path: path.to_path_buf(),
            message: format!("unreadable CSV header: {e}"),
        })?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let id_col = col("id").ok_or_else(|| ReporefError::Format {
        path: path.to_path_buf(),
        message: "no `id` column in the header".into(),
    })?;
    let (et_col, bucket_col, diff_col, conn_col) = (
        col("entity_type"),
        col("capability_bucket"),
        col("difficulty"),
        col("connection_strength"),
    );
    let mut out = HashMap::new();
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map(|p| p.line() as usize);
                diags.push(Diagnostic::skipped(
                    path,
                    line,
                    format!("malformed CSV row: {e}"),
                ));
                continue;
            }
        };
        let line = record.position().map(|p| p.line() as usize);
        let field = |c: Option<usize>| {
            c.and_then(|c| record.get(c))
                .map(str::trim)
                .filter(|s| {
                    !s.is_empty()
                        && !s.eq_ignore_ascii_case("null")
                        && !s.eq_ignore_ascii_case("none")
                })
                .map(str::to_string)
        };
        let Some(id) = field(Some(id_col)) else {
            diags.push(Diagnostic::skipped(path, line, "row has no id"));
            continue;
        };
        let entity_type = match field(et_col) {
            Some(s) => match EntityType::parse(&s) {
                Some(t) => Some(t),
                None => {
                    diags.push(Diagnostic::note(
                        path,
                        line,
                        format!("unknown entity_type {s:?}: ignored"),
                    ));
                    None
                }
            },
            None => None,
        };
        let meta = InstanceMeta {
            entity_type,
            capability_bucket: field(bucket_col),
            difficulty: field(diff_col),
            connection_strength: field(conn_col),
        };
        if out.insert(id.clone(), meta).is_some() {
            diags.push(Diagnostic::note(
                path,
                line,
                format!("id {id:?} repeated: the last row wins"),
            ));
        }
    }
    Ok(out)
}

/// Reads a JSON object of string -> string (the alias map files).
fn load_string_map(
    path: &Path,
    diags: &mut Vec<Diagnostic>,
) -> Result<Vec<(String, String)>, ReporefError> {
    let text = read_bounded(path, MAX_TABLE_BYTES)?;
    let value: Value = serde_json::from_str(&text).map_err(|e| ReporefError::Format {
        path: path.to_path_buf(),
        message: format!(
            "malformed JSON at line {} column {}: {e}",
            e.line(),
            e.column()
        ),
    })?;
    let Value::Object(map) = value else {
        return Err(ReporefError::Format {
            path: path.to_path_buf(),
            message: format!(
                "expected a JSON object mapping URL to URL, found {}",
                json_kind(&value)
            ),
        });
    };
    let mut out = Vec::with_capacity(map.len());
    for (k, v) in map {
        match v {
            Value::String(s) if !s.trim().is_empty() => out.push((k, s)),
            other => diags.push(Diagnostic::skipped(
                path,
                None,
                format!("entry {k:?} maps to {} instead of a URL", json_kind(&other)),
            )),
        }
    }
    Ok(out)
}

/// Loads `redirect_map.json` and `duplicates.json` from a folder; either may be
/// absent, but at least one must exist.
pub fn load_aliases(dir: &Path, diags: &mut Vec<Diagnostic>) -> Result<AliasMaps, ReporefError> {
    let redirect = dir.join("redirect_map.json");
    let duplicates = dir.join("duplicates.json");
    if !redirect.is_file() && !duplicates.is_file() {
        return Err(ReporefError::Format {
            path: dir.to_path_buf(),
            message: "neither redirect_map.json nor duplicates.json found".into(),
        });
    }
    let mut maps = AliasMaps::default();
    if redirect.is_file() {
        for (from, to) in load_string_map(&redirect, diags)? {
            maps.add_redirect(&from, &to);
        }
    }
    if duplicates.is_file() {
        for (from, to) in load_string_map(&duplicates, diags)? {
            maps.add_duplicate(&from, &to);
        }
    }
    Ok(maps)
}

/// Loads an artifact index file: one URL per line, or JSONL objects with a `url`
/// or `html_url` field, or a JSON array of URLs. `#` starts a comment line.
pub fn load_artifacts(
    path: &Path,
    index: &mut ArtifactIndex,
    diags: &mut Vec<Diagnostic>,
) -> Result<usize, ReporefError> {
    let text = read_bounded(path, MAX_TABLE_BYTES)?;
    let mut added = 0;
    if text.trim_start().starts_with('[') {
        let value: Value = serde_json::from_str(&text).map_err(|e| ReporefError::Format {
            path: path.to_path_buf(),
            message: format!(
                "malformed JSON array at line {} column {}: {e}",
                e.line(),
                e.column()
            ),
        })?;
        for v in value.as_array().into_iter().flatten() {
            match v.as_str() {
                Some(u) => {
                    index.insert_url(u);
                    added += 1;
                }
                None => diags.push(Diagnostic::skipped(
                    path,
                    None,
                    format!("array element is {}, not a URL", json_kind(v)),
                )),
            }
        }
        return Ok(added);
    }
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let url = if line.starts_with('{') {
            match serde_json::from_str::<Value>(line) {
                Ok(v) => v
                    .get("url")
                    .or_else(|| v.get("html_url"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                Err(e) => {
                    diags.push(Diagnostic::skipped(
                        path,
                        Some(i + 1),
                        format!("malformed JSON: {}", json_error_text(&e)),
                    ));
                    continue;
                }
            }
        } else {
            Some(line.to_string())
        };
        match url {
            Some(u) if parse_artifact(&u).is_some() => {
                index.insert_url(&u);
                added += 1;
            }
            Some(u) => diags.push(Diagnostic::skipped(
                path,
                Some(i + 1),
                format!("{u:?} is not a GitHub artifact URL"),
            )),
            None => diags.push(Diagnostic::skipped(
                path,
                Some(i + 1),
                "object has no `url` or `html_url`",
            )),
        }
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn gold_of(ids: &[&str]) -> GoldSet {
        GoldSet::new(
            ids.iter()
                .map(|id| GoldRecord {
                    id: id.to_string(),
                    gold_url: format!("https://github.com/o/r/issues/{}", id.len()),
                    repo: None,
                    entity_type: Some(EntityType::Issue),
                    entity_id: None,
                    original_url: None,
                })
                .collect(),
        )
    }

    #[test]
    fn prediction_lines_are_validated() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "p.jsonl",
            concat!(
                "{\"id\": \"a\", \"predicted_url\": null}\n",
                "{\"id\": \"b\"}\n",
                "{\"id\": \"c\", \"predicted_url\": [1]}\n",
                "\"just a string\"\n",
                "{\"predicted_url\": \"x\"}\n",
                "{\"id\": 7, \"predicted_url\": \"  \"}\n",
            ),
        );
        let mut d = Vec::new();
        let lines = load_predictions(&p, &gold_of(&["a", "b", "c", "7"]), &mut d).unwrap();
        // a: null prediction kept as None; 7: numeric id, blank prediction -> None.
        assert_eq!(lines.len(), 2);
        assert_eq!(
            (lines[0].id.as_str(), lines[0].predicted.as_deref()),
            ("a", None)
        );
        assert_eq!((lines[1].id.as_str(), lines[1].line), ("7", 6));
        let at: Vec<Option<usize>> = d.iter().map(|x| x.line).collect();
        assert_eq!(at, vec![Some(4), Some(2), Some(3), Some(5)]);
        assert!(
            d[1].message.contains("predicted_url") && d[3].message.contains("`id`"),
            "{d:?}"
        );
    }

    #[test]
    fn gold_problems_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "g.jsonl",
            concat!(
                "{\"id\": \"a\", \"gold_url\": \"https://github.com/o/r/pull/3\"}\n",
                "{\"id\": \"a\", \"gold_url\": \"https://github.com/o/r/pull/4\"}\n",
                "{\"id\": \"b\"}\n",
                "not json\n",
            ),
        );
        let mut d = Vec::new();
        let g = load_gold(&p, &mut d).unwrap();
        assert_eq!(g.len(), 1);
        // Entity type read off the URL when not declared.
        assert_eq!(g.get("a").unwrap().entity_type, Some(EntityType::Pr));
        let lines: Vec<Option<usize>> = d.iter().map(|x| x.line).collect();
        assert_eq!(lines, vec![Some(4), Some(2), Some(3)]);
        // A gold file with nothing valid is an error naming the file.
        let empty = write(dir.path(), "e.jsonl", "\n");
        let err = load_gold(&empty, &mut d).unwrap_err().to_string();
        assert!(
            err.contains("e.jsonl") && err.contains("no valid gold"),
            "{err}"
        );
    }

    #[test]
    fn artifact_files_in_three_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = ArtifactIndex::default();
        let mut d = Vec::new();
        let lines = write(
            dir.path(),
            "a.txt",
            "# comment\nhttps://github.com/o/r/issues/1\n{\"html_url\": \"https://github.com/o/r/pull/2\"}\nnot-a-url\n{\"x\": 1}\n",
        );
        assert_eq!(load_artifacts(&lines, &mut idx, &mut d).unwrap(), 2);
        assert_eq!(
            d.iter().map(|x| x.line).collect::<Vec<_>>(),
            vec![Some(4), Some(5)]
        );
        let arr = write(
            dir.path(),
            "a.json",
            "[\"https://github.com/o/r/commit/abcdef1\", 3]",
        );
        assert_eq!(load_artifacts(&arr, &mut idx, &mut d).unwrap(), 1);
        assert_eq!(idx.len(), 3);
        assert_eq!(d.len(), 3);
    }

    #[test]
    fn metadata_columns_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "m.csv",
            "difficulty,id,capability_bucket,entity_type\nhard,a,C3,commit\neasy,b,,weird\n,,C1,issue\n",
        );
        let mut d = Vec::new();
        let m = load_metadata(&p, &mut d).unwrap();
        assert_eq!(m["a"].difficulty.as_deref(), Some("hard"));
        assert_eq!(m["a"].entity_type, Some(EntityType::Commit));
        assert_eq!(m["b"].capability_bucket, None);
        // "weird" entity type is a note; the row without id is skipped with its line.
        assert!(d.iter().any(|x| !x.skipped && x.line == Some(3)));
        assert!(d.iter().any(|x| x.skipped && x.line == Some(4)));
        let no_id = write(dir.path(), "n.csv", "name,difficulty\nx,hard\n");
        assert!(load_metadata(&no_id, &mut d)
            .unwrap_err()
            .to_string()
            .contains("`id`"));
    }

    #[test]
    fn oversized_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "big.json", &"x".repeat(100));
        let err = read_bounded(&p, 10).unwrap_err();
        assert!(
            matches!(
                err,
                ReporefError::TooLarge {
                    size: 100,
                    cap: 10,
                    ..
                }
            ),
            "{err}"
        );
    }
}
