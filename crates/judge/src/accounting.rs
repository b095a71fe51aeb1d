//! Token and cost accounting per call, per metric and per report (shared by every
//! clone of a client; a snapshot is a plain value).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::estimate::TokenEstimate;
use super::Usage;

/// Usage as written into `report.json` and metric files: calls, tokens and dollars.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsageRecord {
    pub calls: u64,
    pub cache_hits: u64,
    pub failed_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    pub cost_usd: Option<f64>,
}

/// Totals for one scope (the run, one metric, one report).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageTotals {
    /// Requests sent to the server and answered validly (one per unit, however
    /// many attempts it took).
    pub calls: u64,
    /// Answers served from the cache (no request sent).
    pub cache_hits: u64,
    /// Units that ended without a valid answer.
    pub failed_calls: u64,
    /// HTTP attempts sent, including retries and re-asks.
    pub attempts: u64,
    /// Tokens spent in this run (retries and invalid answers included; cache hits
    /// cost nothing and add nothing).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    /// Dollars spent in this run; null when any spending call's model has no price.
    pub cost_usd: Option<f64>,
    /// Calls whose cost is unknown (no price for the model).
    pub unpriced_calls: u64,
    /// `--dry-run`: calls that would be made and their estimated tokens and cost.
    pub estimated_calls: u64,
    pub estimated_prompt_tokens: u64,
    pub estimated_completion_tokens: u64,
    pub estimated_cost_usd: Option<f64>,
    /// Calls not scheduled because `--max-cost` was reached.
    pub budget_skipped: u64,
}

impl Default for Accounting {
    fn default() -> Self {
        Self::new()
    }
}

impl UsageTotals {
    fn empty() -> Self {
        Self {
            cost_usd: Some(0.0),
            estimated_cost_usd: Some(0.0),
            ..Default::default()
        }
    }
}

/// A copy of all totals at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AccountingSnapshot {
    pub total: UsageTotals,
    pub by_metric: BTreeMap<String, UsageTotals>,
    pub by_report: BTreeMap<String, UsageTotals>,
    /// Report, then metric.
    pub by_report_metric: BTreeMap<String, BTreeMap<String, UsageTotals>>,
}

impl AccountingSnapshot {
    pub fn report(&self, report: &str) -> UsageTotals {
        self.by_report
            .get(report)
            .cloned()
            .unwrap_or_else(UsageTotals::empty)
    }
    pub fn metric(&self, metric: &str) -> UsageTotals {
        self.by_metric
            .get(metric)
            .cloned()
            .unwrap_or_else(UsageTotals::empty)
    }
}

/// What one unit contributed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Event {
    pub ok: bool,
    pub cache_hit: bool,
    pub attempts: u64,
    pub usage: Usage,
    /// `None`: the model has no price.
    pub cost: Option<f64>,
    pub estimate: Option<(TokenEstimate, Option<f64>)>,
    pub budget_skipped: bool,
}

impl UsageTotals {
    fn add(&mut self, e: &Event) {
        if e.budget_skipped {
            self.budget_skipped += 1;
            return;
        }
        if let Some((est, cost)) = &e.estimate {
            self.estimated_calls += 1;
            self.estimated_prompt_tokens += est.prompt_tokens;
            self.estimated_completion_tokens += est.completion_tokens;
            self.estimated_cost_usd = match (self.estimated_cost_usd, cost) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
            return;
        }
        if e.cache_hit {
            self.cache_hits += 1;
            return;
        }
        if e.ok {
            self.calls += 1;
        } else {
            self.failed_calls += 1;
        }
        self.attempts += e.attempts;
        self.prompt_tokens += e.usage.prompt_tokens;
        self.completion_tokens += e.usage.completion_tokens;
        self.cached_tokens += e.usage.cached_tokens;
        let spent = e.usage.prompt_tokens + e.usage.completion_tokens > 0;
        match e.cost {
            Some(c) => self.cost_usd = self.cost_usd.map(|t| t + c),
            // A failed call that consumed nothing does not make the total unknown.
            None if spent => {
                self.unpriced_calls += 1;
                self.cost_usd = None;
            }
            None => {}
        }
    }
}

impl From<&UsageTotals> for UsageRecord {
    fn from(t: &UsageTotals) -> Self {
        UsageRecord {
            calls: t.calls,
            cache_hits: t.cache_hits,
            failed_calls: t.failed_calls,
            prompt_tokens: t.prompt_tokens,
            completion_tokens: t.completion_tokens,
            cached_tokens: t.cached_tokens,
            cost_usd: t.cost_usd,
        }
    }
}

#[derive(Debug)]
pub struct Accounting {
    inner: Mutex<AccountingSnapshot>,
}

impl Accounting {
    pub fn new() -> Self {
        Self {
            inner: Mutex::new(AccountingSnapshot {
                total: UsageTotals::empty(),
                ..Default::default()
            }),
        }
    }

    pub(crate) fn record(&self, metric: &str, report: &str, event: &Event) {
        let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        s.total.add(event);
        s.by_metric
            .entry(metric.to_string())
            .or_insert_with(UsageTotals::empty)
            .add(event);
        s.by_report
            .entry(report.to_string())
            .or_insert_with(UsageTotals::empty)
            .add(event);
        s.by_report_metric
            .entry(report.to_string())
            .or_default()
            .entry(metric.to_string())
            .or_insert_with(UsageTotals::empty)
            .add(event);
    }

    /// Known spending so far (unpriced calls count as 0; see `UsageTotals::cost_usd`).
    pub fn spent_usd(&self) -> f64 {
        let s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        s.total.cost_usd.unwrap_or(0.0)
    }

    /// Run totals only (cheap: no per-report maps copied).
    pub fn total(&self) -> UsageTotals {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .total
            .clone()
    }

    pub fn snapshot(&self) -> AccountingSnapshot {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(p: u64, c: u64) -> Usage {
        Usage {
            prompt_tokens: p,
            completion_tokens: c,
            cached_tokens: 0,
        }
    }

    #[test]
    fn totals_by_scope() {
        let acc = Accounting::new();
        let ok = Event {
            ok: true,
            attempts: 2,
            usage: usage(100, 10),
            cost: Some(0.5),
            ..Default::default()
        };
        acc.record("cs", "a/1", &ok);
        acc.record("wq", "a/1", &ok);
        acc.record(
            "cs",
            "a/2",
            &Event {
                cache_hit: true,
                ok: true,
                ..Default::default()
            },
        );
        acc.record(
            "cs",
            "a/2",
            &Event {
                ok: false,
                attempts: 3,
                ..Default::default()
            },
        );
        let s = acc.snapshot();
        assert_eq!(s.total.calls, 2);
        assert_eq!(s.total.cache_hits, 1);
        assert_eq!(s.total.failed_calls, 1);
        assert_eq!(s.total.attempts, 7);
        assert_eq!(s.total.prompt_tokens, 200);
        assert_eq!(s.total.cost_usd, Some(1.0));
        assert_eq!(s.metric("cs").calls, 1);
        assert_eq!(s.metric("cs").cache_hits, 1);
        assert_eq!(s.report("a/1").completion_tokens, 20);
        assert_eq!(s.report("a/2").cost_usd, Some(0.0));
        assert_eq!(s.by_report_metric["a/1"]["wq"].calls, 1);
        assert_eq!(acc.spent_usd(), 1.0);
        let rec = UsageRecord::from(&s.total);
        assert_eq!(rec.calls, 2);
        assert_eq!(rec.cost_usd, Some(1.0));
    }

    #[test]
    fn unknown_price_makes_cost_null_but_counts_tokens() {
        let acc = Accounting::new();
        acc.record(
            "cs",
            "r",
            &Event {
                ok: true,
                attempts: 1,
                usage: usage(10, 5),
                cost: None,
                ..Default::default()
            },
        );
        let s = acc.snapshot();
        assert_eq!(s.total.cost_usd, None);
        assert_eq!(s.total.unpriced_calls, 1);
        assert_eq!(s.total.prompt_tokens, 10);
    }

    #[test]
    fn estimates_and_budget_skips_are_separate() {
        let acc = Accounting::new();
        let est = TokenEstimate {
            prompt_tokens: 1000,
            completion_tokens: 400,
        };
        acc.record(
            "cs",
            "r",
            &Event {
                estimate: Some((est, Some(0.01))),
                ..Default::default()
            },
        );
        acc.record(
            "cs",
            "r",
            &Event {
                budget_skipped: true,
                ..Default::default()
            },
        );
        let s = acc.snapshot();
        assert_eq!(s.total.estimated_calls, 1);
        assert_eq!(s.total.estimated_prompt_tokens, 1000);
        assert_eq!(s.total.estimated_cost_usd, Some(0.01));
        assert_eq!(s.total.budget_skipped, 1);
        assert_eq!(s.total.calls, 0);
    }
}
