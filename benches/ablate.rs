//! `tvir ablate` cost on a paper-sized tree: 10 systems x 90 tasks (900 reports,
//! ~45 units each: 12 facts, 8 checklist items, 4 report judges, 4 images, 2 charts
//! and their figure judges), re-scored under the base and three variants
//! (CS partial credit, duplicate regrouping, TA without FLC) and compared.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Value};
use tvir_analysis::ablate::{self, AblateOptions, Configuration, Variant};
use tvir_analysis::aggregate::load::{LoadedRecord, RecordUnits};
use tvir_engine::record::{ReportRecord, UnitRecord, UnitStatus};
use tvir_engine::{rescore, ScoreOptions};
use tvir_rubric::{AnswerSpec, RubricSet};

fn unit(metric: &str, id: String, answer: Value, detail: Value) -> UnitRecord {
    UnitRecord {
        metric: metric.into(),
        unit: id,
        status: UnitStatus::Scored,
        reason: None,
        score: None,
        answer: Some(answer),
        justification: Some("a justification of typical length for the bench".into()),
        detail,
    }
}

fn dims(rubrics: &RubricSet, metric: &str, seed: u64) -> Value {
    let AnswerSpec::Dimensions {
        dimensions,
        min,
        max,
        ..
    } = &rubrics.get(metric).unwrap().answer
    else {
        unreachable!()
    };
    let span = (max - min + 1) as u64;
    let scores: serde_json::Map<String, Value> = dimensions
        .iter()
        .enumerate()
        .map(|(i, d)| {
            (
                d.key.clone(),
                json!(min + ((seed + i as u64 * 7) % span) as i64),
            )
        })
        .collect();
    json!({ "scores": scores })
}

fn record(rubrics: &RubricSet, system: usize, task: usize) -> LoadedRecord {
    let seed = (system * 131 + task * 17) as u64;
    let verdicts = ["supported", "partially_supported", "unsupported", "unknown"];
    let mut units = Vec::new();
    for i in 0..12u64 {
        units.push(unit(
            "citation_support",
            format!("fact:{}", i + 1),
            json!({ "verdict": verdicts[((seed + i * 3) % 4) as usize] }),
            json!({ "fact": "a fact", "ref_idxs": ["1"] }),
        ));
    }
    for i in 0..8u64 {
        units.push(unit(
            "instruction_alignment",
            format!("item:{}", i + 1),
            json!({ "score": ((seed + i) % 3) as f64 / 2.0 }),
            json!({}),
        ));
    }
    for m in [
        "writing_quality",
        "analytical_depth_breadth",
        "multimodal_composition",
    ] {
        units.push(unit(m, "report".into(), dims(rubrics, m, seed), json!({})));
    }
    units.push(unit(
        "factual_logical_consistency",
        "report".into(),
        json!({ "total_issues": seed % 12, "issues": [] }),
        json!({}),
    ));
    for i in 0..4u64 {
        let mut u = unit(
            "image_quality",
            format!("image:{}", i + 1),
            Value::Null,
            json!({
                "path": "images/x.png", "width": 800, "height": 600,
                "resolution": 1.0, "aspect": 1.0,
                "sharpness": ((seed + i) % 10) as f64 / 10.0, "contrast": 0.5,
                "quality": 0.0, "phash": format!("{:016x}", (seed + i) % 3),
                "duplicate_of": null, "error": null
            }),
        );
        u.answer = None;
        units.push(u);
    }
    for i in 0..6u64 {
        let id = format!("figure:{}", i + 1);
        for m in ["figure_caption_quality", "figure_context_integration"] {
            units.push(unit(m, id.clone(), dims(rubrics, m, seed + i), json!({})));
        }
        if i >= 4 {
            units.push(unit(
                "chart_quality",
                id.clone(),
                dims(rubrics, "chart_quality", seed + i),
                json!({}),
            ));
            units.push(unit(
                "chart_source_consistency",
                id,
                json!({ "total_issues": (seed + i) % 5, "issues": [] }),
                json!({}),
            ));
        }
    }
    let rec = ReportRecord {
        system: format!("system-{system}"),
        task_id: format!("{task:06}"),
        judge_model: "judge".into(),
        run: 1,
        language: None,
        complexity: None,
        domain: None,
        metrics: Default::default(),
        ta: None,
        va: None,
        overall: None,
        effective_citations: None,
        structural_error_counts: Default::default(),
        structural_errors: Default::default(),
        units,
        usage: Default::default(),
        n_images: 4,
        n_charts: 2,
        n_figures: 6,
        extraction: None,
        render: None,
        thumbnails: Vec::new(),
        protocol: None,
        sources: Vec::new(),
        error: None,
    };
    LoadedRecord {
        path: format!("OUT/system-{system}/{task:06}/judge/report.json").into(),
        system: rec.system.clone(),
        task_id: rec.task_id.clone(),
        judge_model: "judge".into(),
        run: 1,
        units: RecordUnits::of(&rec),
        record: rescore(&rec, rubrics, &ScoreOptions::default()),
    }
}

fn bench(c: &mut Criterion) {
    let rubrics = RubricSet::builtin().unwrap();
    let records: Vec<LoadedRecord> = (0..10)
        .flat_map(|s| (0..90).map(move |t| (s, t)))
        .map(|(s, t)| record(&rubrics, s, t))
        .collect();
    let base = Configuration::base(rubrics, ScoreOptions::default());
    let variants: Vec<Configuration> = [
        "name = \"cs\"\n[verdicts.citation_support]\npartially_supported = 0.0",
        "name = \"dup\"\n[duplicates]\nthreshold = 1\nfactor = 1.0",
        "name = \"ta\"\nta_metrics = [\"citation_support\", \"instruction_alignment\", \"writing_quality\", \"analytical_depth_breadth\"]",
    ]
    .iter()
    .map(|t| Variant::from_toml(t, "b").unwrap().apply(&base, "b").unwrap())
    .collect();
    let mut g = c.benchmark_group("ablate");
    g.sample_size(10);
    g.bench_function("rescore_900_reports_one_configuration", |b| {
        b.iter(|| ablate::rescore_all(&records, &base).unwrap())
    });
    g.bench_function("ablate_900_reports_base_plus_3_variants", |b| {
        b.iter(|| {
            ablate::ablate(
                "OUT",
                &records,
                &[],
                &base,
                &variants,
                &AblateOptions::default(),
            )
            .unwrap()
        })
    });
    g.bench_function("ablate_900_reports_3_variants_bootstrap_1000", |b| {
        b.iter(|| {
            ablate::ablate(
                "OUT",
                &records,
                &[],
                &base,
                &variants,
                &AblateOptions {
                    bootstrap: 1000,
                    seed: 1,
                },
            )
            .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
