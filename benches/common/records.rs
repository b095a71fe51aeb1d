//! Synthetic `eval` records for the analysis benches (included with `#[path]`).

use tvir_analysis::aggregate::LoadedRecord;
use tvir_engine::record::{
    MetricRecord, MetricStatus, ReportRecord, StructuralErrorCounts, UsageRecord, METRIC_NAMES,
};

/// The parts of a synthetic record that vary between benches.
pub struct RecordScores {
    /// Score of the k-th metric of `METRIC_NAMES` (a fraction).
    pub metric: Box<dyn Fn(usize) -> f64>,
    pub ta: f64,
    pub va: f64,
    pub overall: f64,
    pub effective_citations: f64,
}

/// One record of judge "judge" (`judge-run{run}` in the record) with every metric
/// evaluated; no breakdown fields (language, complexity, domain) set.
pub fn loaded_record(
    system: String,
    task_id: String,
    run: u32,
    scores: RecordScores,
) -> LoadedRecord {
    let metrics = METRIC_NAMES
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let metric = MetricRecord {
                score: Some((scores.metric)(k)),
                status: MetricStatus::Evaluated,
                item_count: 1,
                scored_item_count: 1,
                failed_item_count: 0,
                skipped_item_count: 0,
                coverage: 1.0,
                note: None,
            };
            (m.to_string(), metric)
        })
        .collect();
    let record = ReportRecord {
        system,
        task_id,
        judge_model: format!("judge-run{run}"),
        run,
        language: None,
        complexity: None,
        domain: None,
        metrics,
        ta: Some(scores.ta),
        va: Some(scores.va),
        overall: Some(scores.overall),
        effective_citations: Some(scores.effective_citations),
        structural_error_counts: StructuralErrorCounts::default(),
        structural_errors: Default::default(),
        units: Vec::new(),
        usage: UsageRecord::default(),
        n_images: 1,
        n_charts: 1,
        n_figures: 2,
        extraction: None,
        render: None,
        thumbnails: Vec::new(),
        protocol: None,
        sources: Vec::new(),
        error: None,
    };
    LoadedRecord {
        path: Default::default(),
        system: record.system.clone(),
        task_id: record.task_id.clone(),
        judge_model: "judge".into(),
        run,
        units: tvir_analysis::aggregate::RecordUnits::of(&record),
        record,
    }
}
