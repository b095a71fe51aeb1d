//! The background writer: cache rows and journal lines leave the async tasks through
//! a channel and are written by one dedicated thread, batched (one SQLite transaction
//! and one journal flush per batch). Units never wait on disk I/O, and the writer has
//! its own SQLite connection (WAL lets readers proceed while it commits).
//!
//! Dropping the last client closes the channel and joins the thread, so everything
//! queued is on disk once the client is gone; [`Writer::flush`] waits for it earlier.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::journal::Journal;
use tvir_store::{judge_cache, Store};

/// Most jobs folded into one batch.
const MAX_BATCH: usize = 512;

pub(crate) enum Job {
    Cache(Box<judge_cache::CachedAnswer>),
    /// New texts-file lines (written first), then the journal line.
    Journal(Vec<Vec<u8>>, Vec<u8>),
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// Cache rows queued but not yet committed, so a lookup in the same run sees them.
pub(crate) type Pending = Arc<Mutex<HashMap<String, judge_cache::CachedAnswer>>>;

pub(crate) struct Writer {
    pending: Pending,
    tx: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    /// `store`: where cache rows go (a second connection is opened on file-backed
    /// stores); `journal`: where journal lines go.
    pub(crate) fn start(store: Option<Store>, journal: Option<Journal>) -> std::io::Result<Self> {
        let store = store.map(|s| {
            if s.path() == ":memory:" {
                s
            } else {
                Store::open(std::path::Path::new(s.path())).unwrap_or(s)
            }
        });
        let (tx, rx) = mpsc::channel::<Job>();
        let pending: Pending = Arc::default();
        let pending_in_thread = pending.clone();
        let thread = std::thread::Builder::new()
            .name("judge-writer".into())
            .spawn(move || run(rx, store, journal, pending_in_thread))?;
        Ok(Self {
            pending,
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// A row queued for the cache and not yet committed.
    pub(crate) fn pending(&self, key: &str) -> Option<judge_cache::CachedAnswer> {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    pub(crate) fn send(&self, job: Job) {
        if let Job::Cache(row) = &job {
            self.pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(row.key.clone(), (**row).clone());
        }
        let guard = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = guard.as_ref() {
            if tx.send(job).is_err() {
                tracing::warn!("judge writer thread is gone; a cache row or journal line was lost");
            }
        }
    }

    /// Wait until everything queued so far is written.
    pub(crate) async fn flush(&self) {
        let (ack, done) = tokio::sync::oneshot::channel();
        self.send(Job::Flush(ack));
        let _ = done.await;
    }

    /// Close the queue and wait for the thread to write what is left.
    pub(crate) fn close(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

fn run(rx: mpsc::Receiver<Job>, store: Option<Store>, journal: Option<Journal>, pending: Pending) {
    let mut warned_cache = false;
    let mut warned_journal = false;
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut rows = Vec::new();
        let mut lines = Vec::new();
        let mut texts = Vec::new();
        let mut acks = Vec::new();
        for job in batch {
            match job {
                Job::Cache(row) => rows.push(row),
                Job::Journal(new_texts, line) => {
                    texts.extend(new_texts);
                    lines.push(line);
                }
                Job::Flush(ack) => acks.push(ack),
            }
        }
        if let (Some(store), false) = (&store, rows.is_empty()) {
            let result = store.with_conn(|conn| {
                let tx = conn.unchecked_transaction()?;
                for row in &rows {
                    judge_cache::put(&tx, row)?;
                }
                tx.commit()
            });
            if let Err(e) = result {
                if !std::mem::replace(&mut warned_cache, true) {
                    tracing::warn!("judge cache write failed (answers kept, not cached): {e}");
                }
            }
            let mut pending = pending.lock().unwrap_or_else(|p| p.into_inner());
            for row in &rows {
                pending.remove(&row.key);
            }
        }
        if let (Some(journal), false) = (&journal, lines.is_empty()) {
            if let Err(e) = journal.write_lines(&texts, &lines) {
                if !std::mem::replace(&mut warned_journal, true) {
                    tracing::warn!("{e}");
                }
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}
