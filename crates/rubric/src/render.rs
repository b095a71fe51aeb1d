//! One unit's judge request ([`build_request`]): the rubric's prompt template
//! rendered into system and user text (compiled once per process, given the inputs
//! the rubric declares), laid out by `--prompt-order` (the template's own `system`
//! and `user` blocks, or the named blocks a rubric's `[layout.reference]` lists for
//! each message), the figure after the text, and the answer schema.

use serde_json::Value;

use crate::engine::{
    schema, truncate_chars, ChecklistItem, SourceText, UnitInputs, EXTRACTION_MAX_ITEMS,
};
use crate::{InputKind, PromptOrder, Rubric, RubricError, RubricSet};
use tvir_judge::{JudgeRequest, Message, Part, Role};

/// One request's template context: the rubric's prepared value (see
/// [`Prepared`]) and the unit's inputs, borrowed. Each field has the type the JSON
/// context of earlier versions gave the template (strings, `none`, unsigned
/// numbers, booleans, lists of maps), so every prompt renders to the same bytes
/// (`tests::the_prepared_context_renders_what_the_json_context_did`, and the root
/// golden tests, which hash every prompt).
#[derive(serde::Serialize)]
struct Context<'a> {
    rubric: &'a minijinja::Value,
    report_text: Option<std::borrow::Cow<'a, str>>,
    task_query: Option<&'a str>,
    checklist: Vec<ChecklistEntry<'a>>,
    fact: Option<&'a str>,
    other_fact: Option<&'a str>,
    sources: Vec<SourceEntry<'a>>,
    caption: Option<&'a str>,
    context: Option<&'a str>,
    chart_data: Option<&'a str>,
    has_image: bool,
    /// The list bound of an extraction answer, stated in its prompt.
    max_items: u64,
    /// The layout (`cached` or `reference`): a template words where things are
    /// ("the sources above") by it.
    prompt_order: &'static str,
}

#[derive(serde::Serialize)]
struct ChecklistEntry<'a> {
    n: u64,
    section: &'a str,
    item: &'a str,
}

#[derive(serde::Serialize)]
struct SourceEntry<'a> {
    idx: &'a str,
    url: Option<&'a str>,
    title: Option<&'a str>,
    text: &'a str,
    available: bool,
}

fn render_context<'a>(
    rubric: &Rubric,
    rubric_value: &'a minijinja::Value,
    inputs: &'a UnitInputs,
    order: PromptOrder,
) -> Context<'a> {
    let needs = |k| rubric.needs(k);
    let given = |k, v: &'a Option<String>| v.as_deref().filter(|_| needs(k));
    let sources = if needs(InputKind::Sources) {
        // Shown as given: the engine fits pages to `max_source_chars`, the run's
        // caps and the judge's context window, and records each cut.
        inputs
            .sources
            .iter()
            .map(|s| SourceEntry {
                idx: &s.idx,
                url: s.url.as_deref(),
                title: s.title.as_deref(),
                text: &s.text,
                available: !s.text.trim().is_empty(),
            })
            .collect()
    } else {
        Vec::new()
    };
    let checklist = if needs(InputKind::Checklist) {
        (1..)
            .zip(&inputs.checklist)
            .map(|(n, c)| ChecklistEntry {
                n,
                section: &c.section,
                item: &c.item,
            })
            .collect()
    } else {
        Vec::new()
    };
    Context {
        rubric: rubric_value,
        report_text: given(InputKind::ReportText, &inputs.report_text).map(|t| {
            match rubric.max_report_chars {
                Some(max) if t.chars().count() > max => {
                    std::borrow::Cow::Owned(truncate_chars(t, Some(max)))
                }
                _ => std::borrow::Cow::Borrowed(t),
            }
        }),
        task_query: given(InputKind::TaskQuery, &inputs.task_query),
        checklist,
        fact: given(InputKind::Fact, &inputs.fact),
        other_fact: given(InputKind::OtherFact, &inputs.other_fact),
        sources,
        caption: given(InputKind::Caption, &inputs.caption),
        context: given(InputKind::Context, &inputs.context),
        chart_data: given(InputKind::ChartData, &inputs.chart_data),
        has_image: needs(InputKind::FigureImage) && inputs.figure_image.is_some(),
        max_items: EXTRACTION_MAX_ITEMS,
        prompt_order: order.name(),
    }
}

/// The rubric as its templates see it (`rubric` in the context): its JSON form
/// turned into a template value. Built once per rubric of a [`RubricSet`] (it was
/// a quarter of a cached run's CPU when built for every request), and for a rubric
/// that is not the set's own (changed by the caller) on each call.
pub(crate) fn rubric_value(rubric: &Rubric) -> minijinja::Value {
    minijinja::Value::from_serialize(serde_json::to_value(rubric).unwrap_or(Value::Null))
}

/// What a [`RubricSet`] prepares once per rubric for rendering its requests: the
/// rubric's template value and its compiled template.
#[derive(Clone)]
pub(crate) struct Prepared {
    rubric: minijinja::Value,
    env: std::sync::Arc<minijinja::Environment<'static>>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prepared { .. }")
    }
}

impl Prepared {
    /// None when the template does not compile (rendering then reports it).
    pub(crate) fn new(rubric: &Rubric, template: &str) -> Option<Self> {
        Some(Self {
            rubric: rubric_value(rubric),
            env: compiled(template).ok()?,
        })
    }
}

/// The template compiled once per process (a run renders each of its few templates
/// thousands of times; compiling was a third of a render).
fn compiled(
    template: &str,
) -> Result<std::sync::Arc<minijinja::Environment<'static>>, minijinja::Error> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Compiled = HashMap<String, Arc<minijinja::Environment<'static>>>;
    static COMPILED: OnceLock<Mutex<Compiled>> = OnceLock::new();
    let cache = COMPILED.get_or_init(Default::default);
    if let Some(env) = cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(template)
    {
        return Ok(env.clone());
    }
    fn environment<'s>(source: &'s str) -> Result<minijinja::Environment<'s>, minijinja::Error> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.add_template("prompt", source)?;
        Ok(env)
    }
    // A template that does not compile is reported (and never kept).
    environment(template)?;
    // The source must outlive the environment: each distinct template text that
    // compiles is leaked once, and kept for the life of the process like its
    // compiled form.
    let source: &'static str = Box::leak(template.to_string().into_boxed_str());
    let env = Arc::new(environment(source)?);
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(template.to_string(), env.clone());
    Ok(env)
}

/// The system and user text of one request. Under the template's own layout
/// (`cached`, or a rubric without a layout for `order`) they are its `system` and
/// `user` blocks; otherwise each message is the layout's named blocks, each rendered
/// on its own, trimmed, and joined with a blank line (an empty block is left out).
///
/// `prepared` is the set's preparation of this very rubric and template, when the
/// caller has it; without it both are prepared here.
pub(crate) fn render(
    rubric: &Rubric,
    template: &str,
    prepared: Option<&Prepared>,
    inputs: &UnitInputs,
    order: PromptOrder,
) -> Result<(String, String), RubricError> {
    let terr = |e: minijinja::Error| RubricError::Template {
        id: rubric.id.clone(),
        message: format!("{e:#}"),
    };
    let fresh;
    let (value, env) = match prepared {
        Some(p) => (&p.rubric, p.env.clone()),
        None => {
            fresh = rubric_value(rubric);
            (&fresh, compiled(template).map_err(terr)?)
        }
    };
    let tmpl = env.get_template("prompt").map_err(terr)?;
    let layout = rubric.layout_for(order);
    let mut captured = tmpl
        .render_captured(render_context(rubric, value, inputs, order))
        .map_err(terr)?;
    let (system, user) = captured.with_state_mut(|state| {
        let mut message = |blocks: &[&str]| -> Result<String, minijinja::Error> {
            let mut parts = Vec::with_capacity(blocks.len());
            for b in blocks {
                let text = state.render_block(b).map_err(|e| {
                    if e.kind() == minijinja::ErrorKind::UnknownBlock && layout.is_some() {
                        let what = format!(
                            "the template has no block `{b}`, which the rubric's `layout.{}` names",
                            order.name()
                        );
                        minijinja::Error::new(minijinja::ErrorKind::UnknownBlock, what)
                    } else {
                        e
                    }
                })?;
                let text = text.trim();
                if !text.is_empty() {
                    parts.push(text.to_string());
                }
            }
            Ok(parts.join("\n\n"))
        };
        match layout {
            None => (message(&["system"]), message(&["user"])),
            Some(l) => {
                let system: Vec<&str> = l.system.iter().map(String::as_str).collect();
                let user: Vec<&str> = l.user.iter().map(String::as_str).collect();
                (message(&system), message(&user))
            }
        }
    });
    Ok((system.map_err(terr)?, user.map_err(terr)?))
}

/// Render a template once with placeholder inputs, laid out by `order` (start-up
/// check).
pub(crate) fn check_template(
    rubric: &Rubric,
    template: &str,
    order: PromptOrder,
) -> Result<(), RubricError> {
    let placeholder = UnitInputs {
        report_text: Some("r".into()),
        task_query: Some("q".into()),
        checklist: vec![ChecklistItem {
            section: "s".into(),
            item: "i".into(),
        }],
        fact: Some("f".into()),
        other_fact: Some("g".into()),
        sources: vec![SourceText {
            idx: "1".into(),
            url: None,
            title: None,
            text: "t".into(),
        }],
        figure_image: Some("data:image/png;base64,".into()),
        caption: Some("c".into()),
        context: Some("x".into()),
        chart_data: Some("{}".into()),
    };
    render(rubric, template, None, &placeholder, order).map(|_| ())
}

/// Identifies a request for accounting and the journal.
#[derive(Debug, Clone)]
pub struct RequestLabel<'a> {
    pub report: &'a str,
    pub unit: &'a str,
    pub sample: u32,
}

/// Build the judge request of one unit. Vision rubrics attach the figure image
/// after the text; a missing required input is an error (the planner decides rules
/// such as "missing caption -> 0" before asking).
pub fn build_request(
    set: &RubricSet,
    rubric: &Rubric,
    inputs: &UnitInputs,
    label: RequestLabel<'_>,
) -> Result<JudgeRequest, RubricError> {
    let missing = |what: &str| RubricError::Template {
        id: rubric.id.clone(),
        message: format!("unit {} lacks required input `{what}`", label.unit),
    };
    for input in &rubric.inputs {
        let present = match input {
            InputKind::ReportText => inputs.report_text.is_some(),
            InputKind::TaskQuery => inputs.task_query.is_some(),
            InputKind::Checklist => !inputs.checklist.is_empty(),
            InputKind::Fact => inputs.fact.is_some(),
            InputKind::OtherFact => inputs.other_fact.is_some(),
            InputKind::Sources => true,
            InputKind::FigureImage => inputs.figure_image.is_some(),
            InputKind::Caption => inputs.caption.is_some(),
            InputKind::Context => inputs.context.is_some(),
            InputKind::ChartData => inputs.chart_data.is_some(),
        };
        if !present {
            return Err(missing(&format!("{input:?}")));
        }
    }
    let (system, user) = render(
        rubric,
        set.prompt(&rubric.id)?,
        set.prepared(rubric),
        inputs,
        set.prompt_order(),
    )?;
    let mut parts = vec![Part::Text { text: user }];
    if rubric.is_vision() {
        if let Some(uri) = &inputs.figure_image {
            parts.push(Part::Image {
                data_uri: uri.clone(),
            });
        }
    }
    Ok(JudgeRequest {
        metric: rubric.id.clone(),
        report: label.report.to_string(),
        unit: label.unit.to_string(),
        messages: vec![
            Message {
                role: Role::System,
                parts: vec![Part::Text { text: system }],
            },
            Message {
                role: Role::User,
                parts,
            },
        ],
        schema: schema(rubric, inputs.checklist.len()),
        sample: label.sample,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The context as earlier versions built it for every request: one JSON value
    /// holding the whole rubric and the inputs, turned into a template value.
    fn json_context(rubric: &Rubric, inputs: &UnitInputs, order: PromptOrder) -> Value {
        use serde_json::json;
        let needs = |k| rubric.needs(k);
        let sources: Vec<Value> = inputs
            .sources
            .iter()
            .map(|s| {
                json!({"idx": s.idx, "url": s.url, "title": s.title, "text": s.text,
                       "available": !s.text.trim().is_empty()})
            })
            .collect();
        let checklist: Vec<Value> = inputs
            .checklist
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"n": i + 1, "section": c.section, "item": c.item}))
            .collect();
        json!({
            "rubric": rubric,
            "report_text": needs(InputKind::ReportText)
                .then(|| inputs.report_text.as_deref().map(|t| truncate_chars(t, rubric.max_report_chars))),
            "task_query": needs(InputKind::TaskQuery).then(|| inputs.task_query.clone()),
            "checklist": if needs(InputKind::Checklist) { checklist } else { Vec::new() },
            "fact": needs(InputKind::Fact).then(|| inputs.fact.clone()),
            "other_fact": needs(InputKind::OtherFact).then(|| inputs.other_fact.clone()),
            "sources": if needs(InputKind::Sources) { sources } else { Vec::new() },
            "caption": needs(InputKind::Caption).then(|| inputs.caption.clone()),
            "context": needs(InputKind::Context).then(|| inputs.context.clone()),
            "chart_data": needs(InputKind::ChartData).then(|| inputs.chart_data.clone()),
            "has_image": needs(InputKind::FigureImage) && inputs.figure_image.is_some(),
            "max_items": EXTRACTION_MAX_ITEMS,
            "prompt_order": order.name(),
        })
    }

    /// Every block of `template` rendered with `ctx`, by name.
    fn blocks(template: &str, ctx: minijinja::Value) -> Vec<(String, String)> {
        let env = compiled(template).unwrap();
        let tmpl = env.get_template("prompt").unwrap();
        let names: Vec<String> = tmpl
            .source()
            .split("{% block ")
            .skip(1)
            .filter_map(|b| b.split_whitespace().next().map(str::to_string))
            .collect();
        assert!(names.len() >= 2, "{names:?}");
        let mut captured = tmpl.render_captured(ctx).unwrap();
        let body = captured.output().to_string();
        let mut out = vec![("(whole)".to_string(), body)];
        captured.with_state_mut(|state| {
            for n in names {
                let text = state.render_block(&n).unwrap();
                out.push((n, text));
            }
        });
        out
    }

    /// The prepared context (the rubric's value made once, the inputs borrowed)
    /// renders every block of every built-in template to the same bytes as the
    /// per-request JSON context did: with every input, with none, with inputs a
    /// rubric does not take, with an unreadable page, and with a report text cut at
    /// the rubric's limit.
    #[test]
    fn the_prepared_context_renders_what_the_json_context_did() {
        let full = crate::fidelity::fixture_inputs();
        let mut long = full.clone();
        long.report_text = Some("Ünïcode word. ".repeat(20_000));
        long.checklist.extend((0..12).map(|i| ChecklistItem {
            section: format!("S{i}"),
            item: format!("item {i} with \"quotes\" and <tags>"),
        }));
        long.sources[1].text = "   \n ".into();
        let inputs = [full, UnitInputs::default(), long];
        let set = RubricSet::builtin().unwrap();
        let mut compared = 0;
        for rubric in set.rubrics() {
            let template = set.prompt(&rubric.id).unwrap();
            let prepared = set
                .prepared(rubric)
                .expect("the set prepares its own rubrics");
            for order in [PromptOrder::Cached, PromptOrder::Reference] {
                for input in &inputs {
                    let new = minijinja::Value::from_serialize(render_context(
                        rubric,
                        &prepared.rubric,
                        input,
                        order,
                    ));
                    let old = minijinja::Value::from_serialize(json_context(rubric, input, order));
                    assert_eq!(
                        blocks(template, new),
                        blocks(template, old),
                        "{} {order:?}",
                        rubric.id
                    );
                    compared += 1;
                }
            }
        }
        assert!(compared >= 13 * 6, "{compared}");
    }

    /// A rubric the caller changed is not the set's: it is rendered from its own
    /// value, not the prepared one.
    #[test]
    fn a_changed_rubric_is_rendered_from_itself() {
        let set = RubricSet::builtin().unwrap();
        let own = set.get("writing_quality").unwrap();
        assert!(set.prepared(own).is_some());
        assert!(
            set.prepared(&own.clone()).is_some(),
            "an equal rubric is the set's"
        );
        let mut changed = own.clone();
        let crate::AnswerSpec::Dimensions { max, .. } = &mut changed.answer else {
            panic!("writing_quality scores dimensions")
        };
        *max += 1;
        assert!(set.prepared(&changed).is_none());
        let inputs = crate::fidelity::fixture_inputs();
        let label = || RequestLabel {
            report: "r",
            unit: "u",
            sample: 0,
        };
        let text = |r: &JudgeRequest| serde_json::to_string(&r.messages).unwrap();
        let before = text(&build_request(&set, own, &inputs, label()).unwrap());
        let after = text(&build_request(&set, &changed, &inputs, label()).unwrap());
        assert_ne!(before, after, "the changed scale shows in the prompt");
        let mut replaced = set.clone();
        replaced.replace_rubric(changed.clone());
        let again = text(&build_request(&replaced, &changed, &inputs, label()).unwrap());
        assert_eq!(after, again);
        assert!(replaced.prepared(&changed).is_some());
    }

    #[test]
    fn vision_request_carries_the_image_and_only_declared_inputs() {
        let s = RubricSet::builtin().unwrap();
        let fci = s.get("figure_context_integration").unwrap();
        let inputs = UnitInputs {
            figure_image: Some("data:image/png;base64,AAAA".into()),
            context: Some("Figure 2 shows growth.".into()),
            fact: Some("SHOULD NOT APPEAR".into()),
            ..Default::default()
        };
        let req = build_request(
            &s,
            fci,
            &inputs,
            RequestLabel {
                report: "sys/1",
                unit: "figure:1",
                sample: 0,
            },
        )
        .unwrap();
        let user = &req.messages[1].parts;
        assert!(matches!(&user[1], Part::Image { data_uri } if data_uri.ends_with("AAAA")));
        let Part::Text { text } = &user[0] else {
            panic!()
        };
        assert!(text.contains("Figure 2 shows growth."));
        assert!(!text.contains("SHOULD NOT APPEAR"));
        let no_image = UnitInputs {
            context: Some("c".into()),
            ..Default::default()
        };
        let label = RequestLabel {
            report: "r",
            unit: "u",
            sample: 0,
        };
        assert!(build_request(&s, fci, &no_image, label).is_err());
    }
}
