//! The charts `js/detect.js` finds in the live page, as it reports them, and the one
//! decision made on a record alone: a chart drawn without the data its own
//! configuration names, because the page's request for that data was refused, is not
//! captured (its picture is an empty frame of axes, perhaps with a rule or a note drawn
//! from a few inline rows, not what a reader sees); it is dropped with that request as
//! the reason.

use std::sync::Mutex;

use serde::Deserialize;

use crate::{RequestOutcome, RequestRecord, ScriptError};

#[derive(Deserialize, Debug, Clone)]
pub(crate) struct DetectedChart {
    pub library: String,
    #[serde(rename = "type")]
    pub chart_type: Option<String>,
    pub frame: Option<String>,
    pub anchor: Option<f64>,
    pub selector: String,
    #[serde(default)]
    pub visible: bool,
    pub title: Option<String>,
    #[serde(default)]
    pub labels: Vec<Option<String>>,
    #[serde(default)]
    pub series: Vec<DetectedSeries>,
    #[serde(default)]
    pub truncated: bool,
    pub caption: Option<String>,
    #[serde(rename = "captionSource")]
    pub caption_source: Option<String>,
    pub heading: Option<String>,
    /// Absolute URLs of the data files the chart's own configuration loads.
    #[serde(default, rename = "dataUrls")]
    pub data_urls: Vec<String>,
    /// The library holds no data row for the chart (every input dataset empty).
    #[serde(default, rename = "noData")]
    pub no_data: bool,
    /// The marks of a live Vega view that are not guides: what each drew and the data
    /// files upstream of it (empty for a library without a scenegraph to read).
    #[serde(default, rename = "dataMarks")]
    pub data_marks: Vec<DataMark>,
}

/// One mark of a Vega view (its instances in every group of a facet summed).
#[derive(Deserialize, Debug, Clone)]
pub(crate) struct DataMark {
    /// Absolute URLs of the data files its rows come from (directly, through derived
    /// datasets, joined by a lookup, or split by a facet).
    #[serde(default)]
    pub urls: Vec<String>,
    /// The items it drew.
    #[serde(default)]
    pub items: u64,
}

#[derive(Deserialize, Debug, Clone)]
pub(crate) struct DetectedSeries {
    pub name: Option<String>,
    #[serde(default)]
    pub values: Vec<serde_json::Value>,
    #[serde(default)]
    pub n: usize,
}

impl DetectedChart {
    /// Why the chart is drawn without its data, or None when it is drawn with it.
    ///
    /// Two ways to tell, either enough: the marks that read a refused data file (through
    /// any dataset derived from it) all drew nothing, whatever marks fed by inline rows
    /// drew around them (a threshold rule, a note); or, where the marks cannot be read,
    /// the view holds no data row at all while a file its configuration names was
    /// refused. A chart is kept when every dataset is inline or was served, when the
    /// refused file feeds no mark, when a mark reading it still drew (a lookup that
    /// found nothing leaves the inline rows drawn), or when an empty dataset was really
    /// loaded (the report's own empty chart). The reason names each refused file once.
    pub fn data_refused(&self, requests: &[RequestRecord]) -> Option<String> {
        let refused: Vec<(&str, &str)> = requests
            .iter()
            .filter_map(|r| match &r.outcome {
                RequestOutcome::Refused { reason } => Some((r.url.as_str(), reason.as_str())),
                _ => None,
            })
            .collect();
        let is_refused = |u: &String| refused.iter().any(|(url, _)| same_address(u, url));
        let fed: Vec<&DataMark> = self
            .data_marks
            .iter()
            .filter(|m| m.urls.iter().any(is_refused))
            .collect();
        let named: Vec<&String> = if !fed.is_empty() && fed.iter().all(|m| m.items == 0) {
            fed.iter().flat_map(|m| m.urls.iter()).collect()
        } else if self.no_data {
            self.data_urls.iter().collect()
        } else {
            return None;
        };
        let mut why: Vec<String> = Vec::new();
        for (url, reason) in &refused {
            let line = format!("{url} ({reason})");
            if named.iter().any(|u| same_address(u, url)) && !why.contains(&line) {
                why.push(line);
            }
        }
        (!why.is_empty()).then(|| {
            format!(
                "drawn without its data: the page's request for it was refused: {}",
                why.join("; ")
            )
        })
    }
}

/// A data file's address as the chart names it and a request's address are the same
/// file (the request carries no fragment).
fn same_address(named: &str, requested: &str) -> bool {
    named == requested || named.split('#').next() == Some(requested)
}

/// The page's script errors with each muted one (a cross-origin script's "Script
/// error.") replaced by what the browser reported of the same failure, and the
/// browser's reports the page saw none of.
pub(crate) fn with_thrown(
    page: Vec<ScriptError>,
    thrown: &Mutex<Vec<ScriptError>>,
) -> Vec<ScriptError> {
    let thrown = thrown.lock().map(|t| t.clone()).unwrap_or_default();
    let muted = |e: &ScriptError| e.message.trim() == "Script error." || e.message.is_empty();
    let mut out: Vec<ScriptError> = page.into_iter().filter(|e| !muted(e)).collect();
    for t in thrown {
        let known = out
            .iter()
            .any(|e| e.message.contains(&t.message) || t.message.contains(&e.message));
        if !known && out.len() < 20 {
            out.push(t);
        }
    }
    out
}

/// What detect.js returns: the charts of the live page and what it saw besides.
#[derive(Deserialize, Debug)]
pub(crate) struct Detected {
    #[serde(default)]
    pub charts: Vec<DetectedChart>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(default, rename = "popupsBlocked")]
    pub popups_blocked: u64,
    #[serde(default, rename = "scriptErrors")]
    pub script_errors: Vec<ScriptError>,
    #[serde(default)]
    pub probes: Vec<crate::SlotProbe>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(urls: &[&str], no_data: bool) -> DetectedChart {
        serde_json::from_value(serde_json::json!({
            "library": "vega", "type": null, "frame": null, "anchor": null,
            "selector": "#v", "title": null, "caption": null, "captionSource": null,
            "heading": null, "dataUrls": urls, "noData": no_data
        }))
        .unwrap()
    }

    fn req(url: &str, refused: bool) -> RequestRecord {
        RequestRecord {
            url: url.into(),
            outcome: if refused {
                RequestOutcome::Refused {
                    reason: "xhr from the network not allowed".into(),
                }
            } else {
                RequestOutcome::ServedFromFolder
            },
            resource_type: Some("XHR".into()),
        }
    }

    #[test]
    fn an_empty_chart_whose_data_request_was_refused_names_it_once() {
        let c = chart(&["https://data.example.org/a.csv"], true);
        let reqs = [
            req("https://data.example.org/a.csv", true),
            req("https://data.example.org/a.csv", true),
            req("https://fonts.example.org/f.css", true),
        ];
        let why = c.data_refused(&reqs).expect("refused data is the reason");
        assert_eq!(why.matches("a.csv").count(), 1, "{why}");
        assert!(!why.contains("f.css"), "{why}");
    }

    fn with_marks(marks: &[(&[&str], u64)]) -> DetectedChart {
        let mut c = chart(&["https://data.example.org/a.csv"], false);
        c.data_marks = marks
            .iter()
            .map(|(urls, items)| DataMark {
                urls: urls.iter().map(|u| u.to_string()).collect(),
                items: *items,
            })
            .collect();
        c
    }

    #[test]
    fn marks_reading_a_refused_file_that_drew_nothing_drop_the_chart_whatever_inline_rows_drew() {
        let a = "https://data.example.org/a.csv";
        let b = "https://data.example.org/b.json";
        let refused = [req(a, true), req(b, true)];
        // points and bars from the file drew nothing; two rules from inline rows drew
        let c = with_marks(&[(&[a], 0), (&[], 1), (&[], 1), (&[a], 0)]);
        let why = c.data_refused(&refused).expect("dropped");
        assert!(why.contains(a) && !why.contains(b), "{why}");
        // a mark joining inline rows to the refused file still drew: kept
        assert!(with_marks(&[(&[a], 4)]).data_refused(&refused).is_none());
        assert!(with_marks(&[(&[a], 0), (&[a, b], 3)])
            .data_refused(&refused)
            .is_none());
        // the refused file feeds no mark: kept
        assert!(with_marks(&[(&[], 4)]).data_refused(&refused).is_none());
        // the file was served (its dataset really empty): kept
        let served = [req(a, false)];
        assert!(with_marks(&[(&[a], 0), (&[], 1)])
            .data_refused(&served)
            .is_none());
    }

    #[test]
    fn a_chart_with_data_or_with_its_data_served_is_kept() {
        let refused = [req("https://data.example.org/a.csv", true)];
        assert!(chart(&["https://data.example.org/a.csv"], false)
            .data_refused(&refused)
            .is_none());
        let served = [req("https://data.example.org/a.csv", false)];
        assert!(chart(&["https://data.example.org/a.csv"], true)
            .data_refused(&served)
            .is_none());
        assert!(chart(&[], true).data_refused(&refused).is_none());
    }
}
