//! Every real report in the corpus (read through `TVIR_CORPUS_DIR`, never copied
//! into the repository): no panic, sensible counts, and the hand-made gold files in
//! `tests/gold/` met.

use crate::common;

use std::path::{Path, PathBuf};

use tvir_report::{self as report, gold, FigureKind, Language};

fn corpus() -> Option<PathBuf> {
    common::corpus_dir()
}

fn report_dir(corpus: &Path, rel: &str) -> PathBuf {
    corpus.join("reports").join(rel)
}

#[test]
fn every_corpus_report_parses_with_sensible_counts() {
    let Some(corpus) = corpus() else { return };
    let root = corpus.join("reports");
    let mut seen = 0;
    for system in std::fs::read_dir(&root).expect("reports folder") {
        let system = system.unwrap().path();
        for task in std::fs::read_dir(&system).unwrap() {
            let task = task.unwrap().path();
            if !task.join("report.md").is_file() && !task.join("report.html").is_file() {
                continue;
            }
            let r = report::load(&task).unwrap_or_else(|e| panic!("{}: {e}", task.display()));
            seen += 1;
            let name = task.display().to_string();
            // Every fact cites something that exists; every line is in the file.
            let lines = r.text.lines().count().max(1);
            let idxs: Vec<&str> = r.references.iter().map(|x| x.idx.as_str()).collect();
            for f in &r.facts {
                assert!(!f.ref_idxs.is_empty(), "{name}: fact without refs");
                assert!(!f.fact.is_empty(), "{name}: empty fact");
                assert!(f.line >= 1 && f.line <= lines, "{name}: line {}", f.line);
                for i in &f.ref_idxs {
                    assert!(
                        idxs.contains(&i.as_str()),
                        "{name}: fact cites absent [{i}]"
                    );
                }
                assert!(
                    r.text.get(f.span.clone()).is_some(),
                    "{name}: bad fact span"
                );
            }
            for g in &r.figures {
                assert!(
                    r.text.get(g.span.clone()).is_some(),
                    "{name}: bad figure span"
                );
                if let Some(c) = &g.caption_span {
                    assert!(r.text.get(c.clone()).is_some(), "{name}: bad caption span");
                }
            }
            // References are unique by idx.
            let mut sorted = idxs.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), idxs.len(), "{name}: duplicate idx");
        }
    }
    assert!(seen >= 9, "only {seen} corpus reports found");
}

#[test]
fn tvir_sample_has_51_references_and_7_figures_one_chart() {
    let Some(corpus) = corpus() else { return };
    let r = report::load(&report_dir(&corpus, "tvir/claude-4-5-000001")).unwrap();
    assert_eq!(r.language, Language::Zh);
    assert_eq!(r.references.len(), 51);
    assert_eq!(r.figures.len(), 7);
    let charts: Vec<_> = r
        .figures
        .iter()
        .filter(|f| f.kind == FigureKind::Chart)
        .collect();
    assert_eq!(charts.len(), 1);
    assert_eq!(charts[0].ref_idxs, vec!["47", "50", "51"]);
    assert!(r
        .figures
        .iter()
        .all(|f| f.caption.is_some() && f.caption_span.is_some()));
    assert!(r.figures.iter().all(|f| f.number.is_some()));
    // The roadmap chart is mentioned explicitly ("如图 7 所示").
    assert!(charts[0].context.as_deref().unwrap().contains("图 7"));
}

#[test]
fn corpus_styles_extract_what_their_readme_describes() {
    let Some(corpus) = corpus() else { return };
    let load = |rel: &str| report::load(&report_dir(&corpus, rel)).unwrap();

    let openai = load("drb-openai-dr/id058");
    // `[2] [13] URL` lines give one entry per index, sharing the URL.
    let r2 = openai.references.iter().find(|r| r.idx == "2").unwrap();
    let r56 = openai.references.iter().find(|r| r.idx == "56").unwrap();
    assert_eq!(r2.url, r56.url);
    assert!(openai.references.iter().all(|r| r.url.is_some()));
    assert!(!openai.pseudo_visuals.is_empty(), "leftover mermaid block");

    let deer = load("deerflow/nanjing_tangbao");
    assert_eq!(deer.references.len(), 12);
    assert_eq!(deer.figures.len(), 2);
    assert!(deer.facts.is_empty());

    let miro = load("mirothinker-mm/bench_case1114-004");
    assert!(miro
        .references
        .iter()
        .all(|r| r.url.as_deref().is_some_and(|u| u.starts_with("http"))));
    assert!(!miro.facts.is_empty());

    let ms = load("msagent-deepresearch/task_20250617a");
    assert!(ms.references.is_empty());
    assert_eq!(ms.figures.len(), 25);
    assert!(ms.figures.iter().all(|f| f.caption.is_some()));
    assert!(ms
        .structural_errors
        .completeness
        .iter()
        .any(|e| e.code == "orphan_caption"));

    let fin = load("msagent-finresearch/task_20251111a");
    assert_eq!(fin.figures.len(), 6);
    assert!(fin.figures.iter().all(|f| f
        .caption
        .as_deref()
        .is_some_and(|c| c.starts_with("Figure "))));

    for rel in ["drb-gemini-dr/id058", "drb-gemini-dr/id061"] {
        let g = load(rel);
        assert!(g.references.len() >= 30, "{rel}");
        assert!(g.facts.len() >= 100, "{rel}: {}", g.facts.len());
        assert_eq!(g.language, Language::En);
    }
}

#[test]
fn gold_annotations_are_met() {
    let Some(corpus) = corpus() else { return };
    let gold_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/gold");
    let mut checked = 0;
    for entry in std::fs::read_dir(&gold_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        // File name: `<system>__<task>.json`.
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let (system, task) = stem.split_once("__").expect("gold file name system__task");
        let r = report::load(&report_dir(&corpus, &format!("{system}/{task}"))).unwrap();
        let g = gold::Gold::load(&path).unwrap();
        let s = gold::score(&r, &g);
        assert!(
            s.references.f1 >= 0.97,
            "{stem}: reference F1 {:?}",
            s.references
        );
        assert!(s.figures.f1 >= 0.97, "{stem}: figure F1 {:?}", s.figures);
        let err = s.cited_sentences.relative_error.unwrap_or(0.0);
        assert!(
            err <= 0.05,
            "{stem}: cited sentences {:?}",
            s.cited_sentences
        );
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} gold files");
}
