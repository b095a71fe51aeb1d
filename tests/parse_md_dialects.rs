//! Markdown dialects of reports from systems outside the corpus (issue #12, reqs
//! 1-5): reference lists wherever they are, several lists of the same entries,
//! markers wherever writers put them, inline links next to a list, URLs as
//! written. Every fixture is our own small report with a hand-made gold file in
//! `tests/gold/fixtures/` (references, figures, the number of cited units a
//! careful reader counts); each is scored exactly, then checked for what the
//! dialect is about.

use crate::common;

use std::path::PathBuf;

use common::report::{codes, fact_refs, s};
use tvir_report::{self as report, gold, Report};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load(name: &str) -> Report {
    let dir = root().join("tests/fixtures/reports").join(name);
    report::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Line (1-based) of the first line of the report that starts with `prefix`.
fn line_of(r: &Report, prefix: &str) -> usize {
    r.text
        .lines()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix:?}"))
        + 1
}

/// Scores a fixture against its gold file and demands an exact match.
fn check_gold(name: &str) -> Report {
    let r = load(name);
    let g = gold::Gold::load(&root().join(format!("tests/gold/fixtures/{name}.json"))).unwrap();
    let sc = gold::score(&r, &g);
    let got: Vec<(String, Option<String>)> = r
        .references
        .iter()
        .map(|x| (x.idx.clone(), x.url.clone()))
        .collect();
    assert_eq!(sc.references.f1, 1.0, "{name}: references {got:?}");
    assert_eq!(sc.figures.f1, 1.0, "{name}: figures {:?}", sc.figures);
    let facts: Vec<(usize, &str, &Vec<String>)> = r
        .facts
        .iter()
        .map(|f| (f.line, f.fact.as_str(), &f.ref_idxs))
        .collect();
    assert_eq!(
        sc.cited_sentences.predicted, sc.cited_sentences.gold,
        "{name}: cited units {facts:#?}"
    );
    r
}

/// No fact may start at or after the given line (the reference lists sit there).
fn no_fact_from(r: &Report, line: usize) {
    for f in &r.facts {
        assert!(f.line < line, "fact from a reference list: {f:?}");
    }
}

#[test]
fn every_dialect_fixture_matches_its_gold_file() {
    let dir = root().join("tests/gold/fixtures");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        check_gold(&name);
        n += 1;
    }
    assert!(n >= 10, "only {n} gold files in {}", dir.display());
}

#[test]
fn label_line_in_the_same_paragraph_as_its_entries() {
    let r = check_gold("md-label-in-paragraph");
    no_fact_from(&r, line_of(&r, "Citations:"));
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["2", "3"]), s(&["4"])]);
    assert!(codes(&r).is_empty(), "{:?}", codes(&r));
}

#[test]
fn bold_cjk_label_heads_an_unnumbered_list() {
    let r = check_gold("md-cjk-bold-label");
    no_fact_from(&r, line_of(&r, "**关键引用**"));
    assert_eq!(r.facts[0].fact, "口袋公园的平均面积约为0.4公顷。");
    assert_eq!(r.facts[1].ref_idxs, s(&["3"]));
    assert_eq!(r.facts[2].ref_idxs, s(&["4", "5"]));
    assert_eq!(r.references[5].title.as_deref(), Some("居民满意度调查"));
}

#[test]
fn unlabeled_trailing_block_of_url_entries_is_a_list() {
    let r = check_gold("md-unlabeled-tail");
    no_fact_from(&r, line_of(&r, "1. Nanoplastics"));
    assert_eq!(fact_refs(&r)[4], s(&["4"]));
    assert!(r.references[0]
        .title
        .as_deref()
        .unwrap()
        .starts_with("Nanoplastics in bottled water"));
    // Markers resolve, so nothing dangles.
    assert!(r.structural_errors.consistency.is_empty());
}

#[test]
fn title_list_and_url_lists_merge_by_number() {
    let r = check_gold("md-merged-lists");
    no_fact_from(&r, line_of(&r, "## References"));
    assert_eq!(r.references.len(), 4);
    // The title comes from the first list, the URL from the second.
    assert_eq!(
        r.references[0].title.as_deref(),
        Some("NOAA Coral Reef Watch: global bleaching events")
    );
    assert_eq!(
        r.references[0].url.as_deref(),
        Some("https://example.gov/coral/global-events")
    );
    // Same page written with a tracking parameter or a trailing slash: no conflict,
    // and no citation lacks a URL.
    assert!(codes(&r).is_empty(), "{:?}", r.structural_errors);
    assert_eq!(r.facts.len(), 4);
}

#[test]
fn conflicting_urls_for_one_number_name_both_lines() {
    let r = check_gold("md-list-conflict");
    let errs: Vec<_> = r
        .structural_errors
        .consistency
        .iter()
        .filter(|e| e.code == "duplicate_reference_number")
        .collect();
    assert_eq!(errs.len(), 1, "{:?}", r.structural_errors);
    let first = line_of(&r, "[2] https://example.org/desal-energy");
    let second = line_of(&r, "[2] https://example.com/a-different-page");
    let e = errs[0];
    assert_eq!(e.line, Some(second));
    assert!(e.reason.contains(&format!("line {first}")), "{}", e.reason);
    assert!(e.reason.contains(&format!("line {second}")), "{}", e.reason);
    assert!(e.reason.contains("https://example.org/desal-energy"));
    assert!(e.reason.contains("https://example.com/a-different-page"));
    // The first URL is kept.
    assert_eq!(
        r.references[1].url.as_deref(),
        Some("https://example.org/desal-energy")
    );
}

#[test]
fn markers_apart_from_their_sentence_belong_to_it() {
    let r = check_gold("md-spaced-markers");
    no_fact_from(&r, line_of(&r, "## References"));
    let by_text = |needle: &str| {
        r.facts
            .iter()
            .find(|f| f.fact.contains(needle))
            .unwrap_or_else(|| panic!("no fact with {needle:?}: {:#?}", r.facts))
    };
    assert_eq!(by_text("Attrition fell").ref_idxs, s(&["2", "3"]));
    assert_eq!(by_text("call-centre").ref_idxs, s(&["4"]));
    assert_eq!(by_text("Managers remained").ref_idxs, s(&["5"]));
    assert_eq!(by_text("survey authors").ref_idxs, s(&["7"]));
    // A paragraph of markers alone cites the paragraph before it, not the last fact.
    assert_eq!(by_text("Office attendance").ref_idxs, s(&["8", "9"]));
    assert_eq!(by_text("survey authors").ref_idxs, s(&["7"]));
    // A marker after a hard line break cites the sentence before the break.
    assert_eq!(by_text("Commute time").ref_idxs, s(&["13"]));
    assert_eq!(by_text("shorter breaks").ref_idxs, s(&["12"]));
    assert_eq!(by_text("Three factors").ref_idxs, s(&["10", "11"]));
}

#[test]
fn marker_forms_from_other_writers() {
    let r = check_gold("md-marker-forms");
    let refs = fact_refs(&r);
    assert_eq!(
        refs,
        vec![
            s(&["1"]),
            s(&["2"]),
            s(&["3"]),
            s(&["1"]),
            s(&["4"]),
            s(&["5"]),
            s(&["6"]),
            s(&["1", "3", "4", "5"]),
            s(&["2"]),
            s(&["7"]),
        ]
    );
    // Marker syntax never leaks into the fact text.
    assert_eq!(
        r.facts[0].fact,
        "Global lithium output reached 180,000 tonnes in 2023."
    );
    assert_eq!(r.facts[1].fact, "Australia mined almost half of it.");
    assert_eq!(r.facts[3].fact, "Prices fell by 80% during 2023.");
    assert!(!r.facts.iter().any(|f| f.fact.contains("cm")));
    assert!(r.structural_errors.consistency.is_empty());
}

#[test]
fn inline_links_cite_list_entries_or_new_ones() {
    let r = check_gold("md-inline-links-with-list");
    no_fact_from(&r, line_of(&r, "## References"));
    assert_eq!(
        fact_refs(&r),
        vec![
            s(&["1"]),
            s(&["2"]),
            s(&["4"]),
            s(&["3"]),
            s(&["5"]),
            s(&["3"]),
        ]
    );
    // The table cited by its source line is one fact holding the whole table.
    assert!(r.facts[4].fact.contains("2023 | 16.0"));
    // New entries come after the list's last number, with the link text as title.
    assert_eq!(r.references[3].title.as_deref(), Some("industry survey"));
    assert_eq!(r.references[4].line, line_of(&r, "Source: [EIA"));
    // The image link, the anchor, the figure file and the link to the report's own
    // remote figure are no citations (the sentence citing only its figure is no fact).
    assert_eq!(r.references.len(), 5);
    assert_eq!(r.figures.len(), 2);
    assert!(!r
        .facts
        .iter()
        .any(|f| f.fact.contains("retired gas plants")));
}

#[test]
fn urls_are_taken_as_written() {
    let r = check_gold("md-urls-as-written");
    assert_eq!(
        fact_refs(&r),
        vec![s(&["1"]), s(&["4"]), s(&["2"]), s(&["3"]), s(&["6"])]
    );
    assert_eq!(
        r.facts[1].fact,
        "Its delta hosts over 300 bird species (delta survey)."
    );
    // Stored as written, fragments and parentheses whole.
    let urls: Vec<&str> = r
        .references
        .iter()
        .map(|x| x.url.as_deref().unwrap())
        .collect();
    assert_eq!(
        urls,
        vec![
            "https://en.wikipedia.org/wiki/Danube_(river)",
            "https://example.net/discharge_(annual)",
            "https://example.com/danube/countries",
            "https://example.org/delta#:~:text=over 300 species (including pelicans) nest",
            "https://example.org/sturgeon?a=1&b=(2)",
            "https://en.wikipedia.org/wiki/Sturgeon_(fish)#Danube population",
        ]
    );
}

#[test]
fn image_source_lists_make_no_facts() {
    let r = check_gold("md-image-sources");
    no_fact_from(&r, line_of(&r, "## References"));
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["2"]), s(&["3"])]);
    assert_eq!(
        r.figures[1].caption.as_deref(),
        Some("Figure 2: A grey heron feeding in the shallow zone.")
    );
}

#[test]
fn link_reference_definitions_are_the_list() {
    let r = check_gold("md-link-definitions");
    assert_eq!(
        fact_refs(&r),
        vec![s(&["2"]), s(&["1"]), s(&["3", "1"]), s(&["2"])]
    );
    assert_eq!(
        r.references[0].title.as_deref(),
        Some("European electric bus market")
    );
    assert_eq!(r.references[2].title.as_deref(), Some("Charging guide"));
    assert_eq!(r.references[0].line, line_of(&r, "[1]: "));
    assert!(codes(&r).is_empty(), "{:?}", codes(&r));
}

#[test]
fn annotated_bibliography_by_sub_heading_is_a_list() {
    // One sub-heading per source, its URL on a line of its own, notes under it:
    // one entry per sub-heading, and neither the "URL:" lines nor the notes are
    // cited units (the notes' own link is not an entry either).
    let r = check_gold("md-annotated-sources");
    no_fact_from(&r, line_of(&r, "## Key sources consulted"));
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["2"]), s(&["3"])]);
    assert_eq!(r.references.len(), 3);
    assert!(r.references[1]
        .title
        .as_deref()
        .unwrap()
        .starts_with("Tariffs and payback for public buildings"));
    assert_eq!(r.extraction.verdict, report::ExtractionVerdict::Ok);
}

#[test]
fn a_fence_closed_with_a_marker_does_not_swallow_the_report() {
    // "``` [2]" is meant as a closing fence; read as CommonMark it is code text and
    // the rest of the report, list included, would be code.
    let r = check_gold("md-fence-marker");
    assert_eq!(r.references.len(), 3);
    let refs = fact_refs(&r);
    assert!(refs.contains(&s(&["3"])), "{refs:?}");
    assert!(r
        .facts
        .iter()
        .any(|f| f.fact.starts_with("After the rule was applied")));
    assert!(
        r.structural_errors.consistency.is_empty(),
        "{:?}",
        codes(&r)
    );
}

fn parse_text(md: &str) -> Report {
    report::parse_str(
        md,
        report::SourceFormat::Markdown,
        std::path::Path::new("inline/report.md"),
        std::path::Path::new("inline"),
    )
}

fn units(r: &Report) -> Vec<(String, Vec<String>)> {
    r.facts
        .iter()
        .map(|f| (f.fact.clone(), f.ref_idxs.clone()))
        .collect()
}

#[test]
fn numerals_a_space_before_the_period_cite_when_a_report_writes_them_throughout() {
    // Our own text in the shape of Gemini exports: "... the diet 2." with a works
    // cited list and no bracketed marker anywhere.
    let mut md = String::from("# Sleep and memory\n\n");
    let claims = [
        ("Adults need about seven hours of sleep each night", "1"),
        ("Deep sleep moves new facts into long-term memory", "2"),
        ("Short naps help, though less than a full night", "1, 3"),
        ("Shift workers report more lapses of attention", "4"),
        ("Caffeine late in the day delays the onset of sleep", "5"),
        ("Teenagers fall asleep later than adults", "2"),
    ];
    for (text, n) in claims {
        md.push_str(&format!("{text} {n}. "));
    }
    md.push_str("The study ran for 12 weeks.\n\n#### **Works cited**\n\n");
    for i in 1..=5 {
        md.push_str(&format!(
            "{i}. Source {i}, accessed March 2, 2025, [https://example.org/s{i}](https://example.org/s{i})\n"
        ));
    }
    let r = parse_text(&md);
    let u = units(&r);
    assert_eq!(u.len(), 6, "{u:#?}");
    assert_eq!(u[0].0, "Adults need about seven hours of sleep each night.");
    assert_eq!(u[2].1, s(&["1", "3"]));
    // "for 12 weeks." is a quantity (after a word that takes a number), not [12].
    assert!(u.iter().all(|(t, _)| !t.contains("12 weeks")), "{u:#?}");

    // Two such numerals in a report are no style: they stay numbers.
    let few = "# Notes\n\nThe trial enrolled patients from clinic 2. It ran in town 3.\n\n## References\n\n1. A https://example.org/a\n2. B https://example.org/b\n3. C https://example.org/c\n";
    assert!(parse_text(few).facts.is_empty());
}

#[test]
fn a_link_group_after_the_period_cites_the_sentence_before_it() {
    let md = "# Tea\n\nTea was first drunk in China. ([example.org](https://example.org/tea-history?utm_source=chatgpt.com)) It reached Europe in the 1600s ([example.org](https://example.org/tea-trade)). Britain later grew it in India. ([example.org](https://example.org/assam), [example.net](https://example.net/india))\n";
    let u = units(&parse_text(md));
    assert_eq!(u.len(), 3, "{u:#?}");
    assert!(u[0].0.starts_with("Tea was first drunk in China."));
    assert_eq!(u[0].1, s(&["1"]));
    assert!(u[1].0.starts_with("It reached Europe"));
    assert_eq!(u[2].1, s(&["3", "4"]));
}

#[test]
fn a_bare_url_before_the_period_ends_its_sentence() {
    let md = "# Vendor review\n\nThe vendor encrypts data at rest and in transit https://example.org/enc. Its review process is sound https://example.org/review. A 2024 error exposed some records (https://example.org/news).\n";
    let u = units(&parse_text(md));
    assert_eq!(
        u,
        vec![
            (
                "The vendor encrypts data at rest and in transit.".to_string(),
                s(&["1"])
            ),
            ("Its review process is sound.".to_string(), s(&["2"])),
            ("A 2024 error exposed some records.".to_string(), s(&["3"])),
        ]
    );
}

#[test]
fn a_label_and_a_url_name_a_source_and_cite_nothing() {
    let md = "# Tools\n\n### Leaf imaging review\n- Source: journal review\n- URL: https://example.org/leaf-review\n- GitHub: https://github.com/example/leafscan\n- Findings: laser scanning beats photos on thin leaves [1].\n\n## References\n\n[1] https://example.org/leaf-review\n";
    let r = parse_text(md);
    let u = units(&r);
    assert_eq!(u.len(), 1, "{u:#?}");
    assert!(u[0].0.starts_with("Findings:"));
}

#[test]
fn scholarly_identifiers_as_link_targets_are_urls() {
    let md = "# Traps\n\nIon traps can be linked by light [1]. Wiring large traps is hard [2].\n\n## References\n\n1. [Smith, 2024, Linking two traps](arXiv:2401.00001)\n2. [Lee, 2023, Wiring big traps](doi:10.1000/xyz123)\n";
    let r = parse_text(md);
    let urls: Vec<Option<String>> = r.references.iter().map(|x| x.url.clone()).collect();
    assert_eq!(
        urls,
        vec![
            Some("https://arxiv.org/abs/2401.00001".to_string()),
            Some("https://doi.org/10.1000/xyz123".to_string())
        ]
    );
}

#[test]
fn linked_markers_without_a_list_are_resolved_in_the_self_check() {
    let mut md = String::from("# Notes\n\n");
    for i in 1..=8 {
        md.push_str(&format!(
            "- Finding number {i} holds in the data [[{i}]](https://example.org/f{i}).\n"
        ));
    }
    let r = parse_text(&md);
    assert_eq!(r.facts.len(), 8);
    assert_eq!(
        r.extraction.verdict,
        report::ExtractionVerdict::Ok,
        "{:?}",
        r.extraction.reasons
    );
    assert_eq!(r.extraction.counts.markers_unresolved, 0);
}

#[test]
fn source_words_in_headings_of_report_sections_make_no_list() {
    // Sub-sections under a heading that mentions sources, each opening with a
    // sentence that cites: a report section, not an annotated bibliography.
    let md = "# Guide\n\n## Study notes with source-grounded summaries\n\n### Part A: the setting\n\n1) **Opening.** The teacher eats and sits down [[3]](https://example.org/c).\n\n### Part B: the middle\n\nPick one full translation to read [[5]](https://example.org/e).\n\n### Part C: the ending\n\n9) **Closing verse.** All made things are like a dream [[7]](https://example.org/g).\n";
    let r = parse_text(md);
    assert_eq!(r.facts.len(), 3, "{:#?}", units(&r));
    assert!(r
        .references
        .iter()
        .all(|x| x.title.as_deref() != Some("Part A: the setting")));
}

#[test]
fn one_line_per_paragraph_with_no_blank_lines_keeps_every_unit() {
    // A plain-text export: a title, section names and paragraphs each on one line,
    // no blank line anywhere, the list at the end as `[N] [M] title` then URL.
    let mut md = String::from("Harbour ferries in three cities\nOslo\n");
    md.push_str("Ridership: the harbour line carried 9,000 riders a day in 2023[1]. Fares rose twice[2][3].\n");
    md.push_str("Fleet: two of the six boats now run on batteries[4].\n");
    md.push_str("Lisbon\n");
    md.push_str("Ridership: river crossings fell during the bridge works[5]. They recovered within a year[1].\n");
    md.push_str("Planning: a new terminal is due in 2026[6].\n");
    md.push_str("Sources:\n");
    md.push_str("Oslo – ridership and fares[1][2]; fleet[4].\n");
    md.push_str("[1] [5] Harbour ridership statistics\nhttps://example.org/ridership\n");
    md.push_str("[2] [3] Fare history of the harbour lines\nhttps://example.org/fares\n");
    md.push_str("[4] Battery ferries enter service\nhttps://example.org/battery\n");
    md.push_str("[6] Terminal plan\nhttps://example.org/terminal\n");
    let r = parse_text(&md);
    let u = units(&r);
    assert_eq!(r.references.len(), 6, "{:?}", r.references);
    // Six claims; the summary line under `Sources:` belongs to the list.
    assert_eq!(u.len(), 6, "{u:#?}");
    assert_eq!(
        u[0].0,
        "Ridership: the harbour line carried 9,000 riders a day in 2023."
    );
    assert_eq!(u[1].1, s(&["2", "3"]));
    assert_eq!(u[3].1, s(&["5"]));
    assert_eq!(u[5].1, s(&["6"]));
    // Each unit is on its own line.
    assert_eq!(r.facts[2].line, 4);
    assert_eq!(
        r.extraction.verdict,
        tvir_report::model::ExtractionVerdict::Ok,
        "{:?}",
        r.extraction
    );

    // Hard-wrapped prose keeps its paragraphs: a line that ends mid-sentence does
    // not end a unit.
    let wrapped = "# Ferries\n\nThe harbour line carried 9,000 riders a day in 2023, most of\nthem commuters who cross twice a day, and fares rose twice [1]. The\nfleet now has two battery boats of six [2].\n\n## References\n\n[1] https://example.org/a\n[2] https://example.org/b\n";
    let u = units(&parse_text(wrapped));
    assert_eq!(u.len(), 2, "{u:#?}");
    assert!(u[0].0.contains("most of them commuters"), "{u:#?}");

    // A list item's title, URL and notes on lines of their own stay one entry.
    let items = "# Gene transfer\n\n## Assessment\nThe literature supports transfer in some lineages.\n\n## High-quality sources\n\n### Broad reviews\n1. **Gene transfer in eukaryotes: a debate** (NIH editorial, 2016)  \n   https://example.org/debate  \n   Useful for the central debate about contamination.\n\n2. **Transfer from bacteria to eukaryotes** (NIH review, 2022)  \n   https://example.org/bacteria  \n   Strong review on mechanisms.\n\n### Animals\n3. **Tardigrade genomes compared** (NIH, 2017)  \n   https://example.org/tardigrade  \n   Shows how contamination inflated early claims.\n";
    let r = parse_text(items);
    assert_eq!(r.references.len(), 3, "{:?}", r.references);
    assert!(units(&r).is_empty(), "{:#?}", units(&r));

    // Under a reference label, a paragraph of entry lines stays whole, so the
    // label still takes it into the list.
    let label = "# Birds\n\nBirds sense fields [1]. Pigeons use smell [2].\n\nKey references\n\nHore, P. and Moss, H. (2016). The radical-pair mechanism (Annual Review). [1]\nXu et al. (2021). Magnetic sensitivity of cryptochrome 4 (Nature). [2]\nZapka et al. (2009). Visual mediation of compass information (Nature). [2]\n\n[1] https://example.org/1\n[2] https://example.org/2\n";
    let u = units(&parse_text(label));
    assert_eq!(u.len(), 2, "{u:#?}");
}

#[test]
fn a_sources_label_in_the_middle_of_a_paragraph_starts_the_list() {
    let md = "# Tides\n\nSpring tides follow the new and full moon [1].\nNeap tides come between them [2].\nSources:\n[1] https://example.org/spring\n[2] https://example.org/neap\n";
    let r = parse_text(md);
    assert_eq!(r.references.len(), 2, "{:?}", r.references);
    assert_eq!(
        r.references[1].url.as_deref(),
        Some("https://example.org/neap")
    );
    let u = units(&r);
    assert_eq!(
        u,
        vec![
            (
                "Spring tides follow the new and full moon.".to_string(),
                s(&["1"])
            ),
            ("Neap tides come between them.".to_string(), s(&["2"])),
        ]
    );
    assert!(
        r.structural_errors.consistency.is_empty(),
        "{:?}",
        codes(&r)
    );
}

#[test]
fn numerals_glued_after_emphasis_and_lenticular_source_markers() {
    let md = "# Stress\n\nThreats act through the **adrenal axis**.1 Cortisol peaks after waking.2 Poor sleep follows in *shift workers*.3\n\n#### **Works cited**\n\n1. Axis overview, accessed May 1, 2025, [https://example.org/axis](https://example.org/axis)\n2. Waking, accessed May 1, 2025, [https://example.org/waking](https://example.org/waking)\n3. Shift work, accessed May 1, 2025, [https://example.org/shift](https://example.org/shift)\n";
    let u = units(&parse_text(md));
    assert_eq!(u.len(), 3, "{u:#?}");
    assert_eq!(
        u[0],
        (
            "Threats act through the adrenal axis.".to_string(),
            s(&["1"])
        )
    );
    assert_eq!(u[2].1, s(&["3"]));

    let md = "# Ferries\n\nThe ferry carries 9,000 riders a day【1†source】. Fares rose twice【2†L10-L24】【3†source】.\n\n## Sources\n\n1. Ridership https://example.org/r\n2. Fares https://example.org/f\n3. Minutes https://example.org/m\n";
    let u = units(&parse_text(md));
    assert_eq!(u[0].1, s(&["1"]));
    assert_eq!(u[1], ("Fares rose twice.".to_string(), s(&["2", "3"])));
}

#[test]
fn bulleted_claims_ending_in_a_url_are_not_a_missed_list() {
    let md = "# Privacy review\n\n## Recommendations\n\n- Shorten how long reviewers keep chat logs so that retention meets the storage limit https://example.org/retention\n- Let users switch off the sharing of contact data with the assistant in one place https://example.org/contacts\n- Publish which regions store the logs and for how long each copy is kept https://example.org/regions\n1. Test every quarter that disabled connections really stop the data flow (https://example.org/tests).\n\n## Background\n\nThe assistant launched last year in twelve countries.\n\nIt answers questions about bookings and refunds.\n\nA second release added voice input.\n";
    let r = parse_text(md);
    assert_eq!(units(&r).len(), 4);
    assert_eq!(r.extraction.counts.unlisted_reference_lines, 0);
    assert_eq!(
        r.extraction.verdict,
        tvir_report::model::ExtractionVerdict::Ok,
        "{:?}",
        r.extraction
    );

    // A real list the parser did not find still trips the check.
    let md = "# Privacy review\n\nRetention is long [1].\n\nFurther material\n\n- Chat Retention Policy https://example.org/retention\n- Contact Sharing Settings https://example.org/contacts\n- Regional Storage Overview https://example.org/regions\n\n## Background\n\nThe assistant launched last year in twelve countries.\n\nIt answers questions about bookings and refunds.\n\nA second release added voice input.\n";
    let r = parse_text(md);
    assert!(
        r.extraction.counts.unlisted_reference_lines >= 3,
        "{:?}",
        r.extraction
    );
    assert_eq!(
        r.extraction.verdict,
        tvir_report::model::ExtractionVerdict::Suspect
    );
}

#[test]
fn display_math_between_lines_of_a_paragraph_ends_the_line_before_it() {
    // Claims, each on its own line, with display math between them and no blank
    // line anywhere: the text after a closing `\]` is a unit of its own.
    let md = "# Planning\n\nThe entropy of one cell is [1]:\n\\[\nH=-p\\ln p\n\\]\nvisibility along a ray multiplies the free cells before it [1].\nThe gain of a view sums over its rays [2].\n\n## References\n\n[1] https://example.org/entropy\n[2] https://example.org/gain\n";
    let u = units(&parse_text(md));
    assert_eq!(u.len(), 3, "{u:#?}");
    assert_eq!(u[0].0, "The entropy of one cell is:");
    assert!(u[1].0.starts_with("visibility along a ray"), "{u:#?}");
    assert_eq!(u[2].1, s(&["2"]));
}

#[test]
fn cite_tags_with_quoted_evidence_name_list_entries() {
    // Tags in the shape WebWeaver writes: the id names the entry of that number,
    // the tag's content is a quote from the source and is not the report's text.
    let md = "# Reefs\n\nBleaching hit most of the reef in 2024 <qwen:cite id=\"id_2\">Surveys found bleaching on 73 percent of reefs</qwen:cite>. Recovery takes about a decade <qwen:cite id=\"id_1, id_3\">recovery usually needs **ten** years</qwen:cite>.\n\n## References\n\n[1]. https://example.org/recovery\n\n[2]. https://example.org/survey\n\n[3]. https://example.org/decade\n";
    let r = parse_text(md);
    let u = units(&r);
    assert_eq!(u.len(), 2, "{u:#?}");
    assert_eq!(
        u[0],
        (
            "Bleaching hit most of the reef in 2024.".to_string(),
            s(&["2"])
        )
    );
    assert_eq!(u[1].1, s(&["1", "3"]));
    assert!(!u[1].0.contains("cite"), "{u:#?}");
}

#[test]
fn assistant_file_search_markers_name_a_result_not_an_entry() {
    // `【M:I†source】`: M is the tool output the quote came from, I the result in
    // it; three markers from output 4 are three different sources, none of them
    // entry 4 of the list.
    let md = "# Tides\n\nThe range at the bay reaches 12 metres at spring tide【4:0†source】. Ferries run twice a day in summer【4:1†source】【4:2†source】.\n\n## Sources\n\n1. https://example.org/one\n2. https://example.org/two\n3. https://example.org/three\n4. https://example.org/four\n";
    let r = parse_text(md);
    assert!(
        r.facts
            .iter()
            .all(|f| !f.ref_idxs.contains(&"4".to_string())),
        "{:#?}",
        units(&r)
    );
    assert_eq!(r.extraction.counts.markers_seen, 3, "{:?}", r.extraction);
    assert_eq!(r.extraction.counts.markers_unresolved, 3);
    let errs = codes(&r);
    assert_eq!(
        errs.iter().filter(|c| *c == "marker_without_entry").count(),
        3,
        "{:?}",
        r.structural_errors
    );
    // The plain `【4†source】` still names entry 4.
    let md = md.replace("【4:0†source】", "【4†source】");
    assert_eq!(units(&parse_text(&md))[0].1, s(&["4"]));
}

#[test]
fn url_citing_bullets_at_the_very_end_stay_claims() {
    // A labelled list, then a closing section of bulleted findings that each end
    // with the page they come from: the bullets are cited units, not entries.
    let md = "# Kettles\n\nKettles boil a litre in three minutes [1]. Glass models cost more [2].\n\n## References\n\n[1] Boiling times compared. https://example.org/boil\n[2] Kettle prices. https://example.org/prices\n\n## Further observations\n\n- Most households in the survey replaced their kettle within six years https://example.net/survey-a\n- Limescale builds up faster in the hard water regions of the country https://example.net/hardwater\n- Stainless steel bodies were preferred by the older buyers on the panel https://example.net/panel\n";
    let r = parse_text(md);
    let u = units(&r);
    assert_eq!(u.len(), 5, "{u:#?}");
    assert!(u[2].0.starts_with("Most households"), "{u:#?}");
    assert_eq!(u[2].1.len(), 1);
    assert_eq!(r.references.len(), 5);
    // Titles with URLs at the end stay an unlabelled list.
    let md = "# Kettles\n\nKettles boil a litre in three minutes.\n\n- Boiling Times Compared https://example.org/boil\n- Kettle Price Survey https://example.org/prices\n";
    let r = parse_text(md);
    assert!(units(&r).is_empty(), "{:#?}", units(&r));
    assert_eq!(r.references.len(), 2);
}

#[test]
fn one_bracketed_entry_alone_at_the_end_is_the_list() {
    // No heading, a single entry: it is the list both markers point to, not a unit.
    let md = "# Bees\n\nA hive visits about two million flowers for one pound of honey [1]. Colonies hold up to 60,000 bees [1].\n\n[1] Honey Council. Facts about honey. Retrieved from https://example.org/honey-facts\n";
    let r = parse_text(md);
    let u = units(&r);
    assert_eq!(u.len(), 2, "{u:#?}");
    assert!(u.iter().all(|x| x.1 == s(&["1"])), "{u:#?}");
    assert_eq!(r.references.len(), 1);
    assert_eq!(
        r.references[0].url.as_deref(),
        Some("https://example.org/honey-facts")
    );
    // A closing sentence that shows a URL is still a unit.
    let md = "# Bees\n\nA hive visits about two million flowers.\n\nSee the council's page on honey at https://example.org/honey-facts for more.\n";
    let u = units(&parse_text(md));
    assert_eq!(u.len(), 1, "{u:#?}");
    assert!(u[0].0.starts_with("See the council"), "{u:#?}");
}

#[test]
fn a_source_label_line_under_a_claim_cites_that_claim() {
    // Catalogue items: the claim, then a hard break and a labelled link naming
    // where it comes from. The link cites the line above; it is no unit itself.
    let md = "# Grinders\n\n1. **Hand Mill** - $29.99, rated 4.1 by 654 buyers  \n   *Product URL:* [Hand Mill](https://example.org/hand-mill)  \n   *Notes:* ceramic burrs\n\n2. **Flat Burr Pro** - $119.00, rated 4.6 by 210 buyers  \n   **Source**: [Shop page](https://example.org/flat-burr), [Maker](https://example.org/maker)\n\nPrices were read in May [Shop index](https://example.org/index).\n";
    let r = parse_text(md);
    let u = units(&r);
    assert_eq!(u.len(), 3, "{u:#?}");
    assert!(u[0].0.starts_with("Hand Mill - $29.99"), "{u:#?}");
    assert_eq!(u[0].1.len(), 1);
    assert!(u[1].0.starts_with("Flat Burr Pro - $119.00"), "{u:#?}");
    assert_eq!(u[1].1.len(), 2);
    assert!(u[2].0.starts_with("Prices were read"), "{u:#?}");
    // A label line that opens its own item, with no claim above it in the item,
    // stays a unit of its own.
    let md = "# Grinders\n\n- **Product URL**: [Hand Mill](https://example.org/hand-mill)\n";
    assert_eq!(units(&parse_text(md)).len(), 1);
}

#[test]
fn reference_style_links_without_definitions_cite_their_entry() {
    // `[words][N]` with no `[N]: url` line: the Markdown parser leaves it as text;
    // the words are the unit's text and N its citation.
    let md = "# Protocols\n\nSee the details in [the transport notes][1]. Both sides stream events [2][3].\n\nFurther reading:\n\n- [Session handling guide][2]\n- [Retry rules][3]\n\n## References\n\n1. https://example.org/transport\n2. https://example.org/sessions\n3. https://example.org/retry\n";
    let r = parse_text(md);
    let u = units(&r);
    assert_eq!(u.len(), 4, "{u:#?}");
    assert_eq!(
        u[0],
        (
            "See the details in the transport notes.".to_string(),
            s(&["1"])
        )
    );
    assert_eq!(u[1].1, s(&["2", "3"]));
    assert_eq!(u[2], ("Session handling guide".to_string(), s(&["2"])));
    assert_eq!(r.extraction.counts.units_without_text, 0);
}

#[test]
fn a_paragraph_of_markers_under_a_list_cites_every_item() {
    // Findings as bullets, then the sources for the group in a paragraph of their
    // own: each bullet is cited by all of them; the lead-in is not.
    let md = "# Minerals\n\n## Findings\n\nSeveral patterns recur in the cohort studies:\n\n- Low magnesium goes with more heart events.\n- Low zinc goes with more heart failure.\n- Low selenium goes with higher mortality [3].\n\n[1][2]\n\n## Other\n\nA closing remark without sources.\n\n## References\n\n1. https://example.org/mg\n2. https://example.org/zn\n3. https://example.org/se\n";
    let r = parse_text(md);
    let mut u = units(&r);
    u.sort();
    assert_eq!(u.len(), 3, "{u:#?}");
    assert!(u[0].0.starts_with("Low magnesium"), "{u:#?}");
    assert_eq!(u[0].1, s(&["1", "2"]));
    assert_eq!(u[1].1, s(&["3", "1", "2"]));
    assert_eq!(u[2].1, s(&["1", "2"]));
    assert_eq!(r.extraction.counts.units_without_text, 0);
    // Markers alone after a paragraph still cite only its last sentence.
    let md = "# Minerals\n\nMagnesium matters. Zinc matters too.\n\n[1][2]\n\n## References\n\n1. https://example.org/mg\n2. https://example.org/zn\n";
    let u = units(&parse_text(md));
    assert_eq!(u.len(), 1, "{u:#?}");
    assert_eq!(u[0].0, "Zinc matters too.");
}
