//! Export dialects met on real reports from systems outside the corpus (issue #26,
//! req 3): numerals a space before an ideographic full stop and at the end of
//! table cells (Gemini in Japanese, Chinese, Korean), links with empty text and
//! links to uploaded files, pandoc source sections, markers that name no entry.
//! Every fixture is our own small report reproducing the dialect.

use crate::common;

use std::path::PathBuf;

use common::report::{fact_refs, s};
use tvir_report::{self as report, Report};

fn load(name: &str) -> Report {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(name);
    report::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn fact<'a>(r: &'a Report, needle: &str) -> &'a tvir_report::Fact {
    r.facts
        .iter()
        .find(|f| f.fact.contains(needle))
        .unwrap_or_else(|| panic!("no fact with {needle:?}: {:#?}", r.facts))
}

#[test]
fn japanese_numerals_before_the_ideographic_full_stop_cite() {
    let r = load("cjk-spaced-ja");
    assert_eq!(r.references.len(), 9);
    // Every sentence and table row that ends in a numeral, counted once.
    assert_eq!(r.facts.len(), 9, "{:#?}", r.facts);
    assert_eq!(fact(&r, "着実に増えています").ref_idxs, s(&["1"]));
    assert_eq!(fact(&r, "追い風").ref_idxs, s(&["2"]));
    assert_eq!(fact(&r, "冬季の利用率").ref_idxs, s(&["3", "4"]));
    // The sentence with no numeral is no fact.
    assert!(r.facts.iter().all(|f| !f.fact.contains("一律の評価")));
    // Table cells: a numeral at a cell's end or before its full stop cites the row,
    // and leaves the cell text.
    let row = fact(&r, "駐輪場の確保");
    assert_eq!(row.ref_idxs, s(&["2", "6"]));
    assert!(
        !row.fact.contains(" 2") && !row.fact.contains(" 6"),
        "{}",
        row.fact
    );
    assert_eq!(fact(&r, "本数の少なさ").ref_idxs, s(&["7"]));
    // A row without numerals is no fact; the fact text keeps no numeral.
    assert!(r.facts.iter().all(|f| !f.fact.contains("渋滞")));
    assert!(!fact(&r, "着実に").fact.contains('1'));
    assert!(!r.extraction.is_suspect(), "{:?}", r.extraction);
}

#[test]
fn chinese_numerals_before_the_full_stop_cite() {
    let r = load("cjk-spaced-zh");
    assert_eq!(
        fact_refs(&r),
        vec![
            s(&["1"]),
            s(&["2"]),
            s(&["3"]),
            s(&["4"]),
            s(&["2", "4"]),
            s(&["2", "5"]),
            s(&["6"]),
            s(&["7"])
        ]
    );
    assert!(!r.extraction.is_suspect(), "{:?}", r.extraction);
}

#[test]
fn empty_links_and_uploaded_files_are_citations_and_references() {
    let r = load("uploaded-files");
    let urls: Vec<&str> = r
        .references
        .iter()
        .filter_map(|x| x.url.as_deref())
        .collect();
    assert!(
        urls.iter().any(|u| u.starts_with("file://file-Ab12")),
        "{urls:?}"
    );
    assert!(urls.contains(&"sandbox:/mnt/data/summary.csv"), "{urls:?}");
    assert!(
        urls.contains(&"https://example.net/region/errors"),
        "{urls:?}"
    );
    // A linked image is no citation; an empty-text link is.
    assert!(
        !urls.iter().any(|u| u.contains("example.com/home")),
        "{urls:?}"
    );
    assert_eq!(r.facts.len(), 5, "{:#?}", r.facts);
    let both = fact(&r, "regional office");
    assert_eq!(both.ref_idxs.len(), 2);
    // Uploaded files cannot be read: the report says so, for CS to settle.
    let audit = fact(&r, "two percent");
    let why = r.unusable_citation(&audit.ref_idxs[0]).unwrap();
    assert!(why.contains("uploaded"), "{why}");
    assert!(r.unusable_citation(&both.ref_idxs[0]).is_none());
}

#[test]
fn pandoc_source_sections_are_a_reference_list() {
    let r = load("pandoc-sources");
    let refs: Vec<(&str, &str)> = r
        .references
        .iter()
        .map(|x| (x.idx.as_str(), x.url.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(refs.len(), 5, "{refs:?}");
    assert!(refs.contains(&("4", "https://example.org/heat/cold-tests")));
    assert!(refs.contains(&("5", "https://example.com/energy/report-2024")));
    assert_eq!(
        r.references[0].title.as_deref(),
        Some("Cold weather tests of air source heat pumps - Example Lab")
    );
    // The entries' lines are not claims.
    assert_eq!(r.facts.len(), 4, "{:#?}", r.facts);
    assert!(r.facts.iter().all(|f| !f.fact.contains("Example Lab")));
    assert_eq!(fact(&r, "Defrost").ref_idxs, s(&["4"]));
    assert!(!r.extraction.is_suspect(), "{:?}", r.extraction);
}

#[test]
fn markers_naming_no_entry_still_make_cited_units() {
    let r = load("dangling-markers");
    assert_eq!(
        fact_refs(&r),
        vec![s(&["1"]), s(&["2", "7"]), s(&["8"]), s(&["9"])]
    );
    assert!(r.facts.iter().all(|f| !f.fact.contains("soil volume")));
    // The consistency error stays, one per marker.
    let dangling = r
        .structural_errors
        .consistency
        .iter()
        .filter(|e| e.code == "marker_without_entry")
        .count();
    assert_eq!(dangling, 3);
    let why = r.unusable_citation("8").unwrap();
    assert!(why.contains("names no entry"), "{why}");
    assert!(r.unusable_citation("1").is_none());
}

#[test]
fn japanese_numerals_inside_sentences_cite() {
    let r = load("cjk-inline-ja");
    assert_eq!(r.references.len(), 9);
    // Before a comma, before a particle after a word or a closing quote, as the
    // sentence's subject, after a closing emphasis, as a label's value.
    let at = |needle: &str| fact(&r, needle).ref_idxs.clone();
    assert_eq!(at("異なるが、人口"), s(&["6"]));
    assert_eq!(at("観光協会や商工会議所"), s(&["7", "8"]));
    assert_eq!(at("「電動アシスト」や「シェアサイクル」"), s(&["2", "3"]));
    assert_eq!(at("4は、駅前の駐輪場"), s(&["4"]));
    assert_eq!(at("長く走れる"), s(&["9"]));
    assert_eq!(at("関連資料"), s(&["6"]));
    // A product written once with a numeral cites; a name the report repeats
    // (`Velo 3`) does not, and neither do counters (`3 人`, `5 年`) nor a
    // heading's step number.
    assert_eq!(at("DataHubは"), s(&["5"]));
    for not in ["Velo", "会員数", "会員登録"] {
        assert!(
            r.facts.iter().all(|f| !f.fact.contains(not)),
            "{not}: {:#?}",
            r.facts
        );
    }
    // A source column named in Japanese, and one named in the first row of a
    // table whose header row is blank, with a superscript number.
    assert_eq!(at("30 分ごとに課金"), s(&["4"]));
    assert_eq!(at("市内に約 200 台"), s(&["5"]));
    assert_eq!(at("ヘルメット"), s(&["7"]));
    assert_eq!(r.facts.len(), 15, "{:#?}", r.facts);
    assert!(!r.extraction.is_suspect(), "{:?}", r.extraction);
}
