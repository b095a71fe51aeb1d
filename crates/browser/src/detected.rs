//! The charts `js/detect.js` finds in the live page, as it reports them, and the one
//! decision made on a record alone: a chart drawn without the data its own
//! configuration names, because the page's request for that data was refused, is not
//! captured (its picture is an empty frame of axes, not what a reader sees); it is
//! dropped with that request as the reason.

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
    /// Why the chart is drawn without its data: the refused requests for data files
    /// its configuration names, when it holds no data row. None when it holds data,
    /// names no data file, or none of its files was refused (an empty dataset the
    /// page really loaded is the report's own chart).
    pub fn data_refused(&self, requests: &[RequestRecord]) -> Option<String> {
        if !self.no_data {
            return None;
        }
        let mut why: Vec<String> = Vec::new();
        for r in requests {
            let RequestOutcome::Refused { reason } = &r.outcome else {
                continue;
            };
            let same = |u: &String| u == &r.url || u.split('#').next() == Some(r.url.as_str());
            let line = format!("{} ({reason})", r.url);
            if self.data_urls.iter().any(same) && !why.contains(&line) {
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
