//! The fidelity table (issue 27): `docs/fidelity.md` is exactly what the rubric
//! files generate, and every row's checks hold on the built-in rubrics and prompts
//! (phrases of the prompt rendered for fixed inputs, rubric settings). The flags the
//! rows name are checked against `tvir eval --help` by the root `fidelity_flags` test.
//!
//! Regenerate the page after changing a row: `TVIR_FIDELITY_UPDATE=1 cargo test -p
//! tvir-rubric --test fidelity_doc`, then review the diff of `docs/fidelity.md`.

use std::path::PathBuf;

use tvir_rubric::fidelity::{check_set, markdown};
use tvir_rubric::RubricSet;

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/fidelity.md")
}

#[test]
fn every_row_holds_on_the_builtin_rubrics_and_prompts() {
    let set = RubricSet::builtin().unwrap();
    let problems = check_set(&set);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_committed_page_is_the_generated_one() {
    let set = RubricSet::builtin().unwrap();
    let generated = markdown(&set);
    let path = doc_path();
    if std::env::var_os("TVIR_FIDELITY_UPDATE").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/fidelity.md differs from what the rubric files generate; run \
         TVIR_FIDELITY_UPDATE=1 cargo test -p tvir-rubric --test fidelity_doc"
    );
}
