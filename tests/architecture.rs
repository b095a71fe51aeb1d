//! The workspace's shape, checked: which crate may depend on which (the layering
//! drawn in ARCHITECTURE.md), no module cycle inside any crate, every crate
//! documented with what it must never depend on, and no source file over 1,000 lines
//! without a reason at its top, and each `tests/` folder built as one test binary
//! that runs every file in it. Cargo already refuses cycles between crates; these
//! are the rules it cannot see.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// For each stage crate, the suite crates it may use as a normal dependency. A new
/// edge means a new arrow in ARCHITECTURE.md: add it there and here together.
fn allowed() -> BTreeMap<&'static str, BTreeSet<&'static str>> {
    let rules: &[(&str, &[&str])] = &[
        ("tvir-report", &[]),
        ("tvir-store", &[]),
        ("tvir-reporef", &[]),
        ("tvir-browser", &[]),
        ("tvir-judge", &["tvir-store"]),
        ("tvir-sources", &["tvir-report", "tvir-store"]),
        ("tvir-images", &["tvir-report", "tvir-sources"]),
        ("tvir-rubric", &["tvir-judge"]),
        (
            "tvir-engine",
            &[
                "tvir-report",
                "tvir-store",
                "tvir-sources",
                "tvir-images",
                "tvir-judge",
                "tvir-rubric",
                "tvir-browser",
            ],
        ),
        (
            "tvir-analysis",
            &["tvir-report", "tvir-images", "tvir-rubric", "tvir-engine"],
        ),
        (
            "tvir-testing",
            &["tvir-judge", "tvir-sources", "tvir-engine"],
        ),
    ];
    rules
        .iter()
        .map(|(k, v)| (*k, v.iter().copied().collect()))
        .collect()
}

fn manifest(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn suite_deps(table: &toml::Table, section: &str) -> BTreeSet<String> {
    table
        .get(section)
        .and_then(|d| d.as_table())
        .map(|d| {
            d.keys()
                .filter(|k| k.starts_with("tvir-"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn package_name(dir: &Path) -> String {
    manifest(&dir.join("Cargo.toml"))["package"]["name"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn stage_crates_depend_only_on_the_layers_below_them() {
    let allowed = allowed();
    let mut seen = BTreeSet::new();
    for dir in crate_dirs() {
        let table = manifest(&dir.join("Cargo.toml"));
        let name = package_name(&dir);
        let may = allowed.get(name.as_str()).unwrap_or_else(|| {
            panic!("{name}: a new crate; give it a row in allowed() and in ARCHITECTURE.md")
        });
        for dep in suite_deps(&table, "dependencies") {
            assert!(
                may.contains(dep.as_str()),
                "{name} depends on {dep}, which its layer does not allow (see ARCHITECTURE.md)"
            );
        }
        seen.insert(name);
    }
    let expected: BTreeSet<String> = allowed.keys().map(|k| k.to_string()).collect();
    assert_eq!(seen, expected, "crates/ and the layering table disagree");
}

#[test]
fn the_test_servers_are_never_a_production_dependency() {
    let mut manifests: Vec<PathBuf> = crate_dirs().iter().map(|d| d.join("Cargo.toml")).collect();
    manifests.push(root().join("Cargo.toml"));
    for path in manifests {
        let table = manifest(&path);
        assert!(
            !suite_deps(&table, "dependencies").contains("tvir-testing"),
            "{} has tvir-testing as a normal dependency",
            path.display()
        );
    }
}

#[test]
fn architecture_md_has_a_line_for_every_crate() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    for dir in crate_dirs() {
        let name = package_name(&dir);
        assert!(
            doc.contains(&format!("`{name}`")),
            "ARCHITECTURE.md does not name `{name}`"
        );
    }
}

/// The crate doc (the `//!` lines at the top of lib.rs).
fn crate_doc(lib: &Path) -> String {
    std::fs::read_to_string(lib)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_crate_says_what_it_owns_and_must_never_depend_on() {
    let mut libs: Vec<PathBuf> = crate_dirs().iter().map(|d| d.join("src/lib.rs")).collect();
    libs.push(root().join("src/lib.rs"));
    for lib in libs {
        let doc = crate_doc(&lib);
        assert!(
            doc.lines().count() >= 4,
            "{}: the crate doc should say what the crate is for and its main types",
            lib.display()
        );
        let lower = doc.to_lowercase();
        assert!(
            lower.contains("never depend"),
            "{}: the crate doc does not say what the crate must never depend on",
            lib.display()
        );
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Text with `//` comments removed, so a doc link or a remark naming a module is
/// not an import.
fn code_of(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Names following `prefix` (`crate::` or `super::`) in `code`.
fn named_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        names.push(&rest[..end]);
    }
    names
}

/// Module graph of one crate: top-level module -> the top-level modules it names.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let top_of = |path: &Path| -> (String, usize) {
        let rel = path.strip_prefix(src).unwrap();
        let parts: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let top = if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
            "<root>".to_string()
        } else {
            parts[0].clone()
        };
        (top, parts.len())
    };
    let modules: BTreeSet<String> = files.iter().map(|f| top_of(f).0).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for file in &files {
        let (me, depth) = top_of(file);
        let code = code_of(file);
        let mut names = named_after(&code, "crate::");
        // From a top-level file (or a directory module's mod.rs), `super::` is the
        // crate root, so `super::x` names the sibling module x.
        if depth == 1 || (depth == 2 && file.ends_with("mod.rs")) {
            names.extend(named_after(&code, "super::"));
        }
        for name in names {
            if name != me && name != "<root>" && modules.contains(name) {
                graph.get_mut(&me).unwrap().insert(name.to_string());
            }
        }
    }
    graph
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.graph[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.found
}

#[test]
fn the_cycle_finder_finds_a_planted_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::X;\n").unwrap();
    std::fs::create_dir(src.join("b")).unwrap();
    std::fs::write(src.join("b/mod.rs"), "mod inner;\n").unwrap();
    std::fs::write(src.join("b/inner.rs"), "fn f() { crate::a::g() }\n").unwrap();
    // c names a only in a comment: no edge.
    std::fs::write(src.join("c.rs"), "// see crate::a\nuse super::b::Y;\n").unwrap();
    let graph = module_graph(src);
    assert_eq!(cycles(&graph), vec![vec!["a".to_string(), "b".to_string()]]);
    assert_eq!(graph["c"], BTreeSet::from(["b".to_string()]));
}

#[test]
fn no_crate_has_a_module_cycle() {
    let mut srcs: Vec<PathBuf> = crate_dirs().iter().map(|d| d.join("src")).collect();
    srcs.push(root().join("src"));
    let mut found = Vec::new();
    for src in srcs {
        for cycle in cycles(&module_graph(&src)) {
            found.push(format!("{}: {}", src.display(), cycle.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

/// The first line a long file must start with, followed by its reason.
const LONG_FILE_MARK: &str = "//! Over 1,000 lines";

#[test]
fn no_source_file_over_1000_lines_without_a_reason() {
    let mut files = Vec::new();
    for dir in ["crates", "src", "tests", "benches", "examples"] {
        rust_files(&root().join(dir), &mut files);
    }
    let mut long = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines = text.lines().count();
        if lines > 1000 && !text.starts_with(LONG_FILE_MARK) {
            long.push(format!("{} ({lines} lines)", file.display()));
        }
    }
    assert!(
        long.is_empty(),
        "split these, or start them with `{LONG_FILE_MARK} because ...`:\n{}",
        long.join("\n")
    );
}

/// Paths of source files named in prose (`crates/…/x.rs`, `src/…`, `tests/…`,
/// `benches/…`, `scripts/…`).
fn named_paths(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(['`', ' ', '(']) {
        let rest = &text[i + 1..];
        if !["crates/", "src/", "tests/", "benches/", "scripts/"]
            .iter()
            .any(|p| rest.starts_with(p))
        {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "/_.-".contains(c)))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches('.');
        if [".rs", ".sh", ".py"].iter().any(|e| path.ends_with(e)) {
            out.push(path);
        }
    }
    out
}

#[test]
fn the_docs_name_only_files_that_exist() {
    // Every page of the guide site, sub-folders included.
    let mut docs: Vec<PathBuf> = Vec::new();
    let mut folders = vec![root().join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                docs.push(path);
            }
        }
    }
    docs.push(root().join("README.md"));
    docs.push(root().join("CHANGELOG.md"));
    docs.push(root().join("ARCHITECTURE.md"));
    let mut missing = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for path in named_paths(&text) {
            if !root().join(path).exists() {
                missing.push(format!("{}: {path}", doc.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "named but not there:\n{}",
        missing.join("\n")
    );
}

#[test]
fn named_paths_reads_paths_out_of_prose() {
    let text = "see `crates/report/src/lib.rs` and (src/eval.rs), not crates/x or foo/src/a.rs.";
    assert_eq!(
        named_paths(text),
        vec!["crates/report/src/lib.rs", "src/eval.rs"]
    );
}

/// What is wrong with how a package's `tests/` folder is built into test binaries.
/// A folder with two or more files is one binary: `tests/suite.rs` names every other
/// file as a module, and the manifest turns autodiscovery off and declares that one
/// target (each extra binary is another link of the whole dependency tree, which is
/// what made CI slow). A file the suite does not name would never run.
fn test_layout_problems(package: &Path) -> Vec<String> {
    let tests = package.join("tests");
    let mut files: BTreeSet<String> = match std::fs::read_dir(&tests) {
        Ok(entries) => entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "rs"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect(),
        Err(_) => return Vec::new(),
    };
    let mut problems = Vec::new();
    let has_suite = files.remove("suite");
    if !has_suite {
        if files.len() > 1 {
            problems.push(format!(
                "{}: {} test files, each its own binary; make them modules of tests/suite.rs",
                tests.display(),
                files.len()
            ));
        }
        return problems;
    }
    let suite = std::fs::read_to_string(tests.join("suite.rs")).unwrap();
    let named: BTreeSet<String> = suite
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .filter(|m| *m != "common")
        .map(str::to_string)
        .collect();
    for file in files.difference(&named) {
        problems.push(format!(
            "{}/{file}.rs is not a module of tests/suite.rs: its tests never run",
            tests.display()
        ));
    }
    for module in named.difference(&files) {
        problems.push(format!(
            "tests/suite.rs of {} names {module}, which has no file",
            package.display()
        ));
    }
    let table = manifest(&package.join("Cargo.toml"));
    if table["package"].get("autotests").and_then(|v| v.as_bool()) != Some(false) {
        problems.push(format!(
            "{}: autotests is not false, so every file is also a binary of its own",
            package.join("Cargo.toml").display()
        ));
    }
    let targets = table.get("test").and_then(|t| t.as_array());
    let declared = targets.is_some_and(|t| {
        t.iter()
            .any(|t| t.get("path").and_then(|p| p.as_str()) == Some("tests/suite.rs"))
    });
    if !declared {
        problems.push(format!(
            "{}: no [[test]] target with path tests/suite.rs",
            package.join("Cargo.toml").display()
        ));
    }
    problems
}

#[test]
fn each_tests_folder_is_one_binary_that_runs_every_file() {
    let mut packages = crate_dirs();
    packages.push(root());
    let problems: Vec<String> = packages
        .iter()
        .flat_map(|p| test_layout_problems(p))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_test_layout_check_finds_a_file_the_suite_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let tests = dir.path().join("tests");
    std::fs::create_dir_all(&tests).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"x\"\nautotests = false\n\n[[test]]\nname = \"suite\"\npath = \"tests/suite.rs\"\n",
    )
    .unwrap();
    std::fs::write(tests.join("suite.rs"), "mod common;\nmod a;\nmod gone;\n").unwrap();
    for f in ["a.rs", "forgotten.rs"] {
        std::fs::write(tests.join(f), "").unwrap();
    }
    let problems = test_layout_problems(dir.path());
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("forgotten.rs is not a module"),
        "{problems:?}"
    );
    assert!(problems[1].contains("names gone"), "{problems:?}");
    // Two files and no suite: two binaries.
    std::fs::remove_file(tests.join("suite.rs")).unwrap();
    let problems = test_layout_problems(dir.path());
    assert!(problems[0].contains("2 test files"), "{problems:?}");
}

/// Each package of one build's graph with the features that build switches on, read
/// from `cargo tree` (`name vX.Y.Z` -> features).
fn build_features(args: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .current_dir(root())
        .args([
            "tree",
            "--locked",
            "--offline",
            "--prefix",
            "none",
            "-f",
            "{p}|{f}",
        ])
        .args(args)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // A package shown before ends in ` (*)`, after its features.
        let line = line.trim_end_matches(" (*)");
        let Some((package, features)) = line.split_once('|') else {
            continue;
        };
        // `serde v1.0.1 (proc-macro) (*)` and `tvir-report v0.1.0 (/path)` -> name + version.
        let package: Vec<&str> = package.split_whitespace().take(2).collect();
        graph.entry(package.join(" ")).or_default().extend(
            features
                .split(',')
                .filter(|f| !f.is_empty())
                .map(str::to_string),
        );
    }
    graph
}

/// The Quick start (`cargo run --release`, the command line's own graph) and the
/// test command (`cargo test --release`: every member with its dev-dependencies)
/// switch on the same features of every package they share, so the tests reuse every
/// dependency the Quick start compiled (see "Feature unification" in Cargo.toml).
#[test]
fn the_test_build_shares_every_feature_of_the_quick_starts_build() {
    let quick_start = build_features(&["-e", "normal,build", "-p", "tvir-eval"]);
    let tests = build_features(&["-e", "normal,build,dev", "--workspace"]);
    assert!(quick_start.len() > 100, "{} packages", quick_start.len());
    let differing: Vec<String> = quick_start
        .iter()
        .filter_map(|(package, features)| {
            let extra: Vec<&String> = tests.get(package)?.difference(features).collect();
            (!extra.is_empty())
                .then(|| format!("{package}: only the test build turns on {extra:?}"))
        })
        .collect();
    assert!(
        differing.is_empty(),
        "the test build would compile these (and all above them) again; switch the \
         features on under \"Feature unification\" in Cargo.toml:\n{}",
        differing.join("\n")
    );
}
