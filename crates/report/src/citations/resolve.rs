//! Resolution of raw markers against the reference list: a number that names an
//! entry, one that names none (dangling), or a number that is no citation at all.

use std::collections::{HashMap, HashSet};

use crate::model::Reference;
use crate::urls::url_key;

use super::byname::NameIndex;
use super::markers::RawCite;

/// Checks raw markers against the reference list.
pub(crate) struct Resolver {
    idxs: HashSet<String>,
    by_url: HashMap<String, String>,
    has_list: bool,
    max_numeric: u64,
    /// Latin `word N` pairs the report writes more than once: names, so a
    /// [`RawCite::AfterName`] with one of them is no citation.
    names: HashSet<(String, String)>,
    /// The entries as citable by name (author-date, key, source name).
    name_index: NameIndex,
}

/// Outcome of resolving one raw marker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    Ref(String),
    /// A marker whose number names no entry (consistency error).
    Dangling(String),
    /// Not a citation at all (`[2024]`, a link to an unlisted page).
    NotACitation,
}

impl Resolver {
    pub fn new(refs: &[Reference], has_list: bool) -> Self {
        let mut by_url = HashMap::new();
        for r in refs {
            if let Some(u) = &r.url {
                by_url.entry(url_key(u)).or_insert_with(|| r.idx.clone());
            }
        }
        Resolver {
            idxs: refs.iter().map(|r| r.idx.clone()).collect(),
            by_url,
            has_list,
            max_numeric: refs
                .iter()
                .filter_map(|r| r.idx.parse().ok())
                .max()
                .unwrap_or(0),
            names: HashSet::new(),
            name_index: NameIndex::default(),
        }
    }

    /// The report's recurring `word N` names (see [`super::spaced::named_numbers`]).
    pub fn with_names(mut self, names: HashSet<(String, String)>) -> Self {
        self.names = names;
        self
    }

    /// The entries as citable by name, read from the list's source lines.
    pub fn with_name_index(mut self, index: NameIndex) -> Self {
        self.name_index = index;
        self
    }

    pub fn name_index(&self) -> &NameIndex {
        &self.name_index
    }

    pub fn resolve(&self, c: &RawCite) -> Resolved {
        match c {
            RawCite::Num(n) | RawCite::Foot(n) => {
                if !self.has_list {
                    // No list at all: an explicit marker points nowhere (numbers too
                    // large to be reference numbers are years or quantities).
                    match n.parse::<u64>() {
                        Ok(v) if v == 0 || v > 300 => Resolved::NotACitation,
                        _ => Resolved::Dangling(n.clone()),
                    }
                } else if self.idxs.contains(n) {
                    Resolved::Ref(n.clone())
                } else {
                    // Numbers far beyond the list (years, quantities) are not markers.
                    match n.parse::<u64>() {
                        Ok(v) if v == 0 || v > self.max_numeric + 10 => Resolved::NotACitation,
                        _ => Resolved::Dangling(n.clone()),
                    }
                }
            }
            RawCite::Input(_) => Resolved::NotACitation,
            RawCite::Named(i) => Resolved::Ref(i.clone()),
            RawCite::Weak(n) => {
                if self.has_list && self.idxs.contains(n) {
                    Resolved::Ref(n.clone())
                } else {
                    Resolved::NotACitation
                }
            }
            RawCite::AfterName(n, word) => {
                if self.names.contains(&(word.clone(), n.clone())) {
                    Resolved::NotACitation
                } else {
                    self.resolve(&RawCite::Weak(n.clone()))
                }
            }
            RawCite::Url(u) => match self.by_url.get(&url_key(u)) {
                Some(i) => Resolved::Ref(i.clone()),
                None => Resolved::NotACitation,
            },
            RawCite::Linked(n, u) => {
                if self.has_list && self.idxs.contains(n) {
                    Resolved::Ref(n.clone())
                } else {
                    self.resolve(&RawCite::Url(u.clone()))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolver_rules() {
        let refs: Vec<Reference> = (1..=3)
            .map(|i| Reference {
                idx: i.to_string(),
                url: Some(format!("https://e.org/{i}")),
                title: None,
                line: 1,
            })
            .collect();
        let r = Resolver::new(&refs, true);
        assert_eq!(
            r.resolve(&RawCite::Num("2".into())),
            Resolved::Ref("2".into())
        );
        assert_eq!(
            r.resolve(&RawCite::Num("5".into())),
            Resolved::Dangling("5".into())
        );
        assert_eq!(
            r.resolve(&RawCite::Num("2024".into())),
            Resolved::NotACitation
        );
        assert_eq!(
            r.resolve(&RawCite::Weak("9".into())),
            Resolved::NotACitation
        );
        assert_eq!(
            r.resolve(&RawCite::Url("http://www.e.org/3/".into())),
            Resolved::Ref("3".into())
        );
        assert_eq!(
            r.resolve(&RawCite::Linked("7".into(), "https://e.org/1".into())),
            Resolved::Ref("1".into())
        );
    }
}
