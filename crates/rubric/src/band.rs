//! Dimensions banded by counts the judge reports (MC variety, issue 27): the band a
//! class and counts give under a [`BandRule`], and what is scored when the judge's
//! score lies outside it.

use serde_json::Value;

use crate::{AnswerSpec, BandRule, Rubric};

/// Integers may arrive as `7` or `7.0`; anything fractional is not an integer.
pub(crate) fn integer(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
            .map(|f| f as i64)
    })
}

/// `v` moved to the nearest end of `band` when `key` is the banded dimension.
pub(crate) fn banded(rule: Option<&BandRule>, band: Option<[i64; 2]>, key: &str, v: i64) -> i64 {
    match (rule, band) {
        (Some(r), Some([lo, hi])) if r.dimension == key && r.enforce => v.clamp(lo, hi),
        _ => v,
    }
}

/// The index of the first case of `rule` that holds for `class` and `counts` (in
/// the order of `rule.counts`).
pub fn band_case(rule: &BandRule, class: &str, counts: &[u64]) -> Option<usize> {
    let kinds = counts.iter().filter(|c| **c > 0).count() as u64;
    let total: u64 = counts.iter().sum();
    let largest = counts.iter().copied().max().unwrap_or(0);
    let smallest = counts.iter().copied().min().unwrap_or(0);
    let dominant = rule.dominant.get(class).and_then(|name| {
        rule.counts
            .iter()
            .position(|c| &c.name == name)
            .map(|i| counts[i])
    });
    rule.rules.iter().position(|case| {
        case.classes
            .as_ref()
            .is_none_or(|cs| cs.iter().any(|c| c == class))
            && case.kinds.is_none_or(|k| kinds == k)
            && case.each_at_least.is_none_or(|n| smallest >= n)
            && case.any_at_least.is_none_or(|n| largest >= n)
            && case
                .dominant_at_least
                .is_none_or(|n| dominant.is_some_and(|d| d >= n))
            && case.total_at_least.is_none_or(|n| total >= n)
    })
}

/// The band `[low, high]` the class and counts of `answer` give under `rule`.
pub fn band_of(rule: &BandRule, answer: &Value) -> Result<[i64; 2], String> {
    let class = answer[rule.class_field.as_str()]
        .as_str()
        .filter(|c| rule.classes.iter().any(|k| k == c))
        .ok_or_else(|| {
            format!(
                "`{}` must be one of {}",
                rule.class_field,
                rule.classes.join(", ")
            )
        })?;
    let mut counts = Vec::new();
    for c in &rule.counts {
        let n = answer[c.name.as_str()]
            .as_u64()
            .filter(|n| *n <= rule.max_count)
            .ok_or_else(|| format!("`{}` must be an integer 0..={}", c.name, rule.max_count))?;
        counts.push(n);
    }
    band_case(rule, class, &counts)
        .map(|i| rule.rules[i].band)
        .ok_or_else(|| format!("no band rule matches `{class}` with counts {counts:?}"))
}

/// When the judge's score of the banded dimension lies outside the band its own
/// class and counts give: what was scored instead, for the unit record.
pub fn band_note(rubric: &Rubric, answer: &Value) -> Option<String> {
    let AnswerSpec::Dimensions {
        field,
        band_rule: Some(rule),
        ..
    } = &rubric.answer
    else {
        return None;
    };
    let [lo, hi] = band_of(rule, answer).ok()?;
    let v = integer(&answer[field.as_str()][rule.dimension.as_str()])?;
    (v < lo || v > hi).then(|| {
        let scored = if rule.enforce {
            format!("scored as {}", v.clamp(lo, hi))
        } else {
            "scored as given (the band is the judge's to apply: --mc-band judge)".to_string()
        };
        format!(
            "{} {v} lies outside the band {lo}-{hi} that the answer's {} and counts give; {scored}",
            rule.dimension, rule.class_field,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{dimension_scores, schema, unit_score, validate_answer, RubricSet};
    use serde_json::json;

    fn set() -> RubricSet {
        RubricSet::builtin().unwrap()
    }

    fn mc_answer(class: &str, images: u64, charts: u64, variety: i64) -> Value {
        json!({"justification": "", "topic_category": class, "image_subtypes": images,
               "chart_subtypes": charts,
               "scores": {"layout_quantity_appropriateness": 8, "variety_richness": variety}})
    }

    #[test]
    fn mc_variety_band_follows_the_reference_case_list() {
        let s = set();
        let mc = s.get("multimodal_composition").unwrap();
        let AnswerSpec::Dimensions {
            band_rule: Some(rule),
            ..
        } = &mc.answer
        else {
            panic!("MC has no band rule")
        };
        let band = |class: &str, i: u64, c: u64| band_of(rule, &mc_answer(class, i, c, 5)).unwrap();
        // No valid visual of either kind.
        assert_eq!(band("balanced", 0, 0), [1, 2]);
        assert_eq!(band("data_heavy", 0, 0), [1, 2]);
        // Balanced topics need both kinds.
        assert_eq!(band("balanced", 3, 3), [9, 10]);
        assert_eq!(band("balanced", 3, 2), [7, 8]);
        assert_eq!(band("balanced", 2, 2), [7, 8]);
        assert_eq!(band("balanced", 1, 5), [5, 6]);
        assert_eq!(band("balanced", 0, 4), [5, 6]);
        assert_eq!(band("balanced", 2, 0), [3, 4]);
        // Data-heavy: four chart kinds and no image reach the top band.
        assert_eq!(band("data_heavy", 0, 4), [9, 10]);
        assert_eq!(band("data_heavy", 5, 3), [7, 8]);
        assert_eq!(band("data_heavy", 3, 1), [5, 6]);
        assert_eq!(band("data_heavy", 0, 1), [3, 4]);
        // Technical: image purposes dominate.
        assert_eq!(band("technical_architectural", 4, 0), [9, 10]);
        assert_eq!(band("technical_architectural", 0, 4), [5, 6]);
        assert_eq!(band("technical_architectural", 1, 0), [3, 4]);
    }

    #[test]
    fn a_variety_score_outside_its_band_is_scored_at_the_nearest_end() {
        let s = set();
        let mc = s.get("multimodal_composition").unwrap();
        // Inside the band: as given, no note.
        let inside = mc_answer("data_heavy", 0, 4, 9);
        validate_answer(mc, &inside, 0).unwrap();
        assert_eq!(unit_score(mc, &inside).unwrap(), 17.0 / 20.0);
        assert_eq!(band_note(mc, &inside), None);
        // Above the band 5-6: scored 6, and the unit can say so.
        let above = mc_answer("balanced", 1, 1, 10);
        validate_answer(mc, &above, 0).unwrap();
        assert_eq!(unit_score(mc, &above).unwrap(), 14.0 / 20.0);
        assert_eq!(dimension_scores(mc, &above), vec![8, 6]);
        let note = band_note(mc, &above).unwrap();
        assert!(
            note.contains("5-6") && note.contains("scored as 6"),
            "{note}"
        );
        // Below the band 9-10: scored 9.
        let below = mc_answer("technical_architectural", 5, 0, 3);
        assert_eq!(unit_score(mc, &below).unwrap(), 17.0 / 20.0);
        // A new answer without the class or counts is invalid; a stored one from
        // before the fields existed still scores as given.
        let old = json!({"justification": "", "scores": {
            "layout_quantity_appropriateness": 8, "variety_richness": 10}});
        assert!(validate_answer(mc, &old, 0).is_err());
        assert_eq!(unit_score(mc, &old).unwrap(), 18.0 / 20.0);
        let bad_class = mc_answer("mixed", 1, 1, 6);
        assert!(validate_answer(mc, &bad_class, 0).is_err());
        // The schema asks for the class and counts before the scores.
        let sch = schema(mc, 0);
        let keys: Vec<&String> = sch["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "justification",
                "topic_category",
                "image_subtypes",
                "chart_subtypes",
                "scores"
            ]
        );
    }

    #[test]
    fn anchors_and_band_rules_are_checked_at_load() {
        let text = include_str!("../../../rubrics/writing_quality.toml");
        let gap = text.replacen("band = \"7-8\"", "band = \"7-7\"", 1);
        let err = Rubric::from_toml(&gap, "wq.toml").unwrap_err().to_string();
        assert!(err.contains("tile"), "{err}");
        let mc = include_str!("../../../rubrics/multimodal_composition.toml");
        // Without its catch-all case, a data-heavy report with one sub-type has no band.
        let holed = mc.replace(
            "classes = [\"data_heavy\", \"technical_architectural\"]\nband = [3, 4]",
            "classes = [\"data_heavy\", \"technical_architectural\"]\nkinds = 2\nband = [3, 4]",
        );
        assert_ne!(holed, mc);
        let err = Rubric::from_toml(&holed, "mc.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no case matches"), "{err}");
        let outside = mc.replace("band = [9, 10]", "band = [9, 11]");
        assert!(Rubric::from_toml(&outside, "mc.toml").is_err());
    }
}
