//! The JetStream side of the journal writer ([`JournalSink`]): every line is published to the
//! session's subject with `Nats-Msg-Id` = `<session id>:<event id>` (a retried publish is
//! deduplicated; the same event ids in another session, an import or a fork, are not) and
//! `Nats-Expected-Last-Subject-Sequence` = the stream sequence of the previous line (a second
//! or paused writer fails instead of interleaving). Publishing runs on its own thread and
//! runtime, so a writer blocked in `event` durability never starves the connection; lines go
//! out one at a time because each carries the sequence the previous acknowledgement returned.
//!
//! The lease is renewed by its own task on that thread, on its own timer, so a publish being
//! retried through a leader election never holds a renewal back. A line goes out only while
//! the last renewal is younger than 80 % of the TTL; past that, the writer waits for the
//! renewal under way (a lease bucket electing its leader), and stops only when the renewal is
//! refused or the whole TTL has passed since the last one that succeeded (the server has
//! forgotten the entry by then).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use tokio::sync::{mpsc, watch};
use turnstile_journal::{JournalSink, SinkError, SinkErrorKind, Uuid};
use turnstile_store::StoreError;

use crate::config::NatsConfig;
use crate::connect::{connect, lease_bucket};
use crate::leader;
use crate::lease::{LeaseGrant, usable};
use crate::stored_seal::SealTail;

mod renewal;
mod seal;

/// The header that names a message for the stream's duplicate window.
const MSG_ID: &str = "Nats-Msg-Id";

/// The message id of event `event` in session `session`. The duplicate window is the whole
/// stream's, so the id names the session too: an imported copy or a fork of a journal under
/// another session id carries the same event ids and must still be stored.
pub(crate) fn message_id(session: Uuid, event: Uuid) -> String {
    format!("{session}:{event}")
}

/// Longest a publish is retried (leader elections, reconnects) before the writer gives up.
const RETRY_FOR: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct State {
    /// Lines acknowledged (the writer's sequence numbers).
    acked: u64,
    /// Stream sequence of the last acknowledged line on the subject.
    last_stream_seq: u64,
    failed: Option<SinkError>,
    /// Until when a line may go out: 80 % of the TTL after the last renewal that succeeded
    /// was asked.
    lease_until: Instant,
    /// When the lease is surely gone: the whole TTL after that renewal was asked.
    lease_gone: Instant,
    /// Lines handed over and not yet acknowledged, oldest first: event id and the writer's
    /// sequence number (for the live feed, which shows a line once it is stored).
    pending: std::collections::VecDeque<(Uuid, u64)>,
}

/// Where the lease stands at a moment.
enum Standing {
    /// Lines may go out.
    Held,
    /// The last renewal is older than the usable part of the TTL; the renewal under way
    /// decides (until `gone`).
    Renewing,
    /// Surely gone: the TTL passed since the last renewal that succeeded.
    Gone,
}

impl State {
    fn standing(&self, now: Instant) -> Standing {
        if now < self.lease_until {
            Standing::Held
        } else if now < self.lease_gone {
            Standing::Renewing
        } else {
            Standing::Gone
        }
    }
}

/// The reason a writer gives when its lease lapsed without a renewal.
const LAPSED: &str = "this writer's lease lapsed: no renewal succeeded within the lease's TTL (the process was paused, cut off, or the lease bucket had no leader for that long); another process may hold the session now, so nothing more is written — resume the session to continue";

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    progress: Condvar,
    changed: watch::Sender<()>,
}

struct Line {
    id: Uuid,
    payload: bytes::Bytes,
}

/// What the publisher is handed, in journal order.
enum Item {
    /// A journal line.
    Line(Line),
    /// A seal record, covering the lines before it (`sink/seal.rs`).
    Seal(bytes::Bytes),
}

/// The JetStream replica of one session's journal (see the module doc).
#[derive(Debug)]
pub struct NatsSink {
    shared: Arc<Shared>,
    tx: Mutex<Option<mpsc::UnboundedSender<Item>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    store: String,
    session: Uuid,
    /// The lease's token: what this writer's live messages carry.
    token: String,
}

impl NatsSink {
    /// Starts the publisher of session `id`, whose subject holds `events` lines ending at
    /// stream sequence `last_stream_seq` (0: none) and whose seal ends at `seal`, under the
    /// lease `lease`.
    pub fn start(
        config: &NatsConfig,
        id: Uuid,
        events: u64,
        last_stream_seq: u64,
        seal: SealTail,
        lease: LeaseGrant,
    ) -> Result<Arc<Self>, StoreError> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                acked: events,
                last_stream_seq,
                failed: None,
                lease_until: lease.valid_until,
                lease_gone: lease.valid_until + (lease.ttl - usable(lease.ttl)),
                pending: std::collections::VecDeque::new(),
            }),
            progress: Condvar::new(),
            changed: watch::channel(()).0,
        });
        let token = lease.holder.token.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = {
            let shared = Arc::clone(&shared);
            let owned = config.clone();
            std::thread::Builder::new()
                .name("journal-nats".into())
                .spawn(move || publisher_thread(owned, id, lease, seal, shared, rx, ready_tx))
                .map_err(|e| StoreError::Remote {
                    store: config_name(config),
                    what: "starting the publisher".into(),
                    reason: e.to_string(),
                })?
        };
        let ready = ready_rx.recv().unwrap_or_else(|_| {
            Err(StoreError::Remote {
                store: config_name(config),
                what: "starting the publisher".into(),
                reason: "the publisher thread stopped".into(),
            })
        });
        let sink = Arc::new(NatsSink {
            shared,
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            store: config_name(config),
            session: id,
            token,
        });
        match ready {
            Ok(()) => Ok(sink),
            Err(e) => {
                sink.finish();
                Err(e)
            }
        }
    }

    /// Lines acknowledged and the stream sequence of the last one.
    pub fn acknowledged(&self) -> (u64, u64) {
        let st = self.lock();
        (st.acked, st.last_stream_seq)
    }

    /// The token of the lease this writer holds (fresh per taking), which its live messages
    /// carry and watchers compare with the lease bucket's holder.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Whether lines may go out now: nothing failed and the last renewal is fresh.
    pub fn holds_lease(&self) -> bool {
        let st = self.lock();
        st.failed.is_none() && matches!(st.standing(Instant::now()), Standing::Held)
    }

    /// Waits until the line of event `id` is stored; false when the sink failed first. An
    /// event never handed over (or acknowledged already) is answered at once.
    pub async fn stored(&self, id: Uuid) -> bool {
        let seq = {
            let st = self.lock();
            if st.failed.is_some() {
                return false;
            }
            st.pending
                .iter()
                .find(|(pending, _)| *pending == id)
                .map(|(_, seq)| *seq)
        };
        match seq {
            Some(seq) => self.wait_async(seq).await.is_ok(),
            None => true,
        }
    }

    /// The failure that stopped the sink, if any.
    pub fn failure(&self) -> Option<SinkError> {
        self.lock().failed.clone()
    }

    /// Publishes what was sent, gives the lease up (unless it was lost) and stops the thread.
    pub fn finish(&self) {
        drop(
            self.tx
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        );
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    fn error(&self, kind: SinkErrorKind, reason: String) -> SinkError {
        SinkError {
            kind,
            store: self.store.clone(),
            session: self.session,
            reason,
        }
    }
}

fn config_name(config: &NatsConfig) -> String {
    format!("{} stream {}", config.url, config.stream)
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn fail(shared: &Shared, st: &mut State, error: SinkError) {
    if st.failed.is_none() {
        tracing::error!(%error, "journal store writer stopped");
        st.failed = Some(error);
    }
    shared.progress.notify_all();
    shared.changed.send_replace(());
}

impl JournalSink for NatsSink {
    fn send(&self, seq: u64, id: Uuid, line: &[u8]) -> Result<(), SinkError> {
        let mut st = self.lock();
        loop {
            if let Some(e) = &st.failed {
                return Err(e.clone());
            }
            let now = Instant::now();
            match st.standing(now) {
                Standing::Held => break,
                Standing::Gone => {
                    let e = self.error(SinkErrorKind::LeaseLost, LAPSED.into());
                    fail(&self.shared, &mut st, e.clone());
                    return Err(e);
                }
                // The renewal task decides; a paused writer waking up long after its TTL
                // never gets here (gone), one behind a slow renewal waits for it.
                Standing::Renewing => {
                    let left = st.lease_gone - now;
                    st = self
                        .shared
                        .progress
                        .wait_timeout(st, left)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0;
                }
            }
        }
        let sent = self
            .tx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|tx| {
                tx.send(Item::Line(Line {
                    id,
                    payload: bytes::Bytes::copy_from_slice(line),
                }))
            });
        match sent {
            Some(Ok(())) => {
                st.pending.push_back((id, seq));
                Ok(())
            }
            _ => {
                let e = self.error(SinkErrorKind::Failed, "the publisher has stopped".into());
                fail(&self.shared, &mut st, e.clone());
                Err(e)
            }
        }
    }

    fn wait(&self, seq: u64) -> Result<(), SinkError> {
        let mut st = self.lock();
        loop {
            if st.acked >= seq {
                return Ok(());
            }
            if let Some(e) = &st.failed {
                return Err(e.clone());
            }
            st = self
                .shared
                .progress
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Queued behind the lines sent before it; refused like a line once the sink failed or
    /// the lease is surely gone (a zombie's checkpoint never goes out).
    fn seal(&self, record: &[u8]) -> Result<(), SinkError> {
        let mut st = self.lock();
        if let Some(e) = &st.failed {
            return Err(e.clone());
        }
        if matches!(st.standing(Instant::now()), Standing::Gone) {
            let e = self.error(SinkErrorKind::LeaseLost, LAPSED.into());
            fail(&self.shared, &mut st, e.clone());
            return Err(e);
        }
        let sent = self
            .tx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|tx| tx.send(Item::Seal(bytes::Bytes::copy_from_slice(record))));
        match sent {
            Some(Ok(())) => Ok(()),
            // Finished: the journal is closed, and so is its seal.
            _ => Err(self.error(SinkErrorKind::Failed, "the publisher has stopped".into())),
        }
    }

    fn wait_async(&self, seq: u64) -> turnstile_journal::sink::SinkWait<'_> {
        Box::pin(async move {
            let mut rx = self.shared.changed.subscribe();
            loop {
                {
                    let st = self.lock();
                    if st.acked >= seq {
                        return Ok(());
                    }
                    if let Some(e) = &st.failed {
                        return Err(e.clone());
                    }
                }
                if rx.changed().await.is_err() {
                    return Err(
                        self.error(SinkErrorKind::Failed, "the publisher has stopped".into())
                    );
                }
            }
        })
    }
}

/// The error of a publisher thread that could not start (its runtime or its stream).
fn not_started(config: &NatsConfig, e: impl std::fmt::Display) -> StoreError {
    StoreError::Remote {
        store: config_name(config),
        what: "starting the publisher".into(),
        reason: e.to_string(),
    }
}

fn publisher_thread(
    config: NatsConfig,
    id: Uuid,
    lease: LeaseGrant,
    seal: SealTail,
    shared: Arc<Shared>,
    rx: mpsc::UnboundedReceiver<Item>,
    ready: std::sync::mpsc::Sender<Result<(), StoreError>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(not_started(&config, e)));
            return;
        }
    };
    runtime.block_on(async move {
        let js = match connect(&config).await {
            Ok(js) => js,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let leases = match lease_bucket(&js, &config).await {
            Ok(kv) => kv,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let stream = match js.get_stream_no_info(&config.stream).await {
            Ok(stream) => stream,
            Err(e) => {
                let _ = ready.send(Err(not_started(&config, e)));
                return;
            }
        };
        let seals = match js.get_stream_no_info(config.seal_stream()).await {
            Ok(stream) => stream,
            Err(e) => {
                let _ = ready.send(Err(not_started(&config, e)));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        let publisher = Publisher {
            js,
            stream,
            subject: config.journal_subject(id),
            seals,
            seal_subject: config.seal_subject(id),
            seal: Mutex::new(Some(seal)),
            seal_in_flight: Mutex::new(None),
            store: config_name(&config),
            id,
            shared,
        };
        publisher.run(rx, leases, lease).await;
    });
}

struct Publisher {
    js: async_nats::jetstream::Context,
    /// The journal stream, for the leader's view of the subject.
    stream: async_nats::jetstream::stream::Stream<()>,
    subject: String,
    /// The seal stream, for the leader's view of the seal subject.
    seals: async_nats::jetstream::stream::Stream<()>,
    seal_subject: String,
    /// Where the stored seal ends; `None` once sealing stopped (`sink/seal.rs`).
    seal: Mutex<Option<SealTail>>,
    /// The record sent and not yet acknowledged (`sink/seal.rs`).
    seal_in_flight: Mutex<Option<seal::InFlight>>,
    store: String,
    id: Uuid,
    shared: Arc<Shared>,
}

impl Publisher {
    async fn run(
        &self,
        mut rx: mpsc::UnboundedReceiver<Item>,
        leases: async_nats::jetstream::kv::Store,
        lease: LeaseGrant,
    ) {
        let key = self.id.to_string();
        let (stop, stopped) = watch::channel(false);
        let renewal = self.spawn_renewal(&leases, lease, stopped);
        while let Some(item) = rx.recv().await {
            match item {
                Item::Line(line) => self.publish(line).await,
                Item::Seal(record) => self.publish_seal(record).await,
            }
        }
        // The last record's acknowledgement, under the lease still held.
        self.settle_seal().await;
        let _ = stop.send(true);
        let Ok(lease) = renewal.await else {
            return;
        };
        if lock(&self.shared.state).failed.is_none() {
            // Handing over: the next writer need not wait for the TTL.
            let _ = leases
                .delete_expect_revision(&key, Some(lease.revision))
                .await;
        }
    }

    fn error(&self, kind: SinkErrorKind, reason: String) -> SinkError {
        SinkError {
            kind,
            store: self.store.clone(),
            session: self.id,
            reason,
        }
    }

    /// Waits until a line may go out under the lease; false once the sink failed (the lease
    /// surely gone, or a renewal refused).
    async fn lease_held(&self) -> bool {
        let mut changed = self.shared.changed.subscribe();
        loop {
            let left = {
                let mut st = lock(&self.shared.state);
                if st.failed.is_some() {
                    return false;
                }
                let now = Instant::now();
                match st.standing(now) {
                    Standing::Held => return true,
                    Standing::Gone => {
                        let e = self.error(SinkErrorKind::LeaseLost, LAPSED.into());
                        fail(&self.shared, &mut st, e);
                        return false;
                    }
                    Standing::Renewing => st.lease_gone - now,
                }
            };
            let _ = tokio::time::timeout(left, changed.changed()).await;
        }
    }

    /// Counts the line in flight as stored at stream sequence `seq`.
    fn acknowledged(&self, seq: u64) {
        let mut st = lock(&self.shared.state);
        st.acked += 1;
        st.last_stream_seq = seq;
        st.pending.pop_front();
        self.shared.progress.notify_all();
        self.shared.changed.send_replace(());
    }

    /// The stream sequence of `line` when it is the subject's last message, stored right after
    /// `expected` by an earlier try whose acknowledgement was lost. A clustered 2.9 server
    /// checks the expected sequence before its duplicate window, so it refuses such a retry
    /// as if another writer had appended; the leader's last message tells the two apart (a
    /// line of ours carrying `expected` can only have been stored right after it).
    async fn stored_already(&self, line: &Line, expected: u64) -> Option<u64> {
        let last = match leader::last_message(&self.stream, &self.subject).await {
            Ok(last) => last?,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the subject's last line after a refused retry");
                return None;
            }
        };
        let ours = last
            .headers
            .get(MSG_ID)
            .is_some_and(|id| id.as_str() == message_id(self.id, line.id));
        (ours && last.sequence > expected).then_some(last.sequence)
    }

    async fn publish(&self, line: Line) {
        let started = Instant::now();
        let mut backoff = Duration::from_millis(20);
        loop {
            if !self.lease_held().await {
                return;
            }
            let expected = lock(&self.shared.state).last_stream_seq;
            let mut headers = HeaderMap::new();
            headers.insert(MSG_ID, message_id(self.id, line.id).as_str());
            headers.insert(
                "Nats-Expected-Last-Subject-Sequence",
                expected.to_string().as_str(),
            );
            let outcome = match self
                .js
                .publish_with_headers(self.subject.clone(), headers, line.payload.clone())
                .await
            {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            match outcome {
                Ok(ack) => {
                    self.acknowledged(ack.sequence);
                    return;
                }
                Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                    if let Some(seq) = self.stored_already(&line, expected).await {
                        self.acknowledged(seq);
                        return;
                    }
                    let mut st = lock(&self.shared.state);
                    let e = self.error(
                        SinkErrorKind::Fenced,
                        format!("another writer appended to the session after stream sequence {expected}; this writer stops without writing (resume the session to continue from the stored journal)"),
                    );
                    fail(&self.shared, &mut st, e);
                    return;
                }
                Err(e) if e.kind() == PublishErrorKind::MaxPayloadExceeded => {
                    // No retry can make it fit: say so now, not when the lease runs out.
                    let mut st = lock(&self.shared.state);
                    let e = self.error(
                        SinkErrorKind::Failed,
                        format!(
                            "event {} is a line of {} bytes, over the {} bytes a message may have on this server (its max_payload); nothing after it is written — raise max_payload in the server's configuration, then resume the session",
                            line.id,
                            line.payload.len(),
                            self.js.client().max_payload()
                        ),
                    );
                    fail(&self.shared, &mut st, e);
                    return;
                }
                Err(e) if started.elapsed() < RETRY_FOR => {
                    tracing::warn!(error = %e, "publish failed; retrying with the same message id");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
                Err(e) => {
                    let mut st = lock(&self.shared.state);
                    let e = self.error(
                        SinkErrorKind::Failed,
                        format!("publishing failed for {} s: {e}", RETRY_FOR.as_secs()),
                    );
                    fail(&self.shared, &mut st, e);
                    return;
                }
            }
        }
    }
}
