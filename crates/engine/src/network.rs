//! Whether this run reaches the network at all. Every cited page a report fetches is
//! counted here ([`PageTally`]); a report whose network fetches all failed before
//! any HTTP status, while no fetch of the run so far was answered by a server, is
//! evaluated as "no network": its citation units whose sources are all unread fail
//! with that reason instead of being settled as unsupported, because the missing
//! network is this machine's, not the report's. One answer anywhere in the run (a
//! 404 counts) proves the network, and from then on unreachable hosts are the
//! report's problem, scored as the metrics contract says.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use tvir_sources::{PageOutcome, PageTally};

/// The run's page outcomes, and the fetches still in flight.
#[derive(Default)]
pub struct PageWatch {
    tally: Mutex<PageTally>,
    in_flight: AtomicUsize,
    changed: tokio::sync::Notify,
}

impl PageWatch {
    /// Everything counted so far.
    pub fn tally(&self) -> PageTally {
        self.tally.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn started(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn finished(&self, outcome: &PageOutcome) {
        self.tally
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(outcome);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// For a report whose own fetches reached no server (`report.no_network()` is
    /// Some): wait until the fetches in flight elsewhere in the run are done, then
    /// the reason to fail its unread citations with, unless some server answered.
    pub(crate) async fn no_network(&self, report: &PageTally) -> Option<String> {
        let why = report.no_network()?;
        loop {
            let changed = self.changed.notified();
            if self.tally().answered > 0 {
                return None;
            }
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                return Some(why);
            }
            changed.await;
        }
    }
}
