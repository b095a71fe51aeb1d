//! Every flag a fidelity row of the built-in rubrics names (issue 27) exists in
//! `tvir eval --help`, with the default the row states.

use crate::common;

use common::cli::tvir_command;
use tvir_rubric::RubricSet;

/// The help paragraph of `--name` (from its line to the next flag's line; the
/// `- value:` lines of possible values are part of it).
fn paragraph<'a>(help: &'a str, name: &str) -> Option<String> {
    let lines: Vec<&'a str> = help.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start().split([' ', ',', '=']).any(|w| w == name))?;
    let mut out = vec![lines[start]];
    for l in &lines[start + 1..] {
        let t = l.trim_start();
        let short = t.len() > 2 && t.as_bytes()[0] == b'-' && t.as_bytes()[2] == b',';
        if t.starts_with("--") || short {
            break;
        }
        out.push(l);
    }
    Some(out.join(" "))
}

#[test]
fn every_flag_named_by_a_row_exists_with_its_default() {
    let out = tvir_command().args(["eval", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout).to_string();
    let set = RubricSet::builtin().unwrap();
    let mut checked = 0;
    let mut problems = Vec::new();
    for rubric in set.rubrics() {
        for row in &rubric.fidelity {
            let Some(flag) = &row.flag else { continue };
            checked += 1;
            match paragraph(&help, &flag.name) {
                None => problems.push(format!("{}: no flag {}", rubric.id, flag.name)),
                Some(p) => {
                    if let Some(d) = &flag.default {
                        let want = format!("[default: {d}]");
                        if !p.contains(&want) {
                            problems
                                .push(format!("{}: {} lacks {want}: {p}", rubric.id, flag.name));
                        }
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(checked > 0, "no row names a flag");
}

/// The scoring-path rows of `docs/fidelity.md` (issue 36): each flag exists with the
/// default the row states, and each row's test exists (a `fn` of that name in the
/// root tests or a crate's sources or tests).
#[test]
fn every_scoring_path_row_names_a_real_flag_and_test() {
    let out = tvir_command().args(["eval", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).to_string();
    let rows = tvir_rubric::fidelity::scoring_path().unwrap();
    let repo = common::repo();
    let mut sources = String::new();
    for dir in ["tests", "crates"] {
        for e in walkdir::WalkDir::new(repo.join(dir)).into_iter().flatten() {
            if e.path().extension().is_some_and(|x| x == "rs") {
                sources.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
    }
    let mut problems = Vec::new();
    for r in &rows {
        if let Some(flag) = &r.flag {
            match paragraph(&help, &flag.name) {
                None => problems.push(format!("{}: no flag {}", r.step, flag.name)),
                Some(p) => {
                    if let Some(d) = &flag.default {
                        if !p.contains(&format!("[default: {d}]")) {
                            problems
                                .push(format!("{}: {} lacks [default: {d}]", r.step, flag.name));
                        }
                    }
                }
            }
        }
        if !sources.contains(&format!("fn {}(", r.test)) {
            problems.push(format!("{}: no test fn {}", r.step, r.test));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(rows.len() >= 10, "{}", rows.len());
}
