//! A chart file is one figure: a local page shown by one element of the report (an
//! `<iframe>`, `<embed>`, `<object>`, an image link or a component of any name, all
//! frames by now) is what a reader sees as one picture, however many panels it draws.
//! The charts found inside such a frame are shot once, as the frame element grown to
//! the file's height, and captioned by the file's own title (its `<title>`, else the
//! heading or title element heading its content) when the report gives none. A file
//! with one chart found in it is shot whole too (what else it draws, a panel drawn
//! without a library, a legend, a note, is part of the picture a reader sees); that
//! chart's own caption or heading captions it only when the file has no title.
//! Charts the report's page draws itself are untouched: one figure per chart.

use std::collections::BTreeMap;
use std::time::Duration;

use chromiumoxide::Page;

use super::{eval, note, DetectedChart, SharedLog};
use crate::capture;

/// What the frame element of a chart file became: its selector in the top document
/// (`[data-tvir-whole="k"]`) and the file's path.
pub(super) type WholeFiles = BTreeMap<String, String>;

/// The file's own title and, when `grow`, the selector of its frame element grown to
/// the file's height. None when no frame element of the top document shows `frame`
/// under `anchor` (a nested frame, a file shown twice under one anchor).
async fn whole(
    page: &Page,
    frame: &str,
    anchor: Option<f64>,
    key: usize,
    grow: bool,
) -> Option<(Option<String>, Option<String>)> {
    let step = serde_json::json!({"op": "whole", "frame": frame, "anchor": anchor,
        "key": key.to_string(), "grow": grow});
    let v = eval(page, capture::op(step), true, Duration::from_secs(10))
        .await
        .ok()?;
    if v["found"].as_bool() != Some(true) {
        return None;
    }
    let text = |k: &str| {
        v[k].as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    Some((text("title"), text("selector")))
}

/// `charts` with the charts of each chart file shown by one element merged into one
/// (see the module doc), and the merged ones' selectors with their files.
pub(super) async fn chart_files_whole(
    page: &Page,
    log: &SharedLog,
    charts: Vec<DetectedChart>,
) -> (Vec<DetectedChart>, WholeFiles) {
    let mut groups: BTreeMap<(String, i64), Vec<usize>> = BTreeMap::new();
    for (i, c) in charts.iter().enumerate() {
        if let (Some(frame), Some(at)) = (&c.frame, c.anchor) {
            groups
                .entry((frame.clone(), at as i64))
                .or_default()
                .push(i);
        }
    }
    if groups.is_empty() {
        return (charts, WholeFiles::new());
    }
    let mut slots: Vec<Option<DetectedChart>> = charts.into_iter().map(Some).collect();
    let mut files = WholeFiles::new();
    for (key, ((frame, _), members)) in groups.into_iter().enumerate() {
        let anchor = slots[members[0]].as_ref().and_then(|c| c.anchor);
        let Some((title, Some(selector))) = whole(page, &frame, anchor, key, true).await else {
            continue;
        };
        let parts: Vec<DetectedChart> = members.iter().filter_map(|&i| slots[i].take()).collect();
        if parts.len() > 1 {
            note(
                log,
                format!(
                    "chart file {frame}: {} charts drawn in it, shown by one element: one figure",
                    parts.len()
                ),
            );
        }
        let first = parts[0].clone();
        // A lone chart keeps what its library says of it (type, labels, title),
        // and lends its own caption or heading when the file has no title.
        let lone = parts.len() == 1;
        let own = [&first.caption, &first.title, &first.heading]
            .into_iter()
            .flatten()
            .find(|s| !s.trim().is_empty())
            .cloned();
        let (caption, caption_source) = match (title, own.filter(|_| lone)) {
            (Some(t), _) => (Some(t), Some("chart file title".to_string())),
            (None, Some(own)) => (
                Some(own),
                first
                    .caption_source
                    .clone()
                    .or(Some("chart heading".into())),
            ),
            (None, None) => (None, None),
        };
        let merged = DetectedChart {
            library: first.library.clone(),
            chart_type: if lone { first.chart_type.clone() } else { None },
            frame: None,
            anchor,
            selector: selector.clone(),
            visible: true,
            title: if lone { first.title.clone() } else { None },
            labels: if lone {
                first.labels.clone()
            } else {
                Vec::new()
            },
            series: parts.iter().flat_map(|p| p.series.clone()).collect(),
            truncated: parts.iter().any(|p| p.truncated),
            caption,
            caption_source,
            heading: None,
            data_urls: parts.iter().flat_map(|p| p.data_urls.clone()).collect(),
            no_data: parts.iter().all(|p| p.no_data),
            data_marks: parts.iter().flat_map(|p| p.data_marks.clone()).collect(),
        };
        files.insert(selector, frame);
        slots[members[0]] = Some(merged);
    }
    (slots.into_iter().flatten().collect(), files)
}
