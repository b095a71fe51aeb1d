//! Every flag a fidelity row of the built-in rubrics names (issue 27) exists in
//! `tvir eval --help`, with the default the row states.

use std::collections::BTreeSet;
use std::path::PathBuf;

use proc_macro2::TokenStream;

use crate::common;

use common::cli::tvir_command;
use common::rust_source;
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

/// Every `.rs` file under `tests/` and `crates/`, as tokens.
fn sources() -> Vec<(PathBuf, TokenStream)> {
    let repo = common::repo();
    let mut out = Vec::new();
    for dir in ["tests", "crates"] {
        for e in walkdir::WalkDir::new(repo.join(dir)).into_iter().flatten() {
            if e.path().extension().is_some_and(|x| x == "rs") {
                let tokens = rust_source::tokens(e.path()).unwrap_or_else(|e| panic!("{e}"));
                out.push((e.into_path(), tokens));
            }
        }
    }
    out
}

/// What a test does: its body and the bodies of the functions of its file it calls,
/// transitively (the shared runs of a test file are where the flags are passed).
struct Exercise {
    literals: Vec<String>,
    /// Flags passed with a variable as value, in the test or a helper it calls.
    flags_with_variable: Vec<String>,
    /// The string literals of the test's own body (the values it hands its helpers).
    own_literals: Vec<String>,
    identifiers: Vec<String>,
    asserts: bool,
}

fn exercise(file: &TokenStream, body: &TokenStream) -> Exercise {
    let mut seen = BTreeSet::new();
    let mut bodies = vec![body.clone()];
    let mut queue: Vec<TokenStream> = vec![body.clone()];
    while let Some(b) = queue.pop() {
        for name in rust_source::calls(&b) {
            if seen.insert(name.clone()) {
                for f in rust_source::functions(file, &name) {
                    bodies.push(f.body.clone());
                    queue.push(f.body);
                }
            }
        }
    }
    let text = |ls: Vec<String>| -> Vec<String> {
        ls.iter()
            .map(|l| rust_source::literal_text(l).to_string())
            .collect()
    };
    let mut e = Exercise {
        literals: Vec::new(),
        flags_with_variable: Vec::new(),
        own_literals: text(rust_source::string_literals(body)),
        identifiers: Vec::new(),
        asserts: false,
    };
    for b in &bodies {
        e.literals.extend(
            rust_source::string_literals(b)
                .iter()
                .map(|l| rust_source::literal_text(l).to_string()),
        );
        e.identifiers.extend(rust_source::identifiers(b));
        e.flags_with_variable
            .extend(text(rust_source::literals_before_a_variable(b)));
    }
    let body_calls = rust_source::calls(body);
    // The test itself asserts (a helper's checks are not an outcome of this test).
    e.asserts = ["assert", "assert_eq", "assert_ne"]
        .iter()
        .any(|a| body_calls.contains(*a));
    e
}

/// `word` with case, `-` and `_` dropped, to compare a flag value with a Rust name.
fn folded(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The value a switch cell gives `flag` (`--dedup judge-all` gives `judge-all`).
fn switch_value(switch: &str, flag: &str) -> Option<String> {
    let at = switch.find(flag)? + flag.len();
    let rest = switch[at..].strip_prefix(' ')?;
    let value: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!value.is_empty()).then_some(value)
}

/// Whether `e` runs the row's setting: the flag (with the switch's value) passed to
/// the binary; `--protocol reference` without that flag overridden to another value;
/// or, in process, the setting's value as a Rust name (`Backend::Serper`,
/// `DedupMode::JudgeAll`; a flag without a value: its field, `failed_as_zero`).
fn runs_setting(e: &Exercise, flag: &str, value: Option<&str>) -> bool {
    let after = |i: usize| e.literals.get(i + 1).map(String::as_str);
    let given = |i: usize| match value {
        Some(v) => after(i) == Some(v),
        None => true,
    };
    let joined =
        |l: &str| value.is_some_and(|v| l == format!("{flag} {v}") || l == format!("{flag}={v}"));
    let passed = e
        .literals
        .iter()
        .enumerate()
        .any(|(i, l)| (l == flag && given(i)) || joined(l));
    let overridden = e
        .literals
        .iter()
        .enumerate()
        .any(|(i, l)| l == flag && !given(i));
    let protocol = e
        .literals
        .iter()
        .enumerate()
        .any(|(i, l)| l == "--protocol" && after(i) == Some("reference"));
    // A helper that takes the flag's value as a parameter, handed the value by the test.
    let through_helper = e.flags_with_variable.iter().any(|l| l == flag)
        && value.is_none_or(|v| e.own_literals.iter().any(|l| l == v));
    let name = folded(value.unwrap_or(flag));
    let in_process = e.identifiers.iter().any(|id| folded(id) == name);
    passed || through_helper || (protocol && !overridden) || in_process
}

/// The scoring-path rows of `docs/fidelity.md`: each flag exists with the default
/// the row states, and each row's test is a test (`#[test]` or an async runtime's)
/// that runs the row's setting (the flag with the switch's value, `--protocol
/// reference` not overriding it, or the setting in process) and asserts in its body.
#[test]
fn every_scoring_path_row_names_a_real_flag_and_test() {
    let out = tvir_command().args(["eval", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).to_string();
    let rows = tvir_rubric::fidelity::scoring_path().unwrap();
    let sources = sources();
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
        let found: Vec<(&PathBuf, Exercise)> = sources
            .iter()
            .flat_map(|(path, file)| {
                rust_source::functions(file, &r.test)
                    .into_iter()
                    .filter(|f| f.is_test())
                    .map(move |f| (path, exercise(file, &f.body)))
            })
            .collect();
        let [(path, e)] = found.as_slice() else {
            problems.push(format!(
                "{}: {} tests named {} (one expected)",
                r.step,
                found.len(),
                r.test
            ));
            continue;
        };
        if !e.asserts {
            problems.push(format!("{}: {} asserts nothing", r.step, r.test));
        }
        if let Some(flag) = &r.flag {
            let value = switch_value(&r.switch, &flag.name);
            if !runs_setting(e, &flag.name, value.as_deref()) {
                problems.push(format!(
                    "{}: {} ({}) never runs {} {}",
                    r.step,
                    r.test,
                    path.display(),
                    flag.name,
                    value.unwrap_or_default()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(rows.len() >= 10, "{}", rows.len());
}

/// The check of the rows rejects a test that only reads the recorded settings of a
/// run that overrides the row's flag, one that never passes it, and one that asserts
/// nothing; it accepts the flag passed with its value (also through a helper the test
/// hands the value), the protocol, and the setting in process.
#[test]
fn the_row_check_rejects_a_test_that_does_not_run_the_setting() {
    let file: TokenStream = r#"
        fn runs() -> Runs {
            eval(&["--protocol", "reference", "--extraction", "rules"]);
        }
        #[test]
        fn records_only() { let r = runs(); assert_eq!(r["settings"]["extraction"], "judge"); }
        #[test]
        fn by_protocol() { let r = runs(); assert_eq!(r.dedup, 1); }
        #[tokio::test(flavor = "multi_thread")]
        async fn by_flag() { let r = eval(&["--extraction", "judge"]); assert!(r.ok); }
        #[test]
        fn in_process() { let c = Config { backend: Backend::Serper }; assert!(run(c)); }
        #[test]
        fn silent() { eval(&["--extraction", "judge"]); }
        #[test]
        fn elsewhere() { let r = eval(&["--dedup", "off"]); assert!(r.ok); }
        fn with_mode(mode: &str) -> Runs { eval(&["--dedup", mode]) }
        #[test]
        fn through_helper() { let r = with_mode("judge-all"); assert!(r.ok); }
        #[test]
        fn helper_other_value() { let r = with_mode("prefilter"); assert!(r.ok); }
    "#
    .parse()
    .unwrap();
    let check = |name: &str, flag: &str, value: Option<&str>| {
        let f = rust_source::functions(&file, name).pop().unwrap();
        assert!(f.is_test(), "{name}");
        let e = exercise(&file, &f.body);
        e.asserts && runs_setting(&e, flag, value)
    };
    assert!(!check("records_only", "--extraction", Some("judge")));
    assert!(check("by_protocol", "--dedup", Some("judge-all")));
    assert!(check("by_flag", "--extraction", Some("judge")));
    assert!(check("in_process", "--fetcher", Some("serper")));
    assert!(!check("silent", "--extraction", Some("judge")));
    assert!(!check("elsewhere", "--dedup", Some("judge-all")));
    // A helper taking the value as a parameter counts only with the row's value handed in.
    assert!(check("through_helper", "--dedup", Some("judge-all")));
    assert!(!check("helper_other_value", "--dedup", Some("judge-all")));
    assert_eq!(
        switch_value(
            "`--aggregates present` (and `--rounding reference`)",
            "--aggregates"
        ),
        Some("present".into())
    );
    assert_eq!(switch_value("`--failed-as-zero`", "--failed-as-zero"), None);
}
