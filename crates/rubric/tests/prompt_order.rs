//! `--prompt-order reference` (issue 36): every built-in rubric lays its request out
//! the reference evaluator's way, from the named blocks of its own template: the
//! instructions as the system message, the inputs in the reference's order as the
//! user message, the figure last. The judge reads the same text as under the default
//! layout; only where it stands changes (and the few words that say where: "the
//! sources above"). The default layout itself is checked byte for byte by the root
//! golden tests, which hash every prompt.

use std::collections::BTreeMap;

use tvir_judge::{JudgeRequest, Part, Role};
use tvir_rubric::fidelity::fixture_inputs;
use tvir_rubric::{
    build_request, AnswerSpec, PromptOrder, RequestLabel, Rubric, RubricSet, UnitInputs,
    REQUIRED_RUBRICS,
};

fn sets() -> (RubricSet, RubricSet) {
    let cached = RubricSet::builtin().unwrap();
    let mut reference = cached.clone();
    reference
        .use_prompt_order(PromptOrder::Reference)
        .expect("every built-in template has the blocks its layout names");
    (cached, reference)
}

fn request(set: &RubricSet, rubric: &Rubric, inputs: &UnitInputs) -> JudgeRequest {
    let label = RequestLabel {
        report: "r",
        unit: "u",
        sample: 0,
    };
    build_request(set, rubric, inputs, label).unwrap()
}

/// The text of the system message and of the user message, and the user message's
/// parts' kinds in order ("text" / "image").
fn texts(r: &JudgeRequest) -> (String, String, Vec<&'static str>) {
    let (mut system, mut user, mut kinds) = (String::new(), String::new(), Vec::new());
    for m in &r.messages {
        for p in &m.parts {
            let into = match m.role {
                Role::System => &mut system,
                Role::User => &mut user,
            };
            match p {
                Part::Text { text } => {
                    into.push_str(text);
                    into.push('\n');
                    if m.role == Role::User {
                        kinds.push("text");
                    }
                }
                Part::Image { .. } => kinds.push("image"),
            }
        }
    }
    (system, user, kinds)
}

/// The names of the `{% block NAME %}` tags of a template, in order.
fn block_names(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find("{% block ") {
        rest = &rest[i + "{% block ".len()..];
        let end = rest.find(' ').unwrap();
        out.push(rest[..end].to_string());
    }
    out
}

/// The two wordings of each `{% if prompt_order == "reference" %}A{% else %}B{% endif %}`
/// of a template: (A, B).
fn placement_words(template: &str) -> Vec<(String, String)> {
    const IF: &str = "{% if prompt_order == \"reference\" %}";
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find(IF) {
        rest = &rest[i + IF.len()..];
        let e = rest.find("{% else %}").unwrap();
        let f = rest.find("{% endif %}").unwrap();
        out.push((
            rest[..e].to_string(),
            rest[e + "{% else %}".len()..f].to_string(),
        ));
        rest = &rest[f..];
    }
    out
}

/// Word counts (letters and digits; punctuation and spacing ignored).
fn words(text: &str) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        *m.entry(w.to_string()).or_insert(0) += 1;
    }
    m
}

fn add(into: &mut BTreeMap<String, i64>, text: &str, sign: i64) {
    for (w, n) in words(text) {
        *into.entry(w).or_insert(0) += sign * n;
    }
    into.retain(|_, n| *n != 0);
}

/// The fixture inputs and two variants: no sources and no query; one checklist item,
/// the sources in reverse citation order and an empty caption.
fn input_variants() -> Vec<UnitInputs> {
    let base = fixture_inputs();
    let mut bare = base.clone();
    bare.sources.clear();
    bare.task_query = None;
    let mut other = base.clone();
    other.checklist.truncate(1);
    other.sources.reverse();
    other.caption = Some(String::new());
    vec![base, bare, other]
}

#[test]
fn every_builtin_rubric_has_a_reference_layout_naming_every_block_of_its_template() {
    let set = RubricSet::builtin().unwrap();
    let mut problems = Vec::new();
    for id in REQUIRED_RUBRICS {
        let rubric = set.get(id).unwrap();
        let Some(layout) = &rubric.layout.reference else {
            problems.push(format!("{id}: no [layout.reference]"));
            continue;
        };
        let mut in_template: Vec<String> = block_names(set.prompt(id).unwrap())
            .into_iter()
            .filter(|b| b != "system" && b != "user")
            .collect();
        let mut named: Vec<String> = layout.blocks().map(str::to_string).collect();
        in_template.sort();
        named.sort();
        if in_template != named {
            problems.push(format!(
                "{id}: template blocks {in_template:?}, layout names {named:?}"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_reference_layout_shows_the_same_text_with_only_placement_words_changed() {
    let (cached, reference) = sets();
    let mut checked = 0;
    for id in REQUIRED_RUBRICS {
        let rubric = cached.get(id).unwrap();
        let swaps = placement_words(cached.prompt(id).unwrap());
        for inputs in input_variants() {
            let Ok(c) = build_request(
                &cached,
                rubric,
                &inputs,
                RequestLabel {
                    report: "r",
                    unit: "u",
                    sample: 0,
                },
            ) else {
                continue; // an input this rubric requires is missing from the variant
            };
            let r = request(&reference, rubric, &inputs);
            let ((cs, cu, ck), (rs, ru, rk)) = (texts(&c), texts(&r));
            // The layouts differ (a setting that is ignored fails here).
            assert_ne!((&cs, &cu), (&rs, &ru), "{id}: the same layout");
            // The same words, once each placement wording is swapped for the other.
            let mut diff = words(&format!("{cs}\n{cu}"));
            add(&mut diff, &format!("{rs}\n{ru}"), -1);
            for (when_reference, when_cached) in &swaps {
                add(&mut diff, when_cached, -1);
                add(&mut diff, when_reference, 1);
            }
            assert!(diff.is_empty(), "{id}: words differ: {diff:?}\n{rs}\n{ru}");
            // A figure is attached after the text in both, the same one.
            assert_eq!(ck.contains(&"image"), rk.contains(&"image"), "{id}");
            if rk.contains(&"image") {
                assert_eq!(
                    rk,
                    vec!["text", "image"],
                    "{id}: the image ends the request"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked}");
}

/// What each rubric's user message holds under the reference's layout, in order (the
/// fixture's placeholders; the reference evaluator's order, as `docs/fidelity.md`'s
/// "prompt order" rows state it).
const USER_ORDER: [(&str, &[&str]); 13] = [
    ("citation_support", &["FIXTURE-FACT", "FIXTURE-PAGE"]),
    (
        "instruction_alignment",
        &[
            "FIXTURE-QUERY",
            "FIXTURE-ITEM-1",
            "FIXTURE-ITEM-2",
            "FIXTURE-REPORT",
        ],
    ),
    ("writing_quality", &["FIXTURE-REPORT"]),
    (
        "analytical_depth_breadth",
        &["FIXTURE-QUERY", "FIXTURE-REPORT"],
    ),
    ("factual_logical_consistency", &["FIXTURE-REPORT"]),
    ("multimodal_composition", &["FIXTURE-REPORT"]),
    // A short request, then the image.
    ("chart_quality", &["Look at the attached chart"]),
    ("figure_caption_quality", &["FIXTURE-CAPTION"]),
    ("figure_context_integration", &["FIXTURE-CONTEXT"]),
    (
        "chart_source_consistency",
        &["FIXTURE-CAPTION", "FIXTURE-PAGE"],
    ),
    ("fact_dedup", &["FIXTURE-FACT", "FIXTURE-OTHER"]),
    ("extract_references", &["FIXTURE-REPORT"]),
    ("extract_facts", &["FIXTURE-TITLE", "FIXTURE-REPORT"]),
];

#[test]
fn under_the_reference_layout_the_rubric_is_the_system_message_and_the_inputs_the_user_message() {
    let (cached, reference) = sets();
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut problems = Vec::new();
    for (id, order) in USER_ORDER {
        let rubric = reference.get(id).unwrap();
        let (system, user, _) = texts(&request(&reference, rubric, &fixture_inputs()));
        let (c_system, _, _) = texts(&request(&cached, rubric, &fixture_inputs()));
        if system.contains("FIXTURE-") {
            problems.push(format!("{id}: an input in the system message:\n{system}"));
        }
        let at: Vec<Option<usize>> = order.iter().map(|p| user.find(p)).collect();
        if at.iter().any(Option::is_none) || at.windows(2).any(|w| w[0] >= w[1]) {
            problems.push(format!("{id}: user message not {order:?}:\n{user}"));
        }
        // The rubric's own text (every label, dimension and anchor) is in the system
        // message, which the default's one-line system message is not.
        let mut guides: Vec<&str> = Vec::new();
        match &rubric.answer {
            AnswerSpec::Verdict { labels, .. } => {
                guides.extend(labels.iter().map(|l| l.guide.as_str()))
            }
            AnswerSpec::Dimensions { dimensions, .. } => {
                for d in dimensions {
                    guides.push(&d.guide);
                    guides.extend(d.anchors.iter().map(|a| a.says.as_str()));
                }
            }
            _ => {}
        }
        for g in guides.iter().filter(|g| !g.is_empty()) {
            if !squash(&system).contains(&squash(g)) {
                problems.push(format!("{id}: system message lacks {g:?}"));
            }
            if squash(&user).contains(&squash(g)) {
                problems.push(format!("{id}: user message holds {g:?}"));
            }
        }
        if !guides.is_empty()
            && guides
                .iter()
                .all(|g| squash(&c_system).contains(&squash(g)))
        {
            problems.push(format!(
                "{id}: the default system message holds the rubric too"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn an_override_template_without_a_named_block_fails_when_the_reference_order_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("writing_quality.j2");
    std::fs::write(
        &path,
        "{% block system %}Judge the writing.{% endblock %}\
         {% block user %}{{ report_text }}{% endblock %}",
    )
    .unwrap();
    let mut set = RubricSet::load(None, Some(dir.path())).unwrap();
    let err = set
        .use_prompt_order(PromptOrder::Reference)
        .unwrap_err()
        .to_string();
    assert!(err.contains("writing_quality.j2"), "{err}");
    assert!(
        err.contains("block `role`") && err.contains("layout.reference"),
        "{err}"
    );
    // The set keeps the layout it had.
    assert_eq!(set.prompt_order(), PromptOrder::Cached);
}
