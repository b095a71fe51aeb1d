//! Views of a parsed report that the parser tests compare with expectations.
// Each test file includes `common`; not every one uses these.
#![allow(dead_code)]

use tvir_report::Report;

/// The cited indices of every fact, in fact order.
pub fn fact_refs(r: &Report) -> Vec<Vec<String>> {
    r.facts.iter().map(|f| f.ref_idxs.clone()).collect()
}

/// Owned strings, for comparing with `Vec<String>` fields.
pub fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Codes of every structural error, traceability then consistency then completeness.
pub fn codes(r: &Report) -> Vec<String> {
    let e = &r.structural_errors;
    e.traceability
        .iter()
        .chain(&e.consistency)
        .chain(&e.completeness)
        .map(|x| x.code.clone())
        .collect()
}
