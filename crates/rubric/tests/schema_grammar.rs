//! Every answer schema tvir can send compiles on a grammar-constrained server
//! (issue 26 req 4): no `maxLength`/`maxItems`/`minLength`/`minItems` above
//! [`GRAMMAR_MAX_REPETITION`], whose choice is checked against llama.cpp's guard, and
//! the extraction prompts state the list bound that replaces the long lists.

use serde_json::Value;
use tvir_judge::Part;
use tvir_rubric::{
    build_request, schema, AnswerSpec, RequestLabel, RubricSet, UnitInputs, EXTRACTION_MAX_ITEMS,
    GRAMMAR_MAX_REPETITION,
};

fn set() -> RubricSet {
    RubricSet::builtin().unwrap()
}

/// Every bounded repetition of `schema` (`maxLength`, `maxItems`, `minLength`,
/// `minItems`) with its path and bound.
fn repetitions(schema: &Value, path: &str, out: &mut Vec<(String, u64)>) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    for key in ["maxLength", "maxItems", "minLength", "minItems"] {
        if let Some(n) = obj.get(key) {
            out.push((format!("{path}.{key}"), n.as_u64().unwrap_or(u64::MAX)));
        }
    }
    for (k, v) in obj
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        repetitions(v, &format!("{path}.{k}"), out);
    }
    if let Some(items) = obj.get("items") {
        repetitions(items, &format!("{path}[]"), out);
    }
    for alt in obj
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        repetitions(alt, &format!("{path}|"), out);
    }
}

/// llama.cpp refuses a repetition needing this many rules or more
/// (`MAX_REPETITION_THRESHOLD` in `src/llama-grammar.cpp`).
const LLAMA_RULE_GUARD: u64 = 2000;

/// Rules llama-cpp-python's converter makes of one bound `n` (n nested optional
/// groups: 2n - 1 rules in the outermost one), the worse of the two converters
/// (llama-server's `x{0,n}` makes n).
fn llama_cpp_python_rules(n: u64) -> u64 {
    (2 * n).saturating_sub(1)
}

#[test]
fn every_schema_we_send_compiles_under_the_grammar_guard() {
    assert!(llama_cpp_python_rules(GRAMMAR_MAX_REPETITION) < LLAMA_RULE_GUARD);
    // The bound that killed the server: a 2000-character URL and 4000-character fact.
    assert!(llama_cpp_python_rules(2000) >= LLAMA_RULE_GUARD);
    let s = set();
    // Every rubric (extraction ones included) at checklist sizes from one item to
    // far more than a task has, and the vision probe of the judge client.
    let mut schemas: Vec<(String, Value)> = Vec::new();
    for rubric in s.rubrics() {
        for items in [1, 12, 200] {
            schemas.push((format!("{}({items})", rubric.id), schema(rubric, items)));
        }
    }
    // A custom issue-count table whose open band starts far past the ceiling.
    let mut flc = s.get("factual_logical_consistency").unwrap().clone();
    if let AnswerSpec::IssueCount { table, .. } = &mut flc.answer {
        let prev = table.len() - 2;
        table[prev].max = Some(4999);
        table.last_mut().unwrap().min = 5000;
    }
    schemas.push(("flc-open-at-5000".into(), schema(&flc, 0)));
    schemas.push(("vision_probe".into(), tvir_judge::vision::probe_schema()));
    let ids: Vec<&str> = schemas.iter().map(|(id, _)| id.as_str()).collect();
    for want in [
        "extract_facts(1)",
        "extract_references(1)",
        "citation_support(1)",
    ] {
        assert!(ids.contains(&want), "{want} not walked: {ids:?}");
    }
    let mut too_big = Vec::new();
    let mut seen = 0;
    for (id, sch) in &schemas {
        let mut reps = Vec::new();
        repetitions(sch, id, &mut reps);
        seen += reps.len();
        for (path, n) in reps {
            if n > GRAMMAR_MAX_REPETITION || llama_cpp_python_rules(n) >= LLAMA_RULE_GUARD {
                too_big.push(format!("{path} = {n}"));
            }
        }
    }
    assert!(seen > 50, "only {seen} bounds walked");
    assert!(
        too_big.is_empty(),
        "bounds a grammar server refuses: {too_big:?}"
    );
    // The open-band count still reaches 5000 (an enum, not a repetition).
    let flc_schema = &schemas
        .iter()
        .find(|(id, _)| id == "flc-open-at-5000")
        .unwrap()
        .1;
    assert_eq!(
        flc_schema["properties"]["total_issues"]["enum"]
            .as_array()
            .unwrap()
            .len(),
        5001
    );
}

#[test]
fn extraction_prompts_state_the_list_bound() {
    let s = set();
    for id in ["extract_facts", "extract_references"] {
        let rubric = s.get(id).unwrap();
        let inputs = UnitInputs {
            report_text: Some("Some text [1].".into()),
            ..Default::default()
        };
        let label = RequestLabel {
            report: "r",
            unit: "u",
            sample: 0,
        };
        let req = build_request(&s, rubric, &inputs, label).unwrap();
        let Part::Text { text } = &req.messages[1].parts[0] else {
            panic!()
        };
        let bound = format!("at most {EXTRACTION_MAX_ITEMS}");
        assert!(text.contains(&bound), "{id}: {text}");
    }
}
