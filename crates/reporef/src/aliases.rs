//! Alias maps (redirects and duplicates, followed transitively and cycle-safe) and
//! the index of artifacts known to exist.

use std::collections::{HashMap, HashSet, VecDeque};

use super::url::{normalize, parse_github_url, shas_agree, Artifact, ArtifactRef, ParsedUrl};

/// Upper bound on the nodes visited when following alias chains from one URL, so a
/// hostile or corrupt map cannot make matching quadratic.
const MAX_ALIAS_NODES: usize = 256;

/// One point of an alias chain: the URL as normalised, and its parse when it names
/// an artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasNode {
    pub url: String,
    pub artifact: Option<Artifact>,
}

impl AliasNode {
    pub fn new(url: &str) -> Self {
        let url = normalize(url);
        let artifact = match parse_github_url(&url) {
            Some(ParsedUrl::Artifact(a)) => Some(a),
            _ => None,
        };
        Self { url, artifact }
    }

    fn from_artifact(artifact: Artifact) -> Self {
        Self {
            url: normalize(&artifact.url()),
            artifact: Some(artifact),
        }
    }

    /// Identity used for cycle detection: the artifact key when parsed (so `issues/5`
    /// and `pull/5` are one node), else the normalised URL.
    fn id(&self) -> String {
        self.artifact
            .as_ref()
            .map_or_else(|| self.url.clone(), Artifact::key)
    }
}

/// Redirect map (old URL -> new URL) and duplicates map (issue -> the issue it was
/// closed as a duplicate of). Either may be empty.
#[derive(Debug, Default, Clone)]
pub struct AliasMaps {
    /// Keyed by node id (artifact key or normalised URL).
    redirects: HashMap<String, String>,
    duplicates: HashMap<String, String>,
    /// Repository renames `owner/repo` -> `owner/repo`, from redirect entries whose
    /// both sides are repository URLs.
    repo_renames: HashMap<String, (String, String)>,
}

impl AliasMaps {
    pub fn is_empty(&self) -> bool {
        self.redirects.is_empty() && self.duplicates.is_empty() && self.repo_renames.is_empty()
    }

    pub fn len(&self) -> usize {
        self.redirects.len() + self.duplicates.len() + self.repo_renames.len()
    }

    /// Adds a redirect `from -> to`.
    pub fn add_redirect(&mut self, from: &str, to: &str) {
        if let (
            Some(ParsedUrl::Repo {
                owner: o1,
                repo: r1,
            }),
            Some(ParsedUrl::Repo {
                owner: o2,
                repo: r2,
            }),
        ) = (parse_github_url(from), parse_github_url(to))
        {
            self.repo_renames.insert(format!("{o1}/{r1}"), (o2, r2));
            return;
        }
        self.redirects
            .insert(AliasNode::new(from).id(), to.to_string());
    }

    /// Adds a duplicate `issue -> canonical`.
    pub fn add_duplicate(&mut self, issue: &str, canonical: &str) {
        self.duplicates
            .insert(AliasNode::new(issue).id(), canonical.to_string());
    }

    /// Every node reachable from `url` through redirects, duplicates and repository
    /// renames, `url` itself first. Cycles stop at the first repeated node.
    pub fn closure(&self, url: &str) -> Vec<AliasNode> {
        let start = AliasNode::new(url);
        let mut seen: HashSet<String> = HashSet::from([start.id()]);
        let mut out = vec![start.clone()];
        let mut queue = VecDeque::from([start]);
        while let Some(node) = queue.pop_front() {
            let id = node.id();
            let mut next: Vec<AliasNode> = Vec::new();
            for map in [&self.redirects, &self.duplicates] {
                if let Some(to) = map.get(&id) {
                    next.push(AliasNode::new(to));
                }
            }
            if let Some(a) = &node.artifact {
                if let Some((owner, repo)) = self.repo_renames.get(&a.repo_slug()) {
                    next.push(AliasNode::from_artifact(Artifact {
                        owner: owner.clone(),
                        repo: repo.clone(),
                        target: a.target.clone(),
                    }));
                }
            }
            for n in next {
                if out.len() >= MAX_ALIAS_NODES {
                    return out;
                }
                if seen.insert(n.id()) {
                    out.push(n.clone());
                    queue.push_back(n);
                }
            }
        }
        out
    }
}

/// Artifacts known to exist (seen in tool results or listed in an artifact file),
/// queried with the structural rule.
#[derive(Debug, Default, Clone)]
pub struct ArtifactIndex {
    numbers: HashSet<(String, String, u64)>,
    /// Commits per `owner/repo`, scanned for prefix agreement.
    commits: HashMap<String, Vec<String>>,
    urls: HashSet<String>,
}

impl ArtifactIndex {
    pub fn insert_url(&mut self, url: &str) {
        let node = AliasNode::new(url);
        if let Some(a) = node.artifact {
            self.insert(&a);
        }
        self.urls.insert(node.url);
    }

    pub fn insert(&mut self, a: &Artifact) {
        match &a.target {
            ArtifactRef::Issue(n) | ArtifactRef::Pull(n) => {
                self.numbers.insert((a.owner.clone(), a.repo.clone(), *n));
            }
            ArtifactRef::Commit(sha) => {
                let list = self.commits.entry(a.repo_slug()).or_default();
                if !list.contains(sha) {
                    list.push(sha.clone());
                }
            }
        }
    }

    pub fn contains(&self, a: &Artifact) -> bool {
        match &a.target {
            ArtifactRef::Issue(n) | ArtifactRef::Pull(n) => {
                self.numbers
                    .contains(&(a.owner.clone(), a.repo.clone(), *n))
            }
            ArtifactRef::Commit(sha) => self
                .commits
                .get(&a.repo_slug())
                .is_some_and(|list| list.iter().any(|s| shas_agree(s, sha))),
        }
    }

    /// True when the node is a known artifact (structurally) or a known URL.
    pub fn contains_node(&self, node: &AliasNode) -> bool {
        node.artifact.as_ref().is_some_and(|a| self.contains(a)) || self.urls.contains(&node.url)
    }

    pub fn len(&self) -> usize {
        self.numbers.len() + self.commits.values().map(Vec::len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_are_followed_transitively() {
        let mut m = AliasMaps::default();
        m.add_redirect(
            "https://github.com/o/r/issues/1",
            "https://github.com/o/r/issues/2",
        );
        m.add_duplicate(
            "https://github.com/o/r/issues/2",
            "https://github.com/o/r/issues/3",
        );
        m.add_redirect(
            "https://github.com/o/r/issues/3",
            "https://github.com/o/r/issues/4",
        );
        let urls: Vec<String> = m
            .closure("https://github.com/o/r/pull/1/")
            .into_iter()
            .map(|n| n.url)
            .collect();
        // Start node keeps its own spelling; pull/1 looks up the same key as issues/1.
        assert_eq!(
            urls,
            vec![
                "https://github.com/o/r/pull/1",
                "https://github.com/o/r/issues/2",
                "https://github.com/o/r/issues/3",
                "https://github.com/o/r/issues/4",
            ]
        );
    }

    #[test]
    fn cycles_terminate() {
        let mut m = AliasMaps::default();
        m.add_redirect(
            "https://github.com/o/r/issues/1",
            "https://github.com/o/r/issues/2",
        );
        m.add_duplicate(
            "https://github.com/o/r/issues/2",
            "https://github.com/o/r/issues/1",
        );
        m.add_redirect(
            "https://github.com/o/r/issues/5",
            "https://github.com/o/r/issues/5",
        );
        assert_eq!(m.closure("https://github.com/o/r/issues/1").len(), 2);
        assert_eq!(m.closure("https://github.com/o/r/issues/2").len(), 2);
        assert_eq!(m.closure("https://github.com/o/r/issues/5").len(), 1);
    }

    #[test]
    fn repository_renames_apply_to_every_artifact() {
        let mut m = AliasMaps::default();
        m.add_redirect("https://github.com/old/name", "https://github.com/new/name");
        let c = m.closure("https://github.com/old/name/pull/8");
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].url, "https://github.com/new/name/pull/8");
    }

    #[test]
    fn index_uses_structural_rule() {
        let mut idx = ArtifactIndex::default();
        idx.insert_url("https://api.github.com/repos/o/r/issues/10");
        idx.insert_url("https://github.com/o/r/commit/abcdef0123456789");
        let node = |u: &str| AliasNode::new(u);
        assert!(idx.contains_node(&node("https://github.com/o/r/pull/10")));
        assert!(idx.contains_node(&node("https://github.com/o/r/commit/abcdef0")));
        assert!(!idx.contains_node(&node("https://github.com/o/r/commit/abcdef")));
        assert!(!idx.contains_node(&node("https://github.com/o/r/issues/11")));
        assert_eq!(idx.len(), 2);
    }
}
