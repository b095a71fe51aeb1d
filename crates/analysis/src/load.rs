//! Reading an `eval` output tree (`OUT/{system}/{task_id}/{judge_model}/report.json`)
//! and a TVIR task file, for `aggregate`, `agree` and `ablate` alike. I/O lives here
//! so that the analyses themselves stay pure.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use tvir_engine::record::{ReportRecord, UnitStatus};

/// A `report.json` larger than this is refused (our own outputs are far smaller).
pub const MAX_RECORD_BYTES: u64 = 256 * 1024 * 1024;
/// A task file larger than this is refused.
pub const MAX_TASKS_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum AggregateError {
    #[error("{path}: {message}")]
    Unreadable { path: String, message: String },
    #[error(
        "{path}: not an eval output folder (no {{system}}/{{task_id}}/{{judge_model}}/report.json inside)"
    )]
    NoRecords { path: String },
    #[error("{path}: bad task file: {message}")]
    BadTasks { path: String, message: String },
}

fn unreadable(path: &Path, message: impl ToString) -> AggregateError {
    AggregateError::Unreadable {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// One `report.json` with where it was found. `system`, `task_id` and the judge
/// come from the folder names (the layout is the contract); `run` from the
/// `-run{k}` suffix, else from the record.
#[derive(Debug, Clone)]
pub struct LoadedRecord {
    pub path: PathBuf,
    pub system: String,
    pub task_id: String,
    /// Judge model folder name without its `-run{k}` suffix.
    pub judge_model: String,
    pub run: u32,
    pub record: ReportRecord,
    /// How the record's units ended, counted when it was read (so a record kept
    /// compact, without its units, still counts them).
    pub units: RecordUnits,
}

/// Counts of a record's units by status, and of units scored 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordUnits {
    pub scored: usize,
    pub failed: usize,
    pub skipped: usize,
    /// Scored units whose score is 0.
    pub zero: usize,
}

impl RecordUnits {
    pub fn of(record: &ReportRecord) -> Self {
        Self::count(record.units.iter().map(|u| (u.status, u.score)))
    }

    /// Counts units given as (status, score).
    pub fn count(units: impl IntoIterator<Item = (UnitStatus, Option<f64>)>) -> Self {
        let mut c = Self::default();
        for (status, score) in units {
            match status {
                UnitStatus::Scored => c.scored += 1,
                UnitStatus::Failed => c.failed += 1,
                UnitStatus::Skipped => c.skipped += 1,
            }
            if status == UnitStatus::Scored && score == Some(0.0) {
                c.zero += 1;
            }
        }
        c
    }
}

/// A `report.json` that could not be used, with the reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadIssue {
    pub path: String,
    pub message: String,
}

#[derive(Debug, Clone, Default)]
pub struct EvalTree {
    pub root: PathBuf,
    pub records: Vec<LoadedRecord>,
    pub issues: Vec<LoadIssue>,
}

impl EvalTree {
    /// Distinct judge models (without run suffix), sorted.
    pub fn judge_models(&self) -> Vec<String> {
        let mut v: Vec<String> = self.records.iter().map(|r| r.judge_model.clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// Keep only one judge model's records; the error names the models present.
    pub fn retain_judge(&mut self, model: &str) -> Result<(), String> {
        let models = self.judge_models();
        if !models.iter().any(|m| m == model) {
            return Err(format!(
                "{}: no record for judge model {model:?} (found: {})",
                self.root.display(),
                models.join(", ")
            ));
        }
        self.records.retain(|r| r.judge_model == model);
        Ok(())
    }
}

/// `"gpt-5-run2"` -> (`"gpt-5"`, Some(2)); a name without the suffix is unchanged.
pub fn split_run_suffix(folder: &str) -> (String, Option<u32>) {
    if let Some(pos) = folder.rfind("-run") {
        let digits = &folder[pos + 4..];
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(k) = digits.parse::<u32>() {
                return (folder[..pos].to_string(), Some(k));
            }
        }
    }
    (folder.to_string(), None)
}

fn sorted_subdirs(dir: &Path) -> Result<Vec<(String, PathBuf)>, AggregateError> {
    let entries = fs::read_dir(dir).map_err(|e| unreadable(dir, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| unreadable(dir, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !path.is_dir() {
            continue;
        }
        out.push((name, path));
    }
    out.sort();
    Ok(out)
}

/// Read one `report.json`.
pub fn read_record(path: &Path) -> Result<ReportRecord, String> {
    let text = read_record_text(path)?;
    serde_json::from_str(&text).map_err(|e| format!("not a report record: {e}"))
}

/// Read one `report.json` in its compact form ([`ReportRecord::from_json_compact`]),
/// its units counted.
pub fn read_record_compact(path: &Path) -> Result<(ReportRecord, RecordUnits), String> {
    let text = read_record_text(path)?;
    let (record, units) =
        ReportRecord::from_json_compact(&text).map_err(|e| format!("not a report record: {e}"))?;
    Ok((
        record,
        RecordUnits::count(units.into_iter().map(|u| (u.status, u.score))),
    ))
}

/// The text of one `report.json` (bounded by [`MAX_RECORD_BYTES`]).
pub(crate) fn read_record_text(path: &Path) -> Result<String, String> {
    let meta = fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.len() > MAX_RECORD_BYTES {
        return Err(format!(
            "{} bytes, larger than the {MAX_RECORD_BYTES}-byte limit",
            meta.len()
        ));
    }
    fs::read_to_string(path).map_err(|e| e.to_string())
}

/// Walk `OUT/{system}/{task_id}/{judge_model}/report.json`. Unreadable records are
/// listed in `issues`, never dropped silently. Errors when `root` cannot be read or
/// holds no record at all.
pub fn load_eval_tree(root: &Path) -> Result<EvalTree, AggregateError> {
    load_tree(root, false)
}

/// [`load_eval_tree`] with every record [compact](ReportRecord::compact) (its units
/// counted, then dropped) and read in parallel: what summaries need, a few kilobytes
/// a record whatever the report, so 10,000 reports fit in memory.
pub fn load_eval_tree_compact(root: &Path) -> Result<EvalTree, AggregateError> {
    load_tree(root, true)
}

fn load_tree(root: &Path, compact: bool) -> Result<EvalTree, AggregateError> {
    use rayon::prelude::*;
    if !root.is_dir() {
        return Err(unreadable(root, "not a folder"));
    }
    let mut tree = EvalTree {
        root: root.to_path_buf(),
        ..Default::default()
    };
    let mut found = Vec::new();
    for (system, sys_dir) in sorted_subdirs(root)? {
        for (task_id, task_dir) in sorted_subdirs(&sys_dir)? {
            for (judge_folder, judge_dir) in sorted_subdirs(&task_dir)? {
                let path = judge_dir.join("report.json");
                if path.is_file() {
                    found.push((system.clone(), task_id.clone(), judge_folder, path));
                }
            }
        }
    }
    let read: Vec<_> = found
        .into_par_iter()
        .map(|(system, task_id, judge_folder, path)| {
            let record = if compact {
                read_record_compact(&path)
            } else {
                read_record(&path).map(|record| {
                    let units = RecordUnits::of(&record);
                    (record, units)
                })
            };
            (system, task_id, judge_folder, path, record)
        })
        .collect();
    for (system, task_id, judge_folder, path, record) in read {
        match record {
            Ok((record, units)) => {
                let (judge_model, suffix_run) = split_run_suffix(&judge_folder);
                let run = suffix_run.unwrap_or(record.run.max(1));
                tree.records.push(LoadedRecord {
                    path,
                    system,
                    task_id,
                    judge_model,
                    run,
                    record,
                    units,
                });
            }
            Err(message) => tree.issues.push(LoadIssue {
                path: path.display().to_string(),
                message,
            }),
        }
    }
    if tree.records.is_empty() && tree.issues.is_empty() {
        return Err(AggregateError::NoRecords {
            path: root.display().to_string(),
        });
    }
    Ok(tree)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskInfo {
    pub id: String,
    pub query: String,
    pub language: Option<String>,
    pub complexity: Option<String>,
    pub domain: Option<String>,
}

/// `zh`/`en` for the usual spellings; anything else lower-cased as given.
pub fn normalize_language(s: &str) -> Option<String> {
    let l = s.trim().to_lowercase();
    if l.is_empty() {
        None
    } else if l.starts_with("zh") || l == "chinese" || l == "cn" || l == "中文" {
        Some("zh".into())
    } else if l.starts_with("en") || l == "english" {
        Some("en".into())
    } else {
        Some(l)
    }
}

fn opt_label(v: Option<&serde_json::Value>) -> Option<String> {
    match v? {
        serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Parse a TVIR `query.json` (a list of tasks). `label` names the file in errors.
pub fn parse_tasks(text: &str, label: &str) -> Result<BTreeMap<String, TaskInfo>, AggregateError> {
    let bad = |message: String| AggregateError::BadTasks {
        path: label.to_string(),
        message,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let list = value
        .as_array()
        .ok_or_else(|| bad("expected a JSON list of tasks".into()))?;
    let mut out = BTreeMap::new();
    for (i, task) in list.iter().enumerate() {
        let obj = task
            .as_object()
            .ok_or_else(|| bad(format!("task #{} is not an object", i + 1)))?;
        let id = opt_label(obj.get("id"))
            .ok_or_else(|| bad(format!("task #{} has no \"id\"", i + 1)))?;
        let query = obj
            .get("query")
            .and_then(|q| q.as_str())
            .unwrap_or_default()
            .to_string();
        let info = TaskInfo {
            language: opt_label(obj.get("language")).and_then(|l| normalize_language(&l)),
            complexity: opt_label(obj.get("complexity")).map(|c| c.to_lowercase()),
            domain: opt_label(obj.get("domain")),
            id: id.clone(),
            query,
        };
        if out.insert(id.clone(), info).is_some() {
            return Err(bad(format!("task id {id:?} appears twice")));
        }
    }
    Ok(out)
}

/// Read and parse a task file.
pub fn load_tasks(path: &Path) -> Result<BTreeMap<String, TaskInfo>, AggregateError> {
    let meta = fs::metadata(path).map_err(|e| unreadable(path, e))?;
    if meta.len() > MAX_TASKS_BYTES {
        return Err(unreadable(path, "task file larger than 64 MiB"));
    }
    let text = fs::read_to_string(path).map_err(|e| unreadable(path, e))?;
    parse_tasks(&text, &path.display().to_string())
}

/// Language of a query from its share of CJK characters among letters: `zh` at 20 %
/// or more (Chinese queries quote English names; English ones rarely hold CJK), else
/// `en`; None for text without letters.
///
/// Local fallback with the same rule as the parser's language detection, so that
/// `tvir_report::detect_language` can replace it once the parser lands.
pub fn detect_language_fallback(text: &str) -> Option<&'static str> {
    let (mut cjk, mut other) = (0usize, 0usize);
    for c in text.chars() {
        if matches!(c as u32,
            0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF
            | 0x20000..=0x2FA1F)
        {
            cjk += 1;
        } else if c.is_alphabetic() {
            other += 1;
        }
    }
    if cjk + other == 0 {
        None
    } else if cjk * 5 >= cjk + other {
        Some("zh")
    } else {
        Some("en")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_suffix() {
        assert_eq!(split_run_suffix("gpt-5-run2"), ("gpt-5".into(), Some(2)));
        assert_eq!(split_run_suffix("gpt-5"), ("gpt-5".into(), None));
        assert_eq!(split_run_suffix("a-runner"), ("a-runner".into(), None));
        assert_eq!(split_run_suffix("x-run"), ("x-run".into(), None));
    }

    #[test]
    fn tasks_parse_and_errors() {
        let t = parse_tasks(
            r#"[{"id":"000001","query":"q","checklist":{},"language":"Chinese","complexity":"High","domain":"Finance"},
                {"id":2,"query":"r"}]"#,
            "q.json",
        )
        .unwrap();
        assert_eq!(t["000001"].language.as_deref(), Some("zh"));
        assert_eq!(t["000001"].complexity.as_deref(), Some("high"));
        assert_eq!(t["2"].domain, None);
        let err = parse_tasks(r#"[{"id":"1"},{"id":"1"}]"#, "q.json").unwrap_err();
        assert!(err.to_string().contains("q.json") && err.to_string().contains("twice"));
        assert!(parse_tasks("{}", "q.json").is_err());
    }

    #[test]
    fn language_fallback() {
        assert_eq!(
            detect_language_fallback("请分析2024年中国新能源汽车市场"),
            Some("zh")
        );
        assert_eq!(
            detect_language_fallback("Analyse the EV market in 2024"),
            Some("en")
        );
        assert_eq!(detect_language_fallback("2024 !!"), None);
    }
}
