//! RepoRef scoring throughput on synthetic data shaped like the extended set
//! (1,400 instances, mixed entity types), with traces of 8 tool calls each.
//! `score_all`: 6 conditions (3 models x 2 budgets) from memory.
//! `load_traces`: one `budget_{B}` folder of 1,400 trace files from disk.

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use tvir_reporef::aliases::AliasMaps;
use tvir_reporef::formats::{EntityType, GoldRecord, GoldSet};
use tvir_reporef::{load_benchmark, load_conditions, score_all, BenchmarkFiles};

const N: usize = 1400;

fn sha(i: usize) -> String {
    // A cheap mixing of i into 40 hex digits (distinct for distinct i).
    let h = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!(
        "{:016x}{:016x}{:08x}",
        h,
        h.rotate_left(17) ^ 0x5ced_c835,
        i as u32
    )
}

fn gold_url(i: usize) -> String {
    let repo = format!("org{}/repo{}", i % 92, i % 7);
    match i % 3 {
        0 => format!("https://github.com/{repo}/issues/{}", 1000 + i),
        1 => format!("https://github.com/{repo}/pull/{}", 1000 + i),
        _ => format!("https://github.com/{repo}/commit/{}", sha(i)),
    }
}

fn write_fixture(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let mut gold = String::new();
    for i in 0..N {
        let et = ["issue", "pr", "commit"][i % 3];
        gold.push_str(&format!(
            "{{\"id\":\"x{i}\",\"gold_url\":\"{}\",\"entity_type\":\"{et}\"}}\n",
            gold_url(i)
        ));
    }
    let gold_path = dir.join("gold.jsonl");
    std::fs::write(&gold_path, gold).unwrap();
    let runs = dir.join("runs");
    for model in ["m1", "m2", "m3"] {
        for budget in [4, 8] {
            let d = runs.join(model).join(format!("budget_{budget}"));
            std::fs::create_dir_all(&d).unwrap();
            for i in 0..N {
                // Every third run answers a neighbour's artifact (wrong but real).
                let answer = if (i + budget) % 3 == 0 {
                    gold_url(i + 1)
                } else {
                    gold_url(i)
                };
                let steps: Vec<serde_json::Value> = (0..8)
                    .map(|k| {
                        serde_json::json!({"step": k, "response_type": "tool_call",
                          "tool_call": {"name": "search_issues", "arguments": "{}", "call_number": k, "id": k},
                          "tool_result": {"items": [{"html_url": gold_url(i + k), "body": "x".repeat(400)},
                                                    {"html_url": gold_url(i + k + 1), "body": "y".repeat(400)}]}})
                    })
                    .chain(std::iter::once(serde_json::json!({"step": 8, "response_type": "tool_call",
                          "tool_call": {"name": "submit_answer"}, "tool_result": "ok"})))
                    .collect();
                let trace = serde_json::json!({
                    "evaluation": {"correct": true, "predicted": answer, "num_tool_calls": 8,
                                   "total_tokens": 9000, "prompt_tokens": 8000, "completion_tokens": 1000},
                    "trace": {"steps": steps, "final_answer": answer, "total_tool_calls": 9, "total_cost": 0.01}
                });
                std::fs::write(d.join(format!("x{i}.json")), trace.to_string()).unwrap();
            }
        }
    }
    (gold_path, runs)
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (gold_path, runs) = write_fixture(dir.path());
    let files = BenchmarkFiles {
        gold: gold_path,
        ..Default::default()
    };
    let mut diags = Vec::new();
    let bench = load_benchmark(&files, &mut diags).unwrap();
    let conds = load_conditions(std::slice::from_ref(&runs), &bench.gold, &mut diags).unwrap();
    assert!(diags.is_empty());

    let mut group = c.benchmark_group("reporef");
    group.sample_size(10);
    group.bench_function("score_all_1400x6", |b| b.iter(|| score_all(&bench, &conds)));
    let one = runs.join("m1").join("budget_4");
    group.bench_function("load_traces_1400", |b| {
        b.iter(|| {
            let mut d = Vec::new();
            load_conditions(std::slice::from_ref(&one), &bench.gold, &mut d).unwrap()
        })
    });
    // Matching alone, with an alias map of 10k entries in place.
    let gold = GoldSet::new(
        (0..N)
            .map(|i| GoldRecord {
                id: format!("x{i}"),
                gold_url: gold_url(i),
                repo: None,
                entity_type: Some([EntityType::Issue, EntityType::Pr, EntityType::Commit][i % 3]),
                entity_id: None,
                original_url: None,
            })
            .collect(),
    );
    let mut aliases = AliasMaps::default();
    for k in 0..10_000 {
        aliases.add_redirect(
            &format!("https://github.com/old/r/issues/{k}"),
            &format!("https://github.com/new/r/issues/{k}"),
        );
    }
    let matcher = tvir_reporef::Matcher::new(&gold, aliases);
    group.bench_function("match_1400_predictions_with_aliases", |b| {
        b.iter(|| {
            (0..N)
                .filter(|&i| {
                    matcher
                        .match_prediction(&format!("x{i}"), &gold_url(i + (i % 2)))
                        .is_some()
                })
                .count()
        })
    });
    group.finish();
}

criterion_group!(reporef, benches);
criterion_main!(reporef);
