//! Every test that can skip says so through the one skip rule (`tests/common/skip.rs`),
//! so `TVIR_REQUIRE_ALL_TESTS=1` turns every skip into a failure: a `skipped:` printed
//! any other way would pass in CI while the test never ran.

use std::path::{Path, PathBuf};

use crate::common;
use common::rust_source::{calls, literal_text, string_literals, tokens};

/// The rule's file.
fn rule_file() -> PathBuf {
    common::repo().join("tests/common/skip.rs")
}

/// Every `.rs` file of the checkout outside `target/` and hidden folders.
fn rust_files() -> Vec<PathBuf> {
    let root = common::repo();
    walkdir::WalkDir::new(&root)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0 || !(name.starts_with('.') || name == "target")
        })
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| e.into_path())
        .collect()
}

/// The mark of a skipped test's line, built here so that this file passes its own
/// check.
fn skip_mark() -> String {
    ["skipped", ":"].concat()
}

/// The string literals of a source that print a skip themselves (the skip mark in a
/// string, any case; doc comments and other comments may mention it).
fn own_skip_lines(source: &proc_macro2::TokenStream) -> Vec<String> {
    string_literals(source)
        .into_iter()
        .filter(|l| literal_text(l).to_lowercase().contains(&skip_mark()))
        .collect()
}

/// The files a `#[path = "..."]` of `file` names, resolved from its folder.
fn path_includes(file: &Path, source: &proc_macro2::TokenStream) -> Vec<PathBuf> {
    let trees: Vec<proc_macro2::TokenTree> = source.clone().into_iter().collect();
    let mut out = Vec::new();
    for w in trees.windows(2) {
        if let (proc_macro2::TokenTree::Punct(p), proc_macro2::TokenTree::Group(g)) = (&w[0], &w[1])
        {
            let inner: Vec<String> = g.stream().into_iter().map(|t| t.to_string()).collect();
            if p.as_char() == '#' && inner.len() == 3 && inner[0] == "path" && inner[1] == "=" {
                out.push(file.parent().unwrap().join(literal_text(&inner[2])));
            }
        }
    }
    out
}

#[test]
fn no_test_prints_skipped_outside_the_shared_skip_rule() {
    let rule = rule_file().canonicalize().unwrap();
    let mut problems = Vec::new();
    let mut copies = Vec::new();
    let files = rust_files();
    assert!(files.len() > 100, "{} files", files.len());
    for file in &files {
        let source = match tokens(file) {
            Ok(t) => t,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let canonical = file.canonicalize().unwrap();
        if canonical != rule {
            for l in own_skip_lines(&source) {
                problems.push(format!(
                    "{}: prints {l} itself; call the skip rule (tests/common/skip.rs)",
                    file.display()
                ));
            }
        }
        for included in path_includes(file, &source) {
            if included.file_name().is_some_and(|n| n == "skip.rs") {
                match included.canonicalize() {
                    Ok(c) if c == rule => copies.push(file.clone()),
                    _ => problems.push(format!(
                        "{}: includes {} instead of the one skip rule",
                        file.display(),
                        included.display()
                    )),
                }
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
    // The crates that cannot use `tests/common` include the rule by path (their own
    // tests and benches, the engine's Chromium tests): all of them found, none a copy.
    for expected in [
        "crates/engine/src/render/browser_tests.rs",
        "crates/browser/tests/common/mod.rs",
        "crates/report/tests/parse_mutation.rs",
    ] {
        let path = common::repo().join(expected);
        assert!(
            copies.contains(&path),
            "{expected} does not include the skip rule"
        );
    }
    // The rule itself fails under TVIR_REQUIRE_ALL_TESTS=1 and says why otherwise.
    let rule_source = tokens(&rule).unwrap();
    let literals: Vec<String> = string_literals(&rule_source);
    assert!(
        literals
            .iter()
            .any(|l| literal_text(l) == "TVIR_REQUIRE_ALL_TESTS"),
        "{literals:?}"
    );
    assert!(
        calls(&rule_source).contains("panic"),
        "the skip rule never fails"
    );
    assert!(!own_skip_lines(&rule_source).is_empty(), "{literals:?}");
}

#[test]
fn the_skip_check_finds_a_skip_printed_by_hand_and_ignores_comments() {
    // The planted lines are written with a stand-in so this file passes the check.
    let source: proc_macro2::TokenStream = r###"
        //! Needs Chromium (else `SKIP_LINE ...`).
        /// Prints `SKIP_LINE why` through the rule.
        fn a() { eprintln!("SKIP_LINE no Chromium"); }
        fn b() { println!(r#"SKIP_LINE corpus at {}"#, dir); }
        fn c() { common::skip("no Chromium"); } // SKIP_LINE in a comment
        fn d() { eprintln!("part 1 SKIP_LINE no corpus"); }
    "###
    .replace("SKIP_LINE", &skip_mark().to_uppercase())
    .parse()
    .unwrap();
    let found = own_skip_lines(&source);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].contains("no Chromium") && found[2].contains("part 1"));
}

#[test]
fn a_skip_through_the_rule_fails_when_every_test_must_run() {
    // In a child process: setting the variable here would fail the skips of the tests
    // running beside this one.
    if std::env::var_os("TVIR_SKIP_RULE_CHILD").is_some() {
        common::skip("the child's planted skip");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let run = |require: Option<&str>| {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args([
            "skip_rule::a_skip_through_the_rule_fails_when_every_test_must_run",
            "--exact",
            "--nocapture",
        ])
        .env("TVIR_SKIP_RULE_CHILD", "1")
        .env_remove("TVIR_REQUIRE_ALL_TESTS");
        if let Some(v) = require {
            cmd.env("TVIR_REQUIRE_ALL_TESTS", v);
        }
        cmd.output().unwrap()
    };
    let passed = run(None);
    assert!(passed.status.success(), "{passed:?}");
    let said = format!("{}: the child's planted skip", "skipped");
    assert!(
        String::from_utf8_lossy(&passed.stdout).contains(&said),
        "{passed:?}"
    );
    let failed = run(Some("1"));
    assert!(!failed.status.success(), "{failed:?}");
    let out = String::from_utf8_lossy(&failed.stdout).to_string()
        + &String::from_utf8_lossy(&failed.stderr);
    let why = format!("TVIR_REQUIRE_ALL_TESTS=1, yet this test would be {said}");
    assert!(out.contains(&why), "{out}");
}
