//! The generic engine: a rubric's strict JSON answer schema; judge answer ->
//! validated answer -> per-unit score. Pure functions. The request's text is built
//! in `render` (its template, laid out by `--prompt-order`).

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::{AnswerSpec, ExtractionPart, Rubric};
use crate::band::{band_of, banded, integer};

/// One checklist item of a task, in checklist order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChecklistItem {
    pub section: String,
    pub item: String,
}

/// Text of one cited source as the judge reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceText {
    pub idx: String,
    pub url: Option<String>,
    pub title: Option<String>,
    /// Empty when the page could not be had (the prompt says so).
    pub text: String,
}

/// Everything a unit may show the judge. Only the rubric's `inputs` are rendered.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UnitInputs {
    pub report_text: Option<String>,
    pub task_query: Option<String>,
    pub checklist: Vec<ChecklistItem>,
    pub fact: Option<String>,
    pub other_fact: Option<String>,
    pub sources: Vec<SourceText>,
    /// `data:image/png;base64,...` of the figure.
    pub figure_image: Option<String>,
    pub caption: Option<String>,
    pub context: Option<String>,
    /// A rendered chart's data as JSON text (`chart_data`); empty when the figure
    /// has none.
    pub chart_data: Option<String>,
}

/// Why a judge answer was not accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{metric}: invalid answer: {message}")]
pub struct AnswerError {
    pub metric: String,
    pub message: String,
}

fn answer_error(rubric: &Rubric, message: impl Into<String>) -> AnswerError {
    AnswerError {
        metric: rubric.id.clone(),
        message: message.into(),
    }
}

/// Largest `maxLength`, `maxItems`, `minLength` or `minItems` in any schema we send.
///
/// Grammar-constrained servers compile the schema into a GBNF grammar, and llama.cpp's
/// grammar parser (`src/llama-grammar.cpp`) expands every bounded repetition into one
/// rule per optional repeat and refuses the grammar when a repetition would need 2000
/// rules or more (`MAX_REPETITION_THRESHOLD`: "number of rules that are going to be
/// repeated multiplied by the new repetition exceeds sane defaults"). llama.cpp's own
/// converter (`common/json-schema-to-grammar.cpp`, llama-server) writes a bound `n` as
/// `x{0,n}`: n rules. llama-cpp-python's converter (`llama_grammar.py`, what
/// `scripts/check_local_judge.sh` starts) writes it as n nested optional groups,
/// `(x (x (x)?)?)?`: 2n - 1 rules in the outermost group, so it is refused from
/// n = 1001 on (measured with 0.3.36 by `scripts/grammar_compile.py`: a `maxLength` of
/// 1000 compiles, 1001 does not), and llama-cpp-python's server process then dies
/// instead of answering. 800 (1599 rules) keeps a fifth of headroom under that guard
/// (another converter version may spend a rule or two more). Each property and each
/// array item is a rule of its own in both converters, so bounds at different depths
/// do not multiply. Longer lists and strings are bounded another way: extraction
/// windows hold at most [`EXTRACTION_MAX_ITEMS`] candidate units, and an answer cut at
/// a bound is completed from the report text, with the cut recorded (`tvir-engine`'s
/// extractor).
pub const GRAMMAR_MAX_REPETITION: u64 = 800;
/// Longest top-level `justification` the schema allows (characters), at the
/// [`GRAMMAR_MAX_REPETITION`] ceiling.
pub const JUSTIFICATION_MAX_CHARS: u64 = 800;
/// Longest per-item justification of a checklist answer.
pub const ITEM_JUSTIFICATION_MAX_CHARS: u64 = 400;
/// Longest listed issue, and most issues listed, of an issue-count answer (an issue
/// holds its quotes and where they are, as the reference evaluator asks).
pub const ISSUE_MAX_CHARS: u64 = 600;
pub const MAX_LISTED_ISSUES: u64 = 30;
/// Longest extra string field (e.g. FCQ's `revised_caption`).
pub const EXTRA_FIELD_MAX_CHARS: u64 = 600;
/// Most entries (or facts) one extraction answer lists. The extractor cuts the report
/// into windows that hold at most this many candidate units (lines and sentences), so
/// a complete answer fits; the prompt states the bound.
pub const EXTRACTION_MAX_ITEMS: u64 = 100;
/// Longest quoted fact of an extraction answer. A longer sentence comes back cut at
/// this length (a grammar-constrained server stops it there) and is completed to the
/// end of its sentence in the report, the cut recorded.
pub const EXTRACTION_MAX_FACT_CHARS: u64 = 800;
/// Longest entry URL of an extraction answer; a longer one comes back cut and is
/// restored from the report text (the one URL there that starts with it).
pub const EXTRACTION_MAX_URL_CHARS: u64 = 800;
/// Longest entry title of an extraction answer (kept as cut: a title is shown, never
/// matched).
pub const EXTRACTION_MAX_TITLE_CHARS: u64 = 300;
/// Most labels one fact cites, and the longest label.
pub const EXTRACTION_MAX_LABELS: u64 = 20;
pub const EXTRACTION_MAX_LABEL_CHARS: u64 = 20;

/// Largest issue count the schema lists: [`MAX_LISTED_ISSUES`], or the start of the
/// mapping table's open band when that is higher, so every count up to the point
/// where the score stops changing is allowed.
pub fn max_issue_count(table: &[super::Band]) -> u64 {
    let open_from = table.iter().find(|b| b.max.is_none()).map_or(0, |b| b.min);
    MAX_LISTED_ISSUES.max(open_from)
}

/// Strict JSON schema of a rubric's answer. `item_count` is the number of checklist
/// items (only used by `Items` answers: keys "1".."K", all required).
///
/// Every value a constrained decoder must keep in range is an `enum` listing every
/// allowed value (integer scales best score first, issue counts from 0), because
/// grammar-based decoders (llama.cpp, outlines, xgrammar) enforce enums and required
/// keys but not `minimum`/`maximum`. Free text has a `maxLength`, lists a
/// `maxItems`, so the answer's length is bounded and a token limit can be derived
/// from the schema ([`tvir_judge::tokens::answer_token_limit`]).
pub fn schema(rubric: &Rubric, item_count: usize) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    let mut add = |name: &str, schema: Value| {
        props.insert(name.to_string(), schema);
        required.push(Value::String(name.to_string()));
    };
    let reasoning = json!({"type": "string", "maxLength": JUSTIFICATION_MAX_CHARS,
                           "description": "Brief reasoning for the result, written before it."});
    match &rubric.answer {
        AnswerSpec::Verdict { field, labels } => {
            add("justification", reasoning);
            let names: Vec<&str> = labels.iter().map(|l| l.label.as_str()).collect();
            add(field, json!({"type": "string", "enum": names}));
        }
        AnswerSpec::Items { field, values } => {
            let mut items = Map::new();
            let keys: Vec<String> = (1..=item_count).map(|i| i.to_string()).collect();
            for key in &keys {
                items.insert(
                    key.clone(),
                    json!({
                        "type": "object",
                        "properties": {
                            "justification": {"type": "string",
                                              "maxLength": ITEM_JUSTIFICATION_MAX_CHARS},
                            "score": {"type": "number", "enum": values},
                        },
                        "required": ["justification", "score"],
                        "additionalProperties": false,
                    }),
                );
            }
            add(
                field,
                json!({"type": "object", "properties": items, "required": keys,
                       "additionalProperties": false}),
            );
        }
        AnswerSpec::Dimensions {
            field,
            min,
            max,
            dimensions,
            band_rule,
            ..
        } => {
            add("justification", reasoning);
            // The class and counts a banded dimension rests on come before the scores.
            if let Some(rule) = band_rule {
                add(
                    &rule.class_field,
                    json!({"type": "string", "enum": rule.classes,
                           "description": rule.class_description}),
                );
                let counts: Vec<u64> = (0..=rule.max_count).collect();
                for c in &rule.counts {
                    add(
                        &c.name,
                        json!({"type": "integer", "enum": counts, "description": c.description}),
                    );
                }
            }
            // Best score first: the order carries no meaning for validation.
            let scale: Vec<i64> = (*min..=*max).rev().collect();
            let mut dims = Map::new();
            for d in dimensions {
                dims.insert(
                    d.key.clone(),
                    json!({"type": "integer", "enum": scale, "description": d.name}),
                );
            }
            let keys: Vec<&str> = dimensions.iter().map(|d| d.key.as_str()).collect();
            add(
                field,
                json!({"type": "object", "properties": dims, "required": keys,
                       "additionalProperties": false}),
            );
        }
        AnswerSpec::IssueCount {
            field,
            list_field,
            table,
            ..
        } => {
            add("justification", reasoning);
            let most = max_issue_count(table);
            // The list stays under the grammar ceiling; the count goes on.
            add(
                list_field,
                json!({"type": "array",
                       "items": {"type": "string", "maxLength": ISSUE_MAX_CHARS},
                       "maxItems": most.min(GRAMMAR_MAX_REPETITION),
                       "description": "Each distinct issue once."}),
            );
            let counts: Vec<u64> = (0..=most).collect();
            add(
                field,
                json!({"type": "integer", "enum": counts,
                       "description": format!("Number of distinct issues; {most} when there are more.")}),
            );
        }
        AnswerSpec::Boolean { field } => {
            add("justification", reasoning);
            add(field, json!({"type": "boolean"}));
        }
        AnswerSpec::Extraction { part, .. } => {
            // Bounded like every other schema, under GRAMMAR_MAX_REPETITION (a
            // grammar-constrained server must be able to compile it): windows hold at
            // most EXTRACTION_MAX_ITEMS candidate units, and a string cut at its bound
            // is completed from the report text by the extractor.
            let s =
                |d: &str, max: u64| json!({"type": "string", "maxLength": max, "description": d});
            match part {
                ExtractionPart::References => add(
                    "references",
                    json!({"type": "array", "maxItems": EXTRACTION_MAX_ITEMS, "items": {
                        "type": "object",
                        "properties": {
                            "idx": s("The entry's label as written (\"3\" for [3]), or its position when unnumbered.", EXTRACTION_MAX_LABEL_CHARS),
                            "url": s("The entry's URL exactly as written; empty when it has none.", EXTRACTION_MAX_URL_CHARS),
                            "title": s("The entry's title; empty when it has none.", EXTRACTION_MAX_TITLE_CHARS),
                        },
                        "required": ["idx", "url", "title"],
                        "additionalProperties": false,
                    }}),
                ),
                ExtractionPart::Facts => add(
                    "facts",
                    json!({"type": "array", "maxItems": EXTRACTION_MAX_ITEMS, "items": {
                        "type": "object",
                        "properties": {
                            "fact": s("The citing sentence copied exactly from the report text.", EXTRACTION_MAX_FACT_CHARS),
                            "ref_idxs": {"type": "array", "maxItems": EXTRACTION_MAX_LABELS,
                                         "items": {"type": "string", "maxLength": EXTRACTION_MAX_LABEL_CHARS},
                                         "description": "Labels of the reference entries it cites."},
                        },
                        "required": ["fact", "ref_idxs"],
                        "additionalProperties": false,
                    }}),
                ),
            }
        }
    }
    for extra in &rubric.extra_fields {
        add(
            &extra.name,
            json!({"type": "string", "maxLength": EXTRA_FIELD_MAX_CHARS,
                   "description": extra.description}),
        );
    }
    json!({"type": "object", "properties": props, "required": required,
           "additionalProperties": false})
}

/// Check an answer against the rubric (ranges, labels, every key present).
pub fn validate_answer(
    rubric: &Rubric,
    answer: &Value,
    item_count: usize,
) -> Result<(), AnswerError> {
    let obj = answer
        .as_object()
        .ok_or_else(|| answer_error(rubric, "answer is not a JSON object"))?;
    let get = |field: &str| {
        obj.get(field)
            .ok_or_else(|| answer_error(rubric, format!("missing field `{field}`")))
    };
    match &rubric.answer {
        AnswerSpec::Items { field, .. } => {
            let items = get(field)?
                .as_object()
                .ok_or_else(|| answer_error(rubric, format!("`{field}` is not an object")))?;
            for i in 1..=item_count {
                let item = items
                    .get(&i.to_string())
                    .ok_or_else(|| answer_error(rubric, format!("missing item \"{i}\"")))?;
                unit_score(rubric, item)?;
            }
            Ok(())
        }
        _ => {
            for extra in &rubric.extra_fields {
                if !get(&extra.name)?.is_string() {
                    return Err(answer_error(
                        rubric,
                        format!("`{}` is not a string", extra.name),
                    ));
                }
            }
            if let AnswerSpec::Extraction { part, .. } = &rubric.answer {
                return validate_extraction_shape(rubric, *part, answer);
            }
            if let AnswerSpec::Dimensions {
                band_rule: Some(rule),
                ..
            } = &rubric.answer
            {
                band_of(rule, answer).map_err(|m| answer_error(rubric, m))?;
            }
            if let AnswerSpec::Boolean { field } = &rubric.answer {
                return get(field)?
                    .as_bool()
                    .map(|_| ())
                    .ok_or_else(|| answer_error(rubric, format!("`{field}` is not a boolean")));
            }
            unit_score(rubric, answer).map(|_| ())
        }
    }
}

/// The answer parts that become units: for `Items`, one object per checklist item
/// (in order); otherwise the whole answer.
pub fn split_items(rubric: &Rubric, answer: &Value, item_count: usize) -> Vec<Value> {
    match &rubric.answer {
        AnswerSpec::Items { field, .. } => (1..=item_count)
            .map(|i| answer[field.as_str()][i.to_string()].clone())
            .collect(),
        _ => vec![answer.clone()],
    }
}

/// Per-unit score in [0, 1] of a validated answer (for `Items`: of one item object).
pub fn unit_score(rubric: &Rubric, answer: &Value) -> Result<f64, AnswerError> {
    match &rubric.answer {
        AnswerSpec::Verdict { field, labels } => {
            let label = answer[field.as_str()]
                .as_str()
                .ok_or_else(|| answer_error(rubric, format!("`{field}` is not a string")))?;
            labels
                .iter()
                .find(|l| l.label == label)
                .map(|l| l.value)
                .ok_or_else(|| answer_error(rubric, format!("unknown verdict `{label}`")))
        }
        AnswerSpec::Items { values, .. } => {
            let v = answer["score"]
                .as_f64()
                .ok_or_else(|| answer_error(rubric, "item `score` is not a number"))?;
            if values.iter().any(|x| (x - v).abs() < 1e-12) {
                Ok(v)
            } else {
                Err(answer_error(
                    rubric,
                    format!("item score {v} not one of {values:?}"),
                ))
            }
        }
        AnswerSpec::Dimensions {
            field,
            min,
            max,
            dimensions,
            band_rule,
            partial,
        } => {
            // An answer stored before the band fields existed has no band: its score
            // stands as given (new answers are checked for them by validate_answer).
            let band = band_rule.as_ref().and_then(|r| band_of(r, answer).ok());
            let scores = answer[field.as_str()]
                .as_object()
                .ok_or_else(|| answer_error(rubric, format!("`{field}` is not an object")))?;
            let mut sum = 0i64;
            for d in dimensions {
                if partial.is_some() && scores.get(&d.key).is_none_or(Value::is_null) {
                    // `partial = "sum"`: a dimension that did not come back adds 0.
                    continue;
                }
                let v = scores.get(&d.key).and_then(integer).ok_or_else(|| {
                    answer_error(
                        rubric,
                        format!("score `{}` missing or not an integer", d.key),
                    )
                })?;
                if v < *min || v > *max {
                    return Err(answer_error(
                        rubric,
                        format!("score `{}` = {v} outside {min}..={max}", d.key),
                    ));
                }
                sum += banded(band_rule.as_ref(), band, &d.key, v);
            }
            Ok(sum as f64 / (*max as f64 * dimensions.len() as f64))
        }
        AnswerSpec::IssueCount {
            field,
            table,
            scale,
            ..
        } => {
            let count = answer[field.as_str()]
                .as_i64()
                .filter(|n| *n >= 0)
                .ok_or_else(|| answer_error(rubric, format!("`{field}` is not an integer >= 0")))?;
            Ok(map_issue_count(table, count as u64) / scale)
        }
        AnswerSpec::Boolean { .. } => Err(answer_error(rubric, "a yes/no rubric has no score")),
        AnswerSpec::Extraction { .. } => {
            Err(answer_error(rubric, "an extraction rubric has no score"))
        }
    }
}

/// The shape of an extraction answer (types only; whether each fact is a span of the
/// report and each index names an entry is checked by the extractor, which has the
/// text).
fn validate_extraction_shape(
    rubric: &Rubric,
    part: ExtractionPart,
    answer: &Value,
) -> Result<(), AnswerError> {
    let (field, keys): (&str, &[&str]) = match part {
        ExtractionPart::References => ("references", &["idx", "url", "title"]),
        ExtractionPart::Facts => ("facts", &["fact", "ref_idxs"]),
    };
    let list = answer[field]
        .as_array()
        .ok_or_else(|| answer_error(rubric, format!("`{field}` is not an array")))?;
    for (i, item) in list.iter().enumerate() {
        for key in keys {
            let ok = match (*key, &item[*key]) {
                ("ref_idxs", Value::Array(xs)) => xs.iter().all(Value::is_string),
                (_, v) => v.is_string(),
            };
            if !ok {
                return Err(answer_error(
                    rubric,
                    format!("{field}[{i}].{key} is missing or has the wrong type"),
                ));
            }
        }
    }
    Ok(())
}

/// Mapping-table lookup (the table is validated to tile 0.. with an open last band).
pub fn map_issue_count(table: &[super::Band], count: u64) -> f64 {
    table
        .iter()
        .find(|b| count >= b.min && b.max.is_none_or(|m| count <= m))
        .map(|b| b.score)
        .unwrap_or(0.0)
}

/// Dimension scores of a validated `Dimensions` answer, in rubric order (a banded
/// dimension's score moved into its band).
pub fn dimension_scores(rubric: &Rubric, answer: &Value) -> Vec<i64> {
    match &rubric.answer {
        AnswerSpec::Dimensions {
            field,
            dimensions,
            band_rule,
            ..
        } => {
            let band = band_rule.as_ref().and_then(|r| band_of(r, answer).ok());
            dimensions
                .iter()
                .filter_map(|d| {
                    let v = integer(&answer[field.as_str()][d.key.as_str()])?;
                    Some(banded(band_rule.as_ref(), band, &d.key, v))
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The judge's justification of a (part of an) answer, if it gave one.
pub fn justification(answer: &Value) -> Option<String> {
    answer["justification"].as_str().map(str::to_string)
}

/// Cut `text` to at most `max` characters on a character boundary, saying so.
pub fn truncate_chars(text: &str, max: Option<usize>) -> String {
    match max {
        Some(max) if text.chars().count() > max => {
            let cut: String = text.chars().take(max).collect();
            format!("{cut}\n[... truncated at {max} characters]")
        }
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RubricSet;

    fn set() -> RubricSet {
        RubricSet::builtin().unwrap()
    }

    #[test]
    fn dimension_score_is_sum_over_max_times_count() {
        let s = set();
        let wq = s.get("writing_quality").unwrap();
        let a = json!({"justification": "", "scores": {
            "coherence_organization": 8, "clarity_readability": 7,
            "conciseness_redundancy": 6, "stylistic_referencing_consistency": 9}});
        validate_answer(wq, &a, 0).unwrap();
        assert!((unit_score(wq, &a).unwrap() - 30.0 / 40.0).abs() < 1e-12);
    }

    #[test]
    fn out_of_range_and_missing_dimension_are_rejected() {
        let s = set();
        let wq = s.get("writing_quality").unwrap();
        let a = json!({"justification": "", "scores": {
            "coherence_organization": 11, "clarity_readability": 7,
            "conciseness_redundancy": 6, "stylistic_referencing_consistency": 9}});
        assert!(validate_answer(wq, &a, 0).is_err());
        let b = json!({"justification": "", "scores": {"coherence_organization": 5}});
        assert!(validate_answer(wq, &b, 0).is_err());
    }

    #[test]
    fn verdicts_map_to_their_values() {
        let s = set();
        let cs = s.get("citation_support").unwrap();
        for (v, x) in [
            ("supported", 1.0),
            ("partially_supported", 0.5),
            ("unsupported", 0.0),
            ("unknown", 0.0),
        ] {
            let a = json!({"justification": "", "verdict": v});
            assert_eq!(unit_score(cs, &a).unwrap(), x);
        }
        assert!(unit_score(cs, &json!({"verdict": "maybe"})).is_err());
    }

    #[test]
    fn flc_table_f_and_csc_table_c() {
        let s = set();
        let flc = s.get("factual_logical_consistency").unwrap();
        let expect_f = [
            (0, 10.0),
            (1, 9.0),
            (2, 9.0),
            (3, 8.0),
            (4, 8.0),
            (5, 7.0),
            (8, 6.0),
            (9, 5.0),
            (12, 4.0),
            (14, 3.0),
            (15, 2.0),
            (17, 2.0),
            (18, 1.0),
            (500, 1.0),
        ];
        for (n, r) in expect_f {
            let a = json!({"justification": "", "issues": [], "total_issues": n});
            assert!(
                (unit_score(flc, &a).unwrap() - r / 10.0).abs() < 1e-12,
                "F({n})"
            );
        }
        let csc = s.get("chart_source_consistency").unwrap();
        for n in 0..=12u64 {
            let r = if n >= 9 { 1.0 } else { 10.0 - n as f64 };
            let a = json!({"justification": "", "issues": [], "total_issues": n});
            assert!(
                (unit_score(csc, &a).unwrap() - r / 10.0).abs() < 1e-12,
                "C({n})"
            );
        }
        let neg = json!({"justification": "", "issues": [], "total_issues": -1});
        assert!(unit_score(csc, &neg).is_err());
    }

    #[test]
    fn checklist_schema_lists_every_item_and_split_follows_order() {
        let s = set();
        let ia = s.get("instruction_alignment").unwrap();
        let sch = schema(ia, 3);
        assert_eq!(
            sch["properties"]["items"]["required"],
            json!(["1", "2", "3"])
        );
        let a = json!({"items": {"1": {"justification": "a", "score": 1},
                                 "2": {"justification": "b", "score": 0.5},
                                 "3": {"justification": "c", "score": 0}}});
        validate_answer(ia, &a, 3).unwrap();
        let parts = split_items(ia, &a, 3);
        let scores: Vec<f64> = parts.iter().map(|p| unit_score(ia, p).unwrap()).collect();
        assert_eq!(scores, vec![1.0, 0.5, 0.0]);
        let bad = json!({"items": {"1": {"justification": "a", "score": 0.7}}});
        assert!(validate_answer(ia, &bad, 1).is_err());
        assert!(validate_answer(ia, &a, 4).is_err(), "item 4 missing");
    }

    #[test]
    fn fcq_schema_has_revised_caption_after_scores() {
        let s = set();
        let fcq = s.get("figure_caption_quality").unwrap();
        let sch = schema(fcq, 0);
        let keys: Vec<&String> = sch["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["justification", "scores", "revised_caption"]);
    }

    /// Nodes whose range rests on `minimum`/`maximum` alone, and strings without a
    /// `maxLength` or `enum`.
    fn unenforceable(schema: &Value, path: &str, out: &mut Vec<String>) {
        let Some(obj) = schema.as_object() else {
            return;
        };
        let bounded = ["minimum", "maximum"].iter().any(|k| obj.contains_key(*k));
        if bounded && !obj.contains_key("enum") {
            out.push(format!("{path}: bounds"));
        }
        if obj.get("type") == Some(&json!("string"))
            && !obj.contains_key("maxLength")
            && !obj.contains_key("enum")
        {
            out.push(format!("{path}: unbounded string"));
        }
        if obj.get("type") == Some(&json!("array")) && !obj.contains_key("maxItems") {
            out.push(format!("{path}: unbounded array"));
        }
        for (k, v) in obj
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            unenforceable(v, &format!("{path}.{k}"), out);
        }
        if let Some(items) = obj.get("items") {
            unenforceable(items, &format!("{path}[]"), out);
        }
    }

    #[test]
    fn every_schema_is_enforceable_by_a_grammar_and_keeps_its_shape() {
        let s = set();
        let mut problems = Vec::new();
        for rubric in s.rubrics() {
            let sch = schema(rubric, 3);
            unenforceable(&sch, &rubric.id, &mut problems);
            tvir_judge::schema::check_schema(&sch).unwrap();
        }
        assert!(problems.is_empty(), "{problems:?}");
        // Scales list every value, best first; counts from 0 past the open band.
        let wq = schema(s.get("writing_quality").unwrap(), 0);
        assert_eq!(
            wq["properties"]["scores"]["properties"]["clarity_readability"]["enum"],
            json!([10, 9, 8, 7, 6, 5, 4, 3, 2, 1])
        );
        let cq = schema(s.get("chart_quality").unwrap(), 0);
        assert_eq!(
            cq["properties"]["scores"]["properties"]["no_overlap"]["enum"],
            json!([1, 0])
        );
        let flc = schema(s.get("factual_logical_consistency").unwrap(), 0);
        let counts = flc["properties"]["total_issues"]["enum"]
            .as_array()
            .unwrap();
        assert_eq!(counts.first(), Some(&json!(0)));
        assert_eq!(counts.last(), Some(&json!(MAX_LISTED_ISSUES)));
        assert_eq!(counts.len() as u64, MAX_LISTED_ISSUES + 1);
        // Field names are those of the answer shapes.
        let keys: Vec<&String> = flc["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["justification", "issues", "total_issues"]);
        // The validator rejects a value outside the enum, with the path.
        let bad = json!({"justification": "", "scores": {
            "coherence_organization": 11, "clarity_readability": 7,
            "conciseness_redundancy": 6, "stylistic_referencing_consistency": 9}});
        let err = tvir_judge::schema::validate(&wq, &bad).unwrap_err();
        assert_eq!(err.path, "$.scores.coherence_organization");
        let long = json!({"justification": "x".repeat(JUSTIFICATION_MAX_CHARS as usize + 1),
            "scores": {"coherence_organization": 1, "clarity_readability": 7,
            "conciseness_redundancy": 6, "stylistic_referencing_consistency": 9}});
        assert!(tvir_judge::schema::validate(&wq, &long).is_err());
    }

    #[test]
    fn an_open_band_beyond_the_listed_issues_extends_the_count_enum() {
        let mut flc = set().get("factual_logical_consistency").unwrap().clone();
        if let AnswerSpec::IssueCount { table, .. } = &mut flc.answer {
            let last = table.last_mut().unwrap();
            last.min = 40;
            let prev = table.len() - 2;
            table[prev].max = Some(39);
        }
        let sch = schema(&flc, 0);
        assert_eq!(
            sch["properties"]["total_issues"]["enum"]
                .as_array()
                .unwrap()
                .len(),
            41
        );
        assert_eq!(sch["properties"]["issues"]["maxItems"], 40);
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        let t = truncate_chars("图表数据", Some(2));
        assert!(t.starts_with("图表\n"));
        assert_eq!(truncate_chars("abc", Some(5)), "abc");
    }
}
