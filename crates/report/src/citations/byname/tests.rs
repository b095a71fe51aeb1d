use super::*;

fn index(lines: &[&str]) -> NameIndex {
    let text = lines.join("\n");
    let refs: Vec<Reference> = (0..lines.len())
        .map(|i| Reference {
            idx: (i + 1).to_string(),
            url: None,
            title: None,
            line: i + 1,
        })
        .collect();
    NameIndex::new(&refs, &text)
}

fn cited(ix: &NameIndex, text: &str) -> Vec<Vec<String>> {
    ix.scan(text).cites.into_iter().map(|c| c.idxs).collect()
}

fn v(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

fn author_date() -> NameIndex {
    index(&[
        "- Bloom, N., Han, R., & Liang, J. (2024). Hybrid work and retention. *Nature*, 630. https://doi.org/10.1/a",
        "- Bloom, N., Liang, J., Roberts, J., & Ying, Z. J. (2015a). Does working from home work? QJE. https://doi.org/10.1/b",
        "- McKinsey & Company. (2022). Americans embrace flexible work. https://www.mckinsey.com/x",
        "- World Health Organization [WHO]. (n.d.). Healthy telework. https://www.who.int/y",
        "- Müller, K. (in press). Zeitarbeit im Wandel. Springer.",
        "- 张三, 李四. (2023). 远程办公研究. 经济研究.",
        "- Smith, J., & Lee, K. (2020). Remote teams. Journal of Work.",
        "- Smith, A. (2020). Another Smith. Press.",
    ])
}

#[test]
fn parenthetical_author_date_forms() {
    let ix = author_date();
    assert_eq!(
        cited(&ix, "Output rose (Bloom et al., 2015a)."),
        vec![v(&["2"])]
    );
    assert_eq!(
        cited(
            &ix,
            "Quits fell (Bloom, Han, & Liang, 2024; McKinsey & Company, 2022, p. 12)."
        ),
        vec![v(&["1", "3"])]
    );
    assert_eq!(
        cited(
            &ix,
            "Isolation hurts (World Health Organization [WHO], n.d.)."
        ),
        vec![v(&["4"])]
    );
    assert_eq!(
        cited(&ix, "Isolation hurts (WHO, n.d., pp. 3-5)."),
        vec![v(&["4"])]
    );
    assert_eq!(
        cited(&ix, "Agencies grew (Muller, in press, chap. 2)."),
        vec![v(&["5"])]
    );
    assert_eq!(cited(&ix, "Teams (Smith & Lee 2020)."), vec![v(&["7"])]);
}

#[test]
fn narrative_bracketed_and_cjk_forms() {
    let ix = author_date();
    assert_eq!(
        cited(&ix, "According to Bloom et al. (2015a), breaks fell."),
        vec![v(&["2"])]
    );
    assert_eq!(
        cited(&ix, "McKinsey & Company (2022) reports a shift."),
        vec![v(&["3"])]
    );
    assert_eq!(
        cited(&ix, "Retention rose [Bloom, Han and Liang 2024]."),
        vec![v(&["1"])]
    );
    assert_eq!(
        cited(&ix, "研究表明张三（2023）的结论成立。"),
        vec![v(&["6"])]
    );
    assert_eq!(
        cited(&ix, "张三等（2023）发现远程办公有效。"),
        vec![v(&["6"])]
    );
    assert_eq!(cited(&ix, "远程办公有效（张三，2023）。"), vec![v(&["6"])]);
    assert_eq!(
        cited(&ix, "Smith 等（2020）指出团队协作。"),
        vec![v(&["7", "8"])]
    );
}

#[test]
fn ambiguity_keeps_every_candidate_and_years_alone_are_no_citation() {
    let ix = author_date();
    // Two entries by a Smith in 2020: both are candidates, none is picked.
    assert_eq!(
        cited(&ix, "Work changed (Smith, 2020)."),
        vec![v(&["7", "8"])]
    );
    let s = ix.scan("In (2020) the law changed, and in 2021 (see page 4) too.");
    assert!(s.cites.is_empty() && s.unresolved.is_empty(), "{s:?}");
    // An author-like name and a year that name no entry are counted, not cited.
    let s = ix.scan("Prices rose (Jones, 2019).");
    assert!(s.cites.is_empty());
    assert_eq!(s.unresolved, vec!["(Jones, 2019)".to_string()]);
}

#[test]
fn key_citations_match_listed_keys_only() {
    let ix = index(&[
        "[smith-fanconi-2019] Smith, A. Fanconi anemia pathways. https://e.org/1",
        "- lee2021: Lee, B. DNA repair. https://e.org/2",
        "- **chen_2020**: Chen, C. Repair kinetics.",
        "@article{wang2018, title={Telomeres}}",
    ]);
    assert_eq!(
        cited(&ix, "Cells fail to repair.[smith-fanconi-2019][lee2021]"),
        vec![v(&["1"]), v(&["2"])]
    );
    assert_eq!(
        cited(&ix, "Repair is slow [@chen_2020, p. 3]."),
        vec![v(&["3"])]
    );
    assert_eq!(
        cited(&ix, "Both hold [@chen_2020; @lee2021]."),
        vec![v(&["3", "2"])]
    );
    assert_eq!(
        cited(
            &ix,
            "Both hold (smith-fanconi-2019 pages 3-5, lee2021 page 7)."
        ),
        vec![v(&["1", "2"])]
    );
    assert_eq!(
        cited(&ix, r"Telomeres shorten \cite{wang2018, lee2021}."),
        vec![v(&["4", "2"])]
    );
    // Prose in brackets is never a key.
    assert!(cited(&ix, "The [sic] value [see below] holds.").is_empty());
}

#[test]
fn source_names_match_outlets_in_both_scripts() {
    let ix = index(&[
        "- [Reuters](https://www.reuters.com/a) - Tokyo stocks rise",
        "- Kyodo News: Bank of Japan holds rates. https://english.kyodonews.net/b",
        "- [Nikkei Asia](https://asia.nikkei.com/c): Yen slides",
        "- 新华社（Xinhua）：经济数据发布 https://www.news.cn/d",
    ]);
    assert_eq!(cited(&ix, "Stocks rose [Reuters]."), vec![v(&["1"])]);
    assert_eq!(
        cited(&ix, "Rates held [Kyodo News, Nikkei Asia]."),
        vec![v(&["2", "3"])]
    );
    assert_eq!(cited(&ix, "数据发布[来源：新华社]。"), vec![v(&["4"])]);
    assert_eq!(cited(&ix, "Data out [Xinhua]."), vec![v(&["4"])]);
    assert!(cited(&ix, "Stocks rose [citation needed].").is_empty());
}

#[test]
fn passage_lists_resolve_each_passage_and_report_lost_keys() {
    let ix = index(&[
        "1. (okafor2019coldchain pages 1-2): Ada Okafor and Ben Lund. Cold chains for vaccines. Logistics Review, 4:1-9, Mar 2019. URL: https://doi.org/10.1/x.",
        "2. (okafor2019coldchain pages 5-6): Ada Okafor and Ben Lund. Cold chains for vaccines. Logistics Review, 4:1-9, Mar 2019. URL: https://doi.org/10.1/x.",
        "3. (tanaka2021drones media 3f9a): Rei Tanaka. Drone drops. Air Notes, Jan 2021. URL: https://doi.org/10.1/y.",
    ]);
    assert_eq!(
        cited(
            &ix,
            "Fridges fail (okafor2019coldchain pages 5-6, tanaka2021drones media 3f9a)."
        ),
        vec![v(&["2", "3"])]
    );
    // A passage the list does not give falls back to its key's entries.
    assert_eq!(
        cited(&ix, "Fridges fail (okafor2019coldchain pages 8-9)."),
        vec![v(&["1", "2"])]
    );
    // Keys the list does not hold are reported, the others kept.
    let scan = ix.scan("Costs fell (okafor2019coldchain pages 1-2, lindqvist2020 pages 3-4).");
    assert_eq!(scan.cites.len(), 1);
    assert_eq!(scan.unresolved, v(&["(lindqvist2020 pages 3-4)"]));
    // Surname and year read from a list giving the year after the journal.
    assert_eq!(
        cited(&ix, "Chains break (Okafor & Lund, 2019)."),
        vec![v(&["1", "2"])]
    );
}

#[test]
fn vancouver_years_and_names_inside_cjk_prose() {
    let ix = index(&[
        "1. Dalbeth N, et al. *Lancet* 2021. doi:10.1016/S0140-6736(21)00569-9",
        "2. Dai Y, Lee CH. *Cell Res* 2024. doi:10.1038/s41422-024-01023-1",
        "3. Lai P L, Fyfe C. Kernel analysis[J]. Neural Systems, 2000, 10(5): 365-377.",
        "4. 林聃, 李秋岑, 陈志奎, 等. 遥感图像分类研究[J]. 自然资源遥感, 2024, 36(2): 10-20.",
        "5. Samat A, Persello C. Multi-view ensemble[J]. Remote Sensing, 2017, 9(4): 337.",
    ]);
    assert_eq!(
        cited(&ix, "发作频繁（Dalbeth 等，2021）。"),
        vec![v(&["1"])]
    );
    assert_eq!(
        cited(&ix, "靶点明确（Dai 与 Lee，2024）。"),
        vec![v(&["2"])]
    );
    assert_eq!(
        cited(&ix, "为此引入核方法。Lai与Fyfe（2000）的KCCA很有效。"),
        vec![v(&["3"])]
    );
    assert_eq!(
        cited(&ix, "该方法被Samat等人（2017）扩展。"),
        vec![v(&["5"])]
    );
    assert_eq!(cited(&ix, "如林聃等（2024）指出的问题。"), vec![v(&["4"])]);
}

#[test]
fn labelled_sources_and_citations_without_a_list() {
    let ix = index(&[
        "- 路透社：油价收于高位 https://www.reuters.com/a",
        "- Bloomberg: Chip stocks slide https://www.bloomberg.com/b",
    ]);
    assert_eq!(cited(&ix, "油价上涨。（来源：路透社）"), vec![v(&["1"])]);
    assert_eq!(
        cited(&ix, "Chips fell (Source: Bloomberg)."),
        vec![v(&["2"])]
    );
    let scan = ix.scan("Rates held (Source: Kyodo News). Rates held [来源：共同社].");
    assert!(scan.cites.is_empty());
    assert_eq!(scan.unresolved.len(), 2);
    // Parentheses that merely start with a word like "via" are prose.
    assert!(ix.scan("Sent (via the API) daily.").unresolved.is_empty());
    // Pandoc and LaTeX citations are citations even with no list to resolve to.
    let none = NameIndex::default();
    let scan = none.scan(r"Agents plan [@yao2022react; @shinn2023]. Tools help \cite{schick2023}.");
    assert_eq!(scan.unresolved.len(), 2);
    assert!(none
        .scan("Mail me at [me@example.org] or (2020).")
        .unresolved
        .is_empty());
    // So are author-date shapes and labelled or dated sources: with no list they
    // name nothing, and the self-check must hear of them.
    for (text, n) in [
        (
            "Output rose (Okafor et al., 2021). Okafor et al. (2021) agree.",
            2,
        ),
        ("港口吞吐量回升，Okafor 等（2021）指出了这一点。", 1),
        ("Ports reopened. (Source: Harbour Wire)", 1),
        ("Ports reopened in March. [Harbour Wire, 2024-03-02]", 1),
        ("In (2020) the law changed.", 0),
    ] {
        assert_eq!(none.scan(text).unresolved.len(), n, "{text}");
    }
    // The same dated bracket naming a listed outlet is no loss.
    let wire = index(&["- [Harbour Wire](https://wire.example/a) - Ports reopen"]);
    assert!(wire
        .scan("Ports reopened in March. [Harbour Wire, 2024-03-02]")
        .unresolved
        .is_empty());
}

#[test]
fn lower_case_handles_resolve_only_when_an_entry_is_that_author() {
    let ix = index(&[
        "- quokkalab. (2023). Grazing survey data [Data set]. Zenodo.",
        "- Bloom, N. (2015). Does working from home work? QJE.",
    ]);
    assert_eq!(
        cited(&ix, "The survey has 12 plots (quokkalab, 2023)."),
        vec![v(&["1"])]
    );
    // Prose in parentheses is no author, and an unlisted handle names nothing
    // (and is not counted as a lost citation either).
    let scan = ix.scan("It rose (see above, 2023) and (otherlab, 2023).");
    assert!(scan.cites.is_empty());
    assert!(scan.unresolved.is_empty());
}

#[test]
fn unbracketed_narrative_resolves_only_against_the_list() {
    let ix = author_date();
    let scan = ix.scan("Remote days grew, as Bloom et al. 2015a found.");
    assert_eq!(scan.cites.len(), 1);
    assert_eq!(scan.cites[0].idxs, v(&["2"]));
    // The span is the year: the names stay in the sentence.
    assert_eq!(scan.cites[0].written, "2015a");
    assert_eq!(
        cited(
            &ix,
            "Teams shrank (mostly in audits, see Smith and Lee 2020)."
        ),
        vec![v(&["7"])]
    );
    assert_eq!(cited(&ix, "McKinsey 2022 wrote so."), vec![v(&["3"])]);
    // A name and a year that name no entry are prose, never counted as lost.
    let scan = ix.scan("In January 2020 Parker 2019 said nothing; Bloom 2019 either.");
    assert!(scan.cites.is_empty(), "{:?}", scan.cites);
    assert!(scan.unresolved.is_empty());
}
