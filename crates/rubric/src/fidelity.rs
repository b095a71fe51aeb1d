//! Fidelity to the reference evaluator (issue 27): each rubric's `[[fidelity]]` rows
//! say, element by element, what the reference evaluator (NJU-LINK/TVIR,
//! `benchmark/scripts/evaluation/`) does, what we do, why we differ when we do, and
//! which flag or rubric setting switches it. `docs/fidelity.md` is generated from the
//! rows ([`markdown`]), and every row carries checks that tests run ([`check_row`]):
//! phrases the rendered prompt must (or must not) contain, rubric settings with their
//! expected values, and a command-line flag with its default. A row without a check
//! does not load.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    build_request, ChecklistItem, RequestLabel, Rubric, RubricError, RubricSet, SourceText,
    UnitInputs, REQUIRED_RUBRICS,
};

/// The reference snapshot the rows were read against.
pub const REFERENCE: &str =
    "NJU-LINK/TVIR at c48f1edaa075897a73bb4f3b34c961c498e080aa, benchmark/scripts/evaluation/";

/// The elements of a metric the table compares, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FidelityElement {
    Scale,
    Criteria,
    Bands,
    Anchors,
    Strictness,
    Exclusions,
    Counting,
    Evidence,
    OutputFields,
    Inputs,
    ImageSize,
    RevisionScope,
    PromptOrder,
    JustificationCap,
    Prefilters,
}

impl fmt::Display for FidelityElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = serde_json::to_value(self).unwrap_or_default();
        f.write_str(v.as_str().unwrap_or("?"))
    }
}

/// A command-line flag of `tvir eval` and its default, as `tvir eval --help` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlagCheck {
    /// `--name`.
    pub name: String,
    /// The `[default: ...]` the help shows; absent for a flag without a value.
    pub default: Option<String>,
}

/// One row of the fidelity table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FidelityRow {
    pub element: FidelityElement,
    /// What the reference evaluator does (paraphrased).
    pub reference: String,
    /// What we do by default.
    pub ours: String,
    /// True when our default differs from the reference's behaviour.
    #[serde(default)]
    pub departs: bool,
    /// Why we differ (required when `departs`), or a note.
    #[serde(default)]
    pub why: String,
    /// The flag or rubric setting that switches the element ("" = none).
    #[serde(default)]
    pub switch: String,
    /// Phrases the prompt rendered for the fixed inputs must contain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompt: Vec<String>,
    /// Phrases it must not contain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_in_prompt: Vec<String>,
    /// Rubric settings and their expected values: a dotted path into the rubric as
    /// JSON (`rules.no_usable_source`, `answer.dimensions.0.key`) to a value, or to
    /// the string `"<unset>"` for a key that must be absent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, Value>,
    /// A `tvir eval` flag that must exist, with its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<FlagCheck>,
}

impl FidelityRow {
    /// The row's own consistency (run when the rubric loads).
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.reference.trim().is_empty() || self.ours.trim().is_empty() {
            return Err("`reference` and `ours` must say something".into());
        }
        if self.departs && self.why.trim().is_empty() {
            return Err("a departure needs a `why`".into());
        }
        if self.prompt.is_empty()
            && self.not_in_prompt.is_empty()
            && self.settings.is_empty()
            && self.flag.is_none()
        {
            return Err(
                "a row needs a check: `prompt`, `not_in_prompt`, `settings` or `flag`".into(),
            );
        }
        if let Some(f) = &self.flag {
            if !f.name.starts_with("--") {
                return Err(format!("flag `{}` must start with --", f.name));
            }
        }
        for text in [&self.reference, &self.ours, &self.why, &self.switch] {
            if text.contains('|') || text.contains('\n') {
                return Err("table cells cannot hold `|` or line breaks".into());
            }
        }
        Ok(())
    }
}

/// Fixed inputs every rubric's prompt is rendered with for the checks: each input a
/// recognisable placeholder, one source readable and one not.
pub fn fixture_inputs() -> UnitInputs {
    UnitInputs {
        report_text: Some("FIXTURE-REPORT: Revenue rose 5% in 2023 [1].".into()),
        task_query: Some("FIXTURE-QUERY: analyse the market.".into()),
        checklist: vec![
            ChecklistItem {
                section: "Data".into(),
                item: "FIXTURE-ITEM-1: give 2023 revenue".into(),
            },
            ChecklistItem {
                section: "Visuals".into(),
                item: "FIXTURE-ITEM-2: include a chart".into(),
            },
        ],
        fact: Some("FIXTURE-FACT: revenue rose 5% [1].".into()),
        other_fact: Some("FIXTURE-OTHER: revenue grew by 5% [1].".into()),
        sources: vec![
            SourceText {
                idx: "1".into(),
                url: Some("https://example.org/a".into()),
                title: Some("FIXTURE-TITLE".into()),
                text: "FIXTURE-PAGE: revenue rose 5.1% in 2023.".into(),
            },
            SourceText {
                idx: "2".into(),
                url: None,
                title: None,
                text: String::new(),
            },
        ],
        figure_image: Some("data:image/png;base64,AAAA".into()),
        caption: Some("FIXTURE-CAPTION: Figure 1. Revenue by year.".into()),
        context: Some("FIXTURE-CONTEXT: As Figure 1 shows, revenue rose.".into()),
        chart_data: Some(r#"{"title":"FIXTURE-CHART-DATA","labels":["2022","2023"]}"#.into()),
    }
}

/// The prompt of `rubric` for the fixed inputs: system text, a blank line, user text.
pub fn fixture_prompt(set: &RubricSet, rubric: &Rubric) -> Result<String, RubricError> {
    let request = build_request(
        set,
        rubric,
        &fixture_inputs(),
        RequestLabel {
            report: "fixture",
            unit: "fixture",
            sample: 0,
        },
    )?;
    let mut out = String::new();
    for m in &request.messages {
        for p in &m.parts {
            if let tvir_judge::Part::Text { text } = p {
                out.push_str(text);
                out.push_str("\n\n");
            }
        }
    }
    Ok(out)
}

/// The value at a dotted path of a JSON value (array steps are indices).
fn at_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, step| match v {
        Value::Object(m) => m.get(step),
        Value::Array(a) => step.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// Whitespace runs as one space, so a phrase may be written on one line in the TOML
/// while the prompt wraps it.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every problem with one row against the rubric and its rendered prompt (the flag
/// is checked by the command-line tests, which have the binary's help).
pub fn check_row(rubric: &Rubric, prompt: &str, row: &FidelityRow) -> Vec<String> {
    let mut problems = Vec::new();
    let flat = squash(prompt);
    for phrase in &row.prompt {
        if !flat.contains(&squash(phrase)) {
            problems.push(format!("prompt lacks {phrase:?}"));
        }
    }
    for phrase in &row.not_in_prompt {
        if flat.contains(&squash(phrase)) {
            problems.push(format!("prompt contains {phrase:?}"));
        }
    }
    let json = serde_json::to_value(rubric).unwrap_or_default();
    for (path, want) in &row.settings {
        let got = at_path(&json, path);
        let ok = match (got, want) {
            (None, Value::String(s)) => s == "<unset>",
            (Some(Value::Null), Value::String(s)) => s == "<unset>",
            (Some(got), want) => numbers_equal(got, want) || got == want,
            (None, _) => false,
        };
        if !ok {
            problems.push(format!(
                "setting `{path}` is {}, the row says {want}",
                got.map_or("unset".to_string(), Value::to_string)
            ));
        }
    }
    problems
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() < 1e-12,
        _ => false,
    }
}

/// Every problem of every row of every rubric in `set`, each prefixed with the
/// rubric id and the row's element.
pub fn check_set(set: &RubricSet) -> Vec<String> {
    let mut problems = Vec::new();
    for rubric in set.rubrics() {
        if rubric.fidelity.is_empty() {
            continue;
        }
        let prompt = match fixture_prompt(set, rubric) {
            Ok(p) => p,
            Err(e) => {
                problems.push(format!("{}: cannot render: {e}", rubric.id));
                continue;
            }
        };
        for row in &rubric.fidelity {
            for p in check_row(rubric, &prompt, row) {
                problems.push(format!("{} / {}: {p}", rubric.id, row.element));
            }
        }
    }
    problems
}

/// The fidelity table (`docs/fidelity.md`) of the rubrics in `set`: one section per
/// rubric with rows, built-in ones in their order, then added ones by id.
pub fn markdown(set: &RubricSet) -> String {
    let mut out = String::new();
    out.push_str(
        "# Fidelity to the reference evaluator\n\n\
         <!-- Generated from the `[[fidelity]]` rows of `rubrics/*.toml`; do not edit by hand.\n     \
         Regenerate: TVIR_FIDELITY_UPDATE=1 cargo test -p tvir-rubric --test suite fidelity_doc:: -->\n\n",
    );
    out.push_str(&format!(
        "The paper's numbers come from the authors' evaluator ({REFERENCE}). Each judged \
         metric's judge prompt there fixes the scale, the bands and their anchors, how strict to \
         be, what does not count and how to count; its code fixes what the judge is shown. This \
         table compares ours with it, element by element. **departs** marks an element where our \
         default differs; *why* says why, and *switch* names the flag or rubric setting that \
         selects the other behaviour (a rubric setting is changed by a rubric override, \
         `--rubrics DIR`; a prompt by a template override, `--prompts DIR`).\n\n\
         Every row is checked by `cargo test -p tvir-rubric --test suite fidelity_doc::` (phrases of the \
         rendered prompt, rubric settings) and `cargo test --test suite fidelity_flags::` (flags and \
         their defaults), so the prompts, the rubric files and this page cannot drift apart. The \
         reference is described in our own words; none of its text is copied.\n\n"
    ));
    let mut ids: Vec<String> = REQUIRED_RUBRICS.iter().map(|s| s.to_string()).collect();
    let mut added: Vec<String> = set
        .rubrics()
        .map(|r| r.id.clone())
        .filter(|id| !ids.contains(id))
        .collect();
    added.sort();
    ids.extend(added);
    out.push_str("| metric | rows | departures |\n| --- | --- | --- |\n");
    for id in &ids {
        let Ok(r) = set.get(id) else { continue };
        if r.fidelity.is_empty() {
            continue;
        }
        let departs = r.fidelity.iter().filter(|x| x.departs).count();
        out.push_str(&format!(
            "| [{}](#{}) | {} | {} |\n",
            r.title,
            anchor(&r.title, id),
            r.fidelity.len(),
            departs
        ));
    }
    out.push('\n');
    for id in &ids {
        let Ok(r) = set.get(id) else { continue };
        if r.fidelity.is_empty() {
            continue;
        }
        out.push_str(&format!("## {} (`{}`)\n\n", r.title, id));
        out.push_str("| element | reference | ours | departs | why | switch |\n");
        out.push_str("| --- | --- | --- | --- | --- | --- |\n");
        let mut rows: Vec<&FidelityRow> = r.fidelity.iter().collect();
        rows.sort_by_key(|x| x.element);
        for row in rows {
            let switch = switch_cell(&row.switch, row.flag.as_ref());
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                row.element.to_string().replace('_', " "),
                row.reference.trim(),
                row.ours.trim(),
                if row.departs { "**yes**" } else { "no" },
                if row.why.trim().is_empty() {
                    "".to_string()
                } else {
                    row.why.trim().to_string()
                },
                switch
            ));
        }
        out.push('\n');
    }
    out.push_str(&scoring_markdown());
    out
}

/// One step of the scoring path (`rubrics/scoring/path.toml`): what happens
/// between the judges' answers and the numbers of a leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoringRow {
    pub step: String,
    pub reference: String,
    pub ours: String,
    #[serde(default)]
    pub departs: bool,
    #[serde(default)]
    pub why: String,
    /// What the departure does to a score ("none" for a row that does not depart).
    pub effect: String,
    #[serde(default)]
    pub switch: String,
    /// A `tvir eval` flag that must exist, with its default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<FlagCheck>,
    /// The test (a function name under `tests/`) that proves the row.
    pub test: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScoringFile {
    row: Vec<ScoringRow>,
}

/// The scoring-path rows, each checked: a departure names why, its effect and the
/// option that restores the reference's way; a row that does not depart has no
/// effect.
pub fn scoring_path() -> Result<Vec<ScoringRow>, String> {
    let text = include_str!("../../../rubrics/scoring/path.toml");
    let file: ScoringFile =
        toml::from_str(text).map_err(|e| format!("rubrics/scoring/path.toml: {e}"))?;
    for r in &file.row {
        let bad = |m: &str| Err(format!("rubrics/scoring/path.toml, step {}: {m}", r.step));
        if r.departs && (r.why.trim().is_empty() || r.switch.trim().is_empty() && r.flag.is_none())
        {
            return bad("a departure needs a `why` and a `switch` or `flag`");
        }
        if r.departs == (r.effect.trim() == "none") {
            return bad("`effect` is \"none\" exactly when the row does not depart");
        }
        for text in [&r.reference, &r.ours, &r.why, &r.effect, &r.switch] {
            if text.contains('|') || text.contains('\n') {
                return bad("table cells cannot hold `|` or line breaks");
            }
        }
    }
    Ok(file.row)
}

/// The scoring-path section of `docs/fidelity.md`.
fn scoring_markdown() -> String {
    let rows = match scoring_path() {
        Ok(rows) => rows,
        Err(e) => return format!("## Scoring path\n\n{e}\n"),
    };
    let mut out = String::from(
        "## Scoring path\n\n\
         From the judges' answers to the leaderboard's numbers (`rubrics/scoring/path.toml`). \
         Every departure names its effect on the score and the option that restores the \
         reference's way; `tvir eval --protocol reference` sets all of them at once (a flag \
         given beside it overrides that one setting), records them in `run.json` and every \
         `report.json` (`\"protocol\"`), and `tvir summarize` shows them and refuses to mix \
         protocols unless `--mix-protocols`. *test* names the test that proves the row.\n\n\
         | step | reference | ours | departs | why | effect | switch | test |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        let switch = switch_cell(&r.switch, r.flag.as_ref());
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | `{}` |\n",
            r.step,
            r.reference.trim(),
            r.ours.trim(),
            if r.departs { "**yes**" } else { "no" },
            r.why.trim(),
            r.effect.trim(),
            switch,
            r.test
        ));
    }
    out.push('\n');
    out
}

/// A row's switch cell: its own text, else the flag that checks it, else "none".
fn switch_cell(switch: &str, flag: Option<&FlagCheck>) -> String {
    match (switch, flag) {
        ("", Some(f)) => format!("`{}`", f.name),
        ("", None) => "none".to_string(),
        (s, _) => s.to_string(),
    }
}

/// GitHub's heading anchor of `## {title} (`{id}`)`.
fn anchor(title: &str, id: &str) -> String {
    format!("{title} {id}")
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            'a'..='z' | '0'..='9' | '_' | '-' => Some(c),
            ' ' => Some('-'),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(toml_text: &str) -> Result<FidelityRow, String> {
        let r: FidelityRow = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        r.check().map(|_| r)
    }

    #[test]
    fn a_row_without_a_check_or_a_reason_is_refused() {
        let base = "element = \"bands\"\nreference = \"a\"\nours = \"b\"\n";
        assert!(row(base).unwrap_err().contains("needs a check"));
        let departs = format!("{base}departs = true\nprompt = [\"x\"]\n");
        assert!(row(&departs).unwrap_err().contains("why"));
        let ok = format!("{base}departs = true\nwhy = \"cost\"\nprompt = [\"x\"]\n");
        assert!(row(&ok).is_ok());
        let pipe = "element = \"bands\"\nreference = \"a|b\"\nours = \"b\"\nprompt = [\"x\"]\n";
        assert!(row(pipe).is_err());
        assert!(row("element = \"colour\"\nreference = \"a\"\nours = \"b\"\n").is_err());
    }

    #[test]
    fn checks_find_missing_phrases_and_wrong_settings() {
        let set = RubricSet::builtin().unwrap();
        let wq = set.get("writing_quality").unwrap();
        let r = row("element = \"scale\"\nreference = \"a\"\nours = \"b\"\n\
                     prompt = [\"NO SUCH PHRASE\", \"FIXTURE-REPORT:   Revenue\"]\n\
                     not_in_prompt = [\"FIXTURE-REPORT\"]\n\
                     settings = { \"answer.min\" = 1, \"answer.max\" = 9, \"max_source_chars\" = \"<unset>\", \"level\" = \"text\" }\n")
            .unwrap();
        let prompt = fixture_prompt(&set, wq).unwrap();
        let problems = check_row(wq, &prompt, &r);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("NO SUCH PHRASE"));
        assert!(problems[1].contains("contains"));
        assert!(problems[2].contains("answer.max"));
    }

    #[test]
    fn anchors_follow_github() {
        assert_eq!(
            anchor("Chart-Source Consistency", "chart_source_consistency"),
            "chart-source-consistency-chart_source_consistency"
        );
    }
}
