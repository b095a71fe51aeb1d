//! What a report page of the HTML summary reads from a `report.json`: its units
//! (with the few fields of `answer` and `detail` the page shows), its structural
//! errors and its thumbnails, borrowed from the file's text where it can be.
//!
//! The page used to parse the whole record again into a `ReportRecord`, whose
//! `answer` and `detail` are generic JSON values: a map with an owned key and value
//! for every field of every unit, about half of a page's cost at 10,000 reports.
//! Here the page's fields are read straight from the text (unescaped strings
//! borrowed, everything else skipped), and `answer` is kept as raw text, parsed
//! only when the page shows it whole.
//!
//! What the page shows is exactly what it showed from the generic values: a field
//! counts when it holds a string (an unsigned integer for counts), as
//! `Value::as_str` (`as_u64`) says; a `detail` the typed reading cannot take as it
//! is (not an object, a repeated key, a field of another type) is read through a
//! generic value instead, with the same rules.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use tvir_engine::record::{SourceRecord, ThumbnailRecord, UnitStatus};
use tvir_report::StructuralErrors;

/// A JSON string, borrowed from the text when it holds no escape.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

/// A field's raw JSON when present (even `null`), `None` when absent.
#[derive(Debug, Default)]
struct Raw<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|v| Raw(Some(v)))
    }
}

/// The string a raw JSON value holds (`Value::as_str`), borrowed when unescaped.
fn str_of(raw: &RawValue) -> Option<Cow<'_, str>> {
    let s = raw.get();
    if !s.starts_with('"') {
        return None;
    }
    if s.contains('\\') {
        serde_json::from_str::<String>(s).ok().map(Cow::Owned)
    } else {
        s.get(1..s.len() - 1).map(Cow::Borrowed)
    }
}

/// The unsigned integer a raw JSON value holds (`Value::as_u64`).
fn u64_of(raw: &RawValue) -> Option<u64> {
    let s = raw.get();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        // Digits beyond u64 are a float to `Value`, so `as_u64` is None there too.
        s.parse().ok()
    } else if s.starts_with(['-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']) {
        serde_json::from_str::<Value>(s).ok()?.as_u64()
    } else {
        None
    }
}

fn value_str<'a>(v: &Value, key: &str) -> Option<Cow<'a, str>> {
    v.get(key)
        .and_then(Value::as_str)
        .map(|s| Cow::Owned(s.to_string()))
}

/// One cited source in a unit's detail (`detail.sources[]`).
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct PageSource<'a> {
    pub(super) idx: Option<Cow<'a, str>>,
    pub(super) url: Option<Cow<'a, str>>,
    pub(super) title: Option<Cow<'a, str>>,
    pub(super) fetch: Option<Cow<'a, str>>,
    pub(super) reason: Option<Cow<'a, str>>,
    pub(super) chars: Option<u64>,
    pub(super) judge_chars: Option<u64>,
}

/// The fields of a unit's `detail` a page shows; each string field is `Some`
/// when the detail holds a string there.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct PageDetail<'a> {
    pub(super) fact: Option<Cow<'a, str>>,
    pub(super) item: Option<Cow<'a, str>>,
    pub(super) content: Option<Cow<'a, str>>,
    /// Whether the detail has a `content` field at all (of any type).
    pub(super) has_content: bool,
    pub(super) path: Option<Cow<'a, str>>,
    pub(super) caption: Option<Cow<'a, str>>,
    /// `Some` when `sources` is a list.
    pub(super) sources: Option<Vec<PageSource<'a>>>,
}

#[derive(Deserialize)]
struct RawSource<'a> {
    #[serde(borrow, default)]
    idx: Raw<'a>,
    #[serde(borrow, default)]
    url: Raw<'a>,
    #[serde(borrow, default)]
    title: Raw<'a>,
    #[serde(borrow, default)]
    fetch: Raw<'a>,
    #[serde(borrow, default)]
    reason: Raw<'a>,
    #[serde(borrow, default)]
    chars: Raw<'a>,
    #[serde(borrow, default)]
    judge_chars: Raw<'a>,
}

#[derive(Deserialize)]
struct RawDetail<'a> {
    #[serde(borrow, default)]
    fact: Raw<'a>,
    #[serde(borrow, default)]
    item: Raw<'a>,
    #[serde(borrow, default)]
    content: Raw<'a>,
    #[serde(borrow, default)]
    path: Raw<'a>,
    #[serde(borrow, default)]
    caption: Raw<'a>,
    #[serde(borrow, default)]
    sources: Raw<'a>,
}

fn raw_str<'a>(r: &Raw<'a>) -> Option<Cow<'a, str>> {
    r.0.and_then(str_of)
}

fn raw_u64(r: &Raw<'_>) -> Option<u64> {
    r.0.and_then(u64_of)
}

/// A JSON object read as the struct `T`: `None` for any other value (serde would
/// take a list as the struct's fields in order) or when the object does not fit.
fn object<'a, T: Deserialize<'a>>(raw: &'a RawValue) -> Option<T> {
    raw.get()
        .starts_with('{')
        .then(|| serde_json::from_str(raw.get()).ok())
        .flatten()
}

impl<'a> PageDetail<'a> {
    /// The detail from its raw JSON; through a generic value when the typed
    /// reading does not fit it.
    fn read(raw: Option<&'a RawValue>) -> Self {
        let Some(raw) = raw else {
            return Self::default();
        };
        Self::typed(raw).unwrap_or_else(|| {
            serde_json::from_str::<Value>(raw.get())
                .map(|v| Self::of_value(&v))
                .unwrap_or_default()
        })
    }

    fn typed(raw: &'a RawValue) -> Option<Self> {
        let d: RawDetail<'a> = object(raw)?;
        let sources = match d.sources.0 {
            Some(list) if list.get().starts_with('[') => {
                let items: Vec<&'a RawValue> = serde_json::from_str(list.get()).ok()?;
                let mut sources = Vec::with_capacity(items.len());
                for item in items {
                    if !item.get().starts_with('{') {
                        // Not an object: every field missing, as `Value::get` says.
                        sources.push(PageSource::default());
                        continue;
                    }
                    let s: RawSource<'a> = object(item)?;
                    sources.push(PageSource {
                        idx: raw_str(&s.idx),
                        url: raw_str(&s.url),
                        title: raw_str(&s.title),
                        fetch: raw_str(&s.fetch),
                        reason: raw_str(&s.reason),
                        chars: raw_u64(&s.chars),
                        judge_chars: raw_u64(&s.judge_chars),
                    });
                }
                Some(sources)
            }
            _ => None,
        };
        Some(Self {
            fact: raw_str(&d.fact),
            item: raw_str(&d.item),
            content: raw_str(&d.content),
            has_content: d.content.0.is_some(),
            path: raw_str(&d.path),
            caption: raw_str(&d.caption),
            sources,
        })
    }

    /// The same fields from a generic value (any JSON, objects with repeated keys
    /// included: the last one counts, as it does in a `Value`).
    pub(super) fn of_value(v: &Value) -> Self {
        Self {
            fact: value_str(v, "fact"),
            item: value_str(v, "item"),
            content: value_str(v, "content"),
            has_content: v.get("content").is_some(),
            path: value_str(v, "path"),
            caption: value_str(v, "caption"),
            sources: v.get("sources").and_then(Value::as_array).map(|list| {
                list.iter()
                    .map(|s| PageSource {
                        idx: value_str(s, "idx"),
                        url: value_str(s, "url"),
                        title: value_str(s, "title"),
                        fetch: value_str(s, "fetch"),
                        reason: value_str(s, "reason"),
                        chars: s.get("chars").and_then(Value::as_u64),
                        judge_chars: s.get("judge_chars").and_then(Value::as_u64),
                    })
                    .collect()
            }),
        }
    }
}

#[derive(Deserialize)]
struct RawUnit<'a> {
    #[serde(borrow)]
    metric: Str<'a>,
    #[serde(borrow)]
    unit: Str<'a>,
    status: UnitStatus,
    #[serde(borrow)]
    reason: Option<Str<'a>>,
    score: Option<f64>,
    #[serde(borrow)]
    answer: Option<&'a RawValue>,
    #[serde(borrow)]
    justification: Option<Str<'a>>,
    #[serde(borrow, default)]
    detail: Raw<'a>,
}

/// One unit as its page shows it.
#[derive(Debug, Clone)]
pub(super) struct PageUnit<'a> {
    pub(super) metric: Cow<'a, str>,
    pub(super) unit: Cow<'a, str>,
    pub(super) status: UnitStatus,
    pub(super) reason: Option<Cow<'a, str>>,
    pub(super) score: Option<f64>,
    /// The judge's answer as written (`null` is `None`).
    pub(super) answer: Option<&'a RawValue>,
    pub(super) justification: Option<Cow<'a, str>>,
    pub(super) detail: PageDetail<'a>,
}

/// What the page shows of a unit's answer.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict<'a> {
    /// The answer's `verdict`, a string.
    Label(Cow<'a, str>),
    /// No `verdict` string: the whole answer as compact JSON.
    Json(String),
}

impl<'a> PageUnit<'a> {
    /// What the page shows of the answer: its `verdict` when that is a string,
    /// else the answer as compact JSON (as `Value::to_string` writes it).
    pub(super) fn verdict(&self) -> Option<Verdict<'a>> {
        #[derive(Deserialize)]
        struct VerdictOnly<'b> {
            #[serde(borrow, default)]
            verdict: Raw<'b>,
        }
        let answer = self.answer?;
        if let Some(label) = object::<VerdictOnly<'a>>(answer).and_then(|v| raw_str(&v.verdict)) {
            return Some(Verdict::Label(label));
        }
        // Rare (an answer without a verdict string) or unusual: the generic value.
        let value: Value = serde_json::from_str(answer.get()).ok()?;
        Some(match value.get("verdict").and_then(Value::as_str) {
            Some(v) => Verdict::Label(Cow::Owned(v.to_string())),
            None => Verdict::Json(value.to_string()),
        })
    }
}

#[derive(Deserialize)]
struct RawRecord<'a> {
    #[serde(borrow, default)]
    units: Vec<RawUnit<'a>>,
    #[serde(default)]
    structural_errors: StructuralErrors,
    #[serde(default)]
    thumbnails: Vec<ThumbnailRecord>,
    #[serde(default)]
    sources: Vec<SourceRecord>,
}

/// The parts of a `report.json` its page shows beyond the summary's compact record.
#[derive(Debug, Clone, Default)]
pub(super) struct PageRecord<'a> {
    pub(super) units: Vec<PageUnit<'a>>,
    pub(super) structural_errors: StructuralErrors,
    pub(super) thumbnails: Vec<ThumbnailRecord>,
    /// Every cited source once, in the order units first cite them: the record's
    /// table, and the sources of units written whole (earlier records) that it
    /// lacks. Each unit's sources have their fields filled from it.
    pub(super) sources: Vec<PageSource<'a>>,
}

impl<'a> PageRecord<'a> {
    /// Reads the page's parts of a `report.json`'s text.
    pub(super) fn parse(text: &'a str) -> Result<Self, String> {
        let raw: RawRecord<'a> =
            serde_json::from_str(text).map_err(|e| format!("not a report record: {e}"))?;
        let mut page = Self {
            units: raw
                .units
                .into_iter()
                .map(|u| PageUnit {
                    metric: u.metric.0,
                    unit: u.unit.0,
                    status: u.status,
                    reason: u.reason.map(|s| s.0),
                    score: u.score,
                    answer: u.answer,
                    justification: u.justification.map(|s| s.0),
                    detail: PageDetail::read(u.detail.0),
                })
                .collect(),
            structural_errors: raw.structural_errors,
            thumbnails: raw.thumbnails,
            sources: Vec::new(),
        };
        page.join_sources(raw.sources);
        Ok(page)
    }

    /// Fills each unit's sources from the record's table (an entry's own fields
    /// win) and lists every cited source once. Both looked up by label through a
    /// map: a report citing a hundred sources from two hundred units would
    /// otherwise scan the table for each.
    fn join_sources(&mut self, table: Vec<SourceRecord>) {
        use std::collections::{HashMap, HashSet};
        let owned = |s: Option<String>| s.map(Cow::Owned);
        let table: Vec<PageSource<'a>> = table
            .into_iter()
            .map(|s| PageSource {
                idx: Some(Cow::Owned(s.idx)),
                url: owned(s.url),
                title: owned(s.title),
                fetch: Some(Cow::Owned(s.fetch)),
                reason: owned(s.reason),
                chars: Some(s.chars),
                judge_chars: None,
            })
            .collect();
        let by_idx: HashMap<String, usize> = table
            .iter()
            .enumerate()
            .filter_map(|(k, t)| t.idx.as_deref().map(|i| (i.to_string(), k)))
            .collect();
        let mut listed: Vec<PageSource<'a>> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for u in &mut self.units {
            for s in u.detail.sources.iter_mut().flatten() {
                let Some(idx) = s.idx.clone() else { continue };
                if let Some(t) = by_idx.get(&*idx).map(|&k| &table[k]) {
                    s.url = s.url.take().or_else(|| t.url.clone());
                    s.title = s.title.take().or_else(|| t.title.clone());
                    s.fetch = s.fetch.take().or_else(|| t.fetch.clone());
                    s.reason = s.reason.take().or_else(|| t.reason.clone());
                    s.chars = s.chars.or(t.chars);
                }
                if seen.insert(idx.to_string()) {
                    listed.push(PageSource {
                        judge_chars: None,
                        ..s.clone()
                    });
                }
            }
        }
        // Sources of the table no unit names (none today) still belong on the page.
        for t in table {
            let idx = t.idx.as_deref().unwrap_or_default().to_string();
            if seen.insert(idx) {
                listed.push(t);
            }
        }
        self.sources = listed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The typed reading of a detail against the generic one, on the same JSON.
    fn both(detail: &Value) -> (PageDetail<'static>, PageDetail<'static>) {
        let text = detail.to_string();
        let raw: Box<RawValue> = serde_json::from_str(&text).unwrap();
        let owned = |d: PageDetail<'_>| PageDetail {
            fact: d.fact.map(|s| Cow::Owned(s.into_owned())),
            item: d.item.map(|s| Cow::Owned(s.into_owned())),
            content: d.content.map(|s| Cow::Owned(s.into_owned())),
            has_content: d.has_content,
            path: d.path.map(|s| Cow::Owned(s.into_owned())),
            caption: d.caption.map(|s| Cow::Owned(s.into_owned())),
            sources: d.sources.map(|l| {
                l.into_iter()
                    .map(|s| PageSource {
                        idx: s.idx.map(|x| Cow::Owned(x.into_owned())),
                        url: s.url.map(|x| Cow::Owned(x.into_owned())),
                        title: s.title.map(|x| Cow::Owned(x.into_owned())),
                        fetch: s.fetch.map(|x| Cow::Owned(x.into_owned())),
                        reason: s.reason.map(|x| Cow::Owned(x.into_owned())),
                        chars: s.chars,
                        judge_chars: s.judge_chars,
                    })
                    .collect()
            }),
        };
        (
            owned(PageDetail::read(Some(&raw))),
            PageDetail::of_value(detail),
        )
    }

    #[test]
    fn typed_detail_reads_what_the_generic_value_gives() {
        for d in [
            json!({"fact": "a \"quoted\" fact", "sources": [
                {"idx": "1", "url": "https://e.x/a", "chars": 120, "judge_chars": 100},
                {"idx": "2", "url": "https://e.x/b", "chars": 0, "fetch": "refused", "reason": "robots"},
                "not an object", 7,
                {"idx": 3, "chars": 1.5, "judge_chars": -2, "title": null}
            ]}),
            json!({"content": null, "path": "images/a.png", "caption": "Fig. 1 — ünïcode"}),
            json!({"content": 5, "item": "", "sources": {"not": "a list"}}),
            json!({"chars": 18446744073709551615u64, "sources": null}),
            json!(["fact", "item"]),
            json!("just text"),
            json!(null),
            json!({}),
        ] {
            let (typed, generic) = both(&d);
            assert_eq!(typed, generic, "{d}");
        }
        // A repeated key: the last one counts, as in a generic value.
        let raw: Box<RawValue> = serde_json::from_str(r#"{"fact":"first","fact":"last"}"#).unwrap();
        assert_eq!(PageDetail::read(Some(&raw)).fact.as_deref(), Some("last"));
        // Counts beyond u64 and non-integers are no count.
        for text in [
            "12",
            "0",
            "1e2",
            "-0",
            "-3",
            "2.0",
            "99999999999999999999",
            "\"4\"",
        ] {
            let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(u64_of(&raw), v.as_u64(), "{text}");
        }
        let raw: Box<RawValue> = serde_json::from_str("12").unwrap();
        assert_eq!(u64_of(&raw), Some(12));
    }

    #[test]
    fn unescaped_strings_are_borrowed() {
        let text = r#"{"units":[{"metric":"m","unit":"fact:1","status":"scored","reason":null,"score":1.0,
            "answer":{"verdict":"supported"},"justification":"plain","detail":{"fact":"f \u00e9"}}],
            "structural_errors":{"traceability":[],"consistency":[],"completeness":[]}}"#;
        let page = PageRecord::parse(text).unwrap();
        let u = &page.units[0];
        assert!(matches!(u.justification, Some(Cow::Borrowed("plain"))));
        assert_eq!(u.detail.fact.as_deref(), Some("f é"));
        assert_eq!(
            u.verdict(),
            Some(Verdict::Label(Cow::Borrowed("supported")))
        );
    }

    #[test]
    fn answers_without_a_verdict_string_are_shown_whole() {
        for (answer, want) in [
            (
                r#"{"scores": [1, 2.50], "total_issues":  3}"#,
                r#"{"scores":[1,2.5],"total_issues":3}"#,
            ),
            (r#"{"verdict": 1}"#, r#"{"verdict":1}"#),
            (r#""text""#, r#""text""#),
        ] {
            let raw: Box<RawValue> = serde_json::from_str(answer).unwrap();
            let u = PageUnit {
                metric: "m".into(),
                unit: "u".into(),
                status: UnitStatus::Scored,
                reason: None,
                score: None,
                answer: Some(&raw),
                justification: None,
                detail: PageDetail::default(),
            };
            assert_eq!(
                u.verdict(),
                Some(Verdict::Json(want.to_string())),
                "{answer}"
            );
        }
        let raw: Box<RawValue> = serde_json::from_str(r#"{"verdict":"a","verdict":"b"}"#).unwrap();
        let u = PageUnit {
            metric: "m".into(),
            unit: "u".into(),
            status: UnitStatus::Scored,
            reason: None,
            score: None,
            answer: Some(&raw),
            justification: None,
            detail: PageDetail::default(),
        };
        assert_eq!(u.verdict(), Some(Verdict::Label(Cow::Owned("b".into()))));
    }
}
