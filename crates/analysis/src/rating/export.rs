//! A Label Studio study folder: one blind task per report (its text as HTML with
//! every picture inline), the pictures as files that Label Studio's local file
//! storage serves (so the study works offline), the labeling configuration, the
//! sampling plan and the coordinator's instructions.
//!
//! Pictures are not embedded as `data:` URIs: Label Studio 1.23 renders a
//! `HyperText` value through a sanitizer that empties such an `src`, and the rater
//! sees a broken image. An `src` of `/data/local-files/?d=pictures/NAME` is kept,
//! and the server answers it from `LOCAL_FILES_DOCUMENT_ROOT` (the study folder)
//! once the project has a local storage on `pictures/`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use regex::Regex;
use serde::Serialize;

use super::{encode_ref, NA_SUFFIX, REF_FIELD, SCALE_MAX, SCALE_MIN};
use crate::aggregate::html::esc;
use crate::load::{load_eval_tree_compact, normalize_language};

/// A picture larger than this is left out of a task (with a note in the plan).
pub const MAX_PICTURE_BYTES: u64 = 20 * 1024 * 1024;

/// One report of the study.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyReport {
    pub system: String,
    pub task_id: String,
    pub path: PathBuf,
    pub query: String,
    pub language: Option<String>,
    pub complexity: Option<String>,
    /// Charts a script draws, as the judges saw them: (figure content
    /// `doc#element`, PNG file).
    pub charts: Vec<(String, PathBuf)>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    #[error("{path}: cannot write: {message}")]
    Write { path: String, message: String },
}

fn input_err(path: &Path, message: impl ToString) -> ExportError {
    ExportError::Input {
        path: path.display().to_string(),
        message: message.to_string(),
    }
}

/// Reports of `ROOT/{system}/{task}/report.*` matched to the task file.
pub fn reports_from_root(root: &Path, tasks: &Path) -> Result<Vec<StudyReport>, ExportError> {
    let tasks_map = tvir_engine::input::load_tasks(tasks).map_err(|e| input_err(tasks, e))?;
    let jobs = tvir_engine::input::discover(root).map_err(|e| input_err(root, e))?;
    let mut out = Vec::new();
    for job in jobs {
        let Some(task) = tvir_engine::input::match_task(&job.folder, &tasks_map) else {
            return Err(input_err(
                &job.path,
                format!(
                    "folder {:?} matches no task of {}",
                    job.folder,
                    tasks.display()
                ),
            ));
        };
        out.push(StudyReport {
            system: job.system,
            task_id: task.id.clone(),
            path: job.path,
            query: task.query.clone(),
            language: task.language.as_deref().and_then(normalize_language),
            complexity: task.complexity.clone().map(|c| c.to_lowercase()),
            charts: Vec::new(),
        });
    }
    Ok(out)
}

/// The reports an `eval` output holds (first judge model, first run), with the
/// chart pictures its judges saw; text and query come from `root` and `tasks`.
pub fn reports_from_eval(
    out: &Path,
    root: &Path,
    tasks: &Path,
) -> Result<Vec<StudyReport>, ExportError> {
    let tree = load_eval_tree_compact(out).map_err(|e| input_err(out, e))?;
    if let Some(issue) = tree.issues.first() {
        return Err(ExportError::Input {
            path: issue.path.clone(),
            message: issue.message.clone(),
        });
    }
    let by_key: BTreeMap<(String, String), StudyReport> = reports_from_root(root, tasks)?
        .into_iter()
        .map(|r| ((r.system.clone(), r.task_id.clone()), r))
        .collect();
    let mut seen = BTreeMap::new();
    for rec in &tree.records {
        let key = (rec.system.clone(), rec.task_id.clone());
        if seen.contains_key(&key) {
            continue;
        }
        let mut r = by_key.get(&key).cloned().ok_or_else(|| {
            input_err(
                &rec.path,
                format!(
                    "no report {}/{} under {}",
                    rec.system,
                    rec.task_id,
                    root.display()
                ),
            )
        })?;
        let dir = rec.path.parent().unwrap_or(Path::new("."));
        if let Some(render) = &rec.record.render {
            for c in &render.charts {
                let png = dir.join(&c.png);
                // A path leaving the record's folder is not one the eval wrote.
                if c.png.contains("..") || Path::new(&c.png).is_absolute() {
                    return Err(input_err(
                        &rec.path,
                        format!("chart path {:?} leaves its folder", c.png),
                    ));
                }
                r.charts.push((c.content.clone(), png));
            }
        }
        r.language = r.language.or_else(|| rec.record.language.clone());
        r.complexity = r.complexity.or_else(|| rec.record.complexity.clone());
        seen.insert(key, r);
    }
    Ok(seen.into_values().collect())
}

/// One stratum of the sampling plan.
#[derive(Debug, Clone, Serialize)]
pub struct Stratum {
    pub system: String,
    pub language: String,
    pub complexity: String,
    pub available: usize,
    pub chosen: usize,
}

/// `n` reports stratified by (system, language, complexity): each stratum gets its
/// share of `n` (largest remainders, ties to the earlier stratum), drawn at random
/// with `seed`. Every report when `n` is None or at least their number.
pub fn sample(
    reports: Vec<StudyReport>,
    n: Option<usize>,
    seed: u64,
) -> (Vec<StudyReport>, Vec<Stratum>) {
    let total = reports.len();
    let mut strata: BTreeMap<(String, String, String), Vec<StudyReport>> = BTreeMap::new();
    for r in reports {
        let key = (
            r.system.clone(),
            r.language.clone().unwrap_or_else(|| "unknown".into()),
            r.complexity.clone().unwrap_or_else(|| "unknown".into()),
        );
        strata.entry(key).or_default().push(r);
    }
    let want = n.unwrap_or(total).min(total);
    let mut quota: Vec<(usize, f64)> = strata
        .values()
        .map(|v| {
            let exact = want as f64 * v.len() as f64 / total.max(1) as f64;
            (exact.floor() as usize, exact - exact.floor())
        })
        .collect();
    let mut left = want - quota.iter().map(|q| q.0).sum::<usize>();
    let mut order: Vec<usize> = (0..quota.len()).collect();
    order.sort_by(|a, b| quota[*b].1.total_cmp(&quota[*a].1).then(a.cmp(b)));
    for i in order {
        if left == 0 {
            break;
        }
        quota[i].0 += 1;
        left -= 1;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut chosen = Vec::new();
    let mut plan = Vec::new();
    for (((system, language, complexity), mut v), (q, _)) in strata.into_iter().zip(quota) {
        let available = v.len();
        v.shuffle(&mut rng);
        v.truncate(q);
        v.sort_by(|a, b| a.task_id.cmp(&b.task_id));
        plan.push(Stratum {
            system,
            language,
            complexity,
            available,
            chosen: v.len(),
        });
        chosen.extend(v);
    }
    (chosen, plan)
}

/// A dimension raters answer.
#[derive(Debug, Clone, Serialize)]
pub struct Dimension {
    pub name: String,
    pub title: String,
    pub description: String,
    /// Whether a rater may answer "not applicable" (VA of a report without figures).
    pub allows_na: bool,
}

/// The default and metric dimensions, described in our own words from the rubrics.
pub fn dimension(name: &str) -> Option<Dimension> {
    let (title, description) = match name {
        "ta" => ("Text quality (TA)", "How good the report is as writing and as an answer to the task: does it do what the query asks, cover the important angles with real analysis rather than listing facts, stay free of contradictions and errors of reasoning, back its claims with sources that actually say what is cited, and read clearly from start to finish? Judge the text only; the figures are rated below."),
        "va" => ("Visual quality (VA)", "How much the figures help the reader: are the charts correct, readable and faithful to the data they claim to show, are pictures sharp and relevant rather than decorative or repeated, does each figure have a caption that says what it shows and where it comes from, and does the text refer to and explain the figures where they matter? If the report has no figure at all, choose \"not applicable\" instead of a score."),
        "overall" => ("Overall quality", "Your overall judgement of the report as a deliverable for the person who asked the question: text and figures together, weighed as a demanding reader would weigh them."),
        m => {
            let title = crate::aggregate::render::level_label(m);
            let _ = tvir_engine::record::METRIC_NAMES.iter().find(|x| **x == m)?;
            return Some(Dimension {
                name: m.to_string(),
                description: format!("Rate the report on {title} as the suite's rubric for this metric describes it: {}.", metric_gist(m)),
                title,
                allows_na: is_visual(m),
            });
        }
    };
    Some(Dimension {
        name: name.to_string(),
        title: title.to_string(),
        description: description.to_string(),
        allows_na: name == "va",
    })
}

fn is_visual(metric: &str) -> bool {
    matches!(
        metric,
        "multimodal_composition"
            | "chart_quality"
            | "image_quality"
            | "figure_quality"
            | "figure_caption_quality"
            | "figure_context_integration"
            | "chart_source_consistency"
    )
}

fn metric_gist(m: &str) -> &'static str {
    match m {
        "citation_support" => "whether the cited sources really support the sentences that cite them",
        "instruction_alignment" => "whether the report does each thing the query asks for",
        "writing_quality" => "clarity, structure, fluency and fitting style",
        "analytical_depth_breadth" => "how deep the analysis goes and how many relevant angles it covers",
        "factual_logical_consistency" => "freedom from contradictions, wrong facts and broken reasoning (fewer problems, higher score)",
        "multimodal_composition" => "whether the figures and text together make a well-composed document",
        "chart_quality" => "whether each chart is correct, readable, labelled and of a fitting type",
        "image_quality" => "sharpness, contrast and resolution of the pictures",
        "figure_quality" => "the pictures' quality and the absence of repeated ones",
        "figure_caption_quality" => "whether captions say what a figure shows and where its data comes from",
        "figure_context_integration" => "whether the text introduces, refers to and interprets its figures",
        "chart_source_consistency" => "whether what charts show agrees with the sources they cite",
        _ => "the quality this metric measures",
    }
}

/// Label Studio's labeling configuration for `dims`.
pub fn label_config(dims: &[Dimension]) -> String {
    let mut x = String::from("<View>\n  <Header value=\"The task the report answers\"/>\n  <Text name=\"query\" value=\"$query\"/>\n  <Header value=\"The report\"/>\n  <View style=\"max-height: 70vh; overflow-y: auto; border: 1px solid #ccc; padding: 1em;\">\n    <HyperText name=\"report\" value=\"$report\" inline=\"true\"/>\n  </View>\n");
    for d in dims {
        let _ = write!(
            x,
            "  <View style=\"margin-top: 1em;\">\n    <Header value=\"{}\" size=\"4\"/>\n    <Header value=\"{}\" size=\"6\" underline=\"false\"/>\n    <Number name=\"{}\" toName=\"report\" min=\"{}\" max=\"{}\" step=\"1\" required=\"{}\"/>\n",
            esc(&format!("{} ({}-{})", d.title, SCALE_MIN, SCALE_MAX)),
            esc(&d.description),
            esc(&d.name),
            SCALE_MIN,
            SCALE_MAX,
            !d.allows_na
        );
        if d.allows_na {
            let _ = write!(
                x,
                "    <Choices name=\"{}{NA_SUFFIX}\" toName=\"report\" choice=\"single\">\n      <Choice value=\"Not applicable: the report has no figure\"/>\n    </Choices>\n",
                esc(&d.name)
            );
        }
        x.push_str("  </View>\n");
    }
    x.push_str("  <Header value=\"Comment (optional)\" size=\"6\"/>\n  <TextArea name=\"comment\" toName=\"report\" rows=\"3\" maxSubmissions=\"1\" editable=\"true\"/>\n</View>\n");
    x
}

static SCRIPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)<script\b.*?</script\s*>|<(?:iframe|object|embed|frame)\b.*?(?:</(?:iframe|object|embed|frame)\s*>|/?>)").unwrap()
});
static EVENT_ATTR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i)\s on[a-z]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+)"#).unwrap());
static JS_URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)javascript:").unwrap());

/// Report HTML without anything that runs: scripts, frames, event handlers.
fn inert(html: &str) -> String {
    let s = SCRIPT.replace_all(html, "");
    let s = EVENT_ATTR.replace_all(&s, " ");
    JS_URL.replace_all(&s, "blocked:").into_owned()
}

/// The folder of the study that holds the pictures; Label Studio's local storage
/// is added on it (a storage may not be the document root itself).
pub const PICTURES_DIR: &str = "pictures";

/// The URL under which Label Studio serves the study's picture `name`, relative to
/// its own address, when `LOCAL_FILES_DOCUMENT_ROOT` is the study folder.
pub fn picture_url(name: &str) -> String {
    format!("/data/local-files/?d={PICTURES_DIR}/{name}")
}

/// A picture's bytes, or why not.
fn read_picture(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.len() > MAX_PICTURE_BYTES {
        return Err(format!("{}: larger than 20 MiB", path.display()));
    }
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The bytes of a picture embedded as a `data:` URI, with a file name whose
/// extension says its type.
fn embedded_picture(uri: &str) -> Result<(Vec<u8>, PathBuf), String> {
    let bytes = tvir_images::inputs::data_uri_bytes(uri)?;
    if bytes.len() as u64 > MAX_PICTURE_BYTES {
        return Err("an embedded picture larger than 20 MiB".into());
    }
    let mime = uri[5..].split([';', ',']).next().unwrap_or("");
    let ext = match mime.to_ascii_lowercase().as_str() {
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        _ => "png",
    };
    Ok((bytes, PathBuf::from(format!("embedded.{ext}"))))
}

/// A picture's file name in the study: the task key, its number, and an extension
/// Label Studio serves as an image.
fn picture_name(key: &str, n: usize, path: &Path) -> String {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_lowercase)
        .filter(|e| {
            matches!(
                e.as_str(),
                "png" | "jpg" | "jpeg" | "gif" | "webp" | "svg" | "bmp"
            )
        })
        .unwrap_or_else(|| "png".into());
    format!("{key}-{n}.{ext}")
}

/// The end of the element whose opening tag starts at `pos` when it holds nothing
/// but white space, as `<svg id="c" width="320"></svg>` or `<canvas id="c"/>`.
fn empty_element_end(text: &str, pos: usize) -> Option<usize> {
    let rest = text.get(pos + 1..)?;
    let name_len = rest.find(|c: char| !c.is_ascii_alphanumeric())?;
    if name_len == 0 {
        return None;
    }
    let name = &rest[..name_len];
    let open_end = pos + 1 + rest.find('>')? + 1;
    if text[..open_end].ends_with("/>") {
        return Some(open_end);
    }
    let after = &text[open_end..];
    let inner = after.len() - after.trim_start().len();
    let close = format!("</{name}");
    let close_start = open_end + inner;
    let found = text.get(close_start..close_start + close.len())?;
    if !found.eq_ignore_ascii_case(&close) {
        return None;
    }
    Some(close_start + text[close_start..].find('>')? + 1)
}

/// The bytes of a remote picture (`http(s)://`) for the study, or why it stays a
/// web link: the command layer looks in the cache `tvir eval` filled, and fetches
/// only when the user allows it.
pub type RemotePictures<'a> = &'a (dyn Fn(&str) -> Result<Vec<u8>, String> + Sync);

/// No remote picture is available: every one stays a web link.
pub fn no_remote_pictures(_: &str) -> Result<Vec<u8>, String> {
    Err("no cache to take it from".into())
}

/// A task's HTML and what went into it.
pub struct RenderedTask {
    pub html: String,
    pub figures: usize,
    /// Pictures shown inline: (file name in the study's `pictures/`, bytes); the
    /// HTML points at each through [`picture_url`].
    pub pictures: Vec<(String, Vec<u8>)>,
    /// Remote pictures left as web links (not in the cache, not fetched).
    pub remote_links: Vec<String>,
    pub notes: Vec<String>,
}

/// The report as a reader sees it: Markdown rendered to HTML (an HTML report kept
/// as it is), each local, embedded or remote picture and each rendered chart inline
/// as a study file, nothing that runs. A remote picture `remote` has no bytes for
/// stays a web link and is listed in `remote_links`.
pub fn render_report(
    r: &StudyReport,
    key: &str,
    remote: RemotePictures<'_>,
) -> Result<RenderedTask, ExportError> {
    let rep = tvir_report::load(&r.path).map_err(|e| input_err(&r.path, e))?;
    let text = &rep.text;
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut pictures = Vec::new();
    let mut notes = Vec::new();
    let mut remote_links = Vec::new();
    let root = std::fs::canonicalize(&rep.root).unwrap_or(rep.root.clone());
    for f in &rep.figures {
        let web = f.content.starts_with("http://") || f.content.starts_with("https://");
        if f.render.is_some() || (f.content.contains("://") && !web) {
            continue;
        }
        let Some(span) = text.get(f.span.clone()) else {
            continue;
        };
        let Some(at) = span.find(f.content.as_str()) else {
            continue;
        };
        // A picture the report embeds as a `data:` URI becomes a file too: Label
        // Studio would show it broken.
        let picture = if web {
            // The bytes the eval downloaded (its cache), so the rater sees what the
            // judges saw, offline.
            match remote(&f.content) {
                Ok(b) if b.len() as u64 > MAX_PICTURE_BYTES => Err(format!(
                    "{}: remote picture {} larger than 20 MiB",
                    r.path.display(),
                    f.content
                )),
                Ok(b) => {
                    let path = f.content.split(['?', '#']).next().unwrap_or("");
                    Ok((b, PathBuf::from(path)))
                }
                Err(why) => {
                    notes.push(format!(
                        "{}: remote picture {} left as a web link: {why}",
                        r.path.display(),
                        f.content
                    ));
                    remote_links.push(f.content.clone());
                    continue;
                }
            }
        } else if f.content.starts_with("data:") {
            embedded_picture(&f.content).map_err(|m| format!("{}: {m}", r.path.display()))
        } else {
            let file = root.join(&f.content);
            let inside = std::fs::canonicalize(&file).is_ok_and(|p| p.starts_with(&root));
            if !inside {
                notes.push(format!(
                    "{}: picture {:?} not found in the report's folder",
                    r.path.display(),
                    f.content
                ));
                continue;
            }
            read_picture(&file).map(|b| (b, file))
        };
        match picture {
            Ok((bytes, file)) => {
                let name = picture_name(key, pictures.len() + 1, &file);
                let start = f.span.start + at;
                edits.push((start, start + f.content.len(), picture_url(&name)));
                pictures.push((name, bytes));
            }
            Err(m) => notes.push(m),
        }
    }
    let mut trailing = String::new();
    for (content, png) in &r.charts {
        let bytes = match read_picture(png) {
            Ok(x) => x,
            Err(m) => {
                notes.push(m);
                continue;
            }
        };
        let name = picture_name(key, pictures.len() + 1, png);
        let img = format!(
            "\n<p><img src=\"{}\" alt=\"chart\" style=\"max-width:100%\"></p>\n",
            picture_url(&name)
        );
        pictures.push((name, bytes));
        let element = content.rsplit_once('#').map(|(_, e)| e).unwrap_or("");
        let anchor = (!element.is_empty())
            .then(|| {
                ["\"", "'"].iter().find_map(|q| {
                    let needle = format!("id={q}{element}{q}");
                    let pos = text.find(&needle)?;
                    text[..pos].rfind('<')
                })
            })
            .flatten();
        match anchor {
            Some(pos) if !edits.iter().any(|e| e.0 <= pos && pos < e.1) => {
                // The empty container the script drew into would stay as a blank
                // box of its size once scripts are removed: the picture takes its
                // place.
                let end = empty_element_end(text, pos).unwrap_or(pos);
                edits.push((pos, end, img))
            }
            _ => trailing.push_str(&img),
        }
    }
    edits.sort_by_key(|e| (e.0, e.1));
    let mut spliced = String::with_capacity(text.len());
    let mut last = 0;
    for (s, e, rep_text) in &edits {
        if *s < last {
            continue;
        }
        spliced.push_str(&text[last..*s]);
        spliced.push_str(rep_text);
        last = *e;
    }
    spliced.push_str(&text[last..]);
    let body = match rep.format {
        tvir_report::SourceFormat::Html => spliced,
        _ => {
            let mut opts = pulldown_cmark::Options::empty();
            opts.insert(pulldown_cmark::Options::ENABLE_TABLES);
            opts.insert(pulldown_cmark::Options::ENABLE_STRIKETHROUGH);
            opts.insert(pulldown_cmark::Options::ENABLE_FOOTNOTES);
            let mut out = String::new();
            pulldown_cmark::html::push_html(
                &mut out,
                pulldown_cmark::Parser::new_ext(&spliced, opts),
            );
            out
        }
    };
    let mut html = inert(&body);
    if !trailing.is_empty() {
        html.push_str("<hr><p>Charts drawn by the report's page:</p>");
        html.push_str(&trailing);
    }
    let html = format!(
        "<div class=\"tvir-report\"><style>.tvir-report img{{max-width:100%}}</style>{html}</div>"
    );
    Ok(RenderedTask {
        html,
        figures: rep.figures.len()
            + r.charts
                .iter()
                .filter(|_| !rep.figures.iter().any(|f| f.render.is_some()))
                .count(),
        pictures,
        remote_links,
        notes,
    })
}

/// What `write_study` was asked.
#[derive(Debug, Clone)]
pub struct StudyOptions {
    pub sample: Option<usize>,
    pub seed: u64,
    pub raters: usize,
    pub dimensions: Vec<String>,
    /// What the reports came from (for the plan).
    pub source: String,
}

/// What was written.
#[derive(Debug, Clone, Serialize)]
pub struct StudySummary {
    pub tasks: usize,
    pub pictures: usize,
    pub bytes: u64,
    /// Remote pictures left as web links (one entry per occurrence).
    pub remote_links: Vec<String>,
    pub notes: Vec<String>,
}

fn write(path: &Path, bytes: &[u8]) -> Result<u64, ExportError> {
    std::fs::write(path, bytes).map_err(|e| ExportError::Write {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    Ok(bytes.len() as u64)
}

/// Write the study folder `dir` (created; files in it replaced). Remote pictures
/// come from `remote` (see [`RemotePictures`]).
pub fn write_study(
    dir: &Path,
    reports: Vec<StudyReport>,
    opts: &StudyOptions,
    remote: RemotePictures<'_>,
) -> Result<StudySummary, ExportError> {
    let dims: Vec<Dimension> = opts
        .dimensions
        .iter()
        .map(|d| {
            dimension(d).ok_or_else(|| ExportError::Input {
                path: "--dimensions".into(),
                message: format!("{d:?} is neither ta, va, overall nor a metric name"),
            })
        })
        .collect::<Result<_, _>>()?;
    if opts.raters == 0 {
        return Err(ExportError::Input {
            path: "--raters".into(),
            message: "must be at least 1".into(),
        });
    }
    let pictures_dir = dir.join(PICTURES_DIR);
    std::fs::create_dir_all(&pictures_dir).map_err(|e| ExportError::Write {
        path: pictures_dir.display().to_string(),
        message: e.to_string(),
    })?;
    // Label Studio's document root: the study folder as an absolute path.
    let root = std::fs::canonicalize(dir).map_err(|e| ExportError::Write {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let (chosen, strata) = sample(reports, opts.sample, opts.seed);
    use rayon::prelude::*;
    let rendered: Vec<Result<RenderedTask, ExportError>> = chosen
        .par_iter()
        .enumerate()
        .map(|(i, r)| render_report(r, &format!("r{:04}", i + 1), remote))
        .collect();
    let mut tasks = Vec::new();
    let mut plan_reports = Vec::new();
    let mut bytes = 0u64;
    let mut n_pictures = 0;
    let mut notes = Vec::new();
    let mut remote_links = Vec::new();
    for (i, (r, task)) in chosen.iter().zip(rendered).enumerate() {
        let task = task?;
        for (name, b) in &task.pictures {
            bytes += write(&pictures_dir.join(name), b)?;
        }
        n_pictures += task.pictures.len();
        notes.extend(task.notes);
        remote_links.extend(task.remote_links.iter().cloned());
        let key = encode_ref(&r.system, &r.task_id);
        tasks.push(serde_json::json!({
            "data": {"report": task.html, "query": r.query, REF_FIELD: key},
            "meta": {"system": r.system, "task_id": r.task_id, "figures": task.figures},
        }));
        plan_reports.push(serde_json::json!({
            "number": i + 1, "system": r.system, "task_id": r.task_id,
            "language": r.language, "complexity": r.complexity,
            "figures": task.figures, "pictures": task.pictures.len(),
            "remote_links": task.remote_links,
            REF_FIELD: key,
        }));
    }
    let config = label_config(&dims);
    let tasks_json = serde_json::to_vec(&tasks).expect("JSON of JSON values");
    bytes += write(&dir.join("tasks.json"), &tasks_json)?;
    bytes += write(&dir.join("config.xml"), config.as_bytes())?;
    let project = serde_json::json!({
        "title": "tvir human rating study",
        "label_config": config,
        "maximum_annotations": opts.raters,
        "overlap_cohort_percentage": 100,
        "show_skip_button": true,
        "show_instruction": true,
        "expert_instruction": "Rate each report as a reader would see it. Use the full 0-100 scale; choose \"not applicable\" for visual quality only when the report has no figure.",
    });
    bytes += write(
        &dir.join("project.json"),
        &serde_json::to_vec_pretty(&project).expect("JSON"),
    )?;
    let plan = serde_json::json!({
        "source": opts.source,
        "sample": opts.sample, "seed": opts.seed, "raters": opts.raters,
        "dimensions": dims,
        "scale": [SCALE_MIN, SCALE_MAX],
        "stratified_by": ["system", "language", "complexity"],
        "strata": strata,
        "reports": plan_reports,
        "remote_links": remote_links,
        "notes": notes,
    });
    bytes += write(
        &dir.join("plan.json"),
        &serde_json::to_vec_pretty(&plan).expect("JSON"),
    )?;
    bytes += write(
        &dir.join("STUDY.md"),
        study_md(tasks.len(), opts, &root, &remote_links).as_bytes(),
    )?;
    Ok(StudySummary {
        tasks: tasks.len(),
        pictures: n_pictures,
        bytes,
        remote_links,
        notes,
    })
}

/// A string as one shell word (single quotes).
fn sh_word(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The STUDY.md paragraph on remote pictures left as web links (empty when none).
fn links_md(links: &[String]) -> String {
    if links.is_empty() {
        return String::new();
    }
    let unique: std::collections::BTreeSet<&String> = links.iter().collect();
    let mut x = format!(
        "## Pictures that stay web links

{n} remote pictures ({u} addresses) were neither in the cache of the eval nor fetched, so the tasks show them from the web: the study is not offline, and a rater may see something other than what the judges saw. Export again with `--cache` naming the eval's cache, or with `--fetch-pictures`, to make them files.

",
        n = links.len(),
        u = unique.len()
    );
    for l in unique.iter().take(50) {
        let _ = writeln!(x, "- <{l}>");
    }
    if unique.len() > 50 {
        let _ = writeln!(
            x,
            "- ... and {} more (plan.json lists them)",
            unique.len() - 50
        );
    }
    x.push('\n');
    x
}

fn study_md(n: usize, opts: &StudyOptions, root: &Path, links: &[String]) -> String {
    let root_s = root.display().to_string();
    let pictures = root.join(PICTURES_DIR).display().to_string();
    let storage = serde_json::json!({"project": 0, "path": pictures, "title": "study pictures"})
        .to_string()
        .replace('\'', r"'\''")
        .replace("\"project\":0", "\"project\":'\"$ID\"'");
    format!(
        "# Human rating study\n\n\
{n} reports, each to be rated by {raters} raters on: {dims}. Raters see the task and the \
report with its pictures; they do not see which system wrote it or any judge score.\n\n\
The pictures are files in `{PICTURES_DIR}/`, which Label Studio serves from its local file \
storage (nothing leaves the machine). The tasks point at them as \
`/data/local-files/?d={PICTURES_DIR}/NAME`, so Label Studio must be started with this \
folder as its document root, and the project needs a local storage on `{PICTURES_DIR}/`. \
If you move this folder, use its new path below.\n\n\
## Run it\n\n\
1. Install Label Studio (the version this study format is tested with; sentry-sdk 3 \
stops it from starting), start it with local file serving on this folder, and sign up:\n\n\
   ```sh\n\
   pip install \"label-studio==1.23.2\" \"sentry-sdk<3\"\n\
   LOCAL_FILES_SERVING_ENABLED=true LOCAL_FILES_DOCUMENT_ROOT={root_q} label-studio start\n\
   ```\n\n\
2. Create the project (your API token is under Account & Settings; with it, the three \
calls below do everything), add the pictures' storage, and import the tasks:\n\n\
   ```sh\n\
   TOKEN=...; LS=http://localhost:8080\n\
   ID=$(curl -s -X POST -H \"Authorization: Token $TOKEN\" -H 'Content-Type: application/json' \
-d @project.json $LS/api/projects | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"id\"])')\n\
   curl -X POST -H \"Authorization: Token $TOKEN\" -H 'Content-Type: application/json' \
-d '{storage}' $LS/api/storages/localfiles\n\
   curl -X POST -H \"Authorization: Token $TOKEN\" -H 'Content-Type: application/json' \
--data-binary @tasks.json $LS/api/projects/$ID/import\n\
   ```\n\n\
   Or by hand: create a project, paste `config.xml` under Settings > Labeling Interface, \
set Settings > Annotation > overlap to {raters} annotations per task, add Settings > Cloud \
Storage > Add Source Storage > Local files with the absolute path `{pictures}` (do not \
press Sync: the pictures are not tasks), then import `tasks.json`.\n\n\
When the raters are done, export the project (JSON, JSON-MIN or CSV) and run \
`tvir agree EVAL_OUT EXPORT` (or `tvir rate import EXPORT -o ratings.csv`).\n\n\
{links}`plan.json` says how the reports were sampled (seed {seed}).\n",
        links = links_md(links),
        raters = opts.raters,
        dims = opts.dimensions.join(", "),
        seed = opts.seed,
        root_q = sh_word(&root_s),
    )
}
