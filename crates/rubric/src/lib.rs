//! Rubrics as data: one TOML file per judged metric (`rubrics/`), one prompt
//! template per metric (`prompts/`), and the one generic engine that turns a rubric
//! plus a unit's inputs into a judge request and JSON schema, and a judge answer into
//! a per-unit score. No metric has its own scoring code.
//!
//! Main types: [`RubricSet`] (the loaded rubrics), [`RubricError`], and the rubric
//! model and engine items re-exported from the private `model` and `engine` modules.
//!
//! Uses `tvir-judge` for its request and answer types only: it builds requests and
//! scores answers but never sends anything (no network, no I/O beyond reading rubric
//! and prompt files). It must never depend on the engine, the fetcher or the
//! parser: a rubric sees a unit's inputs, not where they came from.

mod band;
mod engine;
pub mod fidelity;
mod model;
mod render;

pub use band::{band_case, band_note, band_of};
pub use engine::*;
pub use model::*;
pub use render::{build_request, RequestLabel};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Rubrics shipped in the binary, keyed by file stem.
const BUILTIN_RUBRICS: [(&str, &str); 13] = [
    (
        "citation_support",
        include_str!("../../../rubrics/citation_support.toml"),
    ),
    (
        "instruction_alignment",
        include_str!("../../../rubrics/instruction_alignment.toml"),
    ),
    (
        "writing_quality",
        include_str!("../../../rubrics/writing_quality.toml"),
    ),
    (
        "analytical_depth_breadth",
        include_str!("../../../rubrics/analytical_depth_breadth.toml"),
    ),
    (
        "factual_logical_consistency",
        include_str!("../../../rubrics/factual_logical_consistency.toml"),
    ),
    (
        "multimodal_composition",
        include_str!("../../../rubrics/multimodal_composition.toml"),
    ),
    (
        "chart_quality",
        include_str!("../../../rubrics/chart_quality.toml"),
    ),
    (
        "figure_caption_quality",
        include_str!("../../../rubrics/figure_caption_quality.toml"),
    ),
    (
        "figure_context_integration",
        include_str!("../../../rubrics/figure_context_integration.toml"),
    ),
    (
        "chart_source_consistency",
        include_str!("../../../rubrics/chart_source_consistency.toml"),
    ),
    (
        "fact_dedup",
        include_str!("../../../rubrics/fact_dedup.toml"),
    ),
    (
        "extract_references",
        include_str!("../../../rubrics/extract_references.toml"),
    ),
    (
        "extract_facts",
        include_str!("../../../rubrics/extract_facts.toml"),
    ),
];

/// Prompt templates shipped in the binary, keyed by rubric id.
const BUILTIN_PROMPTS: [(&str, &str); 13] = [
    (
        "citation_support",
        include_str!("../../../prompts/citation_support.j2"),
    ),
    (
        "instruction_alignment",
        include_str!("../../../prompts/instruction_alignment.j2"),
    ),
    (
        "writing_quality",
        include_str!("../../../prompts/writing_quality.j2"),
    ),
    (
        "analytical_depth_breadth",
        include_str!("../../../prompts/analytical_depth_breadth.j2"),
    ),
    (
        "factual_logical_consistency",
        include_str!("../../../prompts/factual_logical_consistency.j2"),
    ),
    (
        "multimodal_composition",
        include_str!("../../../prompts/multimodal_composition.j2"),
    ),
    (
        "chart_quality",
        include_str!("../../../prompts/chart_quality.j2"),
    ),
    (
        "figure_caption_quality",
        include_str!("../../../prompts/figure_caption_quality.j2"),
    ),
    (
        "figure_context_integration",
        include_str!("../../../prompts/figure_context_integration.j2"),
    ),
    (
        "chart_source_consistency",
        include_str!("../../../prompts/chart_source_consistency.j2"),
    ),
    ("fact_dedup", include_str!("../../../prompts/fact_dedup.j2")),
    (
        "extract_references",
        include_str!("../../../prompts/extract_references.j2"),
    ),
    (
        "extract_facts",
        include_str!("../../../prompts/extract_facts.j2"),
    ),
];

/// The rubric whose answers drive caption revision (the named step `reads =
/// "revised_text"` waits for).
pub const CAPTION_REVISION: &str = "figure_caption_quality";

/// The rubric of the fact de-duplication step, which fact units wait for.
pub const FACT_DEDUP: &str = "fact_dedup";

/// Rubric ids the evaluation needs (the ten judged metrics, `fact_dedup` and the two
/// judge-extraction rubrics).
pub const REQUIRED_RUBRICS: [&str; 13] = required_rubrics();

/// The rubrics of the named steps: fact de-duplication and judge extraction.
pub const STEP_RUBRICS: [&str; 3] = [FACT_DEDUP, "extract_references", "extract_facts"];

const _: () = assert!(BUILTIN_METRICS.len() + STEP_RUBRICS.len() == REQUIRED_RUBRICS.len());

/// [`BUILTIN_METRICS`] then [`STEP_RUBRICS`], so the two lists cannot drift apart.
const fn required_rubrics() -> [&'static str; 13] {
    let mut out = [""; 13];
    let mut i = 0;
    while i < BUILTIN_METRICS.len() {
        out[i] = BUILTIN_METRICS[i];
        i += 1;
    }
    while i < out.len() {
        out[i] = STEP_RUBRICS[i - BUILTIN_METRICS.len()];
        i += 1;
    }
    out
}

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
    /// Where each rubric was read from (path, text), for start-up errors.
    origins: BTreeMap<String, (String, String)>,
    /// Where each prompt template was read from.
    prompt_origins: BTreeMap<String, String>,
    /// How every request is laid out (`--prompt-order`).
    order: PromptOrder,
    /// Each rubric's template value and compiled template, made once (see
    /// [`RubricSet::prepare`]) and shared by clones of the set.
    prepared: std::sync::Arc<BTreeMap<String, render::Prepared>>,
}

/// The judged metrics of the paper, in its order (the built-in metric rubrics).
pub const BUILTIN_METRICS: [&str; 10] = [
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
];

/// Metric names computed from pixels, which no rubric may take.
pub const PIXEL_METRICS: [&str; 2] = ["image_quality", "figure_quality"];

/// Unit kinds the generic planner builds for an added metric.
pub const ADDED_METRIC_UNITS: [UnitKind; 6] = [
    UnitKind::Report,
    UnitKind::Checklist,
    UnitKind::Fact,
    UnitKind::Figure,
    UnitKind::Chart,
    UnitKind::Image,
];

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
        let mut origins = BTreeMap::new();
        for (name, text) in BUILTIN_RUBRICS {
            let path = format!("<builtin>/rubrics/{name}.toml");
            let rubric = Rubric::from_toml(text, &path)?;
            origins.insert(rubric.id.clone(), (path, text.to_string()));
            rubrics.insert(rubric.id.clone(), rubric);
        }
        let mut prompts: BTreeMap<String, String> = BUILTIN_PROMPTS
            .iter()
            .map(|(id, text)| (id.to_string(), text.to_string()))
            .collect();
        let mut prompt_origins: BTreeMap<String, String> = BUILTIN_PROMPTS
            .iter()
            .map(|(id, _)| (id.to_string(), format!("<builtin>/prompts/{id}.j2")))
            .collect();
        let mut prompt_dirs = Vec::new();
        if let Some(dir) = rubrics_dir {
            for path in files_with_ext(dir, "toml")? {
                let text = read(&path)?;
                let shown = path.display().to_string();
                let rubric = Rubric::from_toml(&text, &shown)?;
                origins.insert(rubric.id.clone(), (shown, text));
                rubrics.insert(rubric.id.clone(), rubric);
            }
            // Templates of the rubrics in DIR may sit beside them in DIR/prompts/.
            let beside = dir.join("prompts");
            if beside.is_dir() {
                prompt_dirs.push(beside);
            }
        }
        // --prompts DIR wins over DIR/prompts/.
        prompt_dirs.extend(prompts_dir.map(Path::to_path_buf));
        for dir in prompt_dirs {
            for path in files_with_ext(&dir, "j2")? {
                let id = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                prompts.insert(id.clone(), read(&path)?);
                prompt_origins.insert(id, path.display().to_string());
            }
        }
        let mut set = Self {
            rubrics,
            prompts,
            origins,
            prompt_origins,
            order: PromptOrder::Cached,
            prepared: Default::default(),
        };
        set.validate()?;
        set.prepare();
        Ok(set)
    }

    /// `path:LINE` of `key` in the file rubric `id` was read from.
    fn locate(&self, id: &str, key: &str) -> String {
        match self.origins.get(id) {
            Some((path, text)) => at_line(path, text, key),
            None => format!("rubric `{id}`"),
        }
    }

    fn validate(&self) -> Result<(), RubricError> {
        for id in REQUIRED_RUBRICS {
            self.get(id)?;
        }
        for rubric in self.rubrics.values() {
            let id = rubric.id.as_str();
            let invalid = |key: &str, message: String| RubricError::Invalid {
                path: self.locate(id, key),
                message,
            };
            let Some(template) = self.prompts.get(id) else {
                return Err(invalid(
                    "id",
                    format!(
                        "no prompt template `{id}.j2` for this rubric (put it in the rubrics folder's `prompts/` or in --prompts DIR)"
                    ),
                ));
            };
            // Render once with placeholder inputs so a broken template fails at
            // start-up, not after an hour of judging.
            self.check_template(rubric, template)?;
            if PIXEL_METRICS.contains(&id) {
                return Err(invalid(
                    "id",
                    format!("`{id}` is computed from pixels; a rubric cannot take its name"),
                ));
            }
            let builtin = REQUIRED_RUBRICS.contains(&id);
            if !builtin {
                if !rubric.is_metric() {
                    return Err(invalid(
                        "kind",
                        "an added rubric must give a score (a verdict, items, dimensions or an issue count)".into(),
                    ));
                }
                if !ADDED_METRIC_UNITS.contains(&rubric.unit) {
                    return Err(invalid(
                        "unit",
                        format!(
                            "unit `{}` is not available to added metrics (use report, checklist, fact, figure, chart or image)",
                            rubric.unit.name()
                        ),
                    ));
                }
                if rubric.level.is_none() {
                    return Err(invalid(
                        "id",
                        "an added metric must say where its score goes: level = \"text\", \"visual\" or \"none\"".into(),
                    ));
                }
            }
            for dep in &rubric.after {
                if !self.rubrics.contains_key(dep) {
                    return Err(invalid(
                        "after",
                        format!(
                            "`after` names `{dep}`, which is no rubric (known: {})",
                            self.rubrics.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
        }
        if let Some(cycle) = self.find_cycle() {
            let first = &cycle[0];
            return Err(RubricError::Invalid {
                path: self.locate(first, "after"),
                message: format!("dependency cycle: {}", cycle.join(" -> ")),
            });
        }
        Ok(())
    }

    /// Render `rubric`'s template once, laid out as this set lays requests out; an
    /// error names the template's file.
    fn check_template(&self, rubric: &Rubric, template: &str) -> Result<(), RubricError> {
        render::check_template(rubric, template, self.order).map_err(|e| match e {
            RubricError::Template { id, message } => {
                let path = self.prompt_origins.get(&id).cloned().unwrap_or_default();
                RubricError::Template {
                    id,
                    message: format!("{path}: {message}"),
                }
            }
            other => other,
        })
    }

    /// How this set lays out every request.
    pub fn prompt_order(&self) -> PromptOrder {
        self.order
    }

    /// Lay out every request by `order` (`tvir eval --prompt-order`). Every template
    /// is rendered once that way, so a template override without a block its
    /// rubric's layout names fails here, naming the file, and not mid-run.
    pub fn use_prompt_order(&mut self, order: PromptOrder) -> Result<(), RubricError> {
        let before = std::mem::replace(&mut self.order, order);
        for rubric in self.rubrics.values() {
            if let Err(e) = self.check_template(rubric, self.prompt(&rubric.id)?) {
                self.order = before;
                return Err(e);
            }
        }
        Ok(())
    }

    /// What rubric `id` waits for: its `after` list, plus caption revision
    /// (`figure_caption_quality`) when it reads the revised text.
    pub fn dependencies(&self, id: &str) -> Vec<String> {
        let Some(r) = self.rubrics.get(id) else {
            return Vec::new();
        };
        let mut deps = r.after.clone();
        // Fact units are the facts left after de-duplication.
        if r.unit == UnitKind::Fact && !deps.iter().any(|d| d == FACT_DEDUP) {
            deps.push(FACT_DEDUP.to_string());
        }
        if r.reads == Some(TextSource::RevisedText)
            && id != CAPTION_REVISION
            && !deps.iter().any(|d| d == CAPTION_REVISION)
        {
            deps.push(CAPTION_REVISION.to_string());
        }
        deps
    }

    /// A dependency cycle (ids, first repeated at the end), if any.
    fn find_cycle(&self) -> Option<Vec<String>> {
        // 0 = unvisited, 1 = on the stack, 2 = done.
        fn visit(
            set: &RubricSet,
            id: &str,
            state: &mut BTreeMap<String, u8>,
            stack: &mut Vec<String>,
        ) -> Option<Vec<String>> {
            match state.get(id).copied().unwrap_or(0) {
                2 => return None,
                1 => {
                    let start = stack.iter().position(|s| s == id).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(id.to_string());
                    return Some(cycle);
                }
                _ => {}
            }
            state.insert(id.to_string(), 1);
            stack.push(id.to_string());
            for dep in set.dependencies(id) {
                if let Some(c) = visit(set, &dep, state, stack) {
                    return Some(c);
                }
            }
            stack.pop();
            state.insert(id.to_string(), 2);
            None
        }
        let mut state = BTreeMap::new();
        for id in self.rubrics.keys() {
            if let Some(c) = visit(self, id, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
        None
    }

    /// Every metric rubric: the paper's in its order, then added ones by id.
    pub fn metric_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = BUILTIN_METRICS
            .iter()
            .filter(|id| self.rubrics.contains_key(**id))
            .map(|s| s.to_string())
            .collect();
        ids.extend(self.added_metrics().map(|r| r.id.clone()));
        ids
    }

    /// Metric rubrics that are not the paper's (added through `--rubrics DIR`).
    pub fn added_metrics(&self) -> impl Iterator<Item = &Rubric> {
        self.rubrics
            .values()
            .filter(|r| r.is_metric() && !REQUIRED_RUBRICS.contains(&r.id.as_str()))
    }

    /// Metric rubrics whose score goes to `level`, in [`RubricSet::metric_ids`] order.
    pub fn metrics_at(&self, level: Level) -> Vec<String> {
        self.metric_ids()
            .into_iter()
            .filter(|id| self.rubrics.get(id).and_then(|r| r.level) == Some(level))
            .collect()
    }

    pub fn get(&self, id: &str) -> Result<&Rubric, RubricError> {
        self.rubrics
            .get(id)
            .ok_or_else(|| RubricError::Missing(id.to_string()))
    }

    /// The set with every rubric prepared for rendering (after any change to its
    /// rubrics).
    fn prepare(&mut self) {
        self.prepared = std::sync::Arc::new(
            self.rubrics
                .values()
                .filter_map(|r| {
                    let template = self.prompts.get(&r.id)?;
                    Some((r.id.clone(), render::Prepared::new(r, template)?))
                })
                .collect(),
        );
    }

    /// The preparation of `rubric` when it is this set's rubric of that id (the
    /// same one, or an equal one); None for a rubric the caller changed.
    pub(crate) fn prepared(&self, rubric: &Rubric) -> Option<&render::Prepared> {
        let own = self.rubrics.get(&rubric.id)?;
        if !std::ptr::eq(own, rubric) && own != rubric {
            return None;
        }
        self.prepared.get(&rubric.id)
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

    /// Leave every banded dimension's score as the judge gave it (`enforce =
    /// false` on each band rule; `tvir eval --mc-band judge`, the reference's way).
    pub fn leave_bands_to_the_judge(&mut self) {
        for r in self.rubrics.values_mut() {
            if let AnswerSpec::Dimensions {
                band_rule: Some(rule),
                ..
            } = &mut r.answer
            {
                rule.enforce = false;
            }
        }
        self.prepare();
    }

    /// Put `rubric` in place of the one with the same id (or add it). The caller
    /// validates it first (`tvir ablate` re-reads overridden rubrics through
    /// [`Rubric::from_toml`]); prompts are untouched.
    pub fn replace_rubric(&mut self, rubric: Rubric) -> Option<Rubric> {
        let old = self.rubrics.insert(rubric.id.clone(), rubric);
        self.prepare();
        old
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
        let text = include_str!("../../../rubrics/writing_quality.toml")
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
