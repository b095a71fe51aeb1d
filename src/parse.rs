//! `tvir parse REPORT [--json] [--gold GOLD.json]`: print the parsed report, or score
//! the extraction against a hand-made gold file.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use tvir_report::gold::{self, Gold};
use tvir_report::output::ParseOutput;
use tvir_report::{self as report, Report, StructuralError};

#[derive(Debug, clap::Args)]
pub struct ParseArgs {
    /// Report folder (holding report.md or report.html) or report file.
    pub report: PathBuf,
    /// Print one JSON object instead of the readable summary.
    #[arg(long)]
    pub json: bool,
    /// Compare the parse with a gold annotation file and print precision, recall and
    /// F1 for references and figures and the cited-sentence count.
    #[arg(long, value_name = "GOLD.json")]
    pub gold: Option<PathBuf>,
    /// How many items of each list the readable summary shows.
    #[arg(long, default_value_t = 5)]
    pub show: usize,
    #[command(flatten)]
    pub browser: crate::config::BrowserArgs,
    /// The cache holding renders and the scripts pages load (default: the one
    /// `tvir eval` uses).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Take the scripts, styles and fonts pages load from the cache only.
    #[arg(long)]
    pub offline: bool,
    /// `tvir.toml` to read the `[browser]` section from (default: the working
    /// directory's).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The report, with the charts its scripts draw rendered when a browser is at hand
/// (they stay pseudo-visuals otherwise, and the reason is printed once).
fn load_rendered(args: &ParseArgs) -> anyhow::Result<Report> {
    let parsed = report::load(&args.report)?;
    if tvir_report::render::render_plan(&parsed).is_none() {
        return Ok(parsed);
    }
    let (choice, max_pages) =
        crate::config::browser_from_environment(&args.browser, args.config.as_deref())?;
    let store = match &args.cache {
        Some(p) => Some(tvir_store::Store::open(p)?),
        None => crate::cache::default_cache_path()
            .ok()
            .and_then(|p| tvir_store::Store::open(&p).ok()),
    };
    let config = tvir_sources::FetchConfig {
        offline: args.offline,
        ..tvir_sources::FetchConfig::default()
    };
    let fetcher = tvir_sources::Fetcher::new(config, store.clone())?;
    let mut settings = tvir_engine::RenderSettings::new(choice);
    if let Some(n) = max_pages {
        settings.max_pages = n.max(1);
    }
    let pages: std::sync::Arc<dyn tvir_engine::Pages> = std::sync::Arc::new(fetcher);
    let renderer = tvir_engine::Renderer::new(settings, store, Some(pages));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let rendered = runtime.block_on(async {
        let r = renderer.render_report(&parsed).await;
        renderer.close().await;
        r
    });
    eprint!("{}", crate::eval::render_line(&renderer));
    Ok(match rendered {
        Some((report, result)) => {
            for u in result.unrendered.iter().filter(|u| !u.skipped) {
                eprintln!(
                    "warning: line {}: {} not evaluated: {}",
                    u.candidate.line, u.candidate.what, u.reason
                );
            }
            report
        }
        None => parsed,
    })
}

pub fn run(args: ParseArgs) -> anyhow::Result<ExitCode> {
    let parsed = guarded(&args.report, || load_rendered(&args))?;
    for w in &parsed.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(gold_path) = &args.gold {
        let gold = Gold::load(gold_path)?;
        let score = gold::score(&parsed, &gold);
        if args.json {
            let json = serde_json::to_string_pretty(&score).context("serialising score")?;
            emit(&format!("{json}\n"))?;
        } else {
            emit(&render_score(&parsed, &score))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        let out = ParseOutput::from_report(&parsed);
        let json = serde_json::to_string_pretty(&out).context("serialising parse")?;
        emit(&format!("{json}\n"))?;
    } else {
        emit(&render_summary(&parsed, args.show))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `parse` and turn a panic inside it (a parser bug) into an error naming the
/// report, so `tvir parse` ends with a message and a non-zero exit rather than a
/// crash (defence in depth: the parser is meant never to panic).
fn guarded(
    report: &std::path::Path,
    parse: impl FnOnce() -> anyhow::Result<Report>,
) -> anyhow::Result<Report> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse)).unwrap_or_else(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Err(anyhow::anyhow!(
            "{}: the parser crashed on this report ({why}); this is a bug in tvir, not in the report",
            report.display()
        ))
    })
}

/// Write to stdout; a closed pipe (`| head`) is not an error.
fn emit(s: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}

fn clip(s: &str, n: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > n {
        let mut c: String = one_line.chars().take(n).collect();
        c.push('…');
        c
    } else {
        one_line
    }
}

fn render_errors(out: &mut String, name: &str, errs: &[StructuralError], show: usize) {
    out.push_str(&format!("  {name}: {}\n", errs.len()));
    for e in errs.iter().take(show) {
        let line = e
            .line
            .map(|l| format!("line {l}"))
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "    [{}] {line}: {}\n",
            e.code,
            clip(&e.reason, 100)
        ));
    }
    if errs.len() > show {
        out.push_str(&format!("    … {} more\n", errs.len() - show));
    }
}

/// The readable form: counts, then the first items of each list.
pub fn render_summary(r: &Report, show: usize) -> String {
    let mut out = String::new();
    let lang = match r.language {
        report::Language::Zh => "zh",
        report::Language::En => "en",
    };
    let charts = r
        .figures
        .iter()
        .filter(|f| f.kind == report::FigureKind::Chart)
        .count();
    let images = r
        .figures
        .iter()
        .filter(|f| f.kind == report::FigureKind::Image)
        .count();
    let errors = &r.structural_errors;
    out.push_str(&format!("report:     {}\n", r.path.display()));
    out.push_str(&format!("language:   {lang}\n"));
    out.push_str(&format!("references: {}\n", r.references.len()));
    out.push_str(&format!("facts:      {}\n", r.facts.len()));
    out.push_str(&format!(
        "figures:    {} ({images} image, {charts} chart, {} unknown)\n",
        r.figures.len(),
        r.figures.len() - images - charts
    ));
    out.push_str(&format!("pseudo-visuals: {}\n", r.pseudo_visuals.len()));
    out.push_str(&format!(
        "structural errors: {} traceability, {} consistency, {} completeness\n",
        errors.traceability.len(),
        errors.consistency.len(),
        errors.completeness.len()
    ));
    render_extraction(&mut out, &r.extraction);
    out.push_str("\nReferences\n");
    for x in r.references.iter().take(show) {
        out.push_str(&format!(
            "  [{}] {}{}\n",
            x.idx,
            x.url.as_deref().unwrap_or("(no URL)"),
            x.title
                .as_deref()
                .map(|t| format!("  {}", clip(t, 60)))
                .unwrap_or_default()
        ));
    }
    if r.references.len() > show {
        out.push_str(&format!("  … {} more\n", r.references.len() - show));
    }
    out.push_str("\nFacts\n");
    for f in r.facts.iter().take(show) {
        out.push_str(&format!(
            "  line {} [{}] {}\n",
            f.line,
            f.ref_idxs.join(","),
            clip(&f.fact, 90)
        ));
    }
    if r.facts.len() > show {
        out.push_str(&format!("  … {} more\n", r.facts.len() - show));
    }
    out.push_str("\nFigures\n");
    for f in r.figures.iter().take(show) {
        let kind = match f.kind {
            report::FigureKind::Image => "image",
            report::FigureKind::Chart => "chart",
            report::FigureKind::Unknown => "unknown",
        };
        out.push_str(&format!(
            "  line {} {kind} {}  caption: {}  sources: [{}]\n",
            f.line,
            f.content,
            f.caption
                .as_deref()
                .map(|c| clip(c, 60))
                .unwrap_or_else(|| "(none)".into()),
            f.ref_idxs.join(",")
        ));
    }
    if r.figures.len() > show {
        out.push_str(&format!("  … {} more\n", r.figures.len() - show));
    }
    out.push_str("\nStructural errors\n");
    render_errors(&mut out, "traceability", &errors.traceability, show);
    render_errors(&mut out, "consistency", &errors.consistency, show);
    render_errors(&mut out, "completeness", &errors.completeness, show);
    out
}

/// The self-check block of the readable summary.
pub fn render_extraction(out: &mut String, e: &report::Extraction) {
    let c = &e.counts;
    let verdict = if e.is_suspect() { "SUSPECT" } else { "ok" };
    let method = match e.method {
        report::ExtractionMethod::Rules => "rules",
        report::ExtractionMethod::Judge => "judge",
    };
    out.push_str(&format!("extraction: {verdict} (method: {method})\n"));
    out.push_str(&format!(
        "  markers: {} seen, {} resolved, {} pointing nowhere, {} outside cited units\n",
        c.markers_seen, c.markers_resolved, c.markers_unresolved, c.markers_unattached
    ));
    out.push_str(&format!(
        "  list entries: {} ({} never cited); cited units: {}; uncited quantitative: {}\n",
        c.list_entries, c.entries_never_cited, c.cited_units, c.uncited_quantitative
    ));
    out.push_str(&format!(
        "  entry-like lines outside lists: {}; units that look like entries: {}; <img> tags: {}\n",
        c.unlisted_reference_lines, c.facts_like_entries, c.img_tags
    ));
    for reason in &e.reasons {
        out.push_str(&format!("  suspect: {reason}\n"));
    }
    if let Some(j) = &e.judge {
        out.push_str(&format!(
            "  judge extraction: {} ({} window(s), {} call(s)){}\n",
            j.status,
            j.windows,
            j.calls,
            j.reason
                .as_deref()
                .map(|r| format!(": {}", clip(r, 120)))
                .unwrap_or_default()
        ));
    }
}

fn render_score(r: &Report, s: &gold::GoldScore) -> String {
    let mut out = format!("report: {}\n", r.path.display());
    out.push_str("              precision  recall    F1   (tp/pred/gold)\n");
    for (name, p) in [("references", &s.references), ("figures", &s.figures)] {
        out.push_str(&format!(
            "{name:<12}  {:>9.4}  {:>6.4}  {:>6.4}  ({}/{}/{})\n",
            p.precision, p.recall, p.f1, p.true_positives, p.predicted, p.gold
        ));
    }
    let c = &s.cited_sentences;
    out.push_str(&format!(
        "cited sentences: {} parsed vs {} gold (relative error {})\n",
        c.predicted,
        c.gold,
        c.relative_error
            .map(|e| format!("{:.2} %", e * 100.0))
            .unwrap_or_else(|| "undefined".into())
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parse that panics ends as an error naming the report (and the panic's
    /// message), which `main` prints before exiting with code 2.
    #[test]
    fn a_panicking_parse_is_an_error_naming_the_report() {
        let path = std::path::Path::new("sys/t1/report.md");
        let err = guarded(path, || panic!("byte index 7 is not a char boundary")).unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.starts_with("sys/t1/report.md: the parser crashed"),
            "{msg}"
        );
        assert!(msg.contains("byte index 7 is not a char boundary"), "{msg}");
        // A parse that does not panic passes through unchanged.
        let ok = guarded(path, || {
            Ok(report::parse_str(
                "Text [1].\n\n[1] https://a.org\n",
                report::SourceFormat::Markdown,
                path,
                std::path::Path::new("."),
            ))
        })
        .unwrap();
        assert_eq!(ok.facts.len(), 1);
    }
}
