//! Rendered prompts read as intended: every declared input appears, nothing else,
//! and no template syntax leaks into the text.

use crate::common;

use tvir_judge::Part;
use tvir_rubric::{
    build_request, ChecklistItem, RequestLabel, RubricSet, SourceText, UnitInputs, REQUIRED_RUBRICS,
};

fn inputs() -> UnitInputs {
    UnitInputs {
        report_text: Some("REPORT-TEXT".into()),
        task_query: Some("TASK-QUERY".into()),
        checklist: vec![
            ChecklistItem {
                section: "Sec".into(),
                item: "ITEM-ONE".into(),
            },
            ChecklistItem {
                section: "Sec".into(),
                item: "ITEM-TWO".into(),
            },
        ],
        fact: Some("FACT-A".into()),
        other_fact: Some("FACT-B".into()),
        sources: vec![
            SourceText {
                idx: "4".into(),
                url: Some("https://s.example/4".into()),
                title: Some("Title4".into()),
                text: "SOURCE-TEXT".into(),
            },
            SourceText {
                idx: "5".into(),
                url: None,
                title: None,
                text: String::new(),
            },
        ],
        figure_image: Some("data:image/png;base64,AAAA".into()),
        caption: Some("CAPTION-TEXT".into()),
        context: Some("CONTEXT-TEXT".into()),
        chart_data: Some("CHART-DATA".into()),
    }
}

#[test]
fn every_prompt_renders_its_inputs_and_only_those() {
    let set = RubricSet::builtin().unwrap();
    let markers = [
        ("report_text", "REPORT-TEXT"),
        ("task_query", "TASK-QUERY"),
        ("checklist", "ITEM-TWO"),
        ("fact", "FACT-A"),
        ("other_fact", "FACT-B"),
        ("sources", "SOURCE-TEXT"),
        ("caption", "CAPTION-TEXT"),
        ("context", "CONTEXT-TEXT"),
    ];
    for id in REQUIRED_RUBRICS {
        let rubric = set.get(id).unwrap();
        let req = build_request(
            &set,
            rubric,
            &inputs(),
            RequestLabel {
                report: "r",
                unit: "u",
                sample: 0,
            },
        )
        .unwrap();
        let text = common::judge::request_text(&req);
        let declared: Vec<String> = rubric
            .inputs
            .iter()
            .map(|i| {
                serde_json::to_value(i)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        for (input, marker) in markers {
            assert_eq!(
                text.contains(marker),
                declared.iter().any(|d| d == input),
                "{id}: input {input} rendered iff declared\n{text}"
            );
        }
        assert!(
            !text.contains("{{") && !text.contains("{%"),
            "{id}: template syntax leaked"
        );
        let images = req
            .messages
            .iter()
            .flat_map(|m| &m.parts)
            .filter(|p| matches!(p, Part::Image { .. }))
            .count();
        assert_eq!(images, usize::from(rubric.is_vision()), "{id}: image parts");
        // Extraction rubrics show the reference list, not fetched source text.
        let extraction = matches!(rubric.answer, tvir_rubric::AnswerSpec::Extraction { .. });
        if declared.iter().any(|d| d == "sources") && !extraction {
            assert!(
                text.contains("no text could be retrieved"),
                "{id}: unavailable source stated"
            );
        }
    }
}
