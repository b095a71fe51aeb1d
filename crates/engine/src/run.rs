//! The run: every unit of one report and judge sample, in dependency order, with
//! the shared judge pool, cache and accounting, then the scores through
//! [`super::score::rescore`].
//!
//! Order (each arrow a wait): `figure_caption_quality` -> caption revision -> the
//! rubrics that read the revised text; fact de-duplication -> the fact-level
//! rubrics; every other rubric at once. Units are built by the generic planner
//! ([`super::plan`]); the two named steps here are caption revision and fact
//! de-duplication; image quality comes from pixels.

use std::collections::{BTreeMap, BTreeSet};

use futures::future::join_all;
use serde_json::{json, Value};

use crate::dedup::{self, DedupMode, PairCall};
use crate::engine::Engine;
use crate::evidence::Evidence;
use crate::input::{ReportJob, Task};
use crate::outcome::{is_pending, JudgedUnits, Outcome, PENDING_REASON};
use crate::plan::{Dedup, PlanContext};
use crate::record::{ReportRecord, UnitRecord, UnitStatus, UsageRecord};
use crate::settings::{JudgeMode, RevisionScope};
use crate::text::{apply_edits, blank_figure, revise_caption, Edit};
use tvir_report::{FigureKind, Report};
use tvir_rubric::{Rubric, TextSource, UnitInputs, UnitKind, CAPTION_REVISION};

impl Engine {
    /// The record of one run of a report before any unit: labels, task fields,
    /// figure counts (`report` is None when it could not be loaded).
    pub(crate) fn empty_record(
        &self,
        job: &ReportJob,
        task: Option<&Task>,
        run: u32,
        report: Option<&Report>,
    ) -> ReportRecord {
        let judge_model = if self.settings.runs > 1 {
            format!("{}-run{run}", self.settings.judge_model)
        } else {
            self.settings.judge_model.clone()
        };
        let count =
            |k: FigureKind| report.map_or(0, |r| r.figures.iter().filter(|f| f.kind == k).count());
        ReportRecord {
            system: job.system.clone(),
            task_id: task.map_or_else(|| job.folder.clone(), |t| t.id.clone()),
            judge_model,
            run,
            language: task.and_then(|t| t.language.clone()).or_else(|| {
                report.map(|r| {
                    serde_json::to_value(r.language)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                })
            }),
            complexity: task.and_then(|t| t.complexity.clone()),
            domain: task.and_then(|t| t.domain.clone()),
            metrics: BTreeMap::new(),
            ta: None,
            va: None,
            overall: None,
            effective_citations: None,
            structural_error_counts: Default::default(),
            structural_errors: report
                .map(|r| r.structural_errors.clone())
                .unwrap_or_default(),
            units: Vec::new(),
            usage: UsageRecord::default(),
            n_images: count(FigureKind::Image),
            n_charts: count(FigureKind::Chart),
            n_figures: report.map_or(0, |r| r.figures.len()),
            error: None,
            extraction: report.map(|r| r.extraction.clone()),
            render: None,
            thumbnails: Vec::new(),
            protocol: self.settings.protocol.clone(),
            sources: Vec::new(),
        }
    }

    /// All judged units of one run of one report, then the scores.
    pub(super) async fn judge_report(
        &self,
        job: &ReportJob,
        task: Option<&Task>,
        run: u32,
        report: &Report,
        ev: &Evidence,
        label: &str,
    ) -> ReportRecord {
        let sample = run - 1;
        let mut record = self.empty_record(job, task, run, Some(report));
        record.render = ev.render.clone();
        record.thumbnails = ev.thumbnails.clone();
        let blank_edits = report
            .figures
            .iter()
            .zip(&ev.figures)
            .filter(|(_, e)| !e.usable())
            .filter_map(|(f, _)| blank_figure(&report.text, f))
            .collect::<Vec<_>>();
        let base_text = apply_edits(&report.text, blank_edits.clone());
        self.progress.planned(planned_units(report, task));
        let ctx = PlanContext {
            report,
            ev,
            task,
            label,
            sample,
            dedup: None,
        };
        let groups = self.rubric_groups();
        let ((fcq, later), now_units, (cs, dedup_units)) = futures::join!(
            self.revision_chain(&ctx, &groups.after_revision, &blank_edits, &base_text),
            join_all(
                groups
                    .now
                    .iter()
                    .map(|r| self.plan_units(r, &ctx, &base_text))
            ),
            self.fact_chain(&ctx, &groups.facts, &base_text),
        );

        let iq_units = self.iq_units(report, ev);
        let mut units: JudgedUnits = Vec::new();
        let now_units: JudgedUnits = now_units.into_iter().flatten().collect();
        for group in [cs, later, now_units, fcq, dedup_units] {
            units.extend(group);
        }
        units.extend(self.not_evaluated_markers(label, sample).await);
        units.extend(self.unrendered_units(ev).into_iter().map(|u| (u, None)));
        units.extend(iq_units.into_iter().map(|u| (u, None)));
        self.finish_record(record, units)
    }

    /// The generically planned rubrics of a sample, by what they wait for.
    fn rubric_groups(&self) -> RubricGroups<'_> {
        let reference_scope = self.settings.revision_scope == RevisionScope::Reference;
        // Fact-level rubrics wait for fact de-duplication.
        let facts: Vec<&Rubric> = self
            .rubrics
            .rubrics()
            .filter(|r| super::plan::planned_generically(r) && r.unit == UnitKind::Fact)
            .collect();
        // Rubrics the generic planner builds, split by whether they read the revised
        // text (declared `reads = "revised_text"`, or every text unit under
        // `--revision-scope reference`) and so wait for caption revision.
        let (after_revision, now): (Vec<&Rubric>, Vec<&Rubric>) = self
            .rubrics
            .rubrics()
            .filter(|r| super::plan::planned_generically(r))
            .filter(|r| r.unit != UnitKind::Fact)
            .partition(|r| {
                matches!(r.unit, UnitKind::Report | UnitKind::Checklist)
                    && (r.reads == Some(TextSource::RevisedText) || reference_scope)
            });
        RubricGroups {
            facts,
            after_revision,
            now,
        }
    }

    /// Chain A: FCQ -> caption revision -> the rubrics reading the revised text.
    /// Returns the FCQ units and those of the later rubrics.
    async fn revision_chain(
        &self,
        ctx: &PlanContext<'_>,
        after_revision: &[&Rubric],
        blank_edits: &[Edit],
        base_text: &str,
    ) -> (JudgedUnits, JudgedUnits) {
        let report = ctx.report;
        // The caption-revision step: the figure units of the rubric declaring
        // `[revision]`, each with the caption its answer proposes.
        let fcq = self
            .figure_units_with_revisions(self.rubric(CAPTION_REVISION), ctx)
            .await;
        if self.settings.caption_revision && fcq.iter().any(|((u, _), _)| is_pending(u)) {
            // The revised text depends on answers still in a batch: so does
            // every judge that reads it.
            let fcq = fcq.into_iter().map(|(u, _)| u).collect::<Vec<_>>();
            let waiting = |id: &str, unit: &str| {
                self.unit_from(
                    id,
                    unit.into(),
                    Outcome::Skipped(PENDING_REASON.into()),
                    json!({}),
                )
            };
            let later = after_revision
                .iter()
                .map(|r| waiting(&r.id, r.unit.name()))
                .collect();
            return (fcq, later);
        }
        let revised_text = if self.settings.caption_revision {
            let mut edits = blank_edits.to_vec();
            for (i, (_, revision)) in fcq.iter().enumerate() {
                if let Some(rev) = revision {
                    edits.extend(revise_caption(&report.text, &report.figures[i], rev));
                }
            }
            apply_edits(&report.text, edits)
        } else {
            base_text.to_string()
        };
        let later = join_all(
            after_revision
                .iter()
                .map(|r| self.plan_units(r, ctx, &revised_text)),
        );
        let later = later.await;
        (
            fcq.into_iter().map(|(u, _)| u).collect::<Vec<_>>(),
            later.into_iter().flatten().collect::<JudgedUnits>(),
        )
    }

    /// Chain C: fact de-duplication, then the fact-level rubrics. Returns their
    /// units and the `fact_dedup` units.
    async fn fact_chain(
        &self,
        ctx: &PlanContext<'_>,
        facts: &[&Rubric],
        base_text: &str,
    ) -> (JudgedUnits, JudgedUnits) {
        let dedup = self.dedup_step(ctx.report, ctx.label, ctx.sample).await;
        let ctx = PlanContext {
            dedup: Some(&dedup),
            ..ctx.clone()
        };
        let units = join_all(facts.iter().map(|r| self.plan_units(r, &ctx, base_text))).await;
        let units: JudgedUnits = units.into_iter().flatten().collect();
        (units, dedup.units)
    }

    /// Marker units that make metrics "not evaluated": every vision metric when the
    /// judge cannot see, every judged metric without a judge.
    async fn not_evaluated_markers(&self, label: &str, sample: u32) -> JudgedUnits {
        let marker = |metric: String, reason: String| {
            (
                UnitRecord {
                    metric,
                    unit: "judge".into(),
                    status: UnitStatus::Skipped,
                    reason: Some(reason),
                    score: None,
                    answer: None,
                    justification: None,
                    detail: Value::Null,
                },
                None,
            )
        };
        let mut units: JudgedUnits = Vec::new();
        if let Some(reason) = self.blind_markers_reason(label, sample).await {
            // A judge that cannot see settles no vision metric, not even by an
            // edge-case rule: a marker unit makes each one "not evaluated".
            for rubric in self.rubrics.rubrics().filter(|r| r.is_vision()) {
                units.push(marker(rubric.id.clone(), reason.clone()));
            }
        }
        if self.settings.mode != JudgeMode::Judge {
            // Without a judge every judged metric is "not evaluated", even one an
            // edge-case rule could settle (no chart, no facts): a marker unit says so.
            let reason = match self.settings.mode {
                JudgeMode::DryRun => "dry run: not called",
                _ => "--no-judge: judged metric not evaluated",
            };
            for metric in super::score::metric_names(&self.rubrics) {
                if tvir_rubric::PIXEL_METRICS.contains(&metric.as_str()) {
                    continue;
                }
                units.push(marker(metric, reason.into()));
            }
        }
        units
    }

    /// One unit per chart drawn by script that was not rendered, in every figure-
    /// and chart-level metric: skipped (no browser) or failed (a library missing
    /// offline, a page that failed), never scored.
    fn unrendered_units(&self, ev: &Evidence) -> Vec<UnitRecord> {
        let mut out = Vec::new();
        for rubric in self.rubrics.rubrics().filter(|r| r.is_metric()) {
            if !matches!(rubric.unit, UnitKind::Figure | UnitKind::Chart) {
                continue;
            }
            for (k, u) in ev.unrendered.iter().enumerate() {
                out.push(UnitRecord {
                    metric: rubric.id.clone(),
                    unit: format!("{}{}", crate::render::UNRENDERED_UNIT, k + 1),
                    status: if u.skipped {
                        UnitStatus::Skipped
                    } else {
                        UnitStatus::Failed
                    },
                    reason: Some(u.reason.clone()),
                    score: None,
                    answer: None,
                    justification: None,
                    detail: match &u.library {
                        Some(l) => {
                            json!({"line": u.candidate.line, "what": u.candidate.what, "library": l})
                        }
                        None => json!({"line": u.candidate.line, "what": u.candidate.what}),
                    },
                });
            }
        }
        out
    }

    /// The record of a sample from all its units: units in metric-file order, the
    /// usage they add up to, then the scores.
    fn finish_record(&self, mut record: ReportRecord, units: JudgedUnits) -> ReportRecord {
        // Units in metric-file order (the paper's, then added metrics), then the
        // dedup audit; stable within.
        let names = super::score::metric_names(&self.rubrics);
        let order = |m: &str| names.iter().position(|n| n == m).unwrap_or(usize::MAX);
        let mut all: JudgedUnits = units;
        all.sort_by_key(|(u, _)| order(&u.metric));
        let failed = all
            .iter()
            .filter(|(u, _)| u.status == UnitStatus::Failed)
            .count() as u64;
        self.progress.finished(all.len() as u64, failed);
        let mut usage = UsageRecord::default();
        let mut cost: Option<f64> = None;
        for (_, u) in &all {
            if let Some(u) = u {
                usage.calls += u.calls;
                usage.prompt_tokens += u.prompt_tokens;
                usage.completion_tokens += u.completion_tokens;
                usage.cached_tokens += u.cached_tokens;
                if let Some(c) = u.cost_usd {
                    cost = Some(cost.unwrap_or(0.0) + c);
                }
            }
        }
        usage.failed_calls = failed;
        usage.cost_usd = cost;
        record.usage = usage;
        record.units = all.into_iter().map(|(u, _)| u).collect();
        record.factor_sources();
        super::score::rescore_owned(record, &self.rubrics, &self.settings.score)
    }

    /// One unit per image figure: its IQ components (a broken image is scored with
    /// Q = 0 and its reason: a property of the report), or skipped when the image
    /// was not fetched in this run.
    fn iq_units(&self, report: &Report, ev: &Evidence) -> Vec<UnitRecord> {
        let mut scored = ev.iq.images.iter();
        report
            .figures
            .iter()
            .zip(&ev.figures)
            .filter(|(f, _)| f.kind == FigureKind::Image)
            .enumerate()
            .filter_map(|(i, (f, e))| {
                let mut unit = UnitRecord {
                    metric: super::score::IMAGE_QUALITY.into(),
                    unit: format!("image:{}", i + 1),
                    status: UnitStatus::Scored,
                    reason: None,
                    score: None,
                    answer: None,
                    justification: None,
                    detail: Value::Null,
                };
                if let Some(reason) = &e.unavailable {
                    unit.status = UnitStatus::Skipped;
                    unit.reason = Some(reason.clone());
                    unit.detail = json!({"path": f.content});
                    return Some(unit);
                }
                let img = scored.next()?;
                unit.reason = img.error.as_ref().map(|e| format!("broken image: {e}"));
                unit.detail = serde_json::to_value(img).unwrap_or(Value::Null);
                Some(unit)
            })
            .collect()
    }

    /// The named step before every fact-level rubric: fact de-duplication
    /// (`fact_dedup`: the pre-filter, then the judge for the pairs it cannot settle).
    async fn dedup_step(&self, report: &Report, label: &str, sample: u32) -> Dedup {
        let dedup_rubric = self.rubric(super::score::FACT_DEDUP);
        let facts = &report.facts;
        if report
            .extraction
            .judge
            .as_ref()
            .is_some_and(|j| j.status == "pending")
        {
            // Batch mode: the facts come from a judge extraction still in a wave, so
            // nothing is asked of the rules parse's facts; every fact unit waits.
            return Dedup {
                units: Vec::new(),
                pending: true,
                dup_of: vec![None; facts.len()],
                decisions: Vec::new(),
            };
        }
        let cited: Vec<Vec<String>> = facts.iter().map(|f| f.ref_idxs.clone()).collect();
        let spec = dedup_rubric
            .prefilter
            .clone()
            .unwrap_or(tvir_rubric::PrefilterSpec {
                duplicate_at: 1.0,
                distinct_below: 0.0,
            });
        let mut duplicates = BTreeSet::new();
        let mut ask_pairs = Vec::new();
        // Every pair decision (fact i, fact j) -> (duplicate, decided by), for the
        // fact units' details.
        let mut decisions: Vec<(usize, usize, bool, &'static str)> = Vec::new();
        let prefilter = dedup::Prefilter::new(facts.iter().map(|f| f.fact.as_str()));
        // Ask-every-pair is the reference evaluator's way, and so are its pairs: cited
        // lists equal as written. The pre-filter compares cited sets (METRICS.md s.1).
        let pairs = match self.settings.dedup {
            DedupMode::JudgeAll => dedup::candidate_pairs_as_listed(&cited),
            DedupMode::Prefilter | DedupMode::Off => dedup::candidate_pairs(&cited),
        };
        for (i, j) in pairs {
            let call = match self.settings.dedup {
                DedupMode::JudgeAll => PairCall::AskJudge,
                DedupMode::Prefilter => prefilter.call(i, j, &spec),
                DedupMode::Off => match prefilter.call(i, j, &spec) {
                    PairCall::AskJudge => PairCall::Distinct,
                    c => c,
                },
            };
            match call {
                PairCall::Duplicate => {
                    duplicates.insert((i, j));
                    decisions.push((i, j, true, "prefilter"));
                }
                PairCall::AskJudge => ask_pairs.push((i, j)),
                PairCall::Distinct => decisions.push((i, j, false, "prefilter")),
            }
        }
        let judged = join_all(ask_pairs.iter().map(|&(i, j)| async move {
            let unit = format!("pair:{}:{}", i + 1, j + 1);
            let inputs = UnitInputs {
                fact: Some(facts[i].fact.clone()),
                other_fact: Some(facts[j].fact.clone()),
                ..Default::default()
            };
            let outcome = self.ask(dedup_rubric, &inputs, label, &unit, sample).await;
            let decided = match &outcome {
                Outcome::Answer { value, .. } => value["duplicate"].as_bool(),
                _ => None,
            };
            let dup = decided.unwrap_or(false);
            // Without an answer the facts stay apart (each keeps its units).
            let detail = json!({"facts": [i + 1, j + 1],
                                "decision": if dup { "merged" } else { "kept" }});
            (
                (i, j, dup),
                self.unit_from(&dedup_rubric.id, unit, outcome, detail),
            )
        }))
        .await;
        if judged.iter().any(|(_, (u, _))| is_pending(u)) {
            // Which facts survive de-duplication is not known yet: every fact unit
            // waits (none is asked for a fact that may turn out to be a duplicate).
            return Dedup {
                units: judged.into_iter().map(|(_, u)| u).collect(),
                pending: true,
                dup_of: vec![None; facts.len()],
                decisions,
            };
        }
        let mut units = Vec::new();
        for ((i, j, dup), unit) in judged {
            if dup {
                duplicates.insert((i, j));
            }
            let by = if unit.0.status == UnitStatus::Scored {
                "judge"
            } else {
                "judge failed: kept apart"
            };
            decisions.push((i, j, dup, by));
            units.push(unit);
        }
        Dedup {
            units,
            pending: false,
            dup_of: dedup::resolve(facts.len(), &duplicates, self.settings.dedup_keep),
            decisions,
        }
    }
}

/// Upper bound of units a report will produce (for the progress bar).
fn planned_units(report: &Report, task: Option<&Task>) -> u64 {
    let charts = report
        .figures
        .iter()
        .filter(|f| f.kind == FigureKind::Chart)
        .count();
    let images = report
        .figures
        .iter()
        .filter(|f| f.kind == FigureKind::Image)
        .count();
    (report.facts.len()
        + task.map_or(1, |t| t.checklist.len())
        + 4
        + 2 * report.figures.len()
        + 2 * charts
        + images) as u64
}

/// The generically planned rubrics of a sample, by what they wait for.
struct RubricGroups<'a> {
    /// Fact-level: after fact de-duplication.
    facts: Vec<&'a Rubric>,
    /// Reading the revised text: after caption revision.
    after_revision: Vec<&'a Rubric>,
    /// Everything else, at once.
    now: Vec<&'a Rubric>,
}
