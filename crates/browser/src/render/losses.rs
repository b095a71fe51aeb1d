//! Charts that give no picture and charts kept, in the attempt's log: why each chart
//! was dropped, and whether it was lost to the page or to this render (its time limit,
//! the browser failing), which decides whether another render may capture it.

use std::time::{Duration, Instant};

use super::{note, DetectedChart, SharedLog, MAX_CHARTS_PER_PAGE};
use crate::{DroppedChart, RenderedChart};

/// A script of the page kept it busy and was stopped.
pub(super) fn busy_stopped(log: &SharedLog) {
    if let Ok(mut l) = log.lock() {
        l.stopped = true;
    }
}

/// A chart of the live page that gave no picture because of the page (blank, hidden,
/// gone, its data refused, its scripts busy): noted and listed with why.
pub(super) fn dropped(log: &SharedLog, c: &DetectedChart, how: &str, reason: String) {
    dropped_as(log, c, how, reason, false);
}

/// A chart that gave no picture, no longer waiting; `transient`: lost to this render
/// (its time limit, the browser failing), not to the page (see [`DroppedChart`]).
pub(super) fn dropped_as(
    log: &SharedLog,
    c: &DetectedChart,
    how: &str,
    reason: String,
    transient: bool,
) {
    note(
        log,
        format!("{} chart {}{how}: {reason}", c.library, c.selector),
    );
    if let Ok(mut l) = log.lock() {
        l.waiting
            .retain(|w| !(w.selector == c.selector && w.frame == c.frame));
        if l.dropped.len() < MAX_CHARTS_PER_PAGE {
            l.dropped.push(DroppedChart {
                library: c.library.clone(),
                anchor: c.anchor.filter(|a| *a >= 0.0).map(|a| a as usize),
                frame: c.frame.clone(),
                selector: c.selector.clone(),
                reason,
                transient,
            });
        }
    }
}

/// A captured chart, kept in the log so that a later failure of the attempt (the
/// page hangs) does not lose it; it is no longer waiting.
pub(super) fn kept(log: &SharedLog, r: &RenderedChart) {
    if let Ok(mut l) = log.lock() {
        l.waiting
            .retain(|w| !(w.selector == r.selector && w.frame == r.frame));
        l.captured.push(r.clone());
    }
}

/// The page's time limit is over: the chart is dropped with that reason rather than
/// captured late (the charts already captured are kept). Lost to this render when
/// the time went on slow steps (a page busy for a while, a loaded machine): another
/// render may capture it. Lost to the page when a script of the page had to be
/// stopped for keeping it busy: the same page takes the time again.
pub(super) fn out_of_time(
    log: &SharedLog,
    c: &DetectedChart,
    budget: Duration,
    deadline: Instant,
) -> bool {
    if Instant::now() < deadline {
        return false;
    }
    let stopped = log.lock().map(|l| l.stopped).unwrap_or(false);
    let why = if stopped {
        "a script of the page kept it busy and was stopped"
    } else {
        "the page's scripts or the machine were slow"
    };
    let secs = budget.as_secs_f64();
    dropped_as(
        log,
        c,
        "",
        format!("not captured: the page's time limit ({secs} s) ran out before its turn ({why})"),
        !stopped,
    );
    true
}
