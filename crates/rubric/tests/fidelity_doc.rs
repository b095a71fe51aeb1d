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

/// Score caps the text states: "at most N" / "no more than N" / "capped at N" with
/// N a score (1-10) and not a count of characters, items or issues.
fn score_caps(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let mut caps = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let lead = match (*w, words.get(i + 1).copied()) {
            ("at", Some("most")) | ("no", Some("more")) | ("capped", Some("at")) => i + 2,
            _ => continue,
        };
        let lead = if words.get(lead) == Some(&"than") {
            lead + 1
        } else {
            lead
        };
        let Some(n) = words.get(lead) else { continue };
        let digits: String = n.chars().take_while(char::is_ascii_digit).collect();
        let Ok(v) = digits.parse::<u32>() else {
            continue;
        };
        let unit = words.get(lead + 1).copied().unwrap_or("");
        let counted = [
            "character",
            "word",
            "item",
            "issue",
            "listed",
            "sentence",
            "fact",
        ]
        .iter()
        .any(|u| unit.starts_with(u));
        if (1..=10).contains(&v) && !counted {
            caps.push(words[i..=lead].join(" "));
        }
    }
    caps
}

/// The bands `N-M` a text names (`3-4`, `9-10`).
fn bands_named(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|t| {
            let mut p = t.split('-');
            matches!(
                (p.next(), p.next(), p.next()),
                (Some(a), Some(b), None)
                    if a.parse::<u32>().is_ok_and(|a| (1..=10).contains(&a))
                        && b.parse::<u32>().is_ok_and(|b| (1..=10).contains(&b))
            )
        })
        .map(str::to_string)
        .collect()
}

/// Where a rubric's text and its fidelity rows can be compared mechanically, they
/// agree (issue 36, requirement 3):
/// - a score cap in the rendered prompt ("at most 4") is named by one of the
///   rubric's rows, and a rubric whose row says it has no cap has none in its prompt;
/// - every band a `bands` or `anchors` row names exists in the rubric (an anchor or
///   a band-rule case), and a row saying "five bands" matches five anchors on every
///   dimension;
/// - every zero rule of the rubric (`[rules]`, a unit settled at a score without a
///   call) is checked by a row's `settings` with the same value, and a row that
///   says a unit is settled at 0 names such a rule.
#[test]
fn caps_bands_and_zero_rules_agree_with_the_rows() {
    let set = RubricSet::builtin().unwrap();
    let mut problems = Vec::new();
    let mut checked = (0, 0, 0);
    for rubric in set.rubrics() {
        let prompt = fixture_prompt(&set, rubric).unwrap();
        let rows_text: String = rubric
            .fidelity
            .iter()
            .map(|r| format!("{} {} ", r.ours, r.why))
            .collect::<String>()
            .to_lowercase();
        let caps = score_caps(&prompt);
        for cap in &caps {
            checked.0 += 1;
            if !rows_text.contains(cap.as_str()) {
                problems.push(format!(
                    "{}: the prompt caps a score ({cap}) that no row names",
                    rubric.id
                ));
            }
        }
        let says_no_cap = rubric
            .fidelity
            .iter()
            .any(|r| r.ours.to_lowercase().contains("no cap"));
        if says_no_cap && !caps.is_empty() {
            problems.push(format!(
                "{}: a row says there is no cap, the prompt has {caps:?}",
                rubric.id
            ));
        }
        let mut declared: Vec<String> = Vec::new();
        if let AnswerSpec::Dimensions {
            dimensions,
            band_rule,
            ..
        } = &rubric.answer
        {
            for d in dimensions {
                declared.extend(d.anchors.iter().map(|a| a.band.clone()));
            }
            if let Some(rule) = band_rule {
                declared.extend(
                    rule.rules
                        .iter()
                        .map(|c| format!("{}-{}", c.band[0], c.band[1])),
                );
            }
            for row in &rubric.fidelity {
                if !matches!(
                    row.element,
                    FidelityElement::Bands | FidelityElement::Anchors
                ) {
                    continue;
                }
                for band in bands_named(&row.ours) {
                    checked.1 += 1;
                    if !declared.contains(&band) {
                        problems.push(format!(
                            "{} / {}: the row names band {band}, the rubric declares {declared:?}",
                            rubric.id, row.element
                        ));
                    }
                }
                if row.ours.to_lowercase().contains("five bands")
                    || row.ours.to_lowercase().contains("five written bands")
                {
                    for d in dimensions.iter().filter(|d| !d.anchors.is_empty()) {
                        checked.1 += 1;
                        if d.anchors.len() != 5 {
                            problems.push(format!(
                                "{} / {}: the row says five bands, {} has {}",
                                rubric.id,
                                row.element,
                                d.key,
                                d.anchors.len()
                            ));
                        }
                    }
                }
            }
        }
        let in_settings = |key: &str, value: f64| {
            rubric.fidelity.iter().any(|r| {
                r.settings
                    .get(&format!("rules.{key}"))
                    .and_then(|v| v.as_f64())
                    .is_some_and(|v| v == value)
            })
        };
        for (key, value) in &rubric.rules {
            checked.2 += 1;
            if !in_settings(key, *value) {
                problems.push(format!(
                    "{}: zero rule `{key}` = {value} is checked by no row's settings",
                    rubric.id
                ));
            }
        }
        for row in &rubric.fidelity {
            let ours = row.ours.to_lowercase();
            if (ours.contains("settled at 0") || ours.contains("0 without a call"))
                && !row.settings.keys().any(|k| k.starts_with("rules."))
            {
                problems.push(format!(
                    "{} / {}: the row settles a unit at 0 but checks no rule",
                    rubric.id, row.element
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Something of each kind was compared.
    assert!(checked.1 > 0 && checked.2 > 0, "{checked:?}");
}

#[test]
fn the_mechanical_checks_catch_a_cap_and_an_unknown_band() {
    // A cap the FCI rubric once had, and bands in a row's text.
    assert_eq!(
        score_caps(
            "A figure the text never refers to scores at most 4 here; at most 800 characters."
        ),
        ["at most 4"]
    );
    assert_eq!(
        bands_named("the 3-4 anchor, not 2018-2023; 9-10 too"),
        ["3-4", "9-10"]
    );
}
