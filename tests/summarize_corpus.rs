//! The real TVIR task file: it parses, and the language fallback finds the
//! benchmark's 50 Chinese and 50 English tasks. Reads `TVIR_CORPUS_DIR`.

use crate::common;

use tvir_analysis::aggregate::load::{detect_language_fallback, load_tasks};

#[test]
fn tvir_tasks_parse_and_split_by_language() {
    let Some(dir) = common::corpus_dir() else {
        return;
    };
    let path = dir.join("tvir-query.json");
    let tasks = load_tasks(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tasks.len(), 100);
    let zh = tasks
        .values()
        .filter(|t| detect_language_fallback(&t.query) == Some("zh"))
        .count();
    let en = tasks
        .values()
        .filter(|t| detect_language_fallback(&t.query) == Some("en"))
        .count();
    assert_eq!((zh, en), (50, 50));
}
