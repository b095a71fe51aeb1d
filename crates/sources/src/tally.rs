//! Counting page outcomes for the lines a user reads at the end of `tvir fetch` and
//! `tvir eval`: pages read, pages not read by reason, and whether the run reached
//! any host at all. A run in which every page fetched over the network failed
//! before any HTTP status (names not resolved, connections refused) says nothing
//! about the reports: it is this machine's missing network, and [`PageTally::no_network`]
//! names it.

use std::collections::BTreeMap;

use crate::{PageOutcome, PageStatus};

/// What to do when no host could be reached.
pub const NO_NETWORK_ADVICE: &str = "no cited page could be reached from this machine: \
check its network (or proxy settings), or evaluate with pages fetched elsewhere: \
`tvir fetch --reports ROOT --cache FILE` on a connected machine, then `tvir eval ... \
--cache FILE --offline` here; or give the pages' text with `--sources FILE`";

/// Outcomes of cited pages, counted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageTally {
    /// Pages with readable text.
    pub read: usize,
    /// Pages without, by status and reason (hosts and addresses left out).
    pub not_read: BTreeMap<(String, String), usize>,
    /// Fetched over the network now (not from the cache, a sources file or refused by
    /// the rules).
    pub from_network: usize,
    /// Of those, the ones a server answered (any HTTP status).
    pub answered: usize,
    /// Of those, the ones that failed before any HTTP status, by reason.
    pub unreached: BTreeMap<String, usize>,
}

impl PageTally {
    pub fn add(&mut self, outcome: &PageOutcome) {
        if outcome.status == PageStatus::Ok && !outcome.text.trim().is_empty() {
            self.read += 1;
        } else {
            let reason = reason_group(outcome.reason.as_deref().unwrap_or("no readable text"));
            *self
                .not_read
                .entry((outcome.status.as_str().to_string(), reason))
                .or_default() += 1;
        }
        if outcome.http_status.is_some() {
            self.from_network += 1;
            self.answered += 1;
        } else if outcome.no_response {
            self.from_network += 1;
            let reason = reason_group(outcome.reason.as_deref().unwrap_or("no connection"));
            *self.unreached.entry(reason).or_default() += 1;
        }
    }

    pub fn merge(&mut self, other: &PageTally) {
        self.read += other.read;
        for (k, n) in &other.not_read {
            *self.not_read.entry(k.clone()).or_default() += n;
        }
        self.from_network += other.from_network;
        self.answered += other.answered;
        for (k, n) in &other.unreached {
            *self.unreached.entry(k.clone()).or_default() += n;
        }
    }

    pub fn not_read_count(&self) -> usize {
        self.not_read.values().sum()
    }

    pub fn unreached_count(&self) -> usize {
        self.unreached.values().sum()
    }

    /// "no network: N of N cited pages could not be reached (reasons)" when pages
    /// were fetched over the network and no server answered any of them.
    pub fn no_network(&self) -> Option<String> {
        let unreached = self.unreached_count();
        if self.answered > 0 || unreached == 0 {
            return None;
        }
        Some(format!(
            "no network: {unreached} of {} cited pages could not be reached ({})",
            self.from_network,
            join_counts(self.unreached.iter().map(|(r, n)| (r.as_str(), *n)))
        ))
    }

    /// `pages: 12 read, 3 not read (2 failed: HTTP 404 Not Found; 1 blocked: captcha)`.
    pub fn line(&self) -> String {
        let not_read = self.not_read_count();
        let mut line = format!("pages: {} read, {not_read} not read", self.read);
        if not_read > 0 {
            let mut groups: Vec<(String, usize)> = self
                .not_read
                .iter()
                .map(|((status, reason), n)| (format!("{status}: {reason}"), *n))
                .collect();
            groups.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            line.push_str(&format!(
                " ({})",
                join_counts(groups.iter().map(|(r, n)| (r.as_str(), *n)))
            ));
        }
        line
    }
}

/// `3 × reason; 1 × other` (at most five groups, then "…").
fn join_counts<'a>(groups: impl Iterator<Item = (&'a str, usize)>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut rest = 0usize;
    for (i, (reason, n)) in groups.enumerate() {
        if i < 5 {
            parts.push(format!("{n} {reason}"));
        } else {
            rest += n;
        }
    }
    if rest > 0 {
        parts.push(format!("{rest} for other reasons"));
    }
    parts.join("; ")
}

/// A failure reason without the host and addresses it names, so failures group by
/// cause across pages.
pub fn reason_group(reason: &str) -> String {
    let host = regex::Regex::new(r"host \S+").expect("static regex");
    let addr = regex::Regex::new(r" \([0-9a-fA-F:.]+\)").expect("static regex");
    let dropped =
        regex::Regex::new(r"\(([0-9a-fA-F:.]+: [a-z\- ()]+(, )?)+\)").expect("static regex");
    let reason = host.replace_all(reason, "host *");
    let reason = addr.replace_all(&reason, "");
    dropped.replace_all(&reason, "(...)").into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(
        status: PageStatus,
        http: Option<u16>,
        no_response: bool,
        reason: &str,
    ) -> PageOutcome {
        PageOutcome {
            url: "https://a.example/".into(),
            final_url: None,
            status,
            text: if status == PageStatus::Ok {
                "text".into()
            } else {
                String::new()
            },
            content_type: None,
            reason: (!reason.is_empty()).then(|| reason.to_string()),
            from_cache: false,
            http_status: http,
            no_response,
        }
    }

    #[test]
    fn groups_reasons_without_hosts() {
        assert_eq!(
            reason_group("host 127.0.0.1 is a loopback address (127.0.0.1)"),
            "host * is a loopback address"
        );
        assert_eq!(reason_group("HTTP 404 Not Found"), "HTTP 404 Not Found");
    }

    #[test]
    fn no_network_only_when_no_server_answered() {
        let dns = "connection failed: dns error: failed to lookup address information";
        let mut t = PageTally::default();
        for _ in 0..3 {
            t.add(&outcome(PageStatus::Failed, None, true, dns));
        }
        // A page from the cache or refused by the rules is neither.
        let mut cached = outcome(PageStatus::Ok, None, false, "");
        cached.from_cache = true;
        t.add(&cached);
        t.add(&outcome(
            PageStatus::Refused,
            None,
            false,
            "host 10.0.0.1 is private",
        ));
        let why = t.no_network().expect("no server answered");
        assert_eq!(
            why,
            format!("no network: 3 of 3 cited pages could not be reached (3 {dns})")
        );
        assert_eq!(t.read, 1);
        assert_eq!(t.not_read_count(), 4);
        // One answer, even a 404, proves the network: dead hosts are the report's.
        t.add(&outcome(
            PageStatus::Failed,
            Some(404),
            false,
            "HTTP 404 Not Found",
        ));
        assert_eq!(t.no_network(), None);
        let line = t.line();
        assert!(
            line.starts_with("pages: 1 read, 5 not read (3 failed: connection failed"),
            "{line}"
        );
        assert!(line.contains("1 failed: HTTP 404 Not Found"), "{line}");
    }
}
