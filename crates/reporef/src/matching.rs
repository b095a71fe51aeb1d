//! Matching a prediction against its gold record at RepoRef's three levels.

use std::collections::HashMap;

use serde::Serialize;

use super::aliases::{AliasMaps, AliasNode};
use super::formats::{EntityType, GoldRecord, GoldSet};
use super::url::{first_github_url, normalize, parse_artifact, Artifact, ArtifactRef};

/// The level at which a prediction matched (the first that applies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchLevel {
    /// Normalised prediction equals `gold_url` or `original_url`.
    Exact,
    /// Same `(owner, repo, number)` or commit SHAs agreeing on >= 7 characters.
    Structural,
    /// Equal (exactly or structurally) after following redirects and duplicates.
    Alias,
}

impl MatchLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Structural => "structural",
            Self::Alias => "alias",
        }
    }
}

/// The URL a prediction stands for: the first GitHub URL in it, or (when there is
/// none) the whole trimmed text, so non-GitHub gold can still match exactly.
pub fn prediction_url(predicted: &str) -> &str {
    first_github_url(predicted).unwrap_or_else(|| predicted.trim())
}

/// What the gold of one instance can be matched against.
#[derive(Debug, Clone)]
struct GoldTarget {
    urls: Vec<String>,
    artifacts: Vec<Artifact>,
    alias_nodes: Vec<AliasNode>,
}

/// Matches predictions (and URLs seen in tool results) against gold.
#[derive(Debug, Clone)]
pub struct Matcher {
    targets: HashMap<String, GoldTarget>,
    aliases: AliasMaps,
}

/// The gold artifact as declared by `repo` + `entity_type` + `entity_id`, used when
/// the gold URL itself does not parse.
fn declared_artifact(rec: &GoldRecord) -> Option<Artifact> {
    let (owner, repo) = rec
        .repo
        .as_deref()?
        .trim()
        .to_lowercase()
        .split_once('/')
        .map(|(o, r)| (o.to_string(), r.to_string()))?;
    let id = rec
        .entity_id
        .as_deref()?
        .trim()
        .trim_start_matches('#')
        .to_lowercase();
    let target = match rec.entity_type? {
        EntityType::Issue => ArtifactRef::Issue(id.parse().ok()?),
        EntityType::Pr => ArtifactRef::Pull(id.parse().ok()?),
        EntityType::Commit => {
            if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            ArtifactRef::Commit(id)
        }
    };
    Some(Artifact {
        owner,
        repo,
        target,
    })
}

impl Matcher {
    pub fn new(gold: &GoldSet, aliases: AliasMaps) -> Self {
        let targets = gold
            .records
            .iter()
            .map(|rec| {
                let raw: Vec<&str> = std::iter::once(rec.gold_url.as_str())
                    .chain(rec.original_url.as_deref())
                    .collect();
                let urls: Vec<String> = raw.iter().map(|u| normalize(u)).collect();
                let mut artifacts: Vec<Artifact> =
                    raw.iter().filter_map(|u| parse_artifact(u)).collect();
                if artifacts.is_empty() {
                    artifacts.extend(declared_artifact(rec));
                }
                let mut alias_nodes: Vec<AliasNode> = Vec::new();
                if !aliases.is_empty() {
                    for u in &raw {
                        for node in aliases.closure(u) {
                            if !alias_nodes.contains(&node) {
                                alias_nodes.push(node);
                            }
                        }
                    }
                }
                (
                    rec.id.clone(),
                    GoldTarget {
                        urls,
                        artifacts,
                        alias_nodes,
                    },
                )
            })
            .collect();
        Self { targets, aliases }
    }

    /// Every parsed gold artifact (gold_url, original_url or the declared entity).
    pub fn gold_artifacts(&self) -> impl Iterator<Item = &Artifact> {
        self.targets.values().flat_map(|t| t.artifacts.iter())
    }

    pub fn aliases(&self) -> &AliasMaps {
        &self.aliases
    }

    /// Matches one URL (already extracted from any surrounding text) against the
    /// gold of `id`. `None` when `id` is unknown or nothing matches.
    pub fn match_url(&self, id: &str, url: &str) -> Option<MatchLevel> {
        let target = self.targets.get(id)?;
        let norm = normalize(url);
        if norm.is_empty() {
            return None;
        }
        if target.urls.contains(&norm) {
            return Some(MatchLevel::Exact);
        }
        let parsed = parse_artifact(&norm);
        if let Some(p) = &parsed {
            if target.artifacts.iter().any(|g| g.same_as(p)) {
                return Some(MatchLevel::Structural);
            }
        }
        if target.alias_nodes.is_empty() && self.aliases.is_empty() {
            return None;
        }
        let pred_nodes = self.aliases.closure(&norm);
        let gold_nodes: &[AliasNode] = &target.alias_nodes;
        let hit = pred_nodes.iter().any(|p| {
            gold_nodes.iter().any(|g| {
                p.url == g.url
                    || matches!((&p.artifact, &g.artifact), (Some(a), Some(b)) if a.same_as(b))
            })
        });
        hit.then_some(MatchLevel::Alias)
    }

    /// Matches a free-text prediction: its first GitHub URL is what counts.
    pub fn match_prediction(&self, id: &str, predicted: &str) -> Option<MatchLevel> {
        self.match_url(id, prediction_url(predicted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn gold() -> GoldSet {
        let rec = |id: &str, url: &str, et: EntityType, orig: Option<&str>| GoldRecord {
            id: id.into(),
            gold_url: url.into(),
            repo: Some("Acme/Widget".into()),
            entity_type: Some(et),
            entity_id: None,
            original_url: orig.map(Into::into),
        };
        GoldSet::new(vec![
            rec(
                "i1",
                "https://github.com/acme/widget/issues/10",
                EntityType::Issue,
                None,
            ),
            rec(
                "p1",
                "https://github.com/acme/widget/pull/20",
                EntityType::Pr,
                Some("https://github.com/oldacme/widget/pull/20"),
            ),
            rec(
                "c1",
                &format!("https://github.com/acme/widget/commit/{SHA}"),
                EntityType::Commit,
                None,
            ),
            rec(
                "d1",
                "https://github.com/acme/widget/issues/30",
                EntityType::Issue,
                None,
            ),
        ])
    }

    fn aliases() -> AliasMaps {
        let mut m = AliasMaps::default();
        // 31 was closed as a duplicate of 32, which redirects to 30: 31 -> 32 -> 30.
        m.add_duplicate(
            "https://github.com/acme/widget/issues/31",
            "https://github.com/acme/widget/issues/32",
        );
        m.add_redirect(
            "https://github.com/acme/widget/issues/32",
            "https://github.com/acme/widget/issues/30",
        );
        // A cycle that must not hang.
        m.add_redirect(
            "https://github.com/acme/widget/issues/40",
            "https://github.com/acme/widget/issues/41",
        );
        m.add_redirect(
            "https://github.com/acme/widget/issues/41",
            "https://github.com/acme/widget/issues/40",
        );
        m
    }

    #[test]
    fn exact_level() {
        let m = Matcher::new(&gold(), AliasMaps::default());
        assert_eq!(
            m.match_prediction("i1", " https://github.com/Acme/Widget/issues/10/ "),
            Some(MatchLevel::Exact)
        );
        assert_eq!(
            m.match_prediction("i1", "https://github.com/acme/widget/issues/10?x#y"),
            Some(MatchLevel::Exact)
        );
        // original_url counts as exact.
        assert_eq!(
            m.match_prediction("p1", "https://github.com/oldacme/widget/pull/20"),
            Some(MatchLevel::Exact)
        );
    }

    #[test]
    fn structural_level() {
        let m = Matcher::new(&gold(), AliasMaps::default());
        assert_eq!(
            m.match_prediction("i1", "https://github.com/acme/widget/pull/10"),
            Some(MatchLevel::Structural)
        );
        assert_eq!(
            m.match_prediction("p1", "https://github.com/acme/widget/issues/20"),
            Some(MatchLevel::Structural)
        );
        assert_eq!(
            m.match_prediction("p1", "https://api.github.com/repos/acme/widget/pulls/20"),
            Some(MatchLevel::Structural)
        );
        assert_eq!(
            m.match_prediction("c1", "https://github.com/acme/widget/commit/0123456"),
            Some(MatchLevel::Structural)
        );
        assert_eq!(
            m.match_prediction("c1", "https://github.com/acme/widget/commit/012345"),
            None
        );
        assert_eq!(
            m.match_prediction(
                "c1",
                &format!("https://github.com/acme/widget/pull/7/commits/{SHA}")
            ),
            Some(MatchLevel::Structural)
        );
        assert_eq!(
            m.match_prediction(
                "c1",
                &format!(
                    "It was fixed in https://github.com/acme/widget/commit/{}.",
                    &SHA[..12]
                )
            ),
            Some(MatchLevel::Structural)
        );
        // Wrong repo, wrong number, wrong kind.
        assert_eq!(
            m.match_prediction("i1", "https://github.com/acme/gadget/issues/10"),
            None
        );
        assert_eq!(
            m.match_prediction("i1", "https://github.com/acme/widget/issues/11"),
            None
        );
        assert_eq!(
            m.match_prediction("c1", "https://github.com/acme/widget/issues/1"),
            None
        );
        // Only the first URL counts.
        assert_eq!(
            m.match_prediction("i1", "maybe https://github.com/acme/widget/issues/9 or https://github.com/acme/widget/issues/10"),
            None
        );
        assert_eq!(
            m.match_prediction("nope", "https://github.com/acme/widget/issues/10"),
            None
        );
    }

    #[test]
    fn alias_level_follows_chains_and_survives_cycles() {
        let m = Matcher::new(&gold(), aliases());
        assert_eq!(
            m.match_prediction("d1", "https://github.com/acme/widget/issues/31"),
            Some(MatchLevel::Alias)
        );
        assert_eq!(
            m.match_prediction("d1", "https://github.com/acme/widget/pull/32"),
            Some(MatchLevel::Alias)
        );
        assert_eq!(
            m.match_prediction("d1", "https://github.com/acme/widget/issues/40"),
            None
        );
        // Direct matches still report their own level.
        assert_eq!(
            m.match_prediction("d1", "https://github.com/acme/widget/issues/30"),
            Some(MatchLevel::Exact)
        );
        // Without the maps, no alias match.
        let plain = Matcher::new(&gold(), AliasMaps::default());
        assert_eq!(
            plain.match_prediction("d1", "https://github.com/acme/widget/issues/31"),
            None
        );
    }

    #[test]
    fn gold_side_aliases_count_too() {
        // The gold is the old URL; the prediction names where it redirects now.
        let g = GoldSet::new(vec![GoldRecord {
            id: "x".into(),
            gold_url: "https://github.com/old/name/issues/5".into(),
            repo: None,
            entity_type: None,
            entity_id: None,
            original_url: None,
        }]);
        let mut a = AliasMaps::default();
        a.add_redirect("https://github.com/old/name", "https://github.com/new/name");
        let m = Matcher::new(&g, a);
        assert_eq!(
            m.match_prediction("x", "https://github.com/new/name/pull/5"),
            Some(MatchLevel::Alias)
        );
    }

    #[test]
    fn declared_entity_is_used_when_gold_url_does_not_parse() {
        let g = GoldSet::new(vec![GoldRecord {
            id: "x".into(),
            gold_url: "https://example.org/mirror/5".into(),
            repo: Some("o/r".into()),
            entity_type: Some(EntityType::Issue),
            entity_id: Some("5".into()),
            original_url: None,
        }]);
        let m = Matcher::new(&g, AliasMaps::default());
        assert_eq!(
            m.match_prediction("x", "https://github.com/o/r/pull/5"),
            Some(MatchLevel::Structural)
        );
        assert_eq!(
            m.match_prediction("x", "https://example.org/mirror/5/"),
            Some(MatchLevel::Exact)
        );
    }
}
