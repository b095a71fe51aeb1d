//! The result of asking the judge about one unit, and the [`AskUnit`] seam through
//! which judge extraction asks. Kept below the engine so extraction needs neither
//! the engine nor the per-report flow that calls it.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::record::{UnitRecord, UnitStatus, UsageRecord};
use tvir_rubric::{Rubric, UnitInputs};

/// Units of one metric, each with the usage of its judge answer (None when no answer
/// came back: rules, computed metrics, failures).
pub(crate) type JudgedUnits = Vec<(UnitRecord, Option<UsageRecord>)>;

/// Reason of a unit that waits for a batch wave (batch mode; never written to
/// final outputs, which are only written once nothing is pending).
pub const PENDING_REASON: &str = "pending: waiting for a batch wave";

pub(crate) fn is_pending(unit: &UnitRecord) -> bool {
    unit.status == UnitStatus::Skipped && unit.reason.as_deref() == Some(PENDING_REASON)
}

/// The result of asking for one unit.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    Answer { value: Value, usage: UsageRecord },
    Failed(String),
    Skipped(String),
}

/// Asks the judge about one unit (the engine's `ask`: mode, concurrency bound,
/// cache, accounting, answer validation); `report` and `unit` label the request.
pub(crate) trait AskUnit: Sync {
    fn ask_unit<'a>(
        &'a self,
        rubric: &'a Rubric,
        inputs: &'a UnitInputs,
        report: &'a str,
        unit: &'a str,
        sample: u32,
    ) -> BoxFuture<'a, Outcome>;
}
