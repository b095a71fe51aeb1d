//! GitHub URL handling: normalisation, extraction from free text, and parsing into
//! `(owner, repo, kind, id)` artifacts.

use std::fmt;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

/// Minimum number of leading hex characters two commit SHAs must share to be taken
/// as the same commit (6 is ambiguous in large repositories; GitHub itself shows 7).
pub const MIN_SHA_PREFIX: usize = 7;

/// Normalises a URL the way RepoRef compares them: trim, cut at `?` or `#`, drop
/// trailing `/`, lower-case. Cutting first, then trimming slashes and whitespace
/// together, makes `.../5/?x=1` and `.../5` agree and the function idempotent.
pub fn normalize(url: &str) -> String {
    let trimmed = url.trim_start();
    let cut = trimmed.find(['?', '#']).map_or(trimmed, |i| &trimmed[..i]);
    cut.trim_end_matches(|c: char| c == '/' || c.is_whitespace())
        .to_lowercase()
}

fn github_url_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // URL characters only (RFC 3986, ASCII), minus those that delimit URLs in
        // prose, Markdown and JSON: quotes, brackets, parentheses, backslashes of
        // escaped JSON. Non-ASCII punctuation (a full-width stop) ends the URL too.
        Regex::new(r"(?i)(?:https?://)?(?:www\.|api\.)?github\.com/[A-Za-z0-9\-._~:/?#@!$&*+,;=%]*")
            .expect("static regex is valid")
    })
}

/// Every GitHub URL in `text`, in order of appearance (raw, not normalised).
/// A scheme-less match must not be the tail of another host (`gist.github.com`).
pub fn github_urls(text: &str) -> Vec<&str> {
    github_url_regex()
        .find_iter(text)
        .filter(|m| {
            let before = text[..m.start()].chars().next_back();
            let has_scheme = m.as_str().len() >= 4 && m.as_str()[..4].eq_ignore_ascii_case("http");
            has_scheme
                || !before.is_some_and(|c| {
                    c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '/' | '@')
                })
        })
        .map(|m| {
            m.as_str()
                .trim_end_matches(['.', ',', ';', ':', '!', '*', '_', '~'])
        })
        .collect()
}

/// The first GitHub URL in a free-text prediction, if any.
pub fn first_github_url(text: &str) -> Option<&str> {
    github_urls(text).into_iter().next()
}

/// What a GitHub artifact URL points at. Issues and pull requests share one number
/// space per repository, so both are a `Number`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactRef {
    Issue(u64),
    Pull(u64),
    /// Lower-case hex SHA, possibly abbreviated.
    Commit(String),
}

/// A parsed GitHub artifact: owner and repository are lower-case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Artifact {
    pub owner: String,
    pub repo: String,
    pub target: ArtifactRef,
}

impl Artifact {
    /// `owner/repo`.
    pub fn repo_slug(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    /// Same artifact under RepoRef's structural rule: issue and pull paths are
    /// interchangeable; commits agree on a common prefix of at least
    /// [`MIN_SHA_PREFIX`] characters.
    pub fn same_as(&self, other: &Artifact) -> bool {
        if self.owner != other.owner || self.repo != other.repo {
            return false;
        }
        match (&self.target, &other.target) {
            (ArtifactRef::Commit(a), ArtifactRef::Commit(b)) => shas_agree(a, b),
            (ArtifactRef::Commit(_), _) | (_, ArtifactRef::Commit(_)) => false,
            (a, b) => a.number() == b.number(),
        }
    }

    /// A key equal for artifacts that are `same_as` each other, except that commit
    /// keys keep the SHA as written (prefix agreement needs a scan, see
    /// [`crate::aliases::ArtifactIndex`]).
    pub fn key(&self) -> String {
        match &self.target {
            ArtifactRef::Issue(n) | ArtifactRef::Pull(n) => {
                format!("{}/{}#{n}", self.owner, self.repo)
            }
            ArtifactRef::Commit(sha) => format!("{}/{}@{sha}", self.owner, self.repo),
        }
    }

    /// Canonical web URL.
    pub fn url(&self) -> String {
        let (kind, id) = match &self.target {
            ArtifactRef::Issue(n) => ("issues", n.to_string()),
            ArtifactRef::Pull(n) => ("pull", n.to_string()),
            ArtifactRef::Commit(sha) => ("commit", sha.clone()),
        };
        format!(
            "https://github.com/{}/{}/{kind}/{id}",
            self.owner, self.repo
        )
    }
}

impl ArtifactRef {
    fn number(&self) -> Option<u64> {
        match self {
            ArtifactRef::Issue(n) | ArtifactRef::Pull(n) => Some(*n),
            ArtifactRef::Commit(_) => None,
        }
    }
}

impl fmt::Display for Artifact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url())
    }
}

/// True when two SHAs agree on their common prefix and that prefix has at least
/// [`MIN_SHA_PREFIX`] characters.
pub fn shas_agree(a: &str, b: &str) -> bool {
    let common = a.len().min(b.len());
    common >= MIN_SHA_PREFIX && a.as_bytes()[..common].eq_ignore_ascii_case(&b.as_bytes()[..common])
}

/// What a GitHub URL is, after normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedUrl {
    Artifact(Artifact),
    /// `github.com/owner/repo` (used by repository renames in redirect maps).
    Repo {
        owner: String,
        repo: String,
    },
}

/// Parses a GitHub URL (web or `api.github.com/repos/...`) after normalising it.
/// Returns `None` for anything that does not name a repository, issue, pull request
/// or commit.
pub fn parse_github_url(url: &str) -> Option<ParsedUrl> {
    let norm = normalize(url);
    let rest = norm
        .strip_prefix("https://")
        .or_else(|| norm.strip_prefix("http://"))
        .unwrap_or(&norm);
    let rest = rest.strip_prefix("www.").unwrap_or(rest);
    let (api, path) = if let Some(p) = rest.strip_prefix("api.github.com/") {
        (true, p.strip_prefix("repos/")?)
    } else {
        (false, rest.strip_prefix("github.com/")?)
    };
    let segs: Vec<&str> = path.split('/').collect();
    let (owner, repo) = (*segs.first()?, *segs.get(1)?);
    if !valid_name(owner) || !valid_name(repo) {
        return None;
    }
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    let artifact = |target| {
        Some(ParsedUrl::Artifact(Artifact {
            owner: owner.to_string(),
            repo: repo.to_string(),
            target,
        }))
    };
    let Some(&kind) = segs.get(2) else {
        return Some(ParsedUrl::Repo {
            owner: owner.to_string(),
            repo: repo.to_string(),
        });
    };
    let id = segs.get(3).map(|s| strip_patch_suffix(s));
    match kind {
        "issues" => artifact(ArtifactRef::Issue(parse_number(id?)?)),
        "pull" | "pulls" => {
            let n = parse_number(id?)?;
            // `/pull/N/commits/SHA` names the commit, not the pull request.
            if segs.get(4) == Some(&"commits") {
                if let Some(sha) = segs.get(5) {
                    return artifact(ArtifactRef::Commit(parse_sha(strip_patch_suffix(sha))?));
                }
            }
            artifact(ArtifactRef::Pull(n))
        }
        "commit" | "commits" => artifact(ArtifactRef::Commit(parse_sha(id?)?)),
        "git" if api && segs.get(3) == Some(&"commits") => {
            artifact(ArtifactRef::Commit(parse_sha(segs.get(4)?)?))
        }
        _ => None,
    }
}

/// Parses a URL that names an issue, pull request or commit.
pub fn parse_artifact(url: &str) -> Option<Artifact> {
    match parse_github_url(url)? {
        ParsedUrl::Artifact(a) => Some(a),
        ParsedUrl::Repo { .. } => None,
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn strip_patch_suffix(s: &str) -> &str {
    s.strip_suffix(".patch")
        .or_else(|| s.strip_suffix(".diff"))
        .unwrap_or(s)
}

fn parse_number(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 12 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|&n| n > 0)
}

fn parse_sha(s: &str) -> Option<String> {
    // SHA-1 is 40 hex characters, SHA-256 repositories use 64.
    (!s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| s.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(owner: &str, repo: &str, n: u64) -> Artifact {
        Artifact {
            owner: owner.into(),
            repo: repo.into(),
            target: ArtifactRef::Issue(n),
        }
    }
    fn pull(owner: &str, repo: &str, n: u64) -> Artifact {
        Artifact {
            owner: owner.into(),
            repo: repo.into(),
            target: ArtifactRef::Pull(n),
        }
    }
    fn commit(owner: &str, repo: &str, sha: &str) -> Artifact {
        Artifact {
            owner: owner.into(),
            repo: repo.into(),
            target: ArtifactRef::Commit(sha.into()),
        }
    }

    #[test]
    fn normalize_trims_cuts_and_lowercases() {
        assert_eq!(
            normalize("  https://GitHub.com/Foo/Bar/pull/5/  "),
            "https://github.com/foo/bar/pull/5"
        );
        assert_eq!(
            normalize("https://github.com/a/b/issues/3?x=1"),
            "https://github.com/a/b/issues/3"
        );
        assert_eq!(
            normalize("https://github.com/a/b/issues/3#issuecomment-9"),
            "https://github.com/a/b/issues/3"
        );
        // Query cut first, then the slash before it goes too.
        assert_eq!(
            normalize("https://github.com/a/b/issues/3/?x=1"),
            "https://github.com/a/b/issues/3"
        );
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn issue_and_pull_paths_parse() {
        assert_eq!(
            parse_artifact("https://github.com/o/r/issues/12"),
            Some(issue("o", "r", 12))
        );
        assert_eq!(
            parse_artifact("https://github.com/o/r/pull/12"),
            Some(pull("o", "r", 12))
        );
        assert_eq!(
            parse_artifact("https://github.com/o/r/pulls/12"),
            Some(pull("o", "r", 12))
        );
        assert_eq!(
            parse_artifact("http://www.github.com/O/R/pull/12/files"),
            Some(pull("o", "r", 12))
        );
        assert_eq!(
            parse_artifact("github.com/o/r/issues/12#issuecomment-1"),
            Some(issue("o", "r", 12))
        );
        // Issue vs pull: different parse, same artifact.
        assert!(issue("o", "r", 12).same_as(&pull("o", "r", 12)));
        assert!(!issue("o", "r", 12).same_as(&pull("o", "r", 13)));
        assert!(!issue("o", "r", 12).same_as(&issue("o", "other", 12)));
    }

    #[test]
    fn api_urls_parse() {
        assert_eq!(
            parse_artifact("https://api.github.com/repos/o/r/issues/7"),
            Some(issue("o", "r", 7))
        );
        assert_eq!(
            parse_artifact("https://api.github.com/repos/o/r/pulls/7"),
            Some(pull("o", "r", 7))
        );
        assert_eq!(
            parse_artifact("https://api.github.com/repos/o/r/pulls/7/commits"),
            Some(pull("o", "r", 7))
        );
        assert_eq!(
            parse_artifact("https://api.github.com/repos/o/r/commits/ABCDEF0123"),
            Some(commit("o", "r", "abcdef0123"))
        );
        assert_eq!(
            parse_artifact("https://api.github.com/repos/o/r/git/commits/abcdef0123"),
            Some(commit("o", "r", "abcdef0123"))
        );
        // Comment endpoints are not issues.
        assert_eq!(
            parse_artifact("https://api.github.com/repos/o/r/issues/comments/99"),
            None
        );
        // The API without /repos/ names nothing.
        assert_eq!(parse_artifact("https://api.github.com/o/r/issues/7"), None);
    }

    #[test]
    fn commit_paths_parse_including_pull_commits() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            parse_artifact(&format!("https://github.com/o/r/commit/{sha}")),
            Some(commit("o", "r", sha))
        );
        assert_eq!(
            parse_artifact(&format!("https://github.com/o/r/commits/{sha}")),
            Some(commit("o", "r", sha))
        );
        assert_eq!(
            parse_artifact(&format!("https://github.com/o/r/pull/44/commits/{sha}")),
            Some(commit("o", "r", sha))
        );
        assert_eq!(
            parse_artifact("https://github.com/o/r/commit/0123abc.patch"),
            Some(commit("o", "r", "0123abc"))
        );
        // Not hex: a branch name is not a commit.
        assert_eq!(parse_artifact("https://github.com/o/r/commit/main"), None);
    }

    #[test]
    fn sha_prefix_rule() {
        let full = "0123456789abcdef0123456789abcdef01234567";
        assert!(shas_agree(full, "0123456"), "7 characters are enough");
        assert!(!shas_agree(full, "012345"), "6 characters are not");
        assert!(shas_agree(full, full), "40 characters");
        let sha256 = format!("{full}0123456789abcdef01234567");
        assert!(
            shas_agree(&sha256, full),
            "a 64-character SHA against its 40-character prefix"
        );
        assert!(!shas_agree(full, "0123457"), "differing 7th character");
        assert!(commit("o", "r", full).same_as(&commit("o", "r", "0123456789")));
        assert!(!commit("o", "r", full).same_as(&commit("o", "r", "012345")));
        assert!(!commit("o", "r", full).same_as(&issue("o", "r", 123)));
    }

    #[test]
    fn not_artifacts() {
        assert_eq!(parse_artifact("https://github.com/o/r"), None);
        assert_eq!(
            parse_github_url("https://github.com/o/r/"),
            Some(ParsedUrl::Repo {
                owner: "o".into(),
                repo: "r".into()
            })
        );
        assert_eq!(parse_artifact("https://github.com/o/r/issues"), None);
        assert_eq!(parse_artifact("https://github.com/o/r/issues/abc"), None);
        assert_eq!(parse_artifact("https://github.com/o/r/issues/0"), None);
        assert_eq!(parse_artifact("https://gitlab.com/o/r/issues/3"), None);
        assert_eq!(parse_artifact("https://github.com/o/r/compare/a...b"), None);
        assert_eq!(parse_artifact("not a url"), None);
    }

    #[test]
    fn free_text_first_url() {
        let text =
            "The fix is in https://github.com/o/r/pull/5. Also see https://github.com/o/r/issues/2";
        assert_eq!(
            first_github_url(text),
            Some("https://github.com/o/r/pull/5")
        );
        assert_eq!(
            first_github_url("[PR](https://github.com/o/r/pull/9)"),
            Some("https://github.com/o/r/pull/9")
        );
        assert_eq!(
            first_github_url("see github.com/o/r/issues/4, thanks"),
            Some("github.com/o/r/issues/4")
        );
        assert_eq!(
            first_github_url("gist at https://gist.github.com/x/abc"),
            None
        );
        assert_eq!(first_github_url("no url here"), None);
        assert_eq!(
            first_github_url("见 https://github.com/o/r/pull/5。谢谢"),
            Some("https://github.com/o/r/pull/5")
        );
        assert_eq!(
            first_github_url("<https://github.com/o/r/pull/6>"),
            Some("https://github.com/o/r/pull/6")
        );
        assert_eq!(
            first_github_url("\"https://github.com/o/r/pull/7\","),
            Some("https://github.com/o/r/pull/7")
        );
        let json = r#"{"html_url":"https://github.com/o/r/issues/3","url":"https://api.github.com/repos/o/r/issues/3"}"#;
        assert_eq!(
            github_urls(json),
            vec![
                "https://github.com/o/r/issues/3",
                "https://api.github.com/repos/o/r/issues/3"
            ]
        );
    }
}
