//! The generic planner: the units of a rubric built from its declarations alone
//! (`unit`, `inputs`, `[rules]`, `reads`), with no code per metric.
//!
//! For one report and one judge sample, [`Engine::plan_units`] turns a rubric into
//! its units: one per report, one per checklist item (one call for all), or one per
//! figure / chart / image figure. Each unit
//! is either settled by a declared rule (no call) or asked of the judge with the
//! inputs the rubric reads. The settle rules, checked in this order:
//!
//! | rule | unit kinds | when |
//! | --- | --- | --- |
//! | `invalid_visual` | figure, chart, image | the figure's file is missing, broken or undecodable (always applied: a blanked figure cannot be shown; score 0 unless declared) |
//! | (skipped) | figure, chart, image | the figure was not fetched in this run: the unit is skipped, not scored |
//! | `missing_caption` | figure, chart, image | reads `caption` and the caption is empty |
//! | `missing_context` | figure, chart, image | reads `context` and the context is empty |
//! | `no_usable_source` | figure, chart, image, fact | reads `sources` and the figure cites none, or none could be read (for a chart: only under `--csc-unreadable zero`; by default, as the reference, the judge is asked with each unreadable page's fetch error as its text); a fact whose every citation is unusable by nature (a marker naming no entry, an uploaded file), before any fetch (`no_source_text` stands in when only it is declared) |
//! | (failed) | fact, figure, chart | reads `sources`, none could be read, and the run reached no server at all ("no network: ...", see [`crate::network`]) or a cited page is `unavailable` (offline and not in the cache or the sources file: "cited page not available in this run ...") |
//! | `no_valid_figure` | report | the report has no figure typed image or chart (broken figures still count, as in the reference; skipped instead when no figure is usable and some was not fetched, or when only charts drawn by script that were not rendered stand for figures) |
//! | `no_task` | report, checklist | reads `task_query` and the report matches no task (without the rule: the unit fails) |
//!
//! A rule that is not declared does not settle (except `invalid_visual`): the judge
//! is asked with the input as it is. The special steps (caption revision from
//! `figure_caption_quality`, fact de-duplication before `citation_support`, image
//! quality from pixels) stay in
//! [`crate::run`], each in one place; [`Engine::plan_units`] covers every other
//! rubric, built-in or added through `--rubrics DIR`.

use serde_json::{json, Value};

use std::collections::BTreeMap;

use crate::engine::Engine;
use crate::evidence::{Evidence, FigureEvidence};
use crate::fit::{SourceCut, UnitLabel};
use crate::input::Task;
use crate::outcome::{JudgedUnits, Outcome, PENDING_REASON};
use crate::record::{UnitRecord, UsageRecord};
use crate::settings::{Settle, Unread, UnreadableSources};

/// One unit with the usage of its judge answer.
pub(super) type JudgedUnit = (UnitRecord, Option<UsageRecord>);
use tvir_report::{Figure, FigureKind, Report};
use tvir_rubric::{
    dimension_scores, split_items, InputKind, PromptOrder, Rubric, SourceText, UnitInputs, UnitKind,
};

/// Rubrics whose units are built by a named step of the pipeline instead of the
/// generic planner (and why): caption revision, fact de-duplication.
pub const NAMED_STEPS: [&str; 1] = [
    // Caption revision: its answers give the revised captions.
    tvir_rubric::CAPTION_REVISION,
];

/// Whether the generic planner builds this rubric's units.
pub fn planned_generically(rubric: &Rubric) -> bool {
    rubric.is_metric() && !NAMED_STEPS.contains(&rubric.id.as_str())
}

/// What a report's units are planned from.
#[derive(Clone)]
pub(super) struct PlanContext<'a> {
    pub report: &'a Report,
    pub ev: &'a Evidence,
    pub task: Option<&'a Task>,
    pub label: &'a str,
    pub sample: u32,
    /// Fact de-duplication, once done (fact-level rubrics wait for it).
    pub dedup: Option<&'a Dedup>,
}

/// The result of the fact de-duplication step for one report and sample.
pub(super) struct Dedup {
    /// The `fact_dedup` units (judged pairs).
    pub units: JudgedUnits,
    /// Some pair waits for a batch wave: which facts survive is not known yet.
    pub pending: bool,
    /// For each fact, the fact it was merged into.
    pub dup_of: Vec<Option<usize>>,
    /// Every pair decision: (fact i, fact j, duplicate, decided by).
    pub decisions: Vec<(usize, usize, bool, &'static str)>,
}

impl Dedup {
    /// The decisions of the pairs fact `i` forms with later facts, each pair once in
    /// the whole report (in its first fact's detail, not in both: listing every pair
    /// in each of its facts grew with the square of the facts): later fact numbers
    /// by decision (`merged`, `kept`) and by what decided it (`prefilter`, `judge`,
    /// ...). Pair `(i, j)`'s unit, when judged, is `pair:{i}:{j}`.
    fn detail(&self, i: usize) -> Value {
        let mut out = serde_json::Map::new();
        for &(a, b, dup, by) in &self.decisions {
            let (first, other) = (a.min(b), a.max(b));
            if first != i {
                continue;
            }
            let decision = out
                .entry(if dup { "merged" } else { "kept" })
                .or_insert_with(|| json!({}));
            if let Some(list) = decision
                .as_object_mut()
                .map(|m| m.entry(by).or_insert_with(|| json!([])))
                .and_then(Value::as_array_mut)
            {
                list.push(json!(other + 1));
            }
        }
        Value::Object(out)
    }
}

impl Engine {
    /// Every unit of `rubric` for one report and sample; `text` is the report text
    /// the rubric reads (blanked, or with revised captions).
    pub(super) async fn plan_units(
        &self,
        rubric: &Rubric,
        ctx: &PlanContext<'_>,
        text: &str,
    ) -> JudgedUnits {
        match rubric.unit {
            UnitKind::Report => vec![self.plan_report_unit(rubric, ctx, text).await],
            UnitKind::Checklist => self.plan_checklist_units(rubric, ctx, text).await,
            UnitKind::Fact => self.plan_fact_units(rubric, ctx).await,
            UnitKind::Figure | UnitKind::Chart | UnitKind::Image => {
                self.plan_figure_units(rubric, ctx).await
            }
            // Refused at start-up for rubrics the generic planner builds.
            other => vec![self.unit_from(
                &rubric.id,
                other.name().into(),
                Outcome::Failed(format!(
                    "unit kind `{}` is not planned generically",
                    other.name()
                )),
                json!({}),
            )],
        }
    }

    async fn plan_report_unit(
        &self,
        rubric: &Rubric,
        ctx: &PlanContext<'_>,
        text: &str,
    ) -> (
        crate::record::UnitRecord,
        Option<crate::record::UsageRecord>,
    ) {
        let unit = "report";
        if rubric.rules.contains_key("no_valid_figure") {
            // As the reference: 0 only when the report has no figure typed image or
            // chart; a report whose figures are all broken is judged on its text
            // (the broken ones blanked).
            let any_typed = ctx
                .report
                .figures
                .iter()
                .any(|f| matches!(f.kind, FigureKind::Image | FigureKind::Chart));
            let any_valid = ctx.ev.figures.iter().any(|e| e.usable());
            let any_unavailable = ctx.ev.figures.iter().any(|e| e.unavailable.is_some());
            if any_typed && !any_valid && any_unavailable {
                // Whether those figures are there is unknown in this run: judging
                // the text with them blanked would put our failure in the score.
                return self.unit_from(
                    &rubric.id,
                    unit.into(),
                    Outcome::Skipped("no valid figure, some not fetched in this run".into()),
                    json!({}),
                );
            }
            // Charts a script draws that were not rendered: no figure is not the
            // report's fault.
            if let (false, Some(u)) = (any_typed, ctx.ev.unrendered.first()) {
                let reason = format!(
                    "no figure; {} chart(s) drawn by script not evaluated: {}",
                    ctx.ev.unrendered.len(),
                    u.reason
                );
                return self.unit_from(
                    &rubric.id,
                    unit.into(),
                    Outcome::Skipped(reason),
                    json!({}),
                );
            }
            if !any_typed {
                return self.rule_unit(
                    &rubric.id,
                    unit.into(),
                    "no_valid_figure",
                    "report has no image or chart".into(),
                    json!({}),
                );
            }
        }
        if rubric.needs(InputKind::TaskQuery) && ctx.task.is_none() {
            let reason = no_task_reason(ctx.label);
            if rubric.rules.contains_key("no_task") {
                return self.rule_unit(&rubric.id, unit.into(), "no_task", reason, json!({}));
            }
            return self.unit_from(&rubric.id, unit.into(), Outcome::Failed(reason), json!({}));
        }
        let inputs = UnitInputs {
            report_text: Some(text.to_string()),
            task_query: ctx.task.map(|t| t.query.clone()),
            ..Default::default()
        };
        let outcome = self.ask(rubric, &inputs, ctx.label, unit, ctx.sample).await;
        self.unit_from(&rubric.id, unit.into(), outcome, json!({}))
    }

    /// One call judges every checklist item of the task; one unit per item
    /// (`item:N`), the call's usage attributed to the first.
    async fn plan_checklist_units(
        &self,
        rubric: &Rubric,
        ctx: &PlanContext<'_>,
        text: &str,
    ) -> JudgedUnits {
        let unit = "checklist";
        let Some(task) = ctx.task else {
            let reason = no_task_reason(ctx.label);
            if rubric.rules.contains_key("no_task") {
                return vec![self.rule_unit(&rubric.id, unit.into(), "no_task", reason, json!({}))];
            }
            return vec![self.unit_from(
                &rubric.id,
                unit.into(),
                Outcome::Failed(reason),
                json!({}),
            )];
        };
        if task.checklist.is_empty() {
            return Vec::new();
        }
        let inputs = UnitInputs {
            report_text: Some(text.to_string()),
            task_query: Some(task.query.clone()),
            checklist: task.checklist.clone(),
            ..Default::default()
        };
        let outcome = self.ask(rubric, &inputs, ctx.label, unit, ctx.sample).await;
        let k = task.checklist.len();
        task.checklist
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let detail = json!({"section": item.section, "item": item.item});
                let (outcome_i, first) = match &outcome {
                    Outcome::Answer { value, usage } => (
                        Outcome::Answer {
                            value: split_items(rubric, value, k)[i].clone(),
                            usage: usage.clone(),
                        },
                        i == 0,
                    ),
                    other => (other.clone(), false),
                };
                let (rec, u) =
                    self.unit_from(&rubric.id, format!("item:{}", i + 1), outcome_i, detail);
                (rec, if first { u } else { None })
            })
            .collect()
    }

    /// One unit per fact left after de-duplication (`fact:N`, N the fact's place
    /// in the report); its details list the duplicates merged into it.
    async fn plan_fact_units<'a>(&self, rubric: &Rubric, ctx: &PlanContext<'a>) -> JudgedUnits {
        let facts = &ctx.report.facts;
        let Some(dedup) = ctx.dedup else {
            return Vec::new();
        };
        if dedup.pending {
            return (0..facts.len())
                .map(|i| {
                    self.unit_from(
                        &rubric.id,
                        format!("fact:{}", i + 1),
                        Outcome::Skipped(PENDING_REASON.into()),
                        json!({}),
                    )
                })
                .collect();
        }
        let dup_of = &dedup.dup_of;
        // Facts citing the same sources are asked one after another (their prompts
        // share the sources' text as a prefix, which providers' prompt caches
        // discount); units are put back in fact order afterwards.
        let mut kept: Vec<(usize, &tvir_report::Fact)> = facts
            .iter()
            .enumerate()
            .filter(|(i, _)| dup_of[*i].is_none())
            .collect();
        kept.sort_by_cached_key(|(i, f)| {
            let mut refs: Vec<(u64, &str)> = f
                .ref_idxs
                .iter()
                .map(|r| (r.parse::<u64>().unwrap_or(u64::MAX), r.as_str()))
                .collect();
            refs.sort();
            refs.dedup();
            (refs, *i)
        });
        let settle = rubric.rules.contains_key("no_source_text");
        let ask_one = |(i, f): (usize, &'a tvir_report::Fact)| {
            let merged: Vec<usize> = (0..facts.len())
                .filter(|&j| dup_of[j] == Some(i))
                .map(|j| j + 1)
                .collect();
            async move {
                let unit = format!("fact:{}", i + 1);
                let sources = cited_sources(&f.ref_idxs, ctx.ev.sources.as_ref());
                let mut detail = json!({"fact": f.fact, "ref_idxs": f.ref_idxs, "line": f.line,
                                        "merged_duplicates": merged, "dedup": dedup.detail(i)});
                let settle_certain = self.settings.settle == Settle::Certain;
                if let Some(reason) =
                    unusable_sources(ctx.report, &f.ref_idxs).filter(|_| settle_certain)
                {
                    // Nothing cited can be read by anyone (a marker naming no entry,
                    // an uploaded file): settled before any fetch or call.
                    let rule = ["no_usable_source", "no_source_text"]
                        .into_iter()
                        .find(|r| rubric.rules.contains_key(*r));
                    if let Some(rule) = rule.filter(|_| rubric.needs(InputKind::Sources)) {
                        return (i, self.rule_unit(&rubric.id, unit, rule, reason, detail));
                    }
                }
                if ctx.ev.sources.is_some() {
                    if let Value::Object(m) = &mut detail {
                        m.insert(
                            "sources".into(),
                            json!(ctx.ev.audit(&sources, rubric.max_source_chars)),
                        );
                    }
                    let unread = sources.iter().all(|s| s.text.trim().is_empty());
                    // Under `--unread reference` one page this run could not have
                    // (offline, not given) already makes the judge's input unlike
                    // the reference's: the unit fails, for CS as for CSC.
                    let exact = self.settings.unread == Unread::Reference;
                    let ours = (unread || exact)
                        .then(|| ctx.ev.unread_on_our_side(&f.ref_idxs))
                        .flatten();
                    if let Some(why) = ours {
                        let outcome = Outcome::Failed(why);
                        return (i, self.unit_from(&rubric.id, unit, outcome, detail));
                    }
                    if settle && unread && settle_certain {
                        return (
                            i,
                            self.rule_unit(
                                &rubric.id,
                                unit,
                                "no_source_text",
                                "no cited source could be read: verdict unknown".into(),
                                detail,
                            ),
                        );
                    }
                }
                // `--page-text reference`: each page as the reference's pipeline
                // gives it; else under `--settle none` each page that gave no text
                // is shown with why.
                let sources = if self.settings.unread == Unread::Reference {
                    reference_unreads(sources, &ctx.ev.fetch)
                } else if settle_certain {
                    sources
                } else {
                    with_fetch_errors(sources, &ctx.ev.fetch)
                };
                let inputs = UnitInputs {
                    fact: Some(f.fact.clone()),
                    sources: self.sources_in_prompt_order(sources),
                    ..Default::default()
                };
                let at = UnitLabel {
                    report: ctx.label,
                    unit: &unit,
                    sample: ctx.sample,
                };
                let (outcome, cuts) = self.ask_with_sources(rubric, inputs, &f.fact, at).await;
                record_cuts(&mut detail, &cuts);
                (i, self.unit_from(&rubric.id, unit, outcome, detail))
            }
        };
        // A provider's prompt cache is warm only once a request with the prefix has
        // been answered: of the facts whose first source (in canonical order) is the
        // same, the first is asked alone and the others after its answer. In batch
        // mode the first returns at once (pending), so nothing waits a wave.
        let first_source = |f: &tvir_report::Fact| {
            f.ref_idxs
                .iter()
                .min_by_key(|r| (r.parse::<u64>().unwrap_or(u64::MAX), r.as_str()))
                .cloned()
        };
        let mut groups: Vec<Vec<(usize, &'a tvir_report::Fact)>> = Vec::new();
        for (i, f) in kept {
            let same = groups
                .last()
                .is_some_and(|g| first_source(g[0].1) == first_source(f));
            match groups.last_mut() {
                Some(g) if same => g.push((i, f)),
                _ => groups.push(vec![(i, f)]),
            }
        }
        let ask_one = &ask_one;
        let mut units: Vec<_> = futures::future::join_all(groups.into_iter().map(|g| async move {
            let mut g = g.into_iter();
            let mut done = Vec::new();
            if let Some(first) = g.next() {
                done.push(ask_one(first).await);
            }
            done.extend(futures::future::join_all(g.map(ask_one)).await);
            done
        }))
        .await
        .into_iter()
        .flatten()
        .collect();
        units.sort_by_key(|(i, _)| *i);
        units.into_iter().map(|(_, u)| u).collect()
    }

    /// One unit per figure of the rubric's kind (`figure`: every figure; `chart`,
    /// `image`: those of that kind), named `figure:N` by the figure's place among
    /// all figures.
    async fn plan_figure_units(&self, rubric: &Rubric, ctx: &PlanContext<'_>) -> JudgedUnits {
        self.figure_units_with_revisions(rubric, ctx)
            .await
            .into_iter()
            .map(|(u, _)| u)
            .collect()
    }

    /// The units of a figure-level rubric, each with the revised caption its
    /// answer proposes when the rubric declares `[revision]` (the caption-revision
    /// step) and the caption is missing or scored low.
    pub(super) async fn figure_units_with_revisions(
        &self,
        rubric: &Rubric,
        ctx: &PlanContext<'_>,
    ) -> Vec<(JudgedUnit, Option<String>)> {
        let wanted = |k: FigureKind| match rubric.unit {
            UnitKind::Chart => k == FigureKind::Chart,
            UnitKind::Image => k == FigureKind::Image,
            _ => true,
        };
        let figures = ctx
            .report
            .figures
            .iter()
            .zip(&ctx.ev.figures)
            .enumerate()
            .filter(|(_, (f, _))| wanted(f.kind));
        futures::future::join_all(figures.map(|(i, (f, e))| self.figure_unit(rubric, ctx, i, f, e)))
            .await
    }

    async fn figure_unit(
        &self,
        rubric: &Rubric,
        ctx: &PlanContext<'_>,
        i: usize,
        f: &Figure,
        e: &FigureEvidence,
    ) -> (JudgedUnit, Option<String>) {
        let noun = match rubric.unit {
            UnitKind::Chart => "chart",
            UnitKind::Image => "image",
            _ => "figure",
        };
        let unit = format!("figure:{}", i + 1);
        let mut detail = figure_detail(f);
        if let Some(reason) = &e.invalid {
            let reason = format!("invalid {noun}: {reason}");
            return (
                self.rule_unit(&rubric.id, unit, "invalid_visual", reason, detail),
                None,
            );
        }
        if let Some(reason) = &e.unavailable {
            let skipped = Outcome::Skipped(reason.clone());
            return (self.unit_from(&rubric.id, unit, skipped, detail), None);
        }
        let mut inputs = UnitInputs::default();
        if rubric.needs(InputKind::FigureImage) {
            inputs.figure_image = e.data_uri.clone();
        }
        if rubric.needs(InputKind::ChartData) {
            inputs.chart_data = Some(
                f.chart_data
                    .as_ref()
                    .map(|d| d.to_string())
                    .unwrap_or_default(),
            );
        }
        let caption = f
            .caption
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty());
        // With caption revision a missing caption is still sent (empty): the judge
        // proposes the caption to insert, and the rule gives the score.
        let settle_caption = rubric.needs(InputKind::Caption)
            && caption.is_none()
            && rubric.rules.contains_key("missing_caption");
        if settle_caption && rubric.revision.is_none() {
            let reason = format!("{noun} has no caption");
            return (
                self.rule_unit(&rubric.id, unit, "missing_caption", reason, detail),
                None,
            );
        }
        if rubric.needs(InputKind::Caption) {
            inputs.caption = Some(caption.unwrap_or("").to_string());
        }
        if rubric.needs(InputKind::Context) {
            let context = f
                .context
                .as_deref()
                .map(str::trim)
                .filter(|c| !c.is_empty());
            if context.is_none() && rubric.rules.contains_key("missing_context") {
                let reason = format!("{noun} has no context");
                return (
                    self.rule_unit(&rubric.id, unit, "missing_context", reason, detail),
                    None,
                );
            }
            inputs.context = Some(context.unwrap_or("").to_string());
        }
        if rubric.needs(InputKind::Sources) {
            let settle = rubric.rules.contains_key("no_usable_source");
            if f.ref_idxs.is_empty() && settle {
                let reason = format!("{noun} cites no source");
                return (
                    self.rule_unit(&rubric.id, unit, "no_usable_source", reason, detail),
                    None,
                );
            }
            let sources = cited_sources(&f.ref_idxs, ctx.ev.sources.as_ref());
            if let Value::Object(m) = &mut detail {
                m.insert(
                    "sources".into(),
                    json!(ctx.ev.audit(&sources, rubric.max_source_chars)),
                );
            }
            let unread =
                ctx.ev.sources.is_some() && sources.iter().all(|s| s.text.trim().is_empty());
            let exact = self.settings.unread == Unread::Reference;
            let ours = ((unread || exact) && !f.ref_idxs.is_empty())
                .then(|| ctx.ev.unread_on_our_side(&f.ref_idxs))
                .flatten();
            if let Some(why) = ours {
                let outcome = Outcome::Failed(why);
                return (self.unit_from(&rubric.id, unit, outcome, detail), None);
            }
            // `--csc-unreadable zero`: settled at 0 without a call (our former rule).
            if settle && self.settings.csc_unreadable == UnreadableSources::Zero && unread {
                let reason = "no cited source could be read".to_string();
                return (
                    self.rule_unit(&rubric.id, unit, "no_usable_source", reason, detail),
                    None,
                );
            }
            // `--csc-unreadable judge` (the default, as the reference): every cited
            // page that gave no text is shown with why it could not be read.
            let sources = if ctx.ev.sources.is_some() && self.settings.unread == Unread::Reference {
                reference_unreads(sources, &ctx.ev.fetch)
            } else if settle && ctx.ev.sources.is_some() {
                with_fetch_errors(sources, &ctx.ev.fetch)
            } else {
                sources
            };
            inputs.sources = self.sources_in_prompt_order(sources);
        }
        let at = UnitLabel {
            report: ctx.label,
            unit: &unit,
            sample: ctx.sample,
        };
        let outcome = if rubric.needs(InputKind::Sources) {
            // The claim the pages are fitted around: the caption.
            let claim = inputs.caption.clone().unwrap_or_default();
            let (outcome, cuts) = self.ask_with_sources(rubric, inputs, &claim, at).await;
            record_cuts(&mut detail, &cuts);
            outcome
        } else {
            self.ask(rubric, &inputs, ctx.label, &unit, ctx.sample)
                .await
        };
        let revision = match (&outcome, &rubric.revision) {
            (Outcome::Answer { value, .. }, Some(spec)) => {
                let low = dimension_scores(rubric, value)
                    .iter()
                    .any(|s| *s <= spec.threshold);
                (low || caption.is_none())
                    .then(|| value[spec.field.as_str()].as_str().map(str::to_string))
                    .flatten()
            }
            _ => None,
        };
        if matches!(&outcome, Outcome::Skipped(r) if r == PENDING_REASON) {
            return (self.unit_from(&rubric.id, unit, outcome, detail), None);
        }
        if settle_caption {
            // Scored by the rule; the answer is kept for the caption it proposes.
            if let (Value::Object(m), Outcome::Answer { value, .. }) = (&mut detail, &outcome) {
                m.insert("revision_answer".into(), value.clone());
            }
            let reason = format!("{noun} has no caption");
            let (rec, _) = self.rule_unit(&rubric.id, unit, "missing_caption", reason, detail);
            let usage = match outcome {
                Outcome::Answer { usage, .. } => Some(usage),
                _ => None,
            };
            return ((rec, usage), revision);
        }
        (self.unit_from(&rubric.id, unit, outcome, detail), revision)
    }
}

/// Each cited page that gave no text, shown as the reference evaluator shows it:
/// the reason its fetch failed, in place of the page text (the judge puts missing
/// evidence out of scope, so such a page adds no contradiction).
fn with_fetch_errors(
    sources: Vec<SourceText>,
    fetch: &BTreeMap<String, (String, Option<String>)>,
) -> Vec<SourceText> {
    sources
        .into_iter()
        .map(|mut s| {
            if s.text.trim().is_empty() {
                let why = fetch
                    .get(&s.idx)
                    .and_then(|(status, reason)| reason.clone().or_else(|| Some(status.clone())))
                    .unwrap_or_else(|| "no text".into());
                s.text = format!("{UNREADABLE_PAGE_PREFIX}{why}");
            }
            s
        })
        .collect()
}

/// Each cited page as the reference evaluator's pipeline gives it to CS and CSC: the
/// text as fetched (an empty page, a page read as empty from a sources file, a
/// blocked or refused page, a citation naming no entry or no URL: empty text), and
/// for a fetch that failed, its error line in place of the text.
fn reference_unreads(
    sources: Vec<SourceText>,
    fetch: &BTreeMap<String, (String, Option<String>)>,
) -> Vec<SourceText> {
    sources
        .into_iter()
        .map(|mut s| {
            if s.text.trim().is_empty() {
                s.text = match fetch.get(&s.idx) {
                    Some((status, Some(reason)))
                        if status == "failed" && reason != tvir_sources::EMPTY_IN_SOURCES_FILE =>
                    {
                        format!("{REFERENCE_FETCH_ERROR_PREFIX}{reason}")
                    }
                    _ => String::new(),
                };
            }
            s
        })
        .collect()
}

/// What the reference's pipeline stores as the text of a page whose fetch failed,
/// before the error.
pub const REFERENCE_FETCH_ERROR_PREFIX: &str = "Error extracting web content: ";

/// How a cited page that could not be read is shown to the CSC judge.
pub const UNREADABLE_PAGE_PREFIX: &str = "This page could not be read: ";

/// A unit's cut pages, in its details (`source_cuts`: page, characters before and
/// after, rule, cause); nothing when every page was shown whole.
fn record_cuts(detail: &mut Value, cuts: &[SourceCut]) {
    if let (Value::Object(m), false) = (detail, cuts.is_empty()) {
        m.insert("source_cuts".into(), json!(cuts));
    }
}

/// "no usable source: …" with each citation's reason, when none of a fact's
/// cited labels can give a judge any text (`Report::unusable_citation`).
fn unusable_sources(report: &Report, idxs: &[String]) -> Option<String> {
    let reasons: Vec<String> = idxs
        .iter()
        .map(|i| report.unusable_citation(i))
        .collect::<Option<Vec<String>>>()?;
    (!reasons.is_empty()).then(|| format!("no usable source: {}", reasons.join("; ")))
}

fn no_task_reason(label: &str) -> String {
    format!("report {label} matches no task in the tasks file")
}

fn figure_detail(f: &Figure) -> Value {
    let mut d = json!({"content": f.content, "kind": f.kind, "line": f.line, "caption": f.caption});
    if let Value::Object(m) = &mut d {
        if let Some(render) = &f.render {
            m.insert("render".into(), json!(render));
        }
        if let Some(s) = &f.caption_source {
            m.insert("caption_source".into(), json!(s));
        }
    }
    d
}

fn cited_sources(
    idxs: &[String],
    sources: Option<&BTreeMap<String, SourceText>>,
) -> Vec<SourceText> {
    idxs.iter()
        .map(|i| {
            sources
                .and_then(|s| s.get(i).cloned())
                .unwrap_or_else(|| SourceText {
                    idx: i.clone(),
                    url: None,
                    title: None,
                    text: String::new(),
                })
        })
        .collect()
}

impl Engine {
    /// A unit's cited sources in the order its prompt shows them: under the cached
    /// layout (the default) in [`canonical_order`]; under `--prompt-order reference`
    /// in the order the fact or chart cites them, as the reference evaluator shows
    /// them.
    fn sources_in_prompt_order(&self, sources: Vec<SourceText>) -> Vec<SourceText> {
        match self.rubrics.prompt_order() {
            PromptOrder::Cached => canonical_order(sources),
            PromptOrder::Reference => sources,
        }
    }
}

/// Sources in one order whatever order the fact cites them in (numeric indices
/// numerically), so prompts of facts citing overlapping sources share the longest
/// prefix a provider's prompt cache can serve.
fn canonical_order(mut sources: Vec<SourceText>) -> Vec<SourceText> {
    sources.sort_by(|a, b| {
        let key = |s: &SourceText| (s.idx.parse::<u64>().unwrap_or(u64::MAX), s.idx.clone());
        key(a).cmp(&key(b))
    });
    sources
}
