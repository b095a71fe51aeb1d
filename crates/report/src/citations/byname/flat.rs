//! Citations by name put into a flattened unit as markers, so that sentence
//! splitting and attachment treat them exactly like numbered markers.

use std::ops::Range;

use super::super::markers::{Flat, RawCite, SENTINEL};
use super::{NameCite, NameIndex};

/// What replacing a unit's citations by name found.
#[derive(Debug, Default)]
pub(crate) struct Named {
    /// Citations by name that named an entry.
    pub cites: Vec<NameCite>,
    /// Author-date shapes that named none.
    pub unresolved: Vec<String>,
}

/// Replace each citation by name in `flat` with a marker citing its entries.
pub(crate) fn mark_names(flat: &mut Flat, index: &NameIndex) -> Named {
    let scan = index.scan(&flat.text);
    if scan.cites.is_empty() {
        return Named {
            cites: Vec::new(),
            unresolved: scan.unresolved,
        };
    }
    let spans: Vec<Range<usize>> = scan.cites.iter().map(|c| c.span.clone()).collect();
    let old = std::mem::take(&mut flat.text);
    let old_cites = std::mem::take(&mut flat.cites);
    let mut old_cites = old_cites.into_iter();
    let sentinel_len = SENTINEL.len_utf8();
    // New offset of an old one: offsets inside a replaced span go to its marker.
    let shift = |o: usize| -> usize {
        let mut d: isize = 0;
        for r in &spans {
            if o >= r.end {
                d += sentinel_len as isize - r.len() as isize;
            } else if o > r.start {
                return (r.start as isize + d) as usize;
            }
        }
        (o as isize + d) as usize
    };
    let mut text = String::with_capacity(old.len());
    let mut cites = Vec::new();
    let mut at = 0;
    let mut extra_map = Vec::new();
    for c in &scan.cites {
        for ch in old[at..c.span.start].chars() {
            text.push(ch);
            if ch == SENTINEL {
                cites.extend(old_cites.next());
            }
        }
        // Markers already inside the span (rare) stay as their own markers.
        for ch in old[c.span.clone()].chars() {
            if ch == SENTINEL {
                if let Some(inner) = old_cites.next() {
                    text.push(SENTINEL);
                    cites.push(inner);
                }
            }
        }
        let src_start = flat.src(c.span.start);
        let src_end = flat.src(c.span.end.saturating_sub(1)) + 1;
        extra_map.push((text.len(), src_start, src_end.max(src_start)));
        text.push(SENTINEL);
        cites.push(c.idxs.iter().cloned().map(RawCite::Named).collect());
        let after = c.span.end;
        if after < old.len() {
            let piece_end = flat
                .map
                .iter()
                .rfind(|(f, _, _)| *f <= after)
                .map_or(0, |m| m.2);
            extra_map.push((text.len(), flat.src(after), piece_end));
        }
        at = c.span.end;
    }
    for ch in old[at..].chars() {
        text.push(ch);
        if ch == SENTINEL {
            cites.extend(old_cites.next());
        }
    }
    let mut map: Vec<(usize, usize, usize)> = flat
        .map
        .iter()
        .filter(|(f, _, _)| !spans.iter().any(|r| *f > r.start && *f < r.end))
        .map(|&(f, s, e)| (shift(f), s, e))
        .collect();
    for m in extra_map {
        if !map.iter().any(|x| x.0 == m.0) {
            map.push(m);
        }
    }
    map.sort_by_key(|m| m.0);
    flat.text = text;
    flat.cites = cites;
    flat.map = map;
    flat.hard_breaks = flat.hard_breaks.iter().map(|&o| shift(o)).collect();
    Named {
        cites: scan.cites,
        unresolved: scan.unresolved,
    }
}
