//! Run inputs: the task file (TVIR-Bench `query.json`) and the report folders.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use tvir_rubric::ChecklistItem;

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{path}: {message}")]
    Tasks { path: String, message: String },
    #[error("{path}: {message}")]
    Reports { path: String, message: String },
}

/// One benchmark task.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: String,
    pub query: String,
    /// Checklist items in file order (sections in order, items in order).
    pub checklist: Vec<ChecklistItem>,
    pub language: Option<String>,
    pub complexity: Option<String>,
    pub domain: Option<String>,
}

/// Parse a task file: a JSON list of `{"id", "query", "checklist": {section: [item]}}`.
pub fn parse_tasks(text: &str, path: &str) -> Result<BTreeMap<String, Task>, InputError> {
    let err = |message: String| InputError::Tasks {
        path: path.to_string(),
        message,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
    let list = value
        .as_array()
        .ok_or_else(|| err("expected a JSON list of tasks".into()))?;
    let mut tasks = BTreeMap::new();
    for (n, t) in list.iter().enumerate() {
        let id = match &t["id"] {
            Value::String(s) => s.clone(),
            Value::Number(x) => x.to_string(),
            _ => return Err(err(format!("task #{n}: missing string `id`"))),
        };
        let query = t["query"]
            .as_str()
            .ok_or_else(|| err(format!("task {id}: missing string `query`")))?
            .to_string();
        let mut checklist = Vec::new();
        match &t["checklist"] {
            Value::Object(sections) => {
                for (section, items) in sections {
                    let items = items.as_array().ok_or_else(|| {
                        err(format!(
                            "task {id}: checklist section `{section}` is not a list"
                        ))
                    })?;
                    for item in items {
                        let item = item.as_str().ok_or_else(|| {
                            err(format!("task {id}: checklist item is not a string"))
                        })?;
                        checklist.push(ChecklistItem {
                            section: section.clone(),
                            item: item.to_string(),
                        });
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    let item = item
                        .as_str()
                        .ok_or_else(|| err(format!("task {id}: checklist item is not a string")))?;
                    checklist.push(ChecklistItem {
                        section: String::new(),
                        item: item.to_string(),
                    });
                }
            }
            Value::Null => {}
            _ => {
                return Err(err(format!(
                    "task {id}: `checklist` must be an object or list"
                )))
            }
        }
        let opt = |k: &str| t[k].as_str().map(str::to_string);
        let task = Task {
            id: id.clone(),
            query,
            checklist,
            language: opt("language"),
            complexity: opt("complexity"),
            domain: opt("domain"),
        };
        if tasks.insert(id.clone(), task).is_some() {
            return Err(err(format!("task id {id} appears twice")));
        }
    }
    Ok(tasks)
}

pub fn load_tasks(path: &Path) -> Result<BTreeMap<String, Task>, InputError> {
    let text = std::fs::read_to_string(path).map_err(|e| InputError::Tasks {
        path: path.display().to_string(),
        message: format!("cannot read: {e}"),
    })?;
    parse_tasks(&text, &path.display().to_string())
}

/// One report to evaluate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReportJob {
    pub system: String,
    /// Folder name as found (the task id, possibly with a prefix).
    pub folder: String,
    pub path: PathBuf,
}

fn report_file(dir: &Path) -> Option<PathBuf> {
    ["report.md", "report.html", "report.mdx"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into())
}

fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, std::io::Error> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    Ok(out)
}

/// Find reports: `ROOT/{system}/{task}/report.md|html`, or ROOT itself being one report
/// folder or file (system = its parent folder's name).
pub fn discover(root: &Path) -> Result<Vec<ReportJob>, InputError> {
    let err = |message: String| InputError::Reports {
        path: root.display().to_string(),
        message,
    };
    let root_abs = std::fs::canonicalize(root).map_err(|e| err(format!("cannot open: {e}")))?;
    let single = |dir: &Path, path: PathBuf| ReportJob {
        system: dir.parent().map(name_of).unwrap_or_else(|| "system".into()),
        folder: name_of(dir),
        path,
    };
    if root_abs.is_file() {
        let dir = root_abs.parent().unwrap_or(Path::new("."));
        return Ok(vec![single(dir, root_abs.clone())]);
    }
    if let Some(file) = report_file(&root_abs) {
        return Ok(vec![single(&root_abs, file)]);
    }
    let mut jobs = Vec::new();
    for system in subdirs(&root_abs).map_err(|e| err(e.to_string()))? {
        for task in subdirs(&system).map_err(|e| err(e.to_string()))? {
            if let Some(file) = report_file(&task) {
                jobs.push(ReportJob {
                    system: name_of(&system),
                    folder: name_of(&task),
                    path: file,
                });
            }
        }
    }
    if jobs.is_empty() {
        return Err(err(
            "no report found (expected ROOT/{system}/{task_id}/report.md or report.html)".into(),
        ));
    }
    jobs.sort();
    Ok(jobs)
}

/// The task a report folder belongs to: exact id, else the one task id the folder
/// name ends with after a `-` or `_` (e.g. `claude-4-5-000001` -> `000001`).
pub fn match_task<'a>(folder: &str, tasks: &'a BTreeMap<String, Task>) -> Option<&'a Task> {
    if let Some(t) = tasks.get(folder) {
        return Some(t);
    }
    let mut hits = tasks.values().filter(|t| {
        folder
            .strip_suffix(t.id.as_str())
            .is_some_and(|p| p.ends_with('-') || p.ends_with('_'))
    });
    let first = hits.next()?;
    hits.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_keep_checklist_order_and_optional_fields() {
        let text = r#"[{"id": "7", "query": "q", "checklist": {"B": ["b1", "b2"], "A": ["a1"]},
                        "language": "en", "domain": "finance"}]"#;
        let tasks = parse_tasks(text, "q.json").unwrap();
        let t = &tasks["7"];
        let items: Vec<&str> = t.checklist.iter().map(|c| c.item.as_str()).collect();
        assert_eq!(items, ["b1", "b2", "a1"]);
        assert_eq!(t.domain.as_deref(), Some("finance"));
    }

    #[test]
    fn bad_task_file_names_the_file_and_problem() {
        let e = parse_tasks(r#"[{"id": "1"}]"#, "tasks.json").unwrap_err();
        assert!(
            e.to_string().contains("tasks.json") && e.to_string().contains("query"),
            "{e}"
        );
        assert!(parse_tasks("{", "t.json").is_err());
    }

    #[test]
    fn folder_suffix_matches_a_unique_task() {
        let tasks = parse_tasks(
            r#"[{"id": "000001", "query": "q"}, {"id": "01", "query": "r"}]"#,
            "t",
        )
        .unwrap();
        assert_eq!(
            match_task("claude-4-5-000001", &tasks).unwrap().id,
            "000001"
        );
        assert_eq!(match_task("01", &tasks).unwrap().id, "01");
        assert!(match_task("x000001", &tasks).is_none());
    }
}
