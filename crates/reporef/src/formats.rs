//! Loading RepoRef's released files. Whole-file problems (missing, unreadable, too
//! large) are errors; problems with one line or one trace are [`Diagnostic`]s naming
//! the file and line, and that unit is skipped so the rest still scores.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::aliases::{AliasMaps, ArtifactIndex};
use super::url::{github_urls, parse_artifact, ArtifactRef};
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

/// What one trace step tells us.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepFacts {
    pub response_type: String,
    pub tool_name: Option<String>,
    /// GitHub URLs in the tool result, normalised, in order.
    pub result_urls: Vec<String>,
    /// The step is an error response or its tool result reports an error.
    pub is_error: bool,
}

impl StepFacts {
    pub fn is_tool_call(&self) -> bool {
        self.response_type == "tool_call"
    }
    pub fn is_submit(&self) -> bool {
        self.tool_name.as_deref() == Some("submit_answer")
    }
}

/// What one run trace tells us, reduced to the fields the figures need.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TraceFacts {
    /// Tool calls the agent made (excluding `submit_answer` and refused calls):
    /// `evaluation.num_tool_calls`, else counted from the steps.
    pub tool_calls: Option<u64>,
    /// `trace.total_tool_calls` (includes `submit_answer` and refused calls).
    pub total_tool_calls: Option<u64>,
    /// Steps whose response type is `cost_limit_exceeded` (calls refused past B).
    pub refused_calls: u64,
    pub total_tokens: Option<u64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cost: Option<f64>,
    pub time_seconds: Option<f64>,
    pub steps: Vec<StepFacts>,
    pub error: Option<String>,
}

impl TraceFacts {
    /// Steps before the answer: those before the first `submit_answer` call (the
    /// submit step's own result echoes the answer, so it does not count).
    pub fn steps_before_answer(&self) -> &[StepFacts] {
        let end = self
            .steps
            .iter()
            .position(StepFacts::is_submit)
            .unwrap_or(self.steps.len());
        &self.steps[..end]
    }
}

/// One run (one instance) of one condition.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub id: String,
    pub file: PathBuf,
    pub line: Option<usize>,
    /// The raw prediction (free text allowed); `None` when the agent gave none.
    pub predicted: Option<String>,
    /// `evaluation.correct` as recorded by the harness, for cross-checking.
    pub recorded_correct: Option<bool>,
    pub trace: Option<TraceFacts>,
}

fn as_u64(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        }),
        _ => None,
    }
}

fn as_f64(v: Option<&Value>) -> Option<f64> {
    v?.as_f64().filter(|f| f.is_finite())
}

fn non_empty_str(v: Option<&Value>) -> Option<String> {
    v?.as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Text of a tool result for URL extraction: strings as they are, anything else as
/// JSON.
fn result_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn result_is_error(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .get("error")
            .is_some_and(|e| !e.is_null() && e != &Value::Bool(false)),
        Value::String(s) => {
            let t = s.trim_start();
            t.len() >= 5 && t[..5].eq_ignore_ascii_case("error")
        }
        _ => false,
    }
}

/// Parses one run trace file. Returns `None` (with a diagnostic) when it is not a
/// usable trace; missing optional fields become notes.
pub fn parse_trace(
    path: &Path,
    id: &str,
    text: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<RunRecord> {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            diags.push(Diagnostic::skipped(
                path,
                Some(e.line()),
                format!("malformed JSON: {e}"),
            ));
            return None;
        }
    };
    let Value::Object(root) = value else {
        diags.push(Diagnostic::skipped(
            path,
            None,
            format!("expected a JSON object, found {}", json_kind(&value)),
        ));
        return None;
    };
    let evaluation = root.get("evaluation").and_then(Value::as_object);
    let trace = root.get("trace").and_then(Value::as_object);
    if evaluation.is_none() && trace.is_none() {
        diags.push(Diagnostic::skipped(
            path,
            None,
            "neither `evaluation` nor `trace` object present",
        ));
        return None;
    }
    let mut missing: Vec<&str> = Vec::new();
    let eval_get = |k: &str| evaluation.and_then(|e| e.get(k));
    let trace_get = |k: &str| trace.and_then(|t| t.get(k));

    let predicted =
        non_empty_str(eval_get("predicted")).or_else(|| non_empty_str(trace_get("final_answer")));
    if eval_get("predicted").is_none() && trace_get("final_answer").is_none() {
        missing.push("evaluation.predicted / trace.final_answer (counted as no prediction)");
    }

    let mut steps = Vec::new();
    match trace_get("steps") {
        Some(Value::Array(arr)) => {
            for (i, step) in arr.iter().enumerate() {
                let Some(step) = step.as_object() else {
                    diags.push(Diagnostic::note(
                        path,
                        None,
                        format!("trace.steps[{i}] is not an object: ignored"),
                    ));
                    continue;
                };
                let response_type = step
                    .get("response_type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let tool_name = step
                    .get("tool_call")
                    .and_then(|c| c.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let result = step.get("tool_result").unwrap_or(&Value::Null);
                let text = result_text(result);
                let result_urls = github_urls(&text)
                    .into_iter()
                    .map(super::url::normalize)
                    .collect();
                let is_error = response_type == "error" || result_is_error(result);
                steps.push(StepFacts {
                    response_type,
                    tool_name,
                    result_urls,
                    is_error,
                });
            }
        }
        Some(other) => {
            diags.push(Diagnostic::note(
                path,
                None,
                format!("trace.steps is {}, not an array: ignored", json_kind(other)),
            ));
        }
        None => missing.push("trace.steps"),
    }
    let counted_calls = || {
        steps
            .iter()
            .filter(|s| s.is_tool_call() && !s.is_submit())
            .count() as u64
    };
    let tool_calls = as_u64(eval_get("num_tool_calls")).or_else(|| {
        if trace_get("steps").is_some_and(Value::is_array) {
            Some(counted_calls())
        } else {
            None
        }
    });
    if eval_get("num_tool_calls").is_none() {
        missing.push("evaluation.num_tool_calls");
    }
    let prompt_tokens = as_u64(eval_get("prompt_tokens"));
    let completion_tokens = as_u64(eval_get("completion_tokens"));
    let total_tokens =
        as_u64(eval_get("total_tokens")).or_else(|| Some(prompt_tokens? + completion_tokens?));
    if total_tokens.is_none() {
        missing.push("evaluation.total_tokens");
    }
    let refused_calls = steps
        .iter()
        .filter(|s| s.response_type == "cost_limit_exceeded")
        .count() as u64;
    let facts = TraceFacts {
        tool_calls,
        total_tool_calls: as_u64(trace_get("total_tool_calls")),
        refused_calls,
        total_tokens,
        prompt_tokens,
        completion_tokens,
        cost: as_f64(trace_get("total_cost")),
        time_seconds: as_f64(eval_get("time_seconds")),
        steps,
        error: non_empty_str(trace_get("error")),
    };
    if !missing.is_empty() {
        diags.push(Diagnostic::note(
            path,
            None,
            format!("missing {}", missing.join(", ")),
        ));
    }
    Some(RunRecord {
        id: id.to_string(),
        file: path.to_path_buf(),
        line: None,
        predicted,
        recorded_correct: eval_get("correct").and_then(Value::as_bool),
        trace: Some(facts),
    })
}

fn load_one_trace(
    path: &Path,
    gold: &GoldSet,
    diags: &mut Vec<Diagnostic>,
) -> Option<(String, RunRecord)> {
    let Some(id) = path
        .file_stem()
        .and_then(|s| s.to_str())
        .map(str::to_string)
    else {
        diags.push(Diagnostic::skipped(
            path,
            None,
            "file name is not valid UTF-8",
        ));
        return None;
    };
    if !gold.contains(&id) {
        diags.push(Diagnostic::skipped(
            path,
            None,
            format!("unknown id {id:?} (not in gold)"),
        ));
        return None;
    }
    let text = match read_bounded(path, MAX_TRACE_BYTES) {
        Ok(t) => t,
        Err(e) => {
            diags.push(Diagnostic::skipped(path, None, e.to_string()));
            return None;
        }
    };
    parse_trace(path, &id, &text, diags).map(|run| (id, run))
}

/// Loads every `{id}.json` trace in a `budget_{B}` folder. Unknown ids are reported
/// and skipped; other files are ignored.
pub fn load_trace_dir(
    dir: &Path,
    gold: &GoldSet,
    diags: &mut Vec<Diagnostic>,
) -> Result<BTreeMap<String, RunRecord>, ReporefError> {
    let io = |source| ReporefError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        })
        .collect();
    entries.sort();
    // Traces are parsed in parallel; results (and their diagnostics) are merged
    // back in file-name order so the output does not depend on scheduling.
    use rayon::prelude::*;
    type Loaded = (Option<(String, RunRecord)>, Vec<Diagnostic>);
    let loaded: Vec<Loaded> = entries
        .par_iter()
        .map(|path| {
            let mut local = Vec::new();
            let run = load_one_trace(path, gold, &mut local);
            (run, local)
        })
        .collect();
    let mut out = BTreeMap::new();
    for (run, local) in loaded {
        diags.extend(local);
        if let Some((id, run)) = run {
            out.insert(id, run);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_fields_are_extracted() {
        let text = r#"{"evaluation": {"correct": true, "predicted": "https://github.com/o/r/pull/3",
            "num_tool_calls": 2, "total_tokens": 1200, "time_seconds": 3.5},
          "trace": {"steps": [
            {"step": 1, "response_type": "tool_call", "tool_call": {"name": "search_issues"},
             "tool_result": {"items": [{"html_url": "https://github.com/o/r/issues/3"}]}},
            {"step": 2, "response_type": "tool_call", "tool_call": {"name": "get_issue"},
             "tool_result": "Error: not found"},
            {"step": 3, "response_type": "cost_limit_exceeded"},
            {"step": 4, "response_type": "tool_call", "tool_call": {"name": "submit_answer"},
             "tool_result": "submitted https://github.com/o/r/issues/99"}],
            "final_answer": "https://github.com/o/r/pull/3", "total_tool_calls": 4, "total_cost": 0.01}}"#;
        let mut d = Vec::new();
        let run = parse_trace(Path::new("t.json"), "x", text, &mut d).unwrap();
        assert!(d.is_empty(), "{d:?}");
        let t = run.trace.unwrap();
        assert_eq!(t.tool_calls, Some(2));
        assert_eq!(t.total_tool_calls, Some(4));
        assert_eq!(t.refused_calls, 1);
        assert_eq!(t.cost, Some(0.01));
        assert_eq!(
            t.steps[0].result_urls,
            vec!["https://github.com/o/r/issues/3"]
        );
        assert!(t.steps[1].is_error);
        // The submit step and what follows are not "before the answer".
        assert_eq!(t.steps_before_answer().len(), 3);
        assert_eq!(run.recorded_correct, Some(true));
    }

    #[test]
    fn trace_without_counts_falls_back_to_steps() {
        let text = r#"{"trace": {"steps": [
            {"response_type": "tool_call", "tool_call": {"name": "search"}},
            {"response_type": "tool_call", "tool_call": {"name": "submit_answer"}}],
            "final_answer": null}}"#;
        let mut d = Vec::new();
        let run = parse_trace(Path::new("t.json"), "x", text, &mut d).unwrap();
        assert_eq!(run.predicted, None);
        assert_eq!(run.trace.unwrap().tool_calls, Some(1));
        assert_eq!(d.len(), 1, "missing fields are noted once: {d:?}");
        assert!(!d[0].skipped);
    }

    #[test]
    fn broken_traces_are_skipped_with_line() {
        let mut d = Vec::new();
        assert!(parse_trace(Path::new("t.json"), "x", "{\n\"evaluation\": ", &mut d).is_none());
        assert_eq!(d[0].line, Some(2));
        assert!(parse_trace(Path::new("t.json"), "x", "[1]", &mut d).is_none());
        assert!(parse_trace(Path::new("t.json"), "x", "{\"foo\": 1}", &mut d).is_none());
        assert_eq!(d.len(), 3);
        assert!(d.iter().all(|x| x.skipped));
    }

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
