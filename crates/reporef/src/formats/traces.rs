//! RepoRef's run traces: one JSON file per instance and condition, reduced to
//! the facts the figures need (correctness, prediction, tool calls, tokens, time,
//! per-step outcomes). A broken trace is a diagnostic and is skipped.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{json_kind, read_bounded, Diagnostic, GoldSet, MAX_TRACE_BYTES};
use crate::url::github_urls;
use crate::ReporefError;

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
                    .map(crate::url::normalize)
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
}
