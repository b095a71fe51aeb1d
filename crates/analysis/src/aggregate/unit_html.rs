//! The evidence of one unit on a report page of the HTML summary (what was judged,
//! the verdict and justification) and the page's list of cited sources, each
//! source once, which the units link to. Everything from a report or a judge is
//! escaped.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::html::{esc_into, truncate};
use super::page_record::{PageRecord, PageUnit, Verdict};
use tvir_engine::record::UnitStatus;

pub(super) fn status_label(s: UnitStatus) -> &'static str {
    match s {
        UnitStatus::Scored => "scored",
        UnitStatus::Failed => "failed",
        UnitStatus::Skipped => "skipped",
    }
}

/// Cited sources whose text came back empty, with how their fetch ended and why
/// (`refused`, `blocked`, `failed`, `unavailable`, ...), from the page's sources.
pub(super) fn fetch_failures(page: &PageRecord) -> Vec<String> {
    let mut out = BTreeSet::new();
    for s in &page.sources {
        if s.chars == Some(0) {
            let idx = s.idx.as_deref().unwrap_or("?");
            let url = s.url.as_deref().unwrap_or("(no URL)");
            // The fetch outcome and its reason, as the eval recorded them.
            let outcome = match (s.fetch.as_deref(), s.reason.as_deref()) {
                (Some(f), Some(r)) => format!(": {f} ({r})"),
                (Some(f), None) => format!(": {f}"),
                (None, _) => String::new(),
            };
            out.insert(format!("[{idx}] {url}{outcome}"));
        }
    }
    for u in &page.units {
        if u.status == UnitStatus::Failed {
            if let Some(r) = u.reason.as_deref() {
                let l = r.to_lowercase();
                if l.contains("fetch") || l.contains("http") {
                    out.insert(format!("{} {}: {r}", u.metric, u.unit));
                }
            }
        }
    }
    out.into_iter().collect()
}

/// The anchor of a cited source in its page's source list.
fn source_anchor(out: &mut String, idx: &str) {
    out.push_str("src-");
    for b in idx.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(b as char);
        } else {
            let _ = write!(out, "_{b:02x}");
        }
    }
}

/// Every source the report's units cite, once: label, title and address, how
/// much text it gave, how its fetch ended and why. Each unit links here.
pub(super) fn sources_list_into(out: &mut String, page: &PageRecord) {
    if page.sources.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h4>Cited sources ({})</h4>", page.sources.len());
    out.push_str("<ol class=\"source-list\">");
    for s in &page.sources {
        let idx = text(&s.idx).unwrap_or("?");
        let url = text(&s.url);
        let name = text(&s.title).or(url).unwrap_or("(no URL)");
        let chars = s.chars.unwrap_or(0);
        out.push_str("<li id=\"");
        source_anchor(out, idx);
        out.push_str(if chars > 0 {
            "\" class=\"source read\">["
        } else {
            "\" class=\"source unread\">["
        });
        esc_into(out, idx);
        out.push_str("] ");
        match url {
            Some(u) if u.starts_with("http://") || u.starts_with("https://") => {
                out.push_str("<a href=\"");
                esc_into(out, u);
                out.push_str("\" rel=\"noreferrer\">");
                esc_into(out, &truncate(name, 160));
                out.push_str("</a>");
            }
            _ => esc_into(out, &truncate(name, 160)),
        }
        out.push_str(" &mdash; <span class=\"state\">");
        if chars > 0 {
            let _ = write!(out, "read: {chars} characters");
        } else {
            out.push_str("not read: ");
            esc_into(out, text(&s.fetch).unwrap_or("not read"));
            if let Some(r) = text(&s.reason) {
                out.push_str(" (");
                esc_into(out, r);
                out.push(')');
            }
        }
        out.push_str("</span></li>");
    }
    out.push_str("</ol>\n");
}

/// What the judge was shown for one unit, from its stored detail: the fact
/// sentence and every cited source (title or address, read or not and why,
/// characters given to the judge); a figure's file and caption; a checklist item.
#[cfg(test)]
fn unit_evidence(u: &PageUnit) -> String {
    let mut out = String::new();
    unit_evidence_into(&mut out, u);
    out
}

/// A detail's text field when it holds a non-empty string.
fn text<'a>(v: &'a Option<std::borrow::Cow<'_, str>>) -> Option<&'a str> {
    v.as_deref().filter(|s| !s.is_empty())
}

/// [`unit_evidence`] appended to `out`.
pub(super) fn unit_evidence_into(out: &mut String, u: &PageUnit) {
    let d = &u.detail;
    if let Some(fact) = text(&d.fact) {
        out.push_str("<blockquote class=\"fact\">");
        esc_into(out, fact);
        out.push_str("</blockquote>");
    }
    if let Some(item) = text(&d.item) {
        out.push_str("<blockquote class=\"item\">");
        esc_into(out, item);
        out.push_str("</blockquote>");
    }
    if let Some(content) = text(&d.content).or_else(|| text(&d.path)) {
        out.push_str("<div class=\"figure-file\"><code>");
        esc_into(out, content);
        out.push_str("</code></div>");
    }
    if let Some(caption) = text(&d.caption) {
        out.push_str("<div class=\"caption\">Caption: ");
        esc_into(out, &truncate(caption, 400));
        out.push_str("</div>");
    }
    if let Some(sources) = &d.sources {
        // Each source by its label, linked to the page's source list (address,
        // title and fetch outcome are there, once), with what the judge was given.
        out.push_str("<ul class=\"sources\">");
        for s in sources {
            let idx = text(&s.idx).unwrap_or("?");
            let name = text(&s.title).or(text(&s.url)).unwrap_or("(no URL)");
            let chars = s.chars.unwrap_or(0);
            let given = s.judge_chars.unwrap_or(chars);
            out.push_str(if chars > 0 {
                "<li class=\"source read\"><a href=\"#"
            } else {
                "<li class=\"source unread\"><a href=\"#"
            });
            source_anchor(out, idx);
            out.push_str("\">[");
            esc_into(out, idx);
            out.push_str("]</a> ");
            esc_into(out, &truncate(name, 80));
            out.push_str(" &mdash; <span class=\"state\">");
            if chars > 0 {
                let _ = write!(out, "read: {given}");
                if given < chars {
                    let _ = write!(out, " of {chars}");
                }
                out.push_str(" characters given to the judge");
            } else {
                out.push_str("not read: ");
                esc_into(out, text(&s.fetch).unwrap_or("not read"));
                out.push_str("; 0 characters given to the judge");
            }
            out.push_str("</span></li>");
        }
        out.push_str("</ul>");
    }
}

/// The judge's verdict (the answer's `verdict`, else its compact JSON) and its
/// justification.
#[cfg(test)]
fn unit_verdict(u: &PageUnit, max_chars: usize) -> String {
    let mut out = String::new();
    unit_verdict_into(&mut out, u, max_chars);
    out
}

/// [`unit_verdict`] appended to `out`.
pub(super) fn unit_verdict_into(out: &mut String, u: &PageUnit, max_chars: usize) {
    match u.verdict() {
        Some(Verdict::Label(v)) => {
            out.push_str("<b class=\"verdict-label\">");
            esc_into(out, &v);
            out.push_str("</b>");
        }
        Some(Verdict::Json(answer)) => {
            out.push_str("<code>");
            esc_into(out, &truncate(&answer, max_chars));
            out.push_str("</code>");
        }
        None => {}
    }
    if let Some(j) = u.justification.as_deref().filter(|j| !j.is_empty()) {
        out.push_str("<p class=\"justification\">");
        esc_into(out, j);
        out.push_str("</p>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_sources_show_their_fetch_outcome() {
        let rec: tvir_engine::record::ReportRecord = serde_json::from_value(serde_json::json!({
            "system": "s", "task_id": "t", "judge_model": "j", "run": 1,
            "language": null, "complexity": null, "domain": null, "metrics": {},
            "ta": null, "va": null, "overall": null, "effective_citations": null,
            "structural_error_counts": {"traceability": 0, "consistency": 0, "completeness": 0},
            "structural_errors": {"traceability": [], "consistency": [], "completeness": []},
            "units": [{"metric": "citation_support", "unit": "fact:1", "status": "scored",
                "reason": null, "score": 0.0, "answer": null, "justification": null,
                "detail": {"sources": [
                    {"idx": "1", "url": "http://10.0.0.1/x", "chars": 0,
                     "fetch": "refused", "reason": "private address"},
                    {"idx": "2", "url": "https://e.org/a", "chars": 120, "fetch": "ok",
                     "reason": null}]}}],
            "usage": {"calls": 0, "cache_hits": 0, "failed_calls": 0, "prompt_tokens": 0,
                "completion_tokens": 0, "cached_tokens": 0, "cost_usd": null},
            "n_images": 0, "n_charts": 0
        }))
        .unwrap();
        let text = serde_json::to_string(&rec).unwrap();
        assert_eq!(
            fetch_failures(&PageRecord::parse(&text).unwrap()),
            ["[1] http://10.0.0.1/x: refused (private address)"]
        );
    }

    #[test]
    fn unit_evidence_shows_the_fact_its_sources_and_the_verdict() {
        // The same unit written whole (records of earlier versions) and with its
        // sources in the record's table (`factor_sources`): the same page.
        let whole: tvir_engine::record::UnitRecord = serde_json::from_value(serde_json::json!({
            "metric": "citation_support", "unit": "fact:2", "status": "scored", "reason": null,
            "score": 0.0, "answer": {"verdict": "unsupported"}, "justification": "The <page> differs.",
            "detail": {"fact": "Sales rose 5 %.", "sources": [
                {"idx": "1", "url": "https://e.org/a", "title": "Annual report", "chars": 20000,
                 "judge_chars": 12000, "fetch": "ok", "reason": null},
                {"idx": "2", "url": "https://e.org/b", "title": null, "chars": 0,
                 "judge_chars": 0, "fetch": "blocked", "reason": "HTTP 403: captcha"}]}
        }))
        .unwrap();
        let mut record = tvir_engine::record::ReportRecord::from_json_compact(
            &serde_json::json!({
                "system": "s", "task_id": "t", "judge_model": "j", "run": 1,
                "language": null, "complexity": null, "domain": null, "metrics": {},
                "ta": null, "va": null, "overall": null, "effective_citations": null,
                "structural_error_counts": {"traceability": 0, "consistency": 0, "completeness": 0},
                "structural_errors": {"traceability": [], "consistency": [], "completeness": []},
                "units": [],
                "usage": {"calls": 0, "cache_hits": 0, "failed_calls": 0, "prompt_tokens": 0,
                    "completion_tokens": 0, "cached_tokens": 0, "cost_usd": null},
                "n_images": 0, "n_charts": 0
            })
            .to_string(),
        )
        .unwrap()
        .0;
        record.units = vec![whole.clone()];
        let whole_text = serde_json::to_string(&record).unwrap();
        record.factor_sources();
        assert_eq!(record.sources.len(), 2);
        assert_eq!(
            record.units[0].detail["sources"],
            serde_json::json!([{"idx": "1", "judge_chars": 12000}, {"idx": "2"}])
        );
        assert_eq!(
            record.unit_sources(&record.units[0]),
            whole.detail["sources"].as_array().unwrap().clone()
        );
        let table_text = serde_json::to_string(&record).unwrap();
        assert!(table_text.len() < whole_text.len() + 40);
        let mut shown = Vec::new();
        for text in [&whole_text, &table_text] {
            let page = PageRecord::parse(text).unwrap();
            let unit = &page.units[0];
            let e = unit_evidence(unit);
            assert!(
                e.contains("<blockquote class=\"fact\">Sales rose 5 %.</blockquote>"),
                "{e}"
            );
            assert!(
                e.contains("<a href=\"#src-1\">[1]</a> Annual report"),
                "{e}"
            );
            assert!(
                e.contains("read: 12000 of 20000 characters given to the judge"),
                "{e}"
            );
            assert!(e.contains("[2]</a> https://e.org/b"), "{e}");
            assert!(
                e.contains("not read: blocked; 0 characters given to the judge"),
                "{e}"
            );
            let mut list = String::new();
            sources_list_into(&mut list, &page);
            assert!(list.contains("<li id=\"src-1\" class=\"source read\">[1] <a href=\"https://e.org/a\" rel=\"noreferrer\">Annual report</a> &mdash; <span class=\"state\">read: 20000 characters"), "{list}");
            assert!(
                list.contains("not read: blocked (HTTP 403: captcha)"),
                "{list}"
            );
            assert_eq!(
                fetch_failures(&page),
                ["[2] https://e.org/b: blocked (HTTP 403: captcha)"]
            );
            let v = unit_verdict(unit, 100);
            assert!(
                v.contains("<b class=\"verdict-label\">unsupported</b>"),
                "{v}"
            );
            assert!(v.contains("The &lt;page&gt; differs."), "{v}");
            shown.push(e + &list);
        }
        assert_eq!(shown[0], shown[1]);
    }
}
