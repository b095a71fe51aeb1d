//! What a `tvir eval` run wrote.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// A JSON file, panicking with its path when it cannot be read.
pub fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `report` (a `report.json` value) without its `timing` object, which holds this
/// process's stage times (never the same twice); panics when it is missing or its
/// stages carry no wall time.
pub fn without_timing(mut report: Value) -> Value {
    let timing = report
        .as_object_mut()
        .and_then(|o| o.remove("timing"))
        .expect("report.json carries timing");
    for stage in ["parse", "fetch", "images", "judge_wait", "write"] {
        assert!(timing[stage]["wall_seconds"].is_number(), "{timing}");
    }
    report
}

/// Judge calls by metric in `out`'s journal (one line per call, whether the server or
/// the cache answered it), and the distinct cache keys among them. No journal counts
/// as no calls.
pub fn journal_calls(out: &Path) -> (BTreeMap<String, u64>, std::collections::BTreeSet<String>) {
    let mut journal = String::new();
    if let Ok(mut lines) = tvir_judge::journal::open_lines(&out.join("judge-journal.jsonl.zst")) {
        std::io::Read::read_to_string(&mut lines, &mut journal).unwrap();
    }
    let mut per_metric = BTreeMap::<String, u64>::new();
    let mut distinct = std::collections::BTreeSet::new();
    for line in journal.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        let metric = v["metric"]
            .as_str()
            .unwrap_or_else(|| panic!("no metric: {line}"));
        *per_metric.entry(metric.to_string()).or_default() += 1;
        distinct.insert(v["cache_key"].to_string());
    }
    (per_metric, distinct)
}

/// A unit's cited sources with every field (address, title, characters, fetch
/// outcome, reason, characters given to the judge), as
/// `ReportRecord::unit_sources` joins them; panics when the unit lists none.
pub fn unit_sources(record: &Value, unit: &Value) -> Vec<Value> {
    assert!(unit["detail"]["sources"].is_array(), "no sources in {unit}");
    let record: tvir_engine::record::ReportRecord =
        serde_json::from_value(record.clone()).expect("a report record");
    let unit: tvir_engine::record::UnitRecord =
        serde_json::from_value(unit.clone()).expect("a unit record");
    record.unit_sources(&unit)
}
