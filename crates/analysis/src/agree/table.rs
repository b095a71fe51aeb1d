//! Score tables for `tvir agree`: one score per (system, task) and level, read from
//! an `eval` output folder or a CSV file (optionally with an `annotator` column).

use std::collections::BTreeMap;
use std::path::Path;

use crate::load::{load_eval_tree, AggregateError, LoadedRecord};
use tvir_engine::record::METRIC_NAMES;

/// A CSV larger than this is refused.
pub const MAX_CSV_BYTES: u64 = 256 * 1024 * 1024;

/// One (system, task) cell.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    pub system: String,
    pub task_id: String,
}

impl Cell {
    pub fn new(system: impl Into<String>, task_id: impl Into<String>) -> Self {
        Self {
            system: system.into(),
            task_id: task_id.into(),
        }
    }
}

/// Scores of one level; a missing or null score is simply absent.
pub type Scores = BTreeMap<Cell, f64>;

/// Human ratings kept per annotator: level -> annotator -> cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnnotatorScores {
    pub levels: BTreeMap<String, BTreeMap<String, Scores>>,
}

/// What one evaluator said: level name (`ta`, `va`, `overall`, metric file names)
/// -> scores. For human ratings, `levels` holds the per-report annotator mean.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreTable {
    pub label: String,
    pub levels: BTreeMap<String, Scores>,
    pub annotators: Option<AnnotatorScores>,
    /// Things the reader should know (ignored columns, runs averaged).
    pub notes: Vec<String>,
    /// Task id -> language (`en`, `zh`), where the source says it.
    pub languages: BTreeMap<String, String>,
    /// What the import of an annotation tool's export counted.
    pub import: Option<super::raters::ImportCounts>,
}

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("{path}, line {line}: {message}")]
    BadRow {
        path: String,
        line: u64,
        message: String,
    },
    #[error("{path}: {message}")]
    BadHeader { path: String, message: String },
    #[error(transparent)]
    Eval(#[from] AggregateError),
    #[error("{path}: holds several judge models ({models}); choose one with --judge-a/--judge-b")]
    AmbiguousJudge { path: String, models: String },
    #[error("{path}: no record for judge model {model:?} (found: {found})")]
    NoSuchJudge {
        path: String,
        model: String,
        found: String,
    },
}

/// Rank of a level name for display: overall, ta, va, then metrics in paper order.
pub fn level_order(name: &str) -> (usize, String) {
    let rank = match name {
        "overall" => 0,
        "ta" => 1,
        "va" => 2,
        m => METRIC_NAMES
            .iter()
            .position(|x| *x == m)
            .map(|p| p + 3)
            .unwrap_or(100),
    };
    (rank, name.to_string())
}

/// Canonical level name for a CSV header, or None for a column that is no level.
pub fn canonical_level(header: &str) -> Option<&'static str> {
    const ABBREV: [(&str, &str); 12] = [
        ("cs", "citation_support"),
        ("ia", "instruction_alignment"),
        ("wq", "writing_quality"),
        ("adb", "analytical_depth_breadth"),
        ("flc", "factual_logical_consistency"),
        ("mc", "multimodal_composition"),
        ("cq", "chart_quality"),
        ("iq", "image_quality"),
        ("fq", "figure_quality"),
        ("fcq", "figure_caption_quality"),
        ("fci", "figure_context_integration"),
        ("csc", "chart_source_consistency"),
    ];
    let h = header.trim().to_lowercase();
    match h.as_str() {
        "ta" => return Some("ta"),
        "va" => return Some("va"),
        "overall" => return Some("overall"),
        _ => {}
    }
    if let Some(m) = METRIC_NAMES.iter().find(|m| **m == h) {
        return Some(m);
    }
    ABBREV.iter().find(|(a, _)| *a == h).map(|(_, m)| *m)
}

fn parse_score(raw: &str) -> Result<Option<f64>, String> {
    let s = raw.trim();
    if s.is_empty()
        || matches!(
            s.to_lowercase().as_str(),
            "na" | "n/a" | "nan" | "null" | "none" | "-"
        )
    {
        return Ok(None);
    }
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if !v.is_finite() {
        return Err(format!("{s:?} is not a finite number"));
    }
    Ok(Some(v))
}

/// Parse a score CSV (`system,task_id` + level columns, optional `annotator`).
/// `label` names the file in errors.
pub fn parse_csv(text: &str, label: &str) -> Result<ScoreTable, TableError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| TableError::BadHeader {
            path: label.into(),
            message: e.to_string(),
        })?
        .clone();
    let find = |names: &[&str]| {
        headers
            .iter()
            .position(|h| names.contains(&h.trim().to_lowercase().as_str()))
    };
    let bad_header = |message: &str| TableError::BadHeader {
        path: label.into(),
        message: message.into(),
    };
    let system_col = find(&["system"]).ok_or_else(|| bad_header("no `system` column"))?;
    let task_col = find(&["task_id", "task"]).ok_or_else(|| bad_header("no `task_id` column"))?;
    let annotator_col = find(&["annotator"]);
    let mut level_cols: Vec<(usize, &'static str)> = Vec::new();
    let mut notes = Vec::new();
    for (i, h) in headers.iter().enumerate() {
        if i == system_col || i == task_col || Some(i) == annotator_col {
            continue;
        }
        match canonical_level(h) {
            Some(level) if level_cols.iter().any(|(_, l)| *l == level) => {
                return Err(bad_header(&format!("level {level} given by two columns")));
            }
            Some(level) => level_cols.push((i, level)),
            None => notes.push(format!("{label}: ignored column {h:?} (not a level)")),
        }
    }
    if level_cols.is_empty() {
        return Err(bad_header(
            "no score column (expected ta, va, overall or metric names)",
        ));
    }

    // level -> annotator ("" without the column) -> cell -> score
    let mut raw: BTreeMap<&'static str, BTreeMap<String, Scores>> = BTreeMap::new();
    let mut seen: BTreeMap<(Cell, String), u64> = BTreeMap::new();
    for row in reader.records() {
        let row = row.map_err(|e| TableError::BadRow {
            path: label.into(),
            line: e.position().map(|p| p.line()).unwrap_or(0),
            message: e.to_string(),
        })?;
        let line = row.position().map(|p| p.line()).unwrap_or(0);
        let bad = |message: String| TableError::BadRow {
            path: label.into(),
            line,
            message,
        };
        let system = row.get(system_col).unwrap_or_default().to_string();
        let task = row.get(task_col).unwrap_or_default().to_string();
        if system.is_empty() || task.is_empty() {
            return Err(bad("empty system or task_id".into()));
        }
        let annotator = annotator_col
            .map(|c| row.get(c).unwrap_or_default().to_string())
            .unwrap_or_default();
        if annotator_col.is_some() && annotator.is_empty() {
            return Err(bad("empty annotator".into()));
        }
        let cell = Cell::new(system, task);
        if let Some(first) = seen.insert((cell.clone(), annotator.clone()), line) {
            let who = if annotator_col.is_some() {
                format!(" by annotator {annotator:?}")
            } else {
                String::new()
            };
            return Err(bad(format!(
                "system {:?} task {:?}{who} already given on line {first}",
                cell.system, cell.task_id
            )));
        }
        for (col, level) in &level_cols {
            let value = parse_score(row.get(*col).unwrap_or_default())
                .map_err(|m| bad(format!("column {level}: {m}")))?;
            if let Some(v) = value {
                raw.entry(level)
                    .or_default()
                    .entry(annotator.clone())
                    .or_default()
                    .insert(cell.clone(), v);
            }
        }
    }

    let mut table = ScoreTable {
        label: label.into(),
        notes,
        ..Default::default()
    };
    if annotator_col.is_none() {
        for (level, mut by_ann) in raw {
            table
                .levels
                .insert(level.into(), by_ann.remove("").unwrap_or_default());
        }
    } else {
        let mut ann = AnnotatorScores::default();
        for (level, by_ann) in raw {
            table
                .levels
                .insert(level.into(), mean_over_annotators(&by_ann));
            ann.levels.insert(level.into(), by_ann);
        }
        table.annotators = Some(ann);
    }
    Ok(table)
}

/// Per-report mean of the annotators who rated it.
pub fn mean_over_annotators(by_annotator: &BTreeMap<String, Scores>) -> Scores {
    let mut sums: BTreeMap<Cell, (f64, usize)> = BTreeMap::new();
    for scores in by_annotator.values() {
        for (cell, v) in scores {
            let e = sums.entry(cell.clone()).or_insert((0.0, 0));
            e.0 += v;
            e.1 += 1;
        }
    }
    sums.into_iter()
        .map(|(c, (s, n))| (c, s / n as f64))
        .collect()
}

/// Read a score CSV file.
pub fn load_csv(path: &Path) -> Result<ScoreTable, TableError> {
    let unreadable = |message: String| TableError::Unreadable {
        path: path.display().to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
    if meta.len() > MAX_CSV_BYTES {
        return Err(unreadable("larger than 256 MiB".into()));
    }
    let bytes = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| unreadable("not UTF-8 text".into()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    parse_csv(text, &path.display().to_string())
}

/// Scores from an `eval` output folder: levels `ta`, `va`, `overall` and every
/// metric; a cell seen in several runs gets the mean over its runs. With several
/// judge models in the folder, `judge` must name one.
pub fn load_eval(path: &Path, judge: Option<&str>) -> Result<ScoreTable, TableError> {
    let tree = load_eval_tree(path)?;
    let label = path.display().to_string();
    if let Some(issue) = tree.issues.first() {
        return Err(TableError::Unreadable {
            path: issue.path.clone(),
            message: issue.message.clone(),
        });
    }
    let models = tree.judge_models();
    let model = match judge {
        Some(j) => {
            if !models.iter().any(|m| m == j) {
                return Err(TableError::NoSuchJudge {
                    path: label,
                    model: j.into(),
                    found: models.join(", "),
                });
            }
            j.to_string()
        }
        None if models.len() == 1 => models[0].clone(),
        None => {
            return Err(TableError::AmbiguousJudge {
                path: label,
                models: models.join(", "),
            })
        }
    };
    let records: Vec<&LoadedRecord> = tree
        .records
        .iter()
        .filter(|r| r.judge_model == model)
        .collect();
    let mut runs: Vec<u32> = records.iter().map(|r| r.run).collect();
    runs.sort();
    runs.dedup();
    let mut notes = Vec::new();
    if runs.len() > 1 {
        notes.push(format!(
            "{label}: judge {model}: each cell is the mean over its runs ({} runs)",
            runs.len()
        ));
    }
    let languages = records
        .iter()
        .filter_map(|r| Some((r.task_id.clone(), r.record.language.clone()?)))
        .collect();
    Ok(ScoreTable {
        label: format!("{label} ({model})"),
        levels: level_cells(&records),
        annotators: None,
        notes,
        languages,
        import: None,
    })
}

/// Per-level (TA, VA, Overall, each metric) cell scores of a set of records, each
/// cell the mean over its runs; null and non-finite scores are absent, not 0.
pub fn level_cells(records: &[&LoadedRecord]) -> BTreeMap<String, Scores> {
    let mut sums: BTreeMap<String, BTreeMap<Cell, (f64, usize)>> = BTreeMap::new();
    for r in records {
        let cell = Cell::new(r.system.clone(), r.task_id.clone());
        let rec = &r.record;
        let mut add = |level: &str, v: Option<f64>| {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                let e = sums
                    .entry(level.to_string())
                    .or_default()
                    .entry(cell.clone())
                    .or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        };
        add("ta", rec.ta);
        add("va", rec.va);
        add("overall", rec.overall);
        for (name, m) in &rec.metrics {
            add(name, m.score);
        }
    }
    sums.into_iter()
        .map(|(l, cells)| {
            let scores = cells
                .into_iter()
                .map(|(c, (s, n))| (c, s / n as f64))
                .collect();
            (l, scores)
        })
        .collect()
}

/// A folder is an `eval` output; anything else is read as CSV.
pub fn load_table(path: &Path, judge: Option<&str>) -> Result<ScoreTable, TableError> {
    if path.is_dir() {
        load_eval(path, judge)
    } else {
        load_csv(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_basic_with_blanks_and_abbrev() {
        let t = parse_csv(
            "system,task_id,TA,va,CS,comment\na,1,50,,0.5,x\nb,1,60,NA,,y\n",
            "s.csv",
        )
        .unwrap();
        assert_eq!(t.levels["ta"].len(), 2);
        assert!(!t.levels.contains_key("va"));
        assert_eq!(t.levels["citation_support"][&Cell::new("a", "1")], 0.5);
        assert_eq!(t.notes.len(), 1);
        assert!(t.annotators.is_none());
    }

    #[test]
    fn csv_errors_name_file_and_line() {
        let e = parse_csv("system,task_id,ta\na,1,x\n", "s.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.csv, line 2: column ta: \"x\" is not a number"
        );
        let e = parse_csv("system,task_id,ta\na,1,1\na,1,2\n", "s.csv").unwrap_err();
        assert!(e.to_string().contains("line 3") && e.to_string().contains("line 2"));
        assert!(parse_csv("system,ta\na,1\n", "s.csv").is_err());
        assert!(parse_csv("system,task_id,foo\na,1,1\n", "s.csv").is_err());
        assert!(parse_csv("system,task_id,ta\na,1,inf\n", "s.csv").is_err());
    }

    #[test]
    fn csv_annotators_mean_per_report() {
        let t = parse_csv(
            "system,task_id,annotator,overall\na,1,h1,60\na,1,h2,70\nb,1,h1,50\n",
            "h.csv",
        )
        .unwrap();
        assert_eq!(t.levels["overall"][&Cell::new("a", "1")], 65.0);
        assert_eq!(t.levels["overall"][&Cell::new("b", "1")], 50.0);
        let ann = t.annotators.unwrap();
        assert_eq!(ann.levels["overall"]["h1"].len(), 2);
        assert!(parse_csv("system,task_id,annotator,ta\na,1,h1,1\na,1,h1,2\n", "h.csv").is_err());
    }
}
