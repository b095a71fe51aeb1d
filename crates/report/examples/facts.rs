//! Print what the parser reads from one report: its reference list, its facts
//! (each sentence with the entries it cites) and its figures.
//!
//! ```text
//! cargo run -p tvir-report --example facts -- examples/system-a/ex001/report.md
//! ```
//!
//! PATH is a report file or a folder holding `report.md` or `report.html`.

use std::path::PathBuf;
use std::process::ExitCode;

use tvir_report::{Reference, Report};

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: facts PATH (a report file or a report folder)");
        return ExitCode::from(2);
    };
    match tvir_report::load(&path) {
        Ok(report) => {
            print_report(&report);
            ExitCode::SUCCESS
        }
        // The error message names the file; it is never a panic.
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn print_report(report: &Report) {
    println!("{} ({:?})", report.path.display(), report.format);

    println!("\nReferences ({}):", report.references.len());
    for r in &report.references {
        let title = r.title.as_deref().unwrap_or("");
        let url = r.url.as_deref().unwrap_or("(no URL)");
        println!("  [{}] {title} {url}", r.idx);
    }

    println!("\nFacts ({}):", report.facts.len());
    for f in &report.facts {
        println!("  line {}: {}", f.line, f.fact);
        for idx in &f.ref_idxs {
            println!("      cites [{idx}] {}", url_of(&report.references, idx));
        }
    }

    println!("\nFigures ({}):", report.figures.len());
    for fig in &report.figures {
        let caption = fig.caption.as_deref().unwrap_or("(no caption)");
        println!(
            "  line {}: {:?} {} - {caption}",
            fig.line, fig.kind, fig.content
        );
        if !fig.ref_idxs.is_empty() {
            println!("      cites [{}]", fig.ref_idxs.join("], ["));
        }
    }
}

/// The URL of the entry a fact cites, as the reference list gives it.
fn url_of<'a>(refs: &'a [Reference], idx: &str) -> &'a str {
    refs.iter()
        .find(|r| r.idx == idx)
        .and_then(|r| r.url.as_deref())
        .unwrap_or("(no URL)")
}
