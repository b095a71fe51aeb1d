//! The example benchmark shipped in `examples/` (two systems x three tasks, their
//! pictures and `tasks.json`), embedded in the binary at build time so that
//! `tvir eval --example OUT` runs it from an installed wheel or `cargo install` with
//! no source tree around.
//!
//! The list below names every file of the example; `tests/example_embedded.rs`
//! checks it against the folder, so a file added to `examples/` without being listed
//! here fails the suite.

use std::path::{Path, PathBuf};

/// Path of the task file inside the written-out example.
pub const TASKS: &str = "tasks.json";

macro_rules! files {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_bytes!(concat!("../examples/", $path)) as &[u8])),*]
    };
}

/// Every file of the example: path relative to `examples/`, and its bytes.
pub const FILES: &[(&str, &[u8])] = files![
    "tasks.json",
    "system-a/ex001/report.md",
    "system-a/ex001/charts/solar_capacity.png",
    "system-a/ex001/images/rooftops.png",
    "system-a/ex002/report.md",
    "system-a/ex003/report.md",
    "system-a/ex003/charts/coffee_prices.png",
    "system-a/ex003/images/harbour.png",
    "system-b/ex001/report.md",
    "system-b/ex001/charts/install_cost.png",
    "system-b/ex001/images/panel_closeup.png",
    "system-b/ex002/report.md",
    "system-b/ex002/charts/corridor_counts.png",
    "system-b/ex002/images/planning_flow.png",
    "system-b/ex003/report.md",
    "system-b/ex003/charts/coffee_prices.png",
    "system-b/ex003/images/farm.png",
    "system-b/ex003/images/farm_copy.png",
];

/// Write the example into `dir` (created if missing): `dir/{system}/{task}/...` and
/// `dir/tasks.json`, the layout `tvir eval --reports dir --tasks dir/tasks.json`
/// reads. Errors name the file that could not be written.
pub fn write_to(dir: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    for (rel, bytes) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("{}: cannot create folder", parent.display()))?;
        }
        std::fs::write(&path, bytes)
            .with_context(|| format!("{}: cannot write example file", path.display()))?;
    }
    Ok(())
}

/// The example written into a fresh temporary folder, removed when dropped.
pub struct Unpacked {
    dir: tempfile::TempDir,
}

impl Unpacked {
    pub fn new() -> anyhow::Result<Self> {
        use anyhow::Context;
        let dir = tempfile::Builder::new()
            .prefix("tvir-example-")
            .tempdir()
            .context("creating a temporary folder for the embedded example")?;
        write_to(dir.path())?;
        Ok(Self { dir })
    }

    /// The reports root (`ROOT/{system}/{task_id}/report.md`).
    pub fn reports(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// The task file.
    pub fn tasks(&self) -> PathBuf {
        self.dir.path().join(TASKS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_files_match_the_embedded_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        write_to(tmp.path()).unwrap();
        for (rel, bytes) in FILES {
            assert_eq!(
                &std::fs::read(tmp.path().join(rel)).unwrap(),
                bytes,
                "{rel}"
            );
        }
        let tasks = tvir_engine::load_tasks(&tmp.path().join(TASKS)).unwrap();
        assert_eq!(
            tasks.keys().map(String::as_str).collect::<Vec<_>>(),
            ["ex001", "ex002", "ex003"]
        );
    }

    #[test]
    fn an_unwritable_folder_is_an_error_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let blocker = tmp.path().join("file");
        std::fs::write(&blocker, b"not a folder").unwrap();
        let err = format!("{:#}", write_to(&blocker.join("example")).unwrap_err());
        assert!(err.contains(&blocker.display().to_string()), "{err}");
        assert!(err.contains("cannot create folder"), "{err}");
    }
}
