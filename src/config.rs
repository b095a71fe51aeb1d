//! Configuration shared by commands: flags, then environment, then `tvir.toml`.
//!
//! Judge settings resolve field by field: a flag wins, then the environment
//! (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `TVIR_JUDGE_MODEL`, then `EVAL_MODEL_NAME`,
//! the reference evaluator's name for it), then the `[judge]` table of `tvir.toml`,
//! then the defaults of [`JudgeConfig`]. `tvir.toml` is read from `--config PATH` when
//! given (it must exist), otherwise from the working directory when present:
//!
//! ```toml
//! [judge]
//! base_url = "http://127.0.0.1:8080/v1"
//! model = "qwen2.5-vl-7b"
//! # api_key = "..."   # prefer OPENAI_API_KEY: a key in a file is easy to leak
//! concurrency = 32
//! rpm = 500
//! tpm = 200000
//! timeout_secs = 120
//! max_attempts = 10          # or judge_retries = 9 (attempts = retries + 1)
//! max_reasks = 5
//! assume_vision = false       # true skips the vision check
//! seed = 42
//! max_tokens = 2048
//! max_cost_usd = 20.0
//! price_table = "my-prices.toml"   # relative to this file
//! unreachable_secs = 20       # connection refused this long: the server is gone
//! ```
//!
//! Other tables in `tvir.toml` belong to other parts of the suite and are ignored here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use tvir_judge::JudgeConfig;

pub const CONFIG_FILE_NAME: &str = "tvir.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path}: {message}")]
    File { path: String, message: String },
    #[error("{setting}: {message}")]
    Invalid {
        setting: &'static str,
        message: String,
    },
}

/// Judge settings given on the command line (`None` = not given).
#[derive(Clone, Default)]
pub struct JudgeFlags {
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub model: Option<String>,
    pub concurrency: Option<usize>,
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
    pub timeout: Option<Duration>,
    pub max_attempts: Option<u32>,
    pub max_reasks: Option<u32>,
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
    pub dry_run: bool,
    pub max_cost_usd: Option<f64>,
    pub journal_path: Option<PathBuf>,
    pub price_table_path: Option<PathBuf>,
    /// `--assume-vision`: skip the vision check.
    pub assume_vision: bool,
    /// `--relearn-judge`: ignore what earlier runs learnt about the judge server.
    pub relearn: bool,
}

impl std::fmt::Debug for JudgeFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("JudgeFlags")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

/// The judge flags of `tvir eval`, ready to `#[command(flatten)]` into a clap
/// command. `--dry-run` and the journal path are not here: they concern the whole
/// run, so the command sets [`JudgeFlags::dry_run`] / [`JudgeFlags::journal_path`]
/// itself. There is deliberately no flag for the API key (command lines are
/// visible to other users of the machine): use `OPENAI_API_KEY`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JudgeArgs {
    /// Judge model (else TVIR_JUDGE_MODEL, EVAL_MODEL_NAME, tvir.toml).
    #[arg(long, value_name = "MODEL")]
    pub judge_model: Option<String>,
    /// OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (else OPENAI_BASE_URL).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Judge requests in flight (default 16).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// Requests per minute limit.
    #[arg(long, value_name = "N")]
    pub rpm: Option<u32>,
    /// Tokens per minute limit (estimated before sending, corrected from usage).
    #[arg(long, value_name = "N")]
    pub tpm: Option<u32>,
    /// Stop scheduling new judge calls once this many dollars are spent.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Price table (TOML) replacing or adding to the shipped one.
    #[arg(long, value_name = "FILE")]
    pub price_table: Option<PathBuf>,
    /// Timeout per judge attempt, in seconds (default 120), for prompts up to 4,096
    /// tokens; longer prompts get it in proportion.
    #[arg(long, value_name = "SECS")]
    pub judge_timeout: Option<f64>,
    /// Attempts per judge call for transient errors (default 10).
    #[arg(long, value_name = "N", conflicts_with = "judge_retries")]
    pub max_attempts: Option<u32>,
    /// Retries after a transient error (timeout, 429, 5xx): attempts = N + 1.
    #[arg(long, value_name = "N")]
    pub judge_retries: Option<u32>,
    /// Skip the vision check: treat the judge as able to read images.
    #[arg(long)]
    pub assume_vision: bool,
    /// Ignore what earlier runs learnt about the judge server and model (accepted
    /// parameters, vision, prompts too long for its context) and learn it again.
    #[arg(long)]
    pub relearn_judge: bool,
    /// Re-asks of an answer that fails validation (default 5).
    #[arg(long, value_name = "N")]
    pub max_reasks: Option<u32>,
    /// Sampling seed sent to the judge.
    #[arg(long, value_name = "N")]
    pub judge_seed: Option<u64>,
    /// Completion token limit per judge call.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Configuration file (default: ./tvir.toml when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl JudgeArgs {
    /// The flags part of the resolution (`dry_run` and `journal_path` left unset).
    pub fn to_flags(&self) -> Result<JudgeFlags, ConfigError> {
        let timeout = match self.judge_timeout {
            Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
            Some(s) => {
                return Err(ConfigError::Invalid {
                    setting: "--judge-timeout",
                    message: format!("{s} must be a positive number of seconds"),
                })
            }
            None => None,
        };
        Ok(JudgeFlags {
            base_url: self.base_url.clone(),
            api_key: None,
            model: self.judge_model.clone(),
            concurrency: self.concurrency,
            rpm: self.rpm,
            tpm: self.tpm,
            timeout,
            max_attempts: self
                .max_attempts
                .or(self.judge_retries.map(|r| r.saturating_add(1))),
            max_reasks: self.max_reasks,
            seed: self.judge_seed,
            max_tokens: self.max_tokens,
            dry_run: false,
            max_cost_usd: self.max_cost,
            journal_path: None,
            price_table_path: self.price_table.clone(),
            assume_vision: self.assume_vision,
            relearn: self.relearn_judge,
        })
    }
}

/// `tvir.toml` as far as the judge is concerned.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FileConfig {
    #[serde(default)]
    pub judge: JudgeSection,
    #[serde(default)]
    pub browser: BrowserSection,
    /// Directory of the file, for resolving relative paths in it.
    #[serde(skip)]
    pub dir: Option<PathBuf>,
}

#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeSection {
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub model: Option<String>,
    pub concurrency: Option<usize>,
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
    #[serde(alias = "judge_timeout")]
    pub timeout_secs: Option<f64>,
    pub max_attempts: Option<u32>,
    /// Retries after a transient error; attempts = retries + 1.
    pub judge_retries: Option<u32>,
    pub max_reasks: Option<u32>,
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
    pub max_cost_usd: Option<f64>,
    pub price_table: Option<PathBuf>,
    pub assume_vision: Option<bool>,
    /// Seconds of connection refusals after which the judge server is declared gone.
    pub unreachable_secs: Option<f64>,
}

/// `[browser]` of `tvir.toml`: the Chromium that renders charts drawn by script.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserSection {
    /// The executable (relative to the file's folder when relative).
    pub path: Option<PathBuf>,
    /// Pages rendered at the same time.
    pub max_pages: Option<usize>,
}

/// The browser flags shared by `tvir eval` and `tvir parse`.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = crate::help_heading::BROWSER)]
pub struct BrowserArgs {
    /// The Chromium that renders charts drawn by script (else `TVIR_BROWSER`, the
    /// `[browser] path` of tvir.toml, then `chromium`, `chromium-browser` or
    /// `google-chrome` on PATH).
    #[arg(long, value_name = "PATH", conflicts_with = "no_browser")]
    pub browser: Option<PathBuf>,
    /// Render no chart: charts drawn by script stay pseudo-visuals and are not
    /// evaluated.
    #[arg(long)]
    pub no_browser: bool,
}

/// The run's browser: `--no-browser`, else `--browser`, `TVIR_BROWSER`, `tvir.toml`
/// (`[browser] path`), then `PATH`. No browser found is no error: charts drawn by
/// script are then not evaluated, with this reason.
pub fn resolve_browser(
    args: &BrowserArgs,
    env: &dyn Fn(&str) -> Option<String>,
    file: Option<&FileConfig>,
) -> tvir_engine::BrowserChoice {
    use tvir_engine::BrowserChoice;
    if args.no_browser {
        return BrowserChoice::Unavailable(
            "--no-browser: charts drawn by script are not rendered (drop it and install \
             Chromium or pass --browser PATH to evaluate them)"
                .into(),
        );
    }
    let from_file = file.and_then(|f| {
        f.browser.path.as_ref().map(|p| match &f.dir {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.clone(),
        })
    });
    let explicit = args
        .browser
        .clone()
        .or_else(|| non_empty(env("TVIR_BROWSER")).map(PathBuf::from))
        .or(from_file);
    match tvir_browser::find_browser(explicit.as_deref()) {
        Ok(path) => BrowserChoice::Executable(path),
        Err(e) => BrowserChoice::Unavailable(e.to_string()),
    }
}

/// [`resolve_browser`] with the process environment and `tvir.toml` (from
/// `config_path`, or the working directory); also the file's `max_pages`.
pub fn browser_from_environment(
    args: &BrowserArgs,
    config_path: Option<&Path>,
) -> Result<(tvir_engine::BrowserChoice, Option<usize>), ConfigError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let file = FileConfig::load(config_path, &cwd)?;
    let choice = resolve_browser(args, &|k| std::env::var(k).ok(), file.as_ref());
    Ok((choice, file.and_then(|f| f.browser.max_pages)))
}

impl std::fmt::Debug for JudgeSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeSection")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl FileConfig {
    pub fn parse(text: &str, origin: &Path) -> Result<Self, ConfigError> {
        let mut cfg: FileConfig = toml::from_str(text).map_err(|e| ConfigError::File {
            path: origin.display().to_string(),
            message: e.to_string(),
        })?;
        cfg.dir = origin.parent().map(Path::to_path_buf);
        Ok(cfg)
    }

    /// `explicit` must exist; without it, `tvir.toml` in `cwd` is used if present.
    pub fn load(explicit: Option<&Path>, cwd: &Path) -> Result<Option<Self>, ConfigError> {
        let path = match explicit {
            Some(p) => p.to_path_buf(),
            None => {
                let p = cwd.join(CONFIG_FILE_NAME);
                if !p.is_file() {
                    return Ok(None);
                }
                p
            }
        };
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::File {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::parse(&text, &path).map(Some)
    }
}

fn non_empty(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Resolve the judge configuration. `env` looks a variable up (pass
/// `|k| std::env::var(k).ok()` in production; tests pass a map).
pub fn resolve_judge_config(
    flags: &JudgeFlags,
    env: &dyn Fn(&str) -> Option<String>,
    file: Option<&FileConfig>,
) -> Result<JudgeConfig, ConfigError> {
    let defaults = JudgeConfig::default();
    let section = file.map(|f| f.judge.clone()).unwrap_or_default();
    let file_dir = file.and_then(|f| f.dir.clone());

    let base_url = non_empty(flags.base_url.clone())
        .or_else(|| non_empty(env("OPENAI_BASE_URL")))
        .or_else(|| non_empty(section.base_url.clone()))
        .unwrap_or(defaults.base_url);
    url::Url::parse(&base_url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| ConfigError::Invalid {
            setting: "base URL",
            message: format!("{base_url:?} is not an http(s) URL"),
        })?;
    let api_key = non_empty(flags.api_key.clone())
        .or_else(|| non_empty(env("OPENAI_API_KEY")))
        .or_else(|| non_empty(section.api_key.clone()));
    let model = non_empty(flags.model.clone())
        .or_else(|| non_empty(env("TVIR_JUDGE_MODEL")))
        .or_else(|| non_empty(env("EVAL_MODEL_NAME")))
        .or_else(|| non_empty(section.model.clone()))
        .ok_or(ConfigError::Invalid {
            setting: "judge model",
            message: "not set: pass --judge-model, set TVIR_JUDGE_MODEL (or EVAL_MODEL_NAME), \
                      or add `model` to the [judge] table of tvir.toml"
                .into(),
        })?;
    let concurrency = flags
        .concurrency
        .or(section.concurrency)
        .unwrap_or(defaults.concurrency);
    if concurrency == 0 {
        return Err(ConfigError::Invalid {
            setting: "concurrency",
            message: "must be at least 1".into(),
        });
    }
    let timeout = match flags.timeout {
        Some(t) => t,
        None => match section.timeout_secs {
            Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s),
            Some(s) => {
                return Err(ConfigError::Invalid {
                    setting: "timeout_secs",
                    message: format!("{s} must be a positive number of seconds"),
                })
            }
            None => defaults.timeout,
        },
    };
    let unreachable_window = match section.unreachable_secs {
        Some(s) if s.is_finite() && s >= 0.0 => Duration::from_secs_f64(s),
        Some(s) => {
            return Err(ConfigError::Invalid {
                setting: "unreachable_secs",
                message: format!("{s} must be a non-negative number of seconds"),
            })
        }
        None => defaults.unreachable_window,
    };
    if section.max_attempts.is_some() && section.judge_retries.is_some() {
        return Err(ConfigError::Invalid {
            setting: "judge_retries",
            message: "give either max_attempts or judge_retries in [judge], not both".into(),
        });
    }
    for (setting, value) in [
        ("max_tokens", flags.max_tokens.or(section.max_tokens)),
        ("max_attempts", flags.max_attempts.or(section.max_attempts)),
    ] {
        if value == Some(0) {
            return Err(ConfigError::Invalid {
                setting,
                message: "must be at least 1".into(),
            });
        }
    }
    let max_cost_usd = flags.max_cost_usd.or(section.max_cost_usd);
    if let Some(c) = max_cost_usd {
        if !c.is_finite() || c < 0.0 {
            return Err(ConfigError::Invalid {
                setting: "max cost",
                message: format!("{c} must be a non-negative number of dollars"),
            });
        }
    }
    let rpm = flags.rpm.or(section.rpm);
    let tpm = flags.tpm.or(section.tpm);
    for (setting, value) in [("rpm", rpm), ("tpm", tpm)] {
        if value == Some(0) {
            return Err(ConfigError::Invalid {
                setting,
                message: "must be at least 1 (omit it for no limit)".into(),
            });
        }
    }
    let price_table_path = flags.price_table_path.clone().or_else(|| {
        section.price_table.clone().map(|p| match &file_dir {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p,
        })
    });
    Ok(JudgeConfig {
        base_url,
        api_key,
        model,
        concurrency,
        rpm,
        tpm,
        timeout,
        max_attempts: flags
            .max_attempts
            .or(section.max_attempts)
            .or(section.judge_retries.map(|r| r.saturating_add(1)))
            .unwrap_or(defaults.max_attempts)
            .max(1),
        max_reasks: flags
            .max_reasks
            .or(section.max_reasks)
            .unwrap_or(defaults.max_reasks),
        seed: flags.seed.or(section.seed),
        max_tokens: flags.max_tokens.or(section.max_tokens),
        metric_max_tokens: Default::default(),
        assume_vision: flags.assume_vision || section.assume_vision.unwrap_or(false),
        relearn: flags.relearn,
        dry_run: flags.dry_run,
        max_cost_usd,
        journal_path: flags.journal_path.clone(),
        price_table_path,
        unreachable_window,
        plain_json: false,
        schema_place: Default::default(),
    })
}

/// [`resolve_judge_config`] with the process environment and `tvir.toml` (from
/// `config_path`, or the working directory).
pub fn judge_config_from_environment(
    flags: &JudgeFlags,
    config_path: Option<&Path>,
) -> Result<JudgeConfig, ConfigError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let file = FileConfig::load(config_path, &cwd)?;
    resolve_judge_config(flags, &|k| std::env::var(k).ok(), file.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn file(text: &str) -> FileConfig {
        FileConfig::parse(text, Path::new("/etc/tvir/tvir.toml")).unwrap()
    }

    #[test]
    fn flags_beat_env_beat_file() {
        let f = file(
            "[judge]\nmodel = \"file-model\"\nbase_url = \"http://file/v1\"\nconcurrency = 4\n",
        );
        let env = env_of(&[
            ("TVIR_JUDGE_MODEL", "env-model"),
            ("OPENAI_API_KEY", "sk-env"),
        ]);
        let cfg = resolve_judge_config(&JudgeFlags::default(), &env, Some(&f)).unwrap();
        assert_eq!(cfg.model, "env-model");
        assert_eq!(cfg.base_url, "http://file/v1");
        assert_eq!(cfg.api_key.as_deref(), Some("sk-env"));
        assert_eq!(cfg.concurrency, 4);
        let flags = JudgeFlags {
            model: Some("flag-model".into()),
            concurrency: Some(64),
            ..Default::default()
        };
        let cfg = resolve_judge_config(&flags, &env, Some(&f)).unwrap();
        assert_eq!(cfg.model, "flag-model");
        assert_eq!(cfg.concurrency, 64);
        let cfg = resolve_judge_config(&JudgeFlags::default(), &env_of(&[]), Some(&f)).unwrap();
        assert_eq!(cfg.model, "file-model");
        assert_eq!(cfg.api_key, None);
    }

    #[test]
    fn eval_model_name_is_read_and_defaults_apply() {
        let env = env_of(&[("EVAL_MODEL_NAME", "ref-model"), ("OPENAI_BASE_URL", "")]);
        let cfg = resolve_judge_config(&JudgeFlags::default(), &env, None).unwrap();
        assert_eq!(cfg.model, "ref-model");
        assert_eq!(cfg.base_url, tvir_judge::DEFAULT_BASE_URL);
        assert_eq!(cfg.concurrency, 16);
        let env = env_of(&[("EVAL_MODEL_NAME", "ref"), ("TVIR_JUDGE_MODEL", "ours")]);
        let cfg = resolve_judge_config(&JudgeFlags::default(), &env, None).unwrap();
        assert_eq!(cfg.model, "ours");
    }

    #[test]
    fn missing_model_and_bad_values_are_clear_errors() {
        let err = resolve_judge_config(&JudgeFlags::default(), &env_of(&[]), None).unwrap_err();
        assert!(err.to_string().contains("TVIR_JUDGE_MODEL"), "{err}");
        let flags = JudgeFlags {
            model: Some("m".into()),
            base_url: Some("ftp://x".into()),
            ..Default::default()
        };
        assert!(resolve_judge_config(&flags, &env_of(&[]), None).is_err());
        let flags = JudgeFlags {
            model: Some("m".into()),
            concurrency: Some(0),
            ..Default::default()
        };
        assert!(resolve_judge_config(&flags, &env_of(&[]), None).is_err());
        let f = file("[judge]\nmodel = \"m\"\ntimeout_secs = -1\n");
        assert!(resolve_judge_config(&JudgeFlags::default(), &env_of(&[]), Some(&f)).is_err());
    }

    #[test]
    fn file_errors_name_the_file_and_relative_paths_resolve() {
        let err = FileConfig::parse("[judge]\nmodle = 1\n", Path::new("x/tvir.toml")).unwrap_err();
        assert!(err.to_string().contains("x/tvir.toml"), "{err}");
        let f = file("[judge]\nmodel = \"m\"\nprice_table = \"p.toml\"\n[sources]\nanything = 1\n");
        let cfg = resolve_judge_config(&JudgeFlags::default(), &env_of(&[]), Some(&f)).unwrap();
        assert_eq!(
            cfg.price_table_path,
            Some(PathBuf::from("/etc/tvir/p.toml"))
        );
        let dir = tempfile::tempdir().unwrap();
        assert!(FileConfig::load(None, dir.path()).unwrap().is_none());
        assert!(FileConfig::load(Some(&dir.path().join("none.toml")), dir.path()).is_err());
        std::fs::write(dir.path().join("tvir.toml"), "[judge]\nmodel = \"z\"\n").unwrap();
        let loaded = FileConfig::load(None, dir.path()).unwrap().unwrap();
        assert_eq!(loaded.judge.model.as_deref(), Some("z"));
    }

    #[test]
    fn clap_args_map_to_flags() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cmd {
            #[command(flatten)]
            judge: JudgeArgs,
        }
        let cmd = Cmd::try_parse_from([
            "x",
            "--judge-model",
            "m",
            "--concurrency",
            "64",
            "--max-cost",
            "2.5",
            "--judge-timeout",
            "30",
            "--base-url",
            "http://h/v1",
        ])
        .unwrap();
        let flags = cmd.judge.to_flags().unwrap();
        assert_eq!(flags.model.as_deref(), Some("m"));
        assert_eq!(flags.concurrency, Some(64));
        assert_eq!(flags.max_cost_usd, Some(2.5));
        assert_eq!(flags.timeout, Some(Duration::from_secs(30)));
        let cfg =
            resolve_judge_config(&flags, &env_of(&[("TVIR_JUDGE_MODEL", "e")]), None).unwrap();
        assert_eq!(cfg.model, "m");
        assert_eq!(cfg.base_url, "http://h/v1");
        let bad = Cmd::try_parse_from(["x", "--judge-timeout", "0"]).unwrap();
        assert!(bad.judge.to_flags().is_err());
    }

    #[test]
    fn retries_vision_and_token_limit_settings() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cmd {
            #[command(flatten)]
            judge: JudgeArgs,
        }
        let cmd = Cmd::try_parse_from([
            "x",
            "--judge-retries",
            "2",
            "--assume-vision",
            "--max-tokens",
            "700",
        ])
        .unwrap();
        let flags = cmd.judge.to_flags().unwrap();
        assert_eq!(flags.max_attempts, Some(3));
        let env = env_of(&[("TVIR_JUDGE_MODEL", "m")]);
        let cfg = resolve_judge_config(&flags, &env, None).unwrap();
        assert_eq!((cfg.max_attempts, cfg.max_tokens), (3, Some(700)));
        assert!(cfg.assume_vision);
        assert!(Cmd::try_parse_from(["x", "--judge-retries", "2", "--max-attempts", "3"]).is_err());

        let f = file("[judge]\nmodel = \"m\"\njudge_retries = 0\njudge_timeout = 45\nassume_vision = true\nmax_tokens = 900\n");
        let cfg = resolve_judge_config(&JudgeFlags::default(), &env_of(&[]), Some(&f)).unwrap();
        assert_eq!(cfg.max_attempts, 1);
        assert_eq!(cfg.timeout, Duration::from_secs(45));
        assert_eq!(cfg.max_tokens, Some(900));
        assert!(cfg.assume_vision);
        let cfg = resolve_judge_config(&JudgeFlags::default(), &env, None).unwrap();
        assert!(!cfg.assume_vision);
        let both = file("[judge]\nmodel = \"m\"\njudge_retries = 1\nmax_attempts = 4\n");
        let err =
            resolve_judge_config(&JudgeFlags::default(), &env_of(&[]), Some(&both)).unwrap_err();
        assert!(err.to_string().contains("judge_retries"), "{err}");
        let zero = file("[judge]\nmodel = \"m\"\nmax_tokens = 0\n");
        assert!(resolve_judge_config(&JudgeFlags::default(), &env_of(&[]), Some(&zero)).is_err());
    }

    #[test]
    fn key_is_never_in_debug_output() {
        let f = file("[judge]\nmodel = \"m\"\napi_key = \"sk-secret\"\n");
        assert!(!format!("{f:?}").contains("sk-secret"));
        let cfg = resolve_judge_config(&JudgeFlags::default(), &env_of(&[]), Some(&f)).unwrap();
        assert!(!format!("{cfg:?}").contains("sk-secret"));
        let flags = JudgeFlags {
            api_key: Some("sk-flag".into()),
            ..Default::default()
        };
        assert!(!format!("{flags:?}").contains("sk-flag"));
    }
}
