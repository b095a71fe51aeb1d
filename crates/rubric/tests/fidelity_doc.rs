//! The fidelity table (issue 27): `docs/fidelity.md` is exactly what the rubric
//! files generate, and every row's checks hold on the built-in rubrics and prompts
//! (phrases of the prompt rendered for fixed inputs, rubric settings). The flags the
//! rows name are checked against `tvir eval --help` by the root `fidelity_flags` test.
//!
//! Regenerate the page after changing a row: `TVIR_FIDELITY_UPDATE=1 cargo test -p
//! tvir-rubric --test suite fidelity_doc::`, then review the diff of `docs/fidelity.md`.

use std::path::PathBuf;

use tvir_rubric::fidelity::{check_set, fixture_prompt, markdown, FidelityElement};
use tvir_rubric::{AnswerSpec, RubricSet, BUILTIN_METRICS, FACT_DEDUP};

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/fidelity.md")
}

#[test]
fn every_row_holds_on_the_builtin_rubrics_and_prompts() {
    let set = RubricSet::builtin().unwrap();
    let problems = check_set(&set);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_judged_metric_and_fact_dedup_has_rows_for_the_core_elements() {
    let set = RubricSet::builtin().unwrap();
    let mut missing = Vec::new();
    for id in BUILTIN_METRICS.iter().chain([&FACT_DEDUP]) {
        let rubric = set.get(id).unwrap();
        let has = |e: FidelityElement| rubric.fidelity.iter().any(|r| r.element == e);
        let mut needed = vec![FidelityElement::Scale, FidelityElement::Criteria];
        if *id != FACT_DEDUP {
            needed.extend([FidelityElement::Inputs, FidelityElement::PromptOrder]);
        }
        for e in needed {
            if !has(e) {
                missing.push(format!("{id}: {e}"));
            }
        }
    }
    assert!(missing.is_empty(), "rows missing: {missing:?}");
}

/// Every anchor, every band-rule case and every verdict guide the rubric data
/// declares is in the rendered prompt, so no band can be declared and not shown.
#[test]
fn every_declared_band_and_anchor_is_in_the_prompt() {
    let set = RubricSet::builtin().unwrap();
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut missing = Vec::new();
    let mut anchors = 0;
    for rubric in set.rubrics() {
        let prompt = squash(&fixture_prompt(&set, rubric).unwrap());
        let mut want = Vec::new();
        match &rubric.answer {
            AnswerSpec::Dimensions {
                dimensions,
                band_rule,
                ..
            } => {
                for d in dimensions {
                    want.push(d.guide.clone());
                    for a in &d.anchors {
                        want.push(format!("{}: {}", a.band, a.says));
                        anchors += 1;
                    }
                }
                if let Some(rule) = band_rule {
                    for c in &rule.rules {
                        want.push(format!("{}: {}-{}", c.says, c.band[0], c.band[1]));
                    }
                    for c in &rule.counts {
                        want.push(format!("`{}`", c.name));
                    }
                    want.push(format!("`{}`", rule.class_field));
                }
            }
            AnswerSpec::Verdict { labels, .. } => {
                for l in labels {
                    want.push(format!("{}: {}", l.label, l.guide));
                }
            }
            _ => {}
        }
        for w in want {
            if !w.is_empty() && !prompt.contains(&squash(&w)) {
                missing.push(format!("{}: {w}", rubric.id));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in the prompt:\n{}",
        missing.join("\n")
    );
    // WQ 4, ADB 5, MC 1, FCQ 3, FCI 3 dimensions with five bands each.
    assert_eq!(anchors, 16 * 5);
}

#[test]
fn the_committed_page_is_the_generated_one() {
    let set = RubricSet::builtin().unwrap();
    let generated = markdown(&set);
    let path = doc_path();
    if std::env::var_os("TVIR_FIDELITY_UPDATE").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/fidelity.md differs from what the rubric files generate; run \
         TVIR_FIDELITY_UPDATE=1 cargo test -p tvir-rubric --test suite fidelity_doc::"
    );
}
