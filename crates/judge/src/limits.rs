//! Throughput limits shared by every clone of a client: token buckets for requests
//! and tokens per minute (the token bucket accepts corrections once the server reports
//! real usage) and an adaptive pacer that spaces request starts while 429s keep
//! arriving, and the in-flight limit, which halves when requests time out.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

/// How many requests may be in flight at once: `--concurrency` at most, halved
/// whenever a request times out (a server that queues requests it cannot serve,
/// such as a single-slot local server, makes every queued request wait behind the
/// others until they all time out and are sent again), and raised by one after a
/// full window of answers without a timeout, back up to the configured maximum.
///
/// With [`InFlightLimit::slow_start`] it also starts at one request and doubles
/// after each window of quick answers (TCP's slow start), so a server's first
/// replies (a refused parameter, its speed) are known before it is sent a burst,
/// and it halves before timeouts do when answers come back queued: slower than half
/// the timeout and three times the quickest answer seen (a slow but parallel server
/// answers slowly at any load and is not throttled for it).
#[derive(Debug)]
pub struct InFlightLimit {
    semaphore: Semaphore,
    max: usize,
    state: Mutex<LimitState>,
}

#[derive(Debug)]
struct LimitState {
    limit: usize,
    /// Permits to retire as they come back (a shrink while they were in use).
    debt: usize,
    /// Answers since the last change of the limit.
    answered: usize,
    /// Bumped on every halving: requests sent before it timed out in the same
    /// congestion and count once (the limit halves once per episode, not once per
    /// queued request).
    epoch: u64,
    /// Doubling per window until the first sign of congestion.
    slow_start: bool,
    /// The quickest answer seen, the server's latency without a queue.
    quickest: Option<Duration>,
}

/// A slot of the limit, given back when dropped (or retired if the limit shrank
/// while it was taken).
#[derive(Debug)]
pub struct Slot<'a> {
    permit: Option<SemaphorePermit<'a>>,
    owner: &'a InFlightLimit,
    epoch: u64,
}

impl Slot<'_> {
    /// The slot is used for another request (a retry that kept it).
    pub fn renew(&mut self) {
        self.epoch = self.owner.lock().epoch;
    }

    /// The congestion episode this slot's request was sent in.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            let mut st = self.owner.lock();
            if st.debt > 0 {
                st.debt -= 1;
                permit.forget();
            }
        }
    }
}

impl InFlightLimit {
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        Self {
            semaphore: Semaphore::new(max),
            max,
            state: Mutex::new(LimitState {
                limit: max,
                debt: 0,
                answered: 0,
                epoch: 0,
                slow_start: false,
                quickest: None,
            }),
        }
    }

    /// Starts at one request in flight and grows as described on the type.
    pub fn slow_start(max: usize) -> Self {
        let max = max.max(1);
        Self {
            semaphore: Semaphore::new(1),
            max,
            state: Mutex::new(LimitState {
                limit: 1,
                debt: 0,
                answered: 0,
                epoch: 0,
                slow_start: true,
                quickest: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LimitState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub async fn acquire(&self) -> Slot<'_> {
        let permit = self
            .semaphore
            .acquire()
            .await
            .expect("the semaphore is never closed");
        Slot {
            permit: Some(permit),
            owner: self,
            epoch: self.lock().epoch,
        }
    }

    /// Whether slots in use are owed back (the limit shrank while they were out):
    /// a retry holding one should give it back and queue for a new one.
    pub fn owes(&self) -> bool {
        self.lock().debt > 0
    }

    /// The current limit.
    pub fn limit(&self) -> usize {
        self.lock().limit
    }

    /// The request sent on `slot` timed out: halve the limit (never below one),
    /// unless it was sent before the last halving. Returns the new limit when it
    /// changed.
    pub fn on_timeout(&self, slot: &Slot<'_>) -> Option<usize> {
        let mut st = self.lock();
        self.halve(&mut st, slot.epoch)
    }

    fn halve(&self, st: &mut LimitState, epoch: u64) -> Option<usize> {
        st.answered = 0;
        st.slow_start = false;
        if st.limit <= 1 || epoch != st.epoch {
            return None;
        }
        st.epoch += 1;
        let new = (st.limit / 2).max(1);
        let remove = st.limit - new;
        let forgotten = self.semaphore.forget_permits(remove);
        st.debt += remove - forgotten;
        st.limit = new;
        Some(new)
    }

    /// An answer came back after `latency` to a request sent in congestion episode
    /// `epoch` with attempt timeout `timeout`. A queued answer (see the type) halves
    /// the limit and returns the new one; otherwise, after a whole window of answers
    /// (as many as the limit), the limit grows: doubled during slow start while
    /// answers take under a quarter of the timeout, else by one.
    pub fn on_answer(&self, epoch: u64, latency: Duration, timeout: Duration) -> Option<usize> {
        let mut st = self.lock();
        let quickest = st.quickest.map_or(latency, |q| q.min(latency));
        st.quickest = Some(quickest);
        if latency > timeout / 2 && latency > quickest * 3 {
            return self.halve(&mut st, epoch);
        }
        if st.limit >= self.max {
            return None;
        }
        st.answered += 1;
        if st.answered < st.limit {
            return None;
        }
        st.answered = 0;
        let grow = if st.slow_start && latency < timeout / 4 {
            st.limit
        } else {
            1
        };
        let new = (st.limit + grow).min(self.max);
        let mut add = new - st.limit;
        st.limit = new;
        let forgiven = add.min(st.debt);
        st.debt -= forgiven;
        add -= forgiven;
        if add > 0 {
            self.semaphore.add_permits(add);
        }
        None
    }
}

/// A per-minute budget refilled continuously. Burst capacity is a sixth of the
/// minute's budget (ten seconds' worth), so `--rpm 600` never fires 600 requests in
/// the first instant. The level may go negative after a correction: later callers
/// then wait for the debt to be repaid.
#[derive(Debug)]
pub struct TokenBucket {
    state: Mutex<BucketState>,
    capacity: f64,
    per_second: f64,
}

#[derive(Debug)]
struct BucketState {
    level: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn per_minute(limit: u32) -> Self {
        let limit = f64::from(limit.max(1));
        let capacity = (limit / 6.0).max(1.0);
        Self {
            state: Mutex::new(BucketState {
                level: capacity,
                last: Instant::now(),
            }),
            capacity,
            per_second: limit / 60.0,
        }
    }

    fn refill(&self, state: &mut BucketState, now: Instant) {
        let elapsed = now.saturating_duration_since(state.last).as_secs_f64();
        state.level = (state.level + elapsed * self.per_second).min(self.capacity);
        state.last = now;
    }

    /// Take `amount` (requests or tokens), waiting until it is available. A single
    /// request larger than the burst capacity goes through once the bucket is full
    /// (it could never fit otherwise) and leaves it in debt.
    pub async fn acquire(&self, amount: f64) {
        loop {
            let wait = {
                let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                self.refill(&mut state, Instant::now());
                let need = amount.min(self.capacity);
                if state.level >= need {
                    state.level -= amount;
                    return;
                }
                Duration::from_secs_f64((need - state.level) / self.per_second)
            };
            tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
        }
    }

    /// Correct an earlier `acquire` once the real amount is known: `delta` > 0 takes
    /// more, < 0 gives back.
    pub fn adjust(&self, delta: f64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.refill(&mut state, Instant::now());
        state.level = (state.level - delta).min(self.capacity);
    }

    #[cfg(test)]
    fn level(&self) -> f64 {
        let mut state = self.state.lock().unwrap();
        self.refill(&mut state, Instant::now());
        state.level
    }
}

/// Adaptive slowdown: a 429 that follows another 429 (no success in between, across
/// the whole client) raises the level (up to 6); every success lowers it by one. At
/// level `n > 0` request starts are spaced `base * 2^(n-1)` apart (25 ms .. 800 ms
/// with the default base), so a server that keeps refusing sees fewer attempts per
/// second, while isolated 429s among successes cost nothing.
#[derive(Debug)]
pub struct Pacer {
    state: Mutex<PacerState>,
    base: Duration,
}

#[derive(Debug)]
struct PacerState {
    level: u32,
    /// 429s since the last success.
    streak: u32,
    next_start: Instant,
}

const MAX_PACER_LEVEL: u32 = 6;

impl Pacer {
    pub fn new(base: Duration) -> Self {
        Self {
            state: Mutex::new(PacerState {
                level: 0,
                streak: 0,
                next_start: Instant::now(),
            }),
            base,
        }
    }

    pub fn level(&self) -> u32 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).level
    }

    pub fn spacing(&self) -> Duration {
        let level = self.level();
        if level == 0 {
            Duration::ZERO
        } else {
            self.base * (1u32 << (level - 1))
        }
    }

    pub fn on_rate_limited(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.streak = s.streak.saturating_add(1);
        if s.streak >= 2 {
            s.level = (s.level + 1).min(MAX_PACER_LEVEL);
        }
    }

    pub fn on_success(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.streak = 0;
        s.level = s.level.saturating_sub(1);
    }

    /// Wait for this request's start slot (immediately when not slowed down).
    pub async fn wait_turn(&self) {
        let slot = {
            let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if s.level == 0 {
                return;
            }
            let spacing = self.base * (1u32 << (s.level - 1));
            let now = Instant::now();
            let slot = s.next_start.max(now);
            s.next_start = slot + spacing;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bucket_bursts_then_paces() {
        let bucket = TokenBucket::per_minute(60_000); // 1000/s, burst 10000
        let start = Instant::now();
        bucket.acquire(10_000.0).await;
        let burst = start.elapsed();
        bucket.acquire(100.0).await;
        let total = start.elapsed();
        // The burst is immediate; the next 100 need about 100 ms of refill.
        assert!(total - burst >= Duration::from_millis(90), "{total:?}");
        assert!(total < Duration::from_secs(5), "{total:?}");
    }

    #[tokio::test]
    async fn oversized_request_passes_when_full_and_leaves_debt() {
        let bucket = TokenBucket::per_minute(60); // 1/s, capacity 10
        bucket.acquire(25.0).await;
        let level = bucket.level();
        assert!((level + 15.0).abs() < 0.1, "{level}");
    }

    #[tokio::test]
    async fn adjust_refunds_and_charges() {
        let bucket = TokenBucket::per_minute(60); // capacity 10, 1/s
        bucket.acquire(8.0).await;
        bucket.adjust(-5.0);
        assert!((bucket.level() - 7.0).abs() < 0.1);
        bucket.adjust(10.0);
        assert!((bucket.level() + 3.0).abs() < 0.1);
        // Refunds never overfill.
        bucket.adjust(-100.0);
        assert!(bucket.level() <= 10.0);
    }

    #[tokio::test]
    async fn pacer_slows_on_429s_and_recovers() {
        let pacer = Pacer::new(Duration::from_millis(5));
        assert_eq!(pacer.spacing(), Duration::ZERO);
        // Isolated 429s between successes do not slow anything down.
        for _ in 0..5 {
            pacer.on_rate_limited();
            pacer.on_success();
        }
        assert_eq!(pacer.level(), 0);
        for _ in 0..10 {
            pacer.on_rate_limited();
        }
        assert_eq!(pacer.level(), MAX_PACER_LEVEL);
        assert_eq!(pacer.spacing(), Duration::from_millis(160));
        for _ in 0..4 {
            pacer.on_success();
        }
        // Level 2: starts 10 ms apart.
        assert_eq!(pacer.spacing(), Duration::from_millis(10));
        let start = Instant::now();
        for _ in 0..4 {
            pacer.wait_turn().await;
        }
        assert!(start.elapsed() >= Duration::from_millis(30));
        pacer.on_success();
        pacer.on_success();
        assert_eq!(pacer.level(), 0);
        let start = Instant::now();
        pacer.wait_turn().await;
        assert!(start.elapsed() < Duration::from_millis(500));
    }

    #[tokio::test]
    async fn in_flight_limit_halves_on_timeouts_and_recovers() {
        let lim = InFlightLimit::new(8);
        // Eight slots taken, then a timeout: the limit halves, and the permits come
        // back retired, so only four can be taken afterwards.
        let slots: Vec<Slot<'_>> = futures_take(&lim, 8).await;
        assert_eq!(lim.on_timeout(&slots[0]), Some(4));
        // The other seven were sent in the same episode: no further halving.
        assert_eq!(lim.on_timeout(&slots[1]), None);
        assert!(lim.owes());
        drop(slots);
        assert!(!lim.owes());
        assert_eq!(lim.semaphore.available_permits(), 4);
        for expect in [Some(2), Some(1), None] {
            let s = lim.acquire().await;
            assert_eq!(lim.on_timeout(&s), expect, "never below one");
        }
        assert_eq!(lim.semaphore.available_permits(), 1);
        // One answer at limit 1 raises it to 2; then two answers to 3; and so on,
        // never past the maximum.
        let (quick, timeout) = (Duration::from_millis(10), Duration::from_secs(1));
        let epoch = lim.lock().epoch;
        lim.on_answer(epoch, quick, timeout);
        assert_eq!(lim.limit(), 2);
        assert_eq!(lim.semaphore.available_permits(), 2);
        for _ in 0..200 {
            lim.on_answer(epoch, quick, timeout);
        }
        assert_eq!(lim.limit(), 8);
        assert_eq!(lim.semaphore.available_permits(), 8);
    }

    #[tokio::test]
    async fn growth_while_slots_are_retired_pays_the_debt_first() {
        let lim = InFlightLimit::new(4);
        let mut slots = futures_take(&lim, 4).await;
        assert_eq!(lim.on_timeout(&slots[0]), Some(2)); // two permits owed
                                                        // A kept slot renewed for a retry belongs to the new episode.
        slots[1].renew();
        assert_eq!(slots[1].epoch, 1);
        let (quick, timeout) = (Duration::from_millis(10), Duration::from_secs(1));
        lim.on_answer(1, quick, timeout);
        lim.on_answer(1, quick, timeout); // limit 3: one debt forgiven instead of a new permit
        assert_eq!(lim.limit(), 3);
        drop(slots); // four come back, one still owed
        assert_eq!(lim.semaphore.available_permits(), 3);
    }

    #[tokio::test]
    async fn slow_start_doubles_on_quick_answers_and_halves_on_queued_ones() {
        let lim = InFlightLimit::slow_start(16);
        let timeout = Duration::from_secs(100);
        assert_eq!(lim.limit(), 1);
        assert_eq!(lim.semaphore.available_permits(), 1);
        // Quick answers: 1 -> 2 -> 4 -> 8 after windows of 1, 2 and 4.
        let quick = Duration::from_secs(5);
        for (answers, expect) in [(1, 2), (2, 4), (4, 8)] {
            for _ in 0..answers {
                assert_eq!(lim.on_answer(0, quick, timeout), None);
            }
            assert_eq!(lim.limit(), expect);
            assert_eq!(lim.semaphore.available_permits(), expect);
        }
        // An answer over a quarter of the timeout ends the doubling: +1 per window.
        for _ in 0..8 {
            lim.on_answer(0, Duration::from_secs(30), timeout);
        }
        assert_eq!(lim.limit(), 9);
        // A slow answer that is not queued (under three times the quickest) is no
        // congestion...
        let fast_lim = InFlightLimit::slow_start(16);
        assert_eq!(
            fast_lim.on_answer(0, Duration::from_secs(55), timeout),
            None
        );
        assert_eq!(
            fast_lim.on_answer(0, Duration::from_secs(60), timeout),
            None
        );
        assert_eq!(
            fast_lim.limit(),
            2,
            "slow answers grow the limit by one a window"
        );
        // ...a queued one (over half the timeout and three times the quickest)
        // halves the limit once per episode.
        assert_eq!(lim.on_answer(0, Duration::from_secs(60), timeout), Some(4));
        assert_eq!(lim.on_answer(0, Duration::from_secs(70), timeout), None);
        assert_eq!(lim.limit(), 4);
        // After congestion, growth is additive even for quick answers.
        for _ in 0..4 {
            lim.on_answer(1, quick, timeout);
        }
        assert_eq!(lim.limit(), 5);
    }

    async fn futures_take(lim: &InFlightLimit, n: usize) -> Vec<Slot<'_>> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(lim.acquire().await);
        }
        v
    }
}
