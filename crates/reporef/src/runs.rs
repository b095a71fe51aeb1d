//! Conditions to score: a `predictions.jsonl` file, or one `runs/{model}/budget_{B}/`
//! folder of traces. Each condition becomes one row.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::formats::{load_predictions, load_trace_dir, Diagnostic, GoldSet, RunRecord};
use super::ReporefError;

/// One scored condition: a model at a budget, or a predictions file.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// `model` for run trees (the budget is its own column), the path for files.
    pub name: String,
    pub model: Option<String>,
    pub budget: Option<u32>,
    pub source: PathBuf,
    /// Runs by instance id (gold ids only; duplicates already dropped).
    pub runs: BTreeMap<String, RunRecord>,
    /// True for trace folders (the trace-based figures apply).
    pub has_traces: bool,
}

/// Where a condition comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputSpec {
    Predictions(PathBuf),
    Traces {
        model: String,
        budget: u32,
        dir: PathBuf,
    },
}

/// `budget_{B}` -> B.
pub fn budget_of(dir_name: &str) -> Option<u32> {
    dir_name.strip_prefix("budget_")?.parse().ok()
}

fn dir_name(p: &Path) -> Option<&str> {
    p.file_name().and_then(|n| n.to_str())
}

/// Resolves a command-line path into conditions: a file is a predictions file; a
/// `budget_{B}` folder is one condition (model = its parent's name); any other folder
/// is searched (up to two levels down) for `budget_{B}` folders.
pub fn discover(path: &Path) -> Result<Vec<InputSpec>, ReporefError> {
    if path.is_file() {
        return Ok(vec![InputSpec::Predictions(path.to_path_buf())]);
    }
    if !path.is_dir() {
        return Err(ReporefError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder"),
        });
    }
    let model_of = |budget_dir: &Path| -> String {
        let canonical = budget_dir
            .canonicalize()
            .unwrap_or_else(|_| budget_dir.to_path_buf());
        canonical
            .parent()
            .and_then(dir_name)
            .unwrap_or("model")
            .to_string()
    };
    let as_budget = |p: &Path| -> Option<InputSpec> {
        let b = budget_of(dir_name(p)?)?;
        p.is_dir().then(|| InputSpec::Traces {
            model: model_of(p),
            budget: b,
            dir: p.to_path_buf(),
        })
    };
    if let Some(spec) = as_budget(path) {
        return Ok(vec![spec]);
    }
    let mut found = Vec::new();
    for level1 in sorted_subdirs(path)? {
        if let Some(spec) = as_budget(&level1) {
            found.push(spec);
            continue;
        }
        for level2 in sorted_subdirs(&level1)? {
            found.extend(as_budget(&level2));
        }
    }
    if found.is_empty() {
        return Err(ReporefError::Format {
            path: path.to_path_buf(),
            message: "no budget_{B} folders found (expected runs/{model}/budget_{B}/{id}.json)"
                .into(),
        });
    }
    found.sort_by(|a, b| match (a, b) {
        (
            InputSpec::Traces {
                model: ma,
                budget: ba,
                ..
            },
            InputSpec::Traces {
                model: mb,
                budget: bb,
                ..
            },
        ) => (ma, ba).cmp(&(mb, bb)),
        _ => std::cmp::Ordering::Equal,
    });
    Ok(found)
}

fn sorted_subdirs(dir: &Path) -> Result<Vec<PathBuf>, ReporefError> {
    let rd = std::fs::read_dir(dir).map_err(|source| ReporefError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    Ok(out)
}

/// Loads one condition.
pub fn load_condition(
    spec: &InputSpec,
    gold: &GoldSet,
    diags: &mut Vec<Diagnostic>,
) -> Result<Condition, ReporefError> {
    match spec {
        InputSpec::Predictions(path) => {
            let lines = load_predictions(path, gold, diags)?;
            let runs = lines
                .into_iter()
                .map(|p| {
                    let rec = RunRecord {
                        id: p.id.clone(),
                        file: path.clone(),
                        line: Some(p.line),
                        predicted: p.predicted,
                        recorded_correct: None,
                        trace: None,
                    };
                    (p.id, rec)
                })
                .collect();
            Ok(Condition {
                name: path.display().to_string(),
                model: None,
                budget: None,
                source: path.clone(),
                runs,
                has_traces: false,
            })
        }
        InputSpec::Traces { model, budget, dir } => {
            let runs = load_trace_dir(dir, gold, diags)?;
            Ok(Condition {
                name: model.clone(),
                model: Some(model.clone()),
                budget: Some(*budget),
                source: dir.clone(),
                runs,
                has_traces: true,
            })
        }
    }
}

/// Resolves and loads every path. The same folder or file given twice is loaded
/// once (reported); two different folders holding the same model and budget (for
/// example two run roots of one model under different conditions) both load, the
/// later one renamed `{run root}/{model}` so rows stay distinguishable.
pub fn load_conditions(
    paths: &[PathBuf],
    gold: &GoldSet,
    diags: &mut Vec<Diagnostic>,
) -> Result<Vec<Condition>, ReporefError> {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let mut out: Vec<Condition> = Vec::new();
    for path in paths {
        for spec in discover(path)? {
            let source = match &spec {
                InputSpec::Predictions(p) => canonical(p),
                InputSpec::Traces { dir, .. } => canonical(dir),
            };
            if let Some(prev) = out.iter().find(|c| canonical(&c.source) == source) {
                diags.push(Diagnostic::skipped(
                    &prev.source,
                    None,
                    "given more than once: loaded once".to_string(),
                ));
                continue;
            }
            let mut cond = load_condition(&spec, gold, diags)?;
            if out
                .iter()
                .any(|c| c.name == cond.name && c.budget == cond.budget)
            {
                // runs_root/model/budget_B -> "runs_root/model".
                let root = source
                    .parent()
                    .and_then(Path::parent)
                    .and_then(dir_name)
                    .unwrap_or("other");
                let renamed = format!("{root}/{}", cond.name);
                diags.push(Diagnostic::note(
                    &cond.source,
                    None,
                    format!(
                        "another input already has {}: this one is named {renamed}",
                        cond.name
                    ),
                ));
                cond.name = renamed.clone();
                if cond.model.is_some() {
                    cond.model = Some(renamed);
                }
            }
            out.push(cond);
        }
    }
    Ok(out)
}
