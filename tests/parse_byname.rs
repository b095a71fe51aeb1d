//! Citations by name (our own fixtures, one per family): author-date in English
//! and Chinese, keys, source names, and a report whose author-date citations name
//! no listed entry (the self-check must say so).

use crate::common;

use std::path::PathBuf;

use common::report::{codes, fact_refs, s};
use tvir_report::{self as report, ExtractionVerdict, Report};

fn load(name: &str) -> Report {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(name);
    report::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn ok(r: &Report) {
    assert_eq!(
        r.extraction.verdict,
        ExtractionVerdict::Ok,
        "{:#?}",
        r.extraction
    );
}

#[test]
fn author_date_parenthetical_narrative_and_bracketed() {
    let r = load("byname-author-date");
    assert_eq!(r.references.len(), 9);
    assert_eq!(
        fact_refs(&r),
        vec![
            s(&["1"]),
            s(&["1", "2"]),
            s(&["3"]),
            s(&["5"]),
            s(&["6"]),
            s(&["7"]),
            s(&["1"]),
            s(&["5"]),
            s(&["4"]),
            s(&["2"]),
            s(&["8", "9"]),
        ]
    );
    // The shared surname and year is reported with both candidates, not picked.
    let e = &r.structural_errors.consistency;
    assert!(
        e.iter()
            .any(|x| x.code == "ambiguous_citation" && x.reason.contains("[8], [9]")),
        "{:?}",
        codes(&r)
    );
    // A year in parentheses after a preposition cites nothing.
    assert!(!r.facts.iter().any(|f| f.fact.contains("first pilot")));
    ok(&r);
}

#[test]
fn author_date_in_chinese() {
    let r = load("byname-author-date-zh");
    assert_eq!(r.references.len(), 5);
    assert_eq!(
        fact_refs(&r),
        vec![
            s(&["1"]),
            s(&["2"]),
            s(&["3"]),
            s(&["4"]),
            s(&["2", "3"]),
            s(&["5"]),
        ]
    );
    ok(&r);
}

#[test]
fn keys_pandoc_bracketed_stacked_passages_and_latex() {
    let r = load("byname-keys");
    assert_eq!(r.references.len(), 3);
    assert_eq!(
        fact_refs(&r),
        vec![
            s(&["1", "2"]),
            s(&["3"]),
            s(&["2"]),
            s(&["3", "1"]),
            s(&["1", "3"]),
            s(&["2", "1"]),
        ]
    );
    ok(&r);
}

#[test]
fn source_names_in_brackets_and_labelled_parentheses() {
    let r = load("byname-sources");
    assert_eq!(r.references.len(), 5);
    assert_eq!(
        fact_refs(&r),
        vec![s(&["1"]), s(&["2", "3"]), s(&["4"]), s(&["5"])]
    );
    ok(&r);
}

#[test]
fn author_date_citations_naming_no_entry_are_suspect() {
    let r = load("check-byname-lost");
    let e = &r.extraction;
    assert_eq!(e.verdict, ExtractionVerdict::Suspect, "{e:#?}");
    assert!(
        e.reasons
            .iter()
            .any(|x| x.contains("3 of 5 citations by name") && x.contains("Oduya")),
        "{:?}",
        e.reasons
    );
}

#[test]
fn author_date_list_without_links_under_a_decorated_heading() {
    // Entries with no URL, one per line in one paragraph, under a heading with a
    // pictograph and a remark in brackets.
    let r = load("byname-unlinked-list");
    assert_eq!(r.references.len(), 5, "{:#?}", r.references);
    assert!(r.references.iter().all(|e| e.url.is_none()));
    assert_eq!(
        fact_refs(&r),
        vec![s(&["1"]), s(&["2", "3"]), s(&["4"]), s(&["5"])]
    );
    ok(&r);
}

#[test]
fn names_pointing_nowhere_without_a_list_are_suspect() {
    // Labelled, dated and author-date sources with no list to resolve them: no
    // unit can be cited, and the self-check must not call that `ok`.
    let r = load("check-byname-nolist");
    assert!(r.facts.is_empty());
    assert_eq!(r.extraction.verdict, ExtractionVerdict::Suspect);
    assert!(
        r.extraction
            .reasons
            .iter()
            .any(|x| x.contains("3 of 3 citations by name") && x.contains("point nowhere")),
        "{:?}",
        r.extraction.reasons
    );
}

#[test]
fn handles_as_authors_and_unbracketed_narrative() {
    let r = load("byname-handles-bare");
    assert_eq!(r.references.len(), 3);
    // A lower-case handle that is an entry's author; `Halvorsen et al. 2019` and
    // `Moreau & Tanaka 2021` without brackets (the second inside prose in
    // parentheses); `Lindqvist 2018` names no entry and cites nothing.
    assert_eq!(
        fact_refs(&r),
        vec![s(&["1"]), s(&["3"]), s(&["2"]), s(&["3"])]
    );
    assert!(!r.facts.iter().any(|f| f.fact.contains("Lindqvist")));
    ok(&r);
}

#[test]
fn an_entry_named_without_a_citation_is_suspect() {
    let r = load("check-byname-named");
    assert_eq!(r.references.len(), 2);
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["1"])]);
    assert_eq!(r.extraction.verdict, ExtractionVerdict::Suspect);
    assert!(
        r.extraction
            .reasons
            .iter()
            .any(|x| x.contains("named in the text") && x.contains("[2] okafor")),
        "{:?}",
        r.extraction.reasons
    );
}
