//! What the render stage reads of a page's requests and scripts: which refused
//! requests could have drawn charts (scripts, data) and which are never a cause
//! (style sheets, fonts, analytics), the report folder's files the page loaded, and
//! whether any script of the page looks an element up.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tvir_browser::{RequestOutcome, RequestRecord};
use tvir_report::render::Candidate;
use tvir_report::Report;

/// A script-chart candidate whose element has an id that nothing else in the report
/// names (no script looks it up). Used only for a candidate the live page shows as an
/// empty box or blank canvas, where the drawing cannot tell: nothing was meant to draw
/// there (a decorative canvas never drawn into), so no chart a missing library would
/// have drawn.
pub(crate) fn unused_by_scripts(text: &str, scripts: &str, c: &Candidate) -> bool {
    if c.what != "script chart" {
        return false;
    }
    let Some(line) = text.lines().nth(c.line.saturating_sub(1)) else {
        return false;
    };
    let ids: Vec<&str> = line
        .match_indices("id=")
        .filter_map(|(i, _)| {
            let rest = &line[i + 3..];
            let q = rest.chars().next().filter(|q| *q == '"' || *q == '\'')?;
            let rest = &rest[1..];
            rest.find(q).map(|e| &rest[..e])
        })
        .filter(|id| !id.is_empty())
        .collect();
    if ids.is_empty() {
        return false;
    }
    let elsewhere = scripts.replacen(line, "", 1);
    !ids.iter().any(|id| {
        [
            format!("'{id}'"),
            format!("\"{id}\""),
            format!("#{id}"),
            format!("`{id}`"),
        ]
        .iter()
        .any(|n| elsewhere.contains(n.as_str()))
            || built_from_prefix(&elsewhere, id)
    })
}

/// Whether a script builds the id from a literal start of it and a value:
/// `` `marketShare${year}` ``, `'chart-' + i`, `"#chart-" + name`.
fn built_from_prefix(scripts: &str, id: &str) -> bool {
    (3..id.len())
        .filter(|k| id.is_char_boundary(*k))
        .map(|k| &id[..k])
        .any(|prefix| {
            let template = [format!("`{prefix}${{"), format!("`#{prefix}${{")];
            if template.iter().any(|t| scripts.contains(t.as_str())) {
                return true;
            }
            ["'", "\""].iter().any(|q| {
                [format!("{q}{prefix}{q}"), format!("{q}#{prefix}{q}")]
                    .iter()
                    .any(|lit| {
                        scripts
                            .match_indices(lit.as_str())
                            .any(|(i, _)| scripts[i + lit.len()..].trim_start().starts_with('+'))
                    })
            })
        })
}

/// A request for data a script makes (fetch, XHR), never to an analytics host.
pub(crate) fn is_data_request(r: &RequestRecord) -> bool {
    let url = r.url.to_ascii_lowercase();
    matches!(r.resource_type.as_deref(), Some("Fetch" | "XHR"))
        && !ANALYTICS.iter().any(|a| url.contains(a))
}

/// A request that could have drawn charts: a script by its resource type (or, for
/// a record without one, by its address), never a style sheet, a font or an
/// analytics or tag-manager script.
pub(crate) fn is_chart_script(r: &RequestRecord) -> bool {
    let path = address_path(&r.url);
    let path = path.as_str();
    if ANALYTICS.iter().any(|a| path.contains(a)) || draws_no_chart(path) {
        return false;
    }
    match r.resource_type.as_deref() {
        Some(t) => t == "Script",
        None => {
            let style_or_font = [
                ".css", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".svg", ".png", ".jpg", ".gif",
            ]
            .iter()
            .any(|e| path.ends_with(e));
            !style_or_font
                && (path.ends_with(".js") || path.ends_with(".mjs") || path.contains("/npm/"))
        }
    }
}

/// The chart library a script address names (by the names the live page's charts
/// carry), if any: `vega-embed@6`, `plotly-2.35.2.min.js`, `chart.js@4/dist/chart.umd.js`.
pub(crate) fn library_of_script(url: &str) -> Option<&'static str> {
    let path = address_path(url);
    let path = path.as_str();
    let file = path.rsplit('/').next().unwrap_or(path);
    let names: &[(&str, &[&str])] = &[
        ("vega", &["vega"]),
        ("plotly", &["plotly"]),
        ("echarts", &["echarts"]),
        ("highcharts", &["highcharts", "highstock"]),
        ("apexcharts", &["apexcharts"]),
        (
            "chartjs",
            &[
                "chart.js",
                "chartjs",
                "chart.umd",
                "chart.min.js",
                "chart.bundle",
            ],
        ),
    ];
    for (lib, marks) in names {
        if marks.iter().any(|m| path.contains(m)) {
            return Some(lib);
        }
    }
    let d3 = path.contains("/d3@")
        || path.contains("/d3/")
        || file.starts_with("d3.")
        || file.starts_with("d3-");
    d3.then_some("d3")
}

/// An address lower-cased without its query and fragment: what the address rules
/// below match against.
fn address_path(url: &str) -> String {
    let url = url.to_ascii_lowercase();
    match url.find(['?', '#']) {
        Some(end) => url[..end].to_string(),
        None => url,
    }
}

/// Whether a script address (its [`address_path`]) is one that never draws a chart:
/// a CSS framework's runtime (Tailwind's CDN script), an icon or font loader. A page
/// missing one still draws its charts, so it is never named as why a chart was not
/// drawn.
fn draws_no_chart(path: &str) -> bool {
    NOT_CHART_SCRIPTS.iter().any(|m| path.contains(m))
}

/// Whether a script error of the page comes from a script that draws no chart: thrown
/// inside one (a Tailwind runtime, an icon loader), or a page's use of the global
/// such a script would have defined when that script could not be had
/// (`tailwind.config = ...` with Tailwind's CDN script offline: "tailwind is not
/// defined"). Such an error is never why a chart was not drawn.
pub(crate) fn error_of_decoration(
    message: &str,
    thrown_in: Option<&str>,
    requests: &[RequestRecord],
) -> bool {
    if thrown_in.is_some_and(|w| draws_no_chart(&address_path(w))) {
        return true;
    }
    let Some(global) = undefined_name(message) else {
        return false;
    };
    let global = global.to_ascii_lowercase();
    requests.iter().any(|r| {
        let path = address_path(&r.url);
        matches!(r.outcome, RequestOutcome::Refused { .. })
            && draws_no_chart(&path)
            && path.contains(&global)
    })
}

/// The name a `ReferenceError` says is not defined: `tailwind` of
/// "Uncaught ReferenceError: tailwind is not defined".
fn undefined_name(message: &str) -> Option<&str> {
    let before = &message[..message.find(" is not defined")?];
    let name = before
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .next()?;
    (name.len() >= 3).then_some(name)
}

/// Address marks of scripts that style or decorate a page and draw no chart.
const NOT_CHART_SCRIPTS: &[&str] = &[
    // CSS frameworks' in-browser runtimes.
    "cdn.tailwindcss.com",
    "tailwindcss",
    "@tailwindcss/browser",
    "@unocss/runtime",
    "twind",
    // Icon kits and loaders.
    "kit.fontawesome.com",
    "fontawesome",
    "font-awesome",
    "lucide",
    "feather-icons",
    "feather.min.js",
    "iconify",
    "ionicons",
    "@phosphor-icons",
    "bootstrap-icons",
    "material-icons",
    "material-symbols",
    "remixicon",
    "boxicons",
    // Font loaders.
    "webfont.js",
    "webfontloader",
    "fonts.googleapis.com",
    "typekit.net",
];

/// Analytics, tag-manager and tracking hosts: never a chart's library.
pub(crate) const ANALYTICS: &[&str] = &[
    "googletagmanager.com",
    "google-analytics.com",
    "/gtag/js",
    "analytics.js",
    "plausible.io",
    "hotjar.com",
    "clarity.ms",
    "segment.com",
    "cdn.segment.io",
    "matomo",
    "piwik",
    "statcounter.com",
    "cloudflareinsights.com",
    "doubleclick.net",
    "facebook.net",
    "umami",
    "mixpanel",
    "amplitude.com",
];

/// SHA-256 of a file of the report folder a page request named (its URL path,
/// relative to the folder); `missing` when there is none.
pub(crate) fn folder_file_hash(root: &Path, url: &str) -> Option<String> {
    Some(match folder_file(root, url)? {
        Some(p) => match std::fs::read(&p) {
            Ok(bytes) => hex::encode(Sha256::digest(&bytes)),
            Err(_) => "unreadable".into(),
        },
        None => "missing".into(),
    })
}

/// The file of the report folder a served address names (None inside: not in the
/// folder); None when the folder itself cannot be resolved.
pub(crate) fn folder_file(root: &Path, url: &str) -> Option<Option<PathBuf>> {
    let path = match url::Url::parse(url) {
        Ok(u) if u.scheme() == "file" => u.to_file_path().ok()?,
        Ok(u) => root.join(percent_decode(u.path().trim_start_matches('/'))),
        Err(_) => root.join(url.trim_start_matches('/')),
    };
    let root = std::fs::canonicalize(root).ok()?;
    Some(
        std::fs::canonicalize(&path)
            .ok()
            .filter(|p| p.starts_with(&root)),
    )
}

/// The report's text and the text of the report folder's own scripts the page
/// loaded (at most 20, 2 MB each): where a script may look an element up.
pub(crate) fn page_scripts_text(report: &Report, requests: &[RequestRecord]) -> String {
    let mut text = report.text.clone();
    for r in requests
        .iter()
        .filter(|r| matches!(r.outcome, RequestOutcome::ServedFromFolder))
        .filter(|r| r.resource_type.as_deref() == Some("Script"))
        .take(20)
    {
        if let Some(Some(p)) = folder_file(&report.root, &r.url) {
            if std::fs::metadata(&p).is_ok_and(|m| m.len() <= 2 << 20) {
                if let Ok(s) = std::fs::read_to_string(&p) {
                    text.push('\n');
                    text.push_str(&s);
                }
            }
        }
    }
    text
}

pub(crate) fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_a_script_builds_from_its_start_is_used() {
        let page =
            "<p>x</p>\n<canvas id=\"marketShare2015\"></canvas>\n<canvas id=\"decor\"></canvas>\n";
        let at = |line: usize| Candidate {
            line,
            what: "script chart".into(),
        };
        let cases = [
            ("years.forEach(y => draw(`marketShare${y}`));", true),
            ("draw(document.querySelector(`#marketShare${y}`));", true),
            ("draw('marketShare' + y);", true),
            ("draw(\"#marketShare\"  +y);", true),
            ("draw('marketShare2015');", true),
            // A literal start that is not joined to anything names no element.
            ("label('marketShare');", false),
            ("draw('mar' );", false),
            ("", false),
        ];
        for (script, used) in cases {
            let scripts = format!("{page}{script}");
            assert_eq!(!unused_by_scripts(page, &scripts, &at(2)), used, "{script}");
            // The decorative canvas stays unused whatever the other scripts do.
            assert!(unused_by_scripts(page, &scripts, &at(3)), "{script}");
        }
    }

    /// A script request refused offline.
    fn refused_script(url: &str) -> RequestRecord {
        RequestRecord {
            url: url.into(),
            outcome: RequestOutcome::Refused {
                reason: "offline".into(),
            },
            resource_type: Some("Script".into()),
        }
    }

    #[test]
    fn scripts_that_draw_no_chart_are_never_a_cause() {
        for url in [
            "https://cdn.tailwindcss.com",
            "https://cdn.tailwindcss.com/3.4.1?plugins=forms",
            "https://cdn.jsdelivr.net/npm/@tailwindcss/browser@4",
            "https://kit.fontawesome.com/abc123.js",
            "https://unpkg.com/lucide@latest",
            "https://cdn.jsdelivr.net/npm/feather-icons/dist/feather.min.js",
            "https://code.iconify.design/3/3.1.0/iconify.min.js",
            "https://ajax.googleapis.com/ajax/libs/webfont/1.6.26/webfont.js",
        ] {
            assert!(!is_chart_script(&refused_script(url)), "{url}");
        }
        for url in [
            "https://cdn.jsdelivr.net/npm/chart.js@4.4.1",
            "https://cdn.jsdelivr.net/npm/echarts@5/dist/echarts.min.js",
            "charts/draw.js",
        ] {
            assert!(is_chart_script(&refused_script(url)), "{url}");
        }
    }

    #[test]
    fn errors_left_by_a_missing_decoration_script_are_never_a_cause() {
        let requests = [
            refused_script("https://cdn.tailwindcss.com/3.4.1?plugins=forms"),
            refused_script("https://unpkg.com/lucide@latest"),
            refused_script("https://cdn.jsdelivr.net/npm/chart.js@4.4.1"),
        ];
        for message in [
            "Uncaught ReferenceError: tailwind is not defined",
            "ReferenceError: lucide is not defined",
        ] {
            assert!(error_of_decoration(message, None, &requests), "{message}");
        }
        // Thrown inside a decoration script, whatever it says.
        assert!(error_of_decoration(
            "TypeError: Cannot read properties of null",
            Some("https://kit.fontawesome.com/abc123.js:2"),
            &[]
        ));
        // The chart library missing, the page's own code failing, a decoration
        // script that was served: each stays a cause.
        for (message, at) in [
            ("Uncaught ReferenceError: Chart is not defined", None),
            ("ReferenceError: loadRows is not defined", None),
            ("TypeError: x is undefined", Some("report.html:40")),
        ] {
            assert!(!error_of_decoration(message, at, &requests), "{message}");
        }
        let served = [RequestRecord {
            outcome: RequestOutcome::Provided {
                sha256: "00".into(),
            },
            ..refused_script("https://cdn.tailwindcss.com")
        }];
        assert!(!error_of_decoration(
            "ReferenceError: tailwind is not defined",
            None,
            &served
        ));
    }

    #[test]
    fn script_addresses_name_their_chart_library() {
        let cases = [
            ("https://cdn.jsdelivr.net/npm/vega-embed@6", Some("vega")),
            ("https://cdn.plot.ly/plotly-2.35.2.min.js", Some("plotly")),
            (
                "https://cdn.jsdelivr.net/npm/chart.js@4/dist/chart.umd.min.js",
                Some("chartjs"),
            ),
            (
                "https://code.highcharts.com/modules/exporting.js",
                Some("highcharts"),
            ),
            ("https://d3js.org/d3.v7.min.js", Some("d3")),
            ("https://cdn.jsdelivr.net/npm/d3@7", Some("d3")),
            ("https://cdn.tailwindcss.com/3.4.0", None),
            ("https://unpkg.com/@antv/g6@5/dist/g6.min.js", None),
        ];
        for (url, want) in cases {
            assert_eq!(library_of_script(url), want, "{url}");
        }
    }
}
