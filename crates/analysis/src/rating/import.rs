//! Reading what Label Studio exports from a study project: its JSON (tasks with
//! their annotations), JSON-MIN (one flat row per annotation) and CSV (the same
//! rows as a table). Each becomes one rating per (report, rater, dimension); what
//! cannot be a rating (a skipped or cancelled annotation, a missing or out-of-scale
//! value, a task of another project) is left out and named, never read as 0.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{decode_ref, NA_SUFFIX, REF_FIELD, SCALE_MAX, SCALE_MIN};
use crate::agree::table::canonical_level;

/// Which of Label Studio's export formats a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExportFormat {
    Json,
    JsonMin,
    Csv,
}

/// One rater's rating of one report on one dimension (0-100).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rating {
    pub system: String,
    pub task_id: String,
    pub rater: String,
    pub dimension: String,
    pub value: f64,
}

/// Everything read from one export.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RatingSet {
    pub format: Option<ExportFormat>,
    pub ratings: Vec<Rating>,
    /// Annotations read (cancelled and skipped ones included).
    pub annotations: usize,
    /// Annotations a rater skipped or cancelled: left out.
    pub cancelled: usize,
    /// Dimension -> ratings marked "not applicable" (not a score, not 0).
    pub not_applicable: BTreeMap<String, usize>,
    /// Dimension -> submitted annotations without a value for it.
    pub missing: BTreeMap<String, usize>,
    /// Every value or annotation left out, with where it was and why.
    pub excluded: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {message}")]
    Bad { path: String, message: String },
}

/// One annotation, whatever format it came in.
struct Annotation {
    /// Where it is, for messages (`task 12, annotation 40`).
    place: String,
    report: Option<(String, String)>,
    rater: Option<String>,
    cancelled: bool,
    fields: BTreeMap<String, Value>,
}

/// Fields of a JSON-MIN or CSV row that are Label Studio's, not the task's or a
/// control's.
const ROW_FIELDS: [&str; 8] = [
    "id",
    "annotator",
    "annotation_id",
    "created_at",
    "updated_at",
    "lead_time",
    "agreement",
    "drafts",
];

/// Recognise a Label Studio export by content: a JSON list of tasks with
/// `annotations` (JSON), of flat rows with `annotation_id` or `annotator`
/// (JSON-MIN), or a CSV whose header has `annotation_id` or `annotator` next to
/// our task reference (CSV). None for anything else.
pub fn detect(text: &str) -> Option<ExportFormat> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('[') {
        // Keys only: an export of a large study holds every report's HTML.
        let rows: Vec<BTreeMap<String, serde::de::IgnoredAny>> = serde_json::from_str(t).ok()?;
        let first = rows.first()?;
        if first.contains_key("annotations") {
            return Some(ExportFormat::Json);
        }
        if first.contains_key("annotation_id")
            || first.contains_key("annotator")
            || first.contains_key(REF_FIELD)
        {
            return Some(ExportFormat::JsonMin);
        }
        return None;
    }
    let header = t.lines().next()?;
    let cols: Vec<String> = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(header.as_bytes())
        .records()
        .next()?
        .ok()?
        .iter()
        .map(|c| c.trim().to_string())
        .collect();
    let has = |n: &str| cols.iter().any(|c| c == n);
    (has(REF_FIELD) && (has("annotation_id") || has("annotator"))).then_some(ExportFormat::Csv)
}

/// Parse an export; `label` names the file in errors.
pub fn parse_export(text: &str, label: &str) -> Result<RatingSet, ImportError> {
    let bad = |message: String| ImportError::Bad {
        path: label.to_string(),
        message,
    };
    let text = text.trim_start_matches('\u{feff}');
    let format = detect(text).ok_or_else(|| {
        bad("not a Label Studio export (expected its JSON, JSON-MIN or CSV export of a tvir rating study)".into())
    })?;
    let annotations = match format {
        ExportFormat::Json => json_annotations(text).map_err(bad)?,
        ExportFormat::JsonMin => {
            let rows: Vec<Value> =
                serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
            rows.iter()
                .enumerate()
                .filter_map(|(i, r)| row_annotation(r, i + 1, "row"))
                .collect()
        }
        ExportFormat::Csv => csv_annotations(text).map_err(bad)?,
    };
    if !annotations.is_empty() && annotations.iter().all(|a| a.report.is_none()) {
        return Err(bad(format!(
            "none of its {} annotations belongs to a task of a tvir rating study (no meta.system/meta.task_id and no data.{REF_FIELD}): an export of another project?",
            annotations.len()
        )));
    }
    Ok(collect(annotations, format))
}

/// A task of a JSON export, reading only what a rating needs: the report text in
/// `data` is skipped, not copied.
#[derive(Deserialize)]
struct ExportTask {
    id: Option<Value>,
    meta: Option<Value>,
    data: Option<TaskData>,
    annotations: Option<Vec<Value>>,
}

#[derive(Deserialize)]
struct TaskData {
    tvir_ref: Option<Value>,
}

fn json_annotations(text: &str) -> Result<Vec<Annotation>, String> {
    let tasks: Vec<ExportTask> =
        serde_json::from_str(text).map_err(|e| format!("not a Label Studio JSON export: {e}"))?;
    let mut out = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        let task_place = match &task.id {
            Some(id) => format!("task {}", scalar(id)),
            None => format!("task #{}", i + 1),
        };
        let data = task
            .data
            .as_ref()
            .and_then(|d| d.tvir_ref.clone())
            .map(|r| serde_json::json!({ REF_FIELD: r }));
        let report = report_of(task.meta.as_ref(), data.as_ref());
        let Some(list) = &task.annotations else {
            return Err(format!("{task_place}: no `annotations` list"));
        };
        for (j, ann) in list.iter().enumerate() {
            let Some(ann) = ann.as_object() else {
                return Err(format!(
                    "{task_place}: annotation #{} is not an object",
                    j + 1
                ));
            };
            let place = match ann.get("id") {
                Some(id) => format!("{task_place}, annotation {}", scalar(id)),
                None => format!("{task_place}, annotation #{}", j + 1),
            };
            let mut fields = BTreeMap::new();
            for r in ann
                .get("result")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (Some(name), Some(value)) = (
                    r.get("from_name").and_then(Value::as_str),
                    r.get("value").and_then(Value::as_object),
                ) else {
                    continue;
                };
                // The value object holds one key named after the control type
                // (`number`, `rating`, `choices`, `text`).
                if let Some(v) = value
                    .iter()
                    .find(|(k, _)| matches!(k.as_str(), "number" | "rating" | "choices" | "text"))
                {
                    fields.insert(name.to_string(), v.1.clone());
                }
            }
            out.push(Annotation {
                place,
                report: report.clone(),
                rater: ann.get("completed_by").and_then(rater_name),
                cancelled: ann.get("was_cancelled").and_then(Value::as_bool) == Some(true),
                fields,
            });
        }
    }
    Ok(out)
}

/// A JSON-MIN or CSV row; None for a task nobody annotated (no `annotator`).
fn row_annotation(row: &Value, n: usize, what: &str) -> Option<Annotation> {
    let obj = row.as_object()?;
    let rater = obj.get("annotator").and_then(rater_name);
    let place = match (obj.get("id"), obj.get("annotation_id")) {
        (Some(t), Some(a)) => format!("task {}, annotation {}", scalar(t), scalar(a)),
        _ => format!("{what} {n}"),
    };
    let has_annotation = rater.is_some() || obj.contains_key("annotation_id");
    if !has_annotation {
        return None;
    }
    let fields = obj
        .iter()
        .filter(|(k, _)| !ROW_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(Annotation {
        place,
        report: report_of(None, Some(row)),
        rater,
        cancelled: false,
        fields,
    })
}

fn csv_annotations(text: &str) -> Result<Vec<Annotation>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| e.to_string())?.clone();
    let mut out = Vec::new();
    for (i, row) in reader.records().enumerate() {
        let row = row.map_err(|e| format!("line {}: {e}", i + 2))?;
        let obj: serde_json::Map<String, Value> = headers
            .iter()
            .zip(row.iter())
            .filter(|(_, v)| !v.trim().is_empty())
            .map(|(h, v)| {
                // Label Studio writes structured values as JSON inside the cell.
                let v = v.trim();
                let parsed = if v.starts_with('{') || v.starts_with('[') {
                    serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()))
                } else {
                    Value::String(v.to_string())
                };
                (h.trim().to_string(), parsed)
            })
            .collect();
        if let Some(a) = row_annotation(&Value::Object(obj), i + 2, "line") {
            out.push(a);
        }
    }
    Ok(out)
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `completed_by` / `annotator`: a user id, an e-mail, or a user object.
fn rater_name(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Object(o) => o
            .get("email")
            .filter(|e| e.as_str().is_some_and(|s| !s.is_empty()))
            .or_else(|| o.get("id"))
            .and_then(rater_name),
        _ => None,
    }
}

/// (system, task_id) from the task's `meta`, else from our reference in `data`.
fn report_of(meta: Option<&Value>, data: Option<&Value>) -> Option<(String, String)> {
    if let Some(m) = meta {
        if let (Some(s), Some(t)) = (m.get("system"), m.get("task_id")) {
            let (s, t) = (scalar(s), scalar(t));
            if !s.is_empty() && !t.is_empty() {
                return Some((s, t));
            }
        }
    }
    data?
        .get(REF_FIELD)
        .and_then(Value::as_str)
        .and_then(decode_ref)
}

/// A dimension's value: a number, a numeric string, or a one-element list.
fn number_of(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("{n} is not a number")),
        Value::String(s) => s
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("{s:?} is not a number")),
        Value::Array(a) if a.len() == 1 => number_of(&a[0]),
        Value::Object(o) => match o.get("number").or_else(|| o.get("rating")) {
            Some(x) => number_of(x),
            None => Err(format!("{v} is not a number")),
        },
        other => Err(format!("{other} is not a number")),
    }
}

/// Whether a `{dim}_na` field says "not applicable" (any chosen value).
fn marked(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => o.get("choices").is_some_and(marked),
        _ => true,
    }
}

fn collect(annotations: Vec<Annotation>, format: ExportFormat) -> RatingSet {
    let mut set = RatingSet {
        format: Some(format),
        annotations: annotations.len(),
        ..Default::default()
    };
    let mut seen: BTreeSet<(String, String, String, String)> = BTreeSet::new();
    // Dimensions any annotation answers: what "missing" is counted against.
    let dims: BTreeSet<&'static str> = annotations
        .iter()
        .flat_map(|a| a.fields.keys())
        .filter_map(|k| canonical_level(k.strip_suffix(NA_SUFFIX).unwrap_or(k)))
        .collect();
    for a in &annotations {
        let Some((system, task_id)) = &a.report else {
            set.excluded.push(format!(
                "{}: its task carries no tvir reference (meta.system/meta.task_id or data.{REF_FIELD}): not a task of this study",
                a.place
            ));
            continue;
        };
        if a.cancelled {
            set.cancelled += 1;
            set.excluded
                .push(format!("{}: skipped or cancelled by its rater", a.place));
            continue;
        }
        let Some(rater) = &a.rater else {
            set.excluded
                .push(format!("{}: no rater (completed_by/annotator)", a.place));
            continue;
        };
        for dim in &dims {
            let value = a.fields.get(*dim).filter(|v| !v.is_null());
            let na = a
                .fields
                .get(&format!("{dim}{NA_SUFFIX}"))
                .is_some_and(marked);
            let key = (
                system.clone(),
                task_id.clone(),
                rater.clone(),
                dim.to_string(),
            );
            match (value, na) {
                (None, true) => *set.not_applicable.entry(dim.to_string()).or_default() += 1,
                (Some(_), true) => set.excluded.push(format!(
                    "{}: rater {rater} gave {dim} a value and marked it not applicable: left out",
                    a.place
                )),
                (None, false) => {
                    *set.missing.entry(dim.to_string()).or_default() += 1;
                    set.excluded
                        .push(format!("{}: rater {rater} left {dim} blank", a.place));
                }
                (Some(v), false) => match number_of(v) {
                    Err(m) => set
                        .excluded
                        .push(format!("{}: rater {rater}, {dim}: {m}", a.place)),
                    Ok(x) if !(SCALE_MIN..=SCALE_MAX).contains(&x) => set.excluded.push(format!(
                        "{}: rater {rater}, {dim}: {x} is outside the scale {SCALE_MIN}-{SCALE_MAX}",
                        a.place
                    )),
                    Ok(_) if seen.contains(&key) => set.excluded.push(format!(
                        "{}: rater {rater} rated {dim} of this report again: the first rating is kept",
                        a.place
                    )),
                    Ok(x) => {
                        seen.insert(key);
                        set.ratings.push(Rating {
                            system: system.clone(),
                            task_id: task_id.clone(),
                            rater: rater.clone(),
                            dimension: dim.to_string(),
                            value: x,
                        });
                    }
                },
            }
        }
    }
    set
}

/// The ratings CSV `tvir agree` reads: `system,task_id,annotator` and one column
/// per dimension (blank where the rater gave none).
pub fn to_ratings_csv(set: &RatingSet) -> String {
    let mut dims: Vec<&str> = set
        .ratings
        .iter()
        .map(|r| r.dimension.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    dims.sort_by_key(|d| crate::agree::table::level_order(d));
    let mut rows: BTreeMap<(&str, &str, &str), BTreeMap<&str, f64>> = BTreeMap::new();
    for r in &set.ratings {
        rows.entry((&r.system, &r.task_id, &r.rater))
            .or_default()
            .insert(&r.dimension, r.value);
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["system", "task_id", "annotator"];
    header.extend(&dims);
    w.write_record(&header).expect("write to memory");
    for ((s, t, a), vals) in rows {
        let mut rec = vec![s.to_string(), t.to_string(), a.to_string()];
        rec.extend(
            dims.iter()
                .map(|d| vals.get(d).map(|v| v.to_string()).unwrap_or_default()),
        );
        w.write_record(&rec).expect("write to memory");
    }
    String::from_utf8(w.into_inner().expect("memory")).expect("UTF-8 in, UTF-8 out")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(id: u64, system: &str, task_id: &str, anns: Value) -> Value {
        json!({"id": id, "meta": {"system": system, "task_id": task_id},
               "data": {"report": "<p>text</p>", REF_FIELD: super::super::encode_ref(system, task_id)},
               "annotations": anns})
    }

    fn num(name: &str, v: Value) -> Value {
        json!({"from_name": name, "to_name": "report", "type": "number", "value": {"number": v}})
    }

    #[test]
    fn json_export_with_every_kind_of_bad_value() {
        let export = json!([
            task(1, "s1", "t1", json!([
                {"id": 10, "completed_by": 1, "result": [num("ta", json!(70)), num("overall", json!(60)), num("va", json!(50))]},
                {"id": 11, "completed_by": 2, "result": [num("ta", json!(140)), num("overall", json!("high"))]},
                {"id": 12, "completed_by": 3, "result": [], "was_cancelled": true},
            ])),
            task(2, "s2", "t1", json!([
                {"id": 13, "completed_by": {"id": 1, "email": "a@x"}, "result": [num("ta", json!(55)),
                  {"from_name": "va_na", "to_name": "report", "type": "choices", "value": {"choices": ["Not applicable"]}}]},
                {"id": 14, "completed_by": 2, "result": [num("ta", json!(40)), num("overall", json!(30)), num("va", json!(20))]},
                {"id": 15, "completed_by": 2, "result": [num("ta", json!(41))]},
            ])),
            {"id": 3, "data": {"text": "another project"}, "annotations": [{"id": 16, "completed_by": 1, "result": [num("ta", json!(1))]}]},
        ]);
        let set = parse_export(&export.to_string(), "e.json").unwrap();
        assert_eq!(set.format, Some(ExportFormat::Json));
        assert_eq!((set.annotations, set.cancelled), (7, 1));
        let got: Vec<(&str, &str, &str, f64)> = set
            .ratings
            .iter()
            .map(|r| {
                (
                    r.system.as_str(),
                    r.rater.as_str(),
                    r.dimension.as_str(),
                    r.value,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("s1", "1", "overall", 60.0),
                ("s1", "1", "ta", 70.0),
                ("s1", "1", "va", 50.0),
                ("s2", "a@x", "ta", 55.0),
                ("s2", "2", "overall", 30.0),
                ("s2", "2", "ta", 40.0),
                ("s2", "2", "va", 20.0),
            ]
        );
        assert_eq!(set.not_applicable.get("va"), Some(&1));
        // Rater 2 on task 1 gave no va; a@x no overall; the repeat of rater 2 no va/overall.
        assert_eq!(set.missing.get("va"), Some(&2));
        assert_eq!(set.missing.get("overall"), Some(&2));
        let joined = set.excluded.join("\n");
        for needle in [
            "annotation 11: rater 2, ta: 140 is outside the scale",
            "annotation 11: rater 2, overall: \"high\" is not a number",
            "annotation 12: skipped or cancelled",
            "annotation 15: rater 2 rated ta of this report again",
            "task 3, annotation 16: its task carries no tvir reference",
        ] {
            assert!(joined.contains(needle), "{needle} not in\n{joined}");
        }
        let csv = to_ratings_csv(&set);
        assert!(
            csv.starts_with("system,task_id,annotator,overall,ta,va\n"),
            "{csv}"
        );
        assert!(csv.contains("s2,t1,a@x,,55,\n"), "{csv}");
    }

    #[test]
    fn other_projects_and_malformed_files_are_refused() {
        let other = json!([{"id": 1, "data": {"text": "x"}, "annotations": [{"id": 1, "completed_by": 1, "result": []}]}]);
        let e = parse_export(&other.to_string(), "other.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("other.json: ") && e.contains("another project"),
            "{e}"
        );
        for bad in [
            "",
            "[1, 2",
            "{\"a\": 1}",
            "hello,world\n1,2\n",
            "[{\"annotations\": 3}]",
        ] {
            let e = parse_export(bad, "bad.json").unwrap_err().to_string();
            assert!(e.starts_with("bad.json: "), "{bad:?}: {e}");
        }
    }

    #[test]
    fn json_min_and_csv_rows() {
        let r = super::super::encode_ref("s1", "t9");
        let min = json!([
            {"id": 1, "annotator": 4, "annotation_id": 7, REF_FIELD: r, "ta": [{"number": 66}], "va_na": "Not applicable", "overall": 61},
            {"id": 2, REF_FIELD: r},
        ]);
        let set = parse_export(&min.to_string(), "m.json").unwrap();
        assert_eq!(set.format, Some(ExportFormat::JsonMin));
        assert_eq!(set.ratings.len(), 2);
        assert_eq!(set.not_applicable.get("va"), Some(&1));
        let csv = format!("annotation_id,annotator,id,overall,ta,{REF_FIELD},va_na\n7,4,1,\"[{{\"\"number\"\":61}}]\",66,{r},\n8,5,1,,-3,{r},\n");
        let set = parse_export(&csv, "c.csv").unwrap();
        assert_eq!(set.format, Some(ExportFormat::Csv));
        assert_eq!(set.ratings.len(), 2, "{:?}", set.excluded);
        assert!(set
            .excluded
            .iter()
            .any(|e| e.contains("-3 is outside the scale")));
        assert_eq!(set.missing.get("overall"), Some(&1));
    }
}
