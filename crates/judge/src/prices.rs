//! The price table: dollars per million tokens by model, shipped in `prices.toml`
//! (embedded at build time) and overridable with a file of the same format.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::Usage;

const SHIPPED: &str = include_str!("../../../prices.toml");

#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// Dollars per million prompt tokens.
    pub input: f64,
    /// Dollars per million completion tokens.
    pub output: f64,
    /// Dollars per million prompt tokens served from the provider's prompt cache
    /// (defaults to `input`).
    pub cached_input: Option<f64>,
    /// Fraction taken off every rate for requests answered through the provider's
    /// Batch API (0.5 = half price; defaults to 0, no discount).
    pub batch_discount: Option<f64>,
}

impl ModelPrice {
    /// Cost of one call. Cached prompt tokens are part of `prompt_tokens` (as the
    /// OpenAI usage object reports them) and are billed at the cached rate.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        let fresh = usage.prompt_tokens - cached;
        let cached_rate = self.cached_input.unwrap_or(self.input);
        (fresh as f64 * self.input
            + cached as f64 * cached_rate
            + usage.completion_tokens as f64 * self.output)
            / 1e6
    }

    /// Cost of one answer obtained through a batch: every rate (cached input
    /// included) with the batch discount taken off.
    pub fn batch_cost(&self, usage: &Usage) -> f64 {
        self.cost(usage) * (1.0 - self.batch_discount.unwrap_or(0.0))
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    models: BTreeMap<String, ModelPrice>,
}

#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    #[error("price table {path}: {message}")]
    Invalid { path: String, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFile {
    #[serde(default)]
    models: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// The table shipped with the crate.
    pub fn shipped() -> Self {
        Self::parse(SHIPPED, "prices.toml (shipped)").expect("the shipped prices.toml is valid")
    }

    /// Parse a table; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, PriceError> {
        let invalid = |message: String| PriceError::Invalid {
            path: origin.to_string(),
            message,
        };
        let file: PriceFile = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        for (name, price) in &file.models {
            if price
                .batch_discount
                .is_some_and(|d| !d.is_finite() || !(0.0..=1.0).contains(&d))
            {
                return Err(invalid(format!(
                    "model \"{name}\": batch_discount must be between 0 and 1"
                )));
            }
            let rates = [Some(price.input), Some(price.output), price.cached_input];
            if rates
                .into_iter()
                .flatten()
                .any(|r| !r.is_finite() || r < 0.0)
            {
                return Err(invalid(format!(
                    "model \"{name}\": prices must be finite and non-negative"
                )));
            }
        }
        Ok(Self {
            models: file.models,
        })
    }

    /// The shipped table with the entries of `path` replacing or adding to it.
    pub fn shipped_with_override(path: Option<&Path>) -> Result<Self, PriceError> {
        let mut table = Self::shipped();
        if let Some(path) = path {
            let origin = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(|e| PriceError::Invalid {
                path: origin.clone(),
                message: e.to_string(),
            })?;
            table.models.extend(Self::parse(&text, &origin)?.models);
        }
        Ok(table)
    }

    /// Exact name, then the name without a `provider/` prefix, then the longest
    /// listed prefix (dated snapshots such as `gpt-4o-2024-08-06`).
    pub fn lookup(&self, model: &str) -> Option<&ModelPrice> {
        let bare = model.rsplit('/').next().unwrap_or(model);
        for name in [model, bare] {
            if let Some(p) = self.models.get(name) {
                return Some(p);
            }
        }
        self.models
            .iter()
            .filter(|(k, _)| bare.starts_with(k.as_str()) && bare[k.len()..].starts_with('-'))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| p)
    }

    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.lookup(model).map(|p| p.cost(usage))
    }

    /// Cost priced by how the answer was obtained: live, or through a batch.
    pub fn cost_via(&self, model: &str, usage: &Usage, batch: bool) -> Option<f64> {
        self.lookup(model).map(|p| {
            if batch {
                p.batch_cost(usage)
            } else {
                p.cost(usage)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_table_parses_and_prices_known_models() {
        let t = PriceTable::shipped();
        let u = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 100_000,
            cached_tokens: 0,
        };
        assert_eq!(t.cost("gpt-4o", &u), Some(2.5 + 1.0));
        assert!(t.cost("some-local-model", &u).is_none());
    }

    #[test]
    fn prefix_and_provider_lookup() {
        let t = PriceTable::shipped();
        assert_eq!(t.lookup("gpt-4o-2024-08-06"), t.lookup("gpt-4o"));
        assert_eq!(t.lookup("gpt-4o-mini-2024-07-18"), t.lookup("gpt-4o-mini"));
        assert_eq!(t.lookup("openai/gpt-4o-mini"), t.lookup("gpt-4o-mini"));
        assert_ne!(t.lookup("gpt-4o-mini"), t.lookup("gpt-4o"));
        // A prefix must end at a dash: "gpt-4oX" is not gpt-4o.
        assert!(t.lookup("gpt-4oX").is_none());
    }

    #[test]
    fn cached_tokens_use_cached_rate() {
        let p = ModelPrice {
            input: 2.0,
            output: 8.0,
            cached_input: Some(0.5),
            batch_discount: None,
        };
        let u = Usage {
            prompt_tokens: 1000,
            completion_tokens: 100,
            cached_tokens: 400,
        };
        let expected = (600.0 * 2.0 + 400.0 * 0.5 + 100.0 * 8.0) / 1e6;
        assert!((p.cost(&u) - expected).abs() < 1e-15);
    }

    #[test]
    fn batch_answers_take_the_discount_on_every_rate() {
        let t = PriceTable::shipped();
        let u = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 100_000,
            cached_tokens: 400_000,
        };
        // gpt-4.1: 0.6 M fresh x 2.00 + 0.4 M cached x 0.50 + 0.1 M out x 8.00 = 2.20.
        let live = t.cost_via("gpt-4.1", &u, false).unwrap();
        let batch = t.cost_via("gpt-4.1", &u, true).unwrap();
        assert!((live - 2.2).abs() < 1e-12, "{live}");
        assert!((batch - 1.1).abs() < 1e-12, "{batch}");
        // No discount listed: batch costs the same as live.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "[models.local]\ninput = 1\noutput = 1\n").unwrap();
        let t = PriceTable::shipped_with_override(Some(&path)).unwrap();
        assert_eq!(
            t.cost_via("local", &u, true),
            t.cost_via("local", &u, false)
        );
        std::fs::write(
            &path,
            "[models.x]\ninput = 1\noutput = 1\nbatch_discount = 1.5\n",
        )
        .unwrap();
        let err = PriceTable::shipped_with_override(Some(&path)).unwrap_err();
        assert!(err.to_string().contains("batch_discount"), "{err}");
    }

    #[test]
    fn override_replaces_and_rejects_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "[models.\"gpt-4o\"]\ninput = 1.0\noutput = 2.0\n[models.local]\ninput = 0\noutput = 0\n").unwrap();
        let t = PriceTable::shipped_with_override(Some(&path)).unwrap();
        assert_eq!(t.lookup("gpt-4o").unwrap().input, 1.0);
        assert_eq!(t.cost("local", &Usage::default()), Some(0.0));
        assert!(t.lookup("gpt-4o-mini").is_some());

        std::fs::write(&path, "[models.x]\ninput = -1\noutput = 2\n").unwrap();
        let err = PriceTable::shipped_with_override(Some(&path)).unwrap_err();
        assert!(err.to_string().contains("p.toml"), "{err}");
        std::fs::write(&path, "[models.x]\ninput = 1\n").unwrap();
        assert!(PriceTable::shipped_with_override(Some(&path)).is_err());
        let missing = dir.path().join("missing.toml");
        assert!(PriceTable::shipped_with_override(Some(&missing)).is_err());
    }
}
