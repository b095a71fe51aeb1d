//! Rubrics as data: one TOML file per judged metric (`rubrics/`), one prompt
//! template per metric (`prompts/`), and the one generic engine that turns a rubric
//! plus a unit's inputs into a judge request and JSON schema, and a judge answer into
//! a per-unit score. No metric has its own scoring code.

mod engine;
mod model;

pub use engine::*;
pub use model::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Rubrics shipped in the binary, keyed by file stem.
const BUILTIN_RUBRICS: [(&str, &str); 13] = [
    (
        "citation_support",
        include_str!("../../rubrics/citation_support.toml"),
    ),
    (
        "instruction_alignment",
        include_str!("../../rubrics/instruction_alignment.toml"),
    ),
    (
        "writing_quality",
        include_str!("../../rubrics/writing_quality.toml"),
    ),
    (
        "analytical_depth_breadth",
        include_str!("../../rubrics/analytical_depth_breadth.toml"),
    ),
    (
        "factual_logical_consistency",
        include_str!("../../rubrics/factual_logical_consistency.toml"),
    ),
    (
        "multimodal_composition",
        include_str!("../../rubrics/multimodal_composition.toml"),
    ),
    (
        "chart_quality",
        include_str!("../../rubrics/chart_quality.toml"),
    ),
    (
        "figure_caption_quality",
        include_str!("../../rubrics/figure_caption_quality.toml"),
    ),
    (
        "figure_context_integration",
        include_str!("../../rubrics/figure_context_integration.toml"),
    ),
    (
        "chart_source_consistency",
        include_str!("../../rubrics/chart_source_consistency.toml"),
    ),
    ("fact_dedup", include_str!("../../rubrics/fact_dedup.toml")),
    (
        "extract_references",
        include_str!("../../rubrics/extract_references.toml"),
    ),
    (
        "extract_facts",
        include_str!("../../rubrics/extract_facts.toml"),
    ),
];

/// Prompt templates shipped in the binary, keyed by rubric id.
const BUILTIN_PROMPTS: [(&str, &str); 13] = [
    (
        "citation_support",
        include_str!("../../prompts/citation_support.j2"),
    ),
    (
        "instruction_alignment",
        include_str!("../../prompts/instruction_alignment.j2"),
    ),
    (
        "writing_quality",
        include_str!("../../prompts/writing_quality.j2"),
    ),
    (
        "analytical_depth_breadth",
        include_str!("../../prompts/analytical_depth_breadth.j2"),
    ),
    (
        "factual_logical_consistency",
        include_str!("../../prompts/factual_logical_consistency.j2"),
    ),
    (
        "multimodal_composition",
        include_str!("../../prompts/multimodal_composition.j2"),
    ),
    (
        "chart_quality",
        include_str!("../../prompts/chart_quality.j2"),
    ),
    (
        "figure_caption_quality",
        include_str!("../../prompts/figure_caption_quality.j2"),
    ),
    (
        "figure_context_integration",
        include_str!("../../prompts/figure_context_integration.j2"),
    ),
    (
        "chart_source_consistency",
        include_str!("../../prompts/chart_source_consistency.j2"),
    ),
    ("fact_dedup", include_str!("../../prompts/fact_dedup.j2")),
    (
        "extract_references",
        include_str!("../../prompts/extract_references.j2"),
    ),
    (
        "extract_facts",
        include_str!("../../prompts/extract_facts.j2"),
    ),
];

/// Rubric ids the evaluation needs (the ten judged metrics, `fact_dedup` and the two
/// judge-extraction rubrics).
pub const REQUIRED_RUBRICS: [&str; 13] = [
    "citation_support",
    "instruction_alignment",
    "writing_quality",
    "analytical_depth_breadth",
    "factual_logical_consistency",
    "multimodal_composition",
    "chart_quality",
    "figure_caption_quality",
    "figure_context_integration",
    "chart_source_consistency",
    "fact_dedup",
    "extract_references",
    "extract_facts",
];

#[derive(Debug, thiserror::Error)]
pub enum RubricError {
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("{path}: cannot read: {message}")]
    Unreadable { path: String, message: String },
    #[error("rubric set has no rubric `{0}`")]
    Missing(String),
    #[error("prompt `{id}`: {message}")]
    Template { id: String, message: String },
}

/// All rubrics and prompt templates of a run, validated.
#[derive(Debug, Clone)]
pub struct RubricSet {
    rubrics: BTreeMap<String, Rubric>,
    prompts: BTreeMap<String, String>,
}

impl RubricSet {
    /// The rubrics and prompts embedded in the binary.
    pub fn builtin() -> Result<Self, RubricError> {
        Self::load(None, None)
    }

    /// Built-in rubrics and prompts, with files from `rubrics_dir` (`{id}.toml`) and
    /// `prompts_dir` (`{id}.j2`) replacing the built-in ones of the same id.
    pub fn load(
        rubrics_dir: Option<&Path>,
        prompts_dir: Option<&Path>,
    ) -> Result<Self, RubricError> {
        let mut rubrics = BTreeMap::new();
        for (name, text) in BUILTIN_RUBRICS {
            let rubric = Rubric::from_toml(text, &format!("<builtin>/rubrics/{name}.toml"))?;
            rubrics.insert(rubric.id.clone(), rubric);
        }
        let mut prompts: BTreeMap<String, String> = BUILTIN_PROMPTS
            .iter()
            .map(|(id, text)| (id.to_string(), text.to_string()))
            .collect();
        if let Some(dir) = rubrics_dir {
            for path in files_with_ext(dir, "toml")? {
                let text = read(&path)?;
                let rubric = Rubric::from_toml(&text, &path.display().to_string())?;
                rubrics.insert(rubric.id.clone(), rubric);
            }
        }
        if let Some(dir) = prompts_dir {
            for path in files_with_ext(dir, "j2")? {
                let id = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                prompts.insert(id, read(&path)?);
            }
        }
        let set = Self { rubrics, prompts };
        set.validate()?;
        Ok(set)
    }

    fn validate(&self) -> Result<(), RubricError> {
        for id in REQUIRED_RUBRICS {
            let rubric = self.get(id)?;
            let template = self.prompts.get(id).ok_or_else(|| RubricError::Template {
                id: id.into(),
                message: "no prompt template".into(),
            })?;
            // Render once with empty inputs so a broken template fails at start-up,
            // not after an hour of judging.
            engine::check_template(rubric, template)?;
        }
        Ok(())
    }

    pub fn get(&self, id: &str) -> Result<&Rubric, RubricError> {
        self.rubrics
            .get(id)
            .ok_or_else(|| RubricError::Missing(id.to_string()))
    }

    pub fn prompt(&self, id: &str) -> Result<&str, RubricError> {
        self.prompts
            .get(id)
            .map(String::as_str)
            .ok_or_else(|| RubricError::Template {
                id: id.into(),
                message: "no prompt template".into(),
            })
    }

    pub fn rubrics(&self) -> impl Iterator<Item = &Rubric> {
        self.rubrics.values()
    }

    /// Put `rubric` in place of the one with the same id (or add it). The caller
    /// validates it first (`tvir ablate` re-reads overridden rubrics through
    /// [`Rubric::from_toml`]); prompts are untouched.
    pub fn replace_rubric(&mut self, rubric: Rubric) -> Option<Rubric> {
        self.rubrics.insert(rubric.id.clone(), rubric)
    }
}

fn read(path: &Path) -> Result<String, RubricError> {
    std::fs::read_to_string(path).map_err(|e| RubricError::Unreadable {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

fn files_with_ext(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, RubricError> {
    let entries = std::fs::read_dir(dir).map_err(|e| RubricError::Unreadable {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_set_loads_and_covers_every_judged_metric() {
        let set = RubricSet::builtin().unwrap();
        for id in REQUIRED_RUBRICS {
            assert_eq!(set.get(id).unwrap().id, id);
        }
    }

    #[test]
    fn override_dir_replaces_a_rubric() {
        let dir = tempfile::tempdir().unwrap();
        let text = include_str!("../../rubrics/writing_quality.toml")
            .replace("title = \"Writing Quality\"", "title = \"WQ override\"");
        std::fs::write(dir.path().join("writing_quality.toml"), text).unwrap();
        let set = RubricSet::load(Some(dir.path()), None).unwrap();
        assert_eq!(set.get("writing_quality").unwrap().title, "WQ override");
    }

    #[test]
    fn broken_override_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.toml"), "id = ").unwrap();
        let err = RubricSet::load(Some(dir.path()), None).unwrap_err();
        assert!(err.to_string().contains("bad.toml"), "{err}");
    }

    #[test]
    fn broken_prompt_override_fails_at_load() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("writing_quality.j2"),
            "{% block user %}{{ x ",
        )
        .unwrap();
        let err = RubricSet::load(None, Some(dir.path())).unwrap_err();
        assert!(err.to_string().contains("writing_quality"), "{err}");
    }
}
