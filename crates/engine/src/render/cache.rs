//! Which render the cache keeps, and whether a stored one answers.
//!
//! A render is **complete** when everything it lacks is the page's own doing (a
//! chart left blank, a script error, data refused, a page that hangs): the same page
//! bytes, resources and viewport give the same render, so it is stored and served
//! for good. A render is **incomplete** when it lost charts to this render itself:
//! the page's time limit ran out before a chart's turn (a busy page or a loaded
//! machine), the browser failed under the page after some charts were captured (a
//! crash, a lost connection), or a chart library was not fetched within the time
//! limit. It is stored marked so, with why, and:
//!
//! - a run with a browser renders the page again rather than serving it, and stores
//!   the new render only if it is at least as complete (a complete render is never
//!   replaced by a less complete one, under this browser's key or any browser's);
//! - a run without a browser serves it, and the charts it lost become failed units
//!   that say the render was incomplete and why;
//! - after [`MAX_INCOMPLETE_RENDERS`] renders in a row that all lost charts (a page
//!   busy on every render), the last one is served like a complete one: the retries
//!   undo a loaded machine's losses, not a page's own steady ones.

use std::path::Path;
use std::sync::atomic::Ordering;

use super::{Renderer, StoredRender, Used};
use crate::pages::ResourceFailure;
use crate::render_requests::is_chart_script;
use tvir_browser::{DroppedChart, RequestOutcome};
use tvir_report::render::RenderPlan;
use tvir_report::Report;

/// Whether a dropped chart was lost to its render rather than to the page. Renders
/// stored before the flag existed say so only in the reason.
pub(crate) fn lost_to_render(d: &DroppedChart) -> bool {
    d.transient || d.reason.contains("time limit ran out")
}

/// Why `stored` is incomplete (see the module docs), or None when it is complete.
/// `expected`: the charts the render plan expected (its candidates).
pub(crate) fn incompleteness(stored: &StoredRender, expected: usize) -> Option<String> {
    // A page that failed as a whole (crashed or hung twice) is a failure, not an
    // incomplete render: its charts are unknown.
    if stored.failure.is_some() {
        return None;
    }
    // The lost charts by reason, in order of first appearance.
    let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
    for d in stored.dropped.iter().filter(|d| lost_to_render(d)) {
        let reason = d
            .reason
            .strip_prefix("not captured: ")
            .unwrap_or(&d.reason)
            .to_string();
        let chart = format!("{} {}", d.library, d.selector);
        match by_reason.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, charts)) => charts.push(chart),
            None => by_reason.push((reason, vec![chart])),
        }
    }
    let mut parts: Vec<String> = by_reason
        .iter()
        .map(|(reason, charts)| {
            format!(
                "{} chart(s) not captured ({}): {reason}",
                charts.len(),
                charts.join(", ")
            )
        })
        .collect();
    let slow: Vec<&str> = stored
        .requests
        .iter()
        .filter(|r| is_chart_script(r))
        .filter(|r| {
            matches!(&r.outcome, RequestOutcome::Refused { reason } if reason.starts_with("not fetched within"))
        })
        .map(|r| r.url.as_str())
        .take(3)
        .collect();
    if !slow.is_empty() {
        parts.push(format!(
            "chart script(s) not fetched within the page's time limit: {}",
            slow.join(", ")
        ));
    }
    // Loading stopped at the time limit (or a chart file still loading when the
    // charts were read) while fewer charts were drawn than expected: the charts not
    // drawn may be missing for want of time (a page that never finishes loading but
    // draws all its charts is complete).
    let cut = stored.notes.iter().find(|n| {
        n.starts_with("load did not finish in") || n.starts_with("a chart file was still loading")
    });
    if let (Some(cut), true) = (cut, stored.charts.len() < expected) {
        let cut = cut.split(':').next().unwrap_or(cut);
        parts.push(format!(
            "{cut} (the page's time limit), with {} of {expected} expected chart(s) drawn",
            stored.charts.len()
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// How complete a render is, for choosing between two of the same page: one that
/// failed as a whole < an incomplete one < a complete one. Two incomplete renders
/// compare by the charts they captured; two complete ones are equal (the newer is
/// kept: the same page, resources and viewport, another browser version at most).
fn rank(s: &StoredRender) -> (bool, bool, usize) {
    let complete = s.failure.is_none() && s.incomplete.is_none();
    (
        s.failure.is_none(),
        complete,
        if complete { 0 } else { s.charts.len() },
    )
}

/// Renders of a page in a row that may end incomplete before the last one is served
/// as it is.
pub(crate) const MAX_INCOMPLETE_RENDERS: u32 = 3;

/// Whether a stored render answers a run with a browser: complete, or incomplete
/// [`MAX_INCOMPLETE_RENDERS`] times in a row.
pub(crate) fn settled(s: &StoredRender) -> bool {
    s.incomplete.is_none() || s.attempts >= MAX_INCOMPLETE_RENDERS
}

/// Whether `a` is strictly more complete than `b`.
pub(crate) fn more_complete(a: &StoredRender, b: &StoredRender) -> bool {
    rank(a) > rank(b)
}

impl Renderer {
    /// Store a fresh render of `plan`'s page under this browser's key and under the
    /// key any browser's render answers, unless the render stored there is more
    /// complete. Not stored at all: a page that failed for another reason than
    /// hanging, or whose resources failed for reasons of this run (a network error),
    /// which is simply rendered again next time.
    pub(super) async fn keep(
        &self,
        report: &Report,
        plan: &RenderPlan,
        version: &str,
        stored: &StoredRender,
        failures: &[(String, ResourceFailure)],
    ) {
        let Some(store) = &self.store else {
            return;
        };
        // A resource missing from the cache offline is part of what the page was
        // rendered with (real pages load fonts and icon sheets nobody seeds): the
        // render is kept under a key that says it was absent, so it answers while it
        // stays absent and no longer once it is seeded.
        let transient = failures
            .iter()
            .any(|(_, f)| !matches!(f, ResourceFailure::Refused(_) | ResourceFailure::Missing(_)));
        // A page that hung is kept too: its failure comes from the page itself, and the
        // same page bytes, resources and viewport (the key) hang again; rendering it
        // again on every run would pay the whole time limit twice for nothing.
        let keep = stored
            .failure
            .as_deref()
            .is_none_or(|f| f.starts_with("page hung"));
        if !keep || transient {
            return;
        }
        let mut used: Vec<Used> = stored
            .requests
            .iter()
            .filter_map(|r| match &r.outcome {
                RequestOutcome::ServedFromFolder => Some(Used {
                    url: r.url.clone(),
                    kind: "folder".into(),
                }),
                RequestOutcome::Provided { .. } => Some(Used {
                    url: r.url.clone(),
                    kind: "resource".into(),
                }),
                RequestOutcome::Refused { .. } => None,
            })
            .collect();
        let mut absent: Vec<&String> = failures
            .iter()
            .filter(|(_, f)| matches!(f, ResourceFailure::Missing(_)))
            .map(|(url, _)| url)
            .collect();
        absent.sort();
        absent.dedup();
        used.extend(absent.into_iter().map(|url| Used {
            url: url.clone(),
            kind: "absent".into(),
        }));
        // Under this browser's key, and under the key any browser's render of the
        // page answers (a later run without a browser).
        for page_key in [
            self.page_key(plan, Some(version)),
            self.page_key(plan, None),
        ] {
            let expected = plan.candidates.len();
            if let Some(there) = self.cached_under(report, page_key.clone(), expected).await {
                if more_complete(&there, stored) {
                    continue;
                }
            }
            let Some(key) = self.render_key(&page_key, &report.root, &used).await else {
                continue;
            };
            if let (Ok(used), Ok(json)) =
                (serde_json::to_string(&used), serde_json::to_string(stored))
            {
                if let Err(e) =
                    store.with_conn(|c| tvir_store::renders::put(c, &page_key, &used, &key, &json))
                {
                    tracing::warn!("render cache: {e}");
                }
            }
        }
    }

    /// Render the page, again when `stale` is a stored render that lost charts to
    /// itself, and use whichever of the two is more complete: the render and whether
    /// it is the stored one. Err (no browser could be started) only when nothing is
    /// stored.
    pub(super) async fn render_again(
        &self,
        report: &Report,
        plan: &RenderPlan,
        version: &str,
        exe: &Path,
        stale: Option<StoredRender>,
    ) -> Result<(StoredRender, bool), String> {
        if stale.is_some() {
            self.counters.rerendered.fetch_add(1, Ordering::Relaxed);
        }
        // A render stored before renders were counted is the first of the row.
        let prior = stale.as_ref().map_or(0, |s| s.attempts.max(1));
        Ok(
            match (
                self.render_fresh(report, plan, version, exe, prior).await,
                stale,
            ) {
                (Ok(fresh), Some(mut old)) if more_complete(&old, &fresh) => {
                    old.notes.push(format!(
                        "rendered again because the stored render was incomplete: the new render captured {} chart(s), the stored one {}, which is used",
                        fresh.charts.len(),
                        old.charts.len()
                    ));
                    (old, true)
                }
                (Ok(fresh), _) => (fresh, false),
                (Err(e), Some(mut old)) => {
                    old.notes.push(format!(
                        "the stored render is incomplete and could not be made again ({e}): it is used"
                    ));
                    (old, true)
                }
                (Err(e), None) => return Err(e),
            },
        )
    }

    /// The run's lines on incomplete renders (empty when there were none): pages
    /// rendered again because their stored render was incomplete, and charts lost to
    /// the page's time limit or a browser failure in the renders used.
    pub fn incomplete_lines(&self) -> String {
        let c = &self.counters;
        let mut out = String::new();
        let again = c.rerendered.load(Ordering::Relaxed);
        if again > 0 {
            out.push_str(&format!(
                "note: {again} page(s) rendered again: their stored render was incomplete\n"
            ));
        }
        let reports = c.incomplete_reports.load(Ordering::Relaxed);
        if reports > 0 {
            out.push_str(&format!(
                "note: {} chart(s) drawn by script in {reports} report(s) lost to the page's time limit or a browser failure, not to the page: each is a failed unit saying so; the render is kept as incomplete and the next run with a browser renders the page again\n",
                c.lost_charts.load(Ordering::Relaxed)
            ));
        }
        out
    }

    /// Count the charts `stored` lost to its render, for the run's closing line.
    pub(super) fn count_lost(&self, stored: &StoredRender) {
        let lost = stored.dropped.iter().filter(|d| lost_to_render(d)).count();
        if stored.incomplete.is_some() {
            let c = &self.counters;
            c.incomplete_reports.fetch_add(1, Ordering::Relaxed);
            c.lost_charts.fetch_add(lost, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tvir_browser::RequestRecord;

    fn drop_(selector: &str, reason: &str, transient: bool) -> DroppedChart {
        DroppedChart {
            library: "chartjs".into(),
            anchor: None,
            frame: None,
            selector: selector.into(),
            reason: reason.into(),
            transient,
        }
    }

    fn chart() -> super::super::StoredChart {
        super::super::StoredChart {
            library: "chartjs".into(),
            anchor: Some(1),
            frame: None,
            selector: "#c1".into(),
            png: String::new(),
            width: 10,
            height: 10,
            data: serde_json::from_value(serde_json::json!({
                "library": "chartjs", "chart_type": null, "title": null, "labels": [],
                "series": [], "truncated": false, "caption": null, "caption_source": null,
                "heading": null, "reveal": null
            }))
            .unwrap(),
        }
    }

    #[test]
    fn charts_lost_to_the_render_make_it_incomplete_and_the_pages_own_losses_do_not() {
        let mut s = StoredRender {
            dropped: vec![
                drop_(
                    "#blank",
                    "captured blank (one colour) twice: no figure",
                    false,
                ),
                drop_(
                    "#busy",
                    "not placed: busy: no answer in 10 s (script stopped)",
                    false,
                ),
                drop_(
                    "#hung",
                    "not captured: page hung: screenshot took over 10 s",
                    false,
                ),
            ],
            ..StoredRender::default()
        };
        assert_eq!(incompleteness(&s, 0), None, "the page's own losses");
        s.dropped.push(drop_(
            "#c3",
            "not captured: the page's time limit (20 s) ran out before its turn (x)",
            true,
        ));
        s.dropped.push(drop_(
            "#c4",
            "not captured: the page's time limit (20 s) ran out before its turn (x)",
            true,
        ));
        s.dropped
            .push(drop_("#c5", "not captured: page crashed", true));
        let why = incompleteness(&s, 0).expect("incomplete");
        assert!(
            why.contains("2 chart(s) not captured (chartjs #c3, chartjs #c4): the page's time limit (20 s) ran out"),
            "{why}"
        );
        assert!(
            why.contains("1 chart(s) not captured (chartjs #c5): page crashed"),
            "{why}"
        );
        assert!(!why.contains("#blank") && !why.contains("#hung"), "{why}");
        // A render stored before the flag: its reason says it.
        let legacy = StoredRender {
            dropped: vec![drop_(
                "#c2",
                "not captured: the page's time limit ran out before its turn (the page's scripts kept it busy)",
                false,
            )],
            ..StoredRender::default()
        };
        assert!(incompleteness(&legacy, 0).is_some());
        // A chart library that did not arrive in time; a font that did not is no loss.
        let slow = |url: &str, kind: &str| RequestRecord {
            url: url.into(),
            outcome: RequestOutcome::Refused {
                reason: "not fetched within 10 s".into(),
            },
            resource_type: Some(kind.into()),
        };
        let mut s = StoredRender {
            requests: vec![slow("https://fonts.example.org/a.woff2", "Font")],
            ..StoredRender::default()
        };
        assert_eq!(incompleteness(&s, 0), None);
        s.requests
            .push(slow("https://cdn.example.org/chart.js", "Script"));
        assert!(incompleteness(&s, 0)
            .is_some_and(|w| w.contains("not fetched") && w.contains("chart.js")));
    }

    #[test]
    fn a_complete_render_is_never_outranked_and_incomplete_ones_compare_by_charts() {
        let complete = StoredRender::default();
        let incomplete = |n: usize| StoredRender {
            charts: vec![chart(); n],
            incomplete: Some("time limit".into()),
            ..StoredRender::default()
        };
        let hung = StoredRender {
            failure: Some("page hung".into()),
            ..StoredRender::default()
        };
        assert!(more_complete(&complete, &incomplete(3)));
        assert!(!more_complete(&incomplete(3), &complete));
        assert!(more_complete(&incomplete(2), &incomplete(1)));
        assert!(!more_complete(&incomplete(1), &incomplete(1)));
        assert!(more_complete(&incomplete(0), &hung));
        assert!(!more_complete(&hung, &incomplete(0)));
        // Two complete renders: neither is more complete (the newer is stored).
        let mut fuller = StoredRender::default();
        fuller.charts.push(chart());
        assert!(!more_complete(&fuller, &complete));
        assert!(!more_complete(&complete, &fuller));
    }
}
