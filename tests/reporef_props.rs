//! Property tests: URL handling, trace parsing and the statistics never panic and
//! keep their invariants on arbitrary input.

use std::path::Path;

use proptest::prelude::*;
use tvir_reporef::formats::parse_trace;
use tvir_reporef::stats::{mcnemar, Proportion};
use tvir_reporef::url::{first_github_url, normalize, parse_artifact, shas_agree};

fn github_like() -> impl Strategy<Value = String> {
    let host = prop_oneof![
        Just("https://github.com/"),
        Just("http://www.github.com/"),
        Just("https://api.github.com/repos/"),
        Just("github.com/"),
    ];
    let kind = prop_oneof![
        Just("issues"),
        Just("pull"),
        Just("pulls"),
        Just("commit"),
        Just("commits"),
        Just("git/commits")
    ];
    (
        host,
        "[A-Za-z0-9_.-]{1,8}",
        "[A-Za-z0-9_.-]{1,8}",
        kind,
        "[0-9a-fA-F]{0,45}",
        "[/?#a-z0-9=]{0,6}",
    )
        .prop_map(|(h, o, r, k, id, tail)| format!("{h}{o}/{r}/{k}/{id}{tail}"))
}

proptest! {
    #[test]
    fn normalize_is_idempotent(s in ".{0,80}") {
        let once = normalize(&s);
        prop_assert_eq!(normalize(&once), once.clone());
        prop_assert!(!once.contains('?') && !once.contains('#') && !once.ends_with('/'));
    }

    #[test]
    fn parsing_never_panics_and_round_trips(s in prop_oneof![github_like(), ".{0,80}"]) {
        if let Some(a) = parse_artifact(&s) {
            // The canonical URL parses back to the same artifact.
            prop_assert_eq!(parse_artifact(&a.url()), Some(a.clone()));
            prop_assert!(a.same_as(&a) || matches!(&a.target, tvir_reporef::url::ArtifactRef::Commit(sha) if sha.len() < 7));
        }
        let _ = first_github_url(&s);
    }

    #[test]
    fn sha_agreement_is_symmetric(a in "[0-9a-f]{0,40}", b in "[0-9a-f]{0,40}") {
        prop_assert_eq!(shas_agree(&a, &b), shas_agree(&b, &a));
        if a.len().min(b.len()) < 7 {
            prop_assert!(!shas_agree(&a, &b));
        }
    }

    #[test]
    fn trace_parsing_never_panics(s in ".{0,200}") {
        let mut diags = Vec::new();
        let _ = parse_trace(Path::new("x.json"), "x", &s, &mut diags);
    }

    #[test]
    fn proportion_bounds(n in 1usize..5000, k in 0usize..5000) {
        let k = k % (n + 1);
        let p = Proportion::new(k, n);
        let se = p.se.unwrap();
        // p(1 - p) <= 1/4, so se <= 0.5 / sqrt(n).
        prop_assert!(se >= 0.0 && se <= 0.5 / (n as f64).sqrt() + 1e-15);
    }

    #[test]
    fn mcnemar_is_symmetric_and_bounded(b in 0u64..400, c in 0u64..400) {
        let x = mcnemar(b, c);
        let y = mcnemar(c, b);
        prop_assert!((0.0..=1.0).contains(&x.exact_p));
        prop_assert_eq!(x.exact_p, y.exact_p);
        prop_assert_eq!(x.chi_square_p, y.chi_square_p);
        if let Some(p) = x.chi_square_p {
            prop_assert!((0.0..=1.0).contains(&p));
        }
    }
}
