//! The JetStream side of the journal writer ([`JournalSink`]): every line is published to the
//! session's subject with `Nats-Msg-Id` = the event id (a retried publish is deduplicated) and
//! `Nats-Expected-Last-Subject-Sequence` = the stream sequence of the previous line (a second
//! or paused writer fails instead of interleaving). Publishing runs on its own thread and
//! runtime, so a writer blocked in `event` durability never starves the connection; lines go
//! out one at a time because each carries the sequence the previous acknowledgement returned.
//! The same thread renews the lease; a line is refused once the lease may have lapsed.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::kv::UpdateErrorKind;
use tokio::sync::{mpsc, watch};
use turnstile_journal::{JournalSink, SinkError, SinkErrorKind, Uuid};
use turnstile_store::StoreError;

use crate::config::NatsConfig;
use crate::connect::{connect, lease_bucket};
use crate::leader;
use crate::lease::{LeaseGrant, usable};

/// The header that names a message for the stream's duplicate window: the event id.
const MSG_ID: &str = "Nats-Msg-Id";

/// Longest a publish is retried (leader elections, reconnects) before the writer gives up.
const RETRY_FOR: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct State {
    /// Lines acknowledged (the writer's sequence numbers).
    acked: u64,
    /// Stream sequence of the last acknowledged line on the subject.
    last_stream_seq: u64,
    failed: Option<SinkError>,
    lease_until: Instant,
}

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

/// The JetStream replica of one session's journal (see the module doc).
#[derive(Debug)]
pub struct NatsSink {
    shared: Arc<Shared>,
    tx: Mutex<Option<mpsc::UnboundedSender<Line>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    store: String,
    session: Uuid,
}

impl NatsSink {
    /// Starts the publisher of session `id`, whose subject holds `events` lines ending at
    /// stream sequence `last_stream_seq` (0: none), under the lease `lease`.
    pub fn start(
        config: &NatsConfig,
        id: Uuid,
        events: u64,
        last_stream_seq: u64,
        lease: LeaseGrant,
    ) -> Result<Arc<Self>, StoreError> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                acked: events,
                last_stream_seq,
                failed: None,
                lease_until: lease.valid_until,
            }),
            progress: Condvar::new(),
            changed: watch::channel(()).0,
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = {
            let shared = Arc::clone(&shared);
            let owned = config.clone();
            std::thread::Builder::new()
                .name("journal-nats".into())
                .spawn(move || publisher_thread(owned, id, lease, shared, rx, ready_tx))
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
    fn send(&self, _seq: u64, id: Uuid, line: &[u8]) -> Result<(), SinkError> {
        let mut st = self.lock();
        if let Some(e) = &st.failed {
            return Err(e.clone());
        }
        if Instant::now() >= st.lease_until {
            let e = self.error(
                SinkErrorKind::LeaseLost,
                "this writer's lease lapsed (the process was paused or cut off longer than the lease); another process may hold the session now, so nothing more is written — resume the session to continue".into(),
            );
            fail(&self.shared, &mut st, e.clone());
            return Err(e);
        }
        let sent = self
            .tx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|tx| {
                tx.send(Line {
                    id,
                    payload: bytes::Bytes::copy_from_slice(line),
                })
            });
        match sent {
            Some(Ok(())) => Ok(()),
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
    shared: Arc<Shared>,
    rx: mpsc::UnboundedReceiver<Line>,
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
        let _ = ready.send(Ok(()));
        let publisher = Publisher {
            js,
            stream,
            subject: config.journal_subject(id),
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
    store: String,
    id: Uuid,
    shared: Arc<Shared>,
}

impl Publisher {
    async fn run(
        &self,
        mut rx: mpsc::UnboundedReceiver<Line>,
        leases: async_nats::jetstream::kv::Store,
        mut lease: LeaseGrant,
    ) {
        let key = self.id.to_string();
        let value: bytes::Bytes = serde_json::to_vec(&lease.holder).unwrap_or_default().into();
        let mut renew = tokio::time::interval(lease.ttl / 4);
        renew.tick().await;
        loop {
            tokio::select! {
                line = rx.recv() => match line {
                    Some(line) => self.publish(line).await,
                    None => break,
                },
                _ = renew.tick() => self.renew(&leases, &key, &value, &mut lease).await,
            }
        }
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

    async fn renew(
        &self,
        leases: &async_nats::jetstream::kv::Store,
        key: &str,
        value: &bytes::Bytes,
        lease: &mut LeaseGrant,
    ) {
        if lock(&self.shared.state).failed.is_some() {
            return;
        }
        let asked = Instant::now();
        match leases.update(key, value.clone(), lease.revision).await {
            Ok(revision) => {
                lease.revision = revision;
                lock(&self.shared.state).lease_until = asked + usable(lease.ttl);
            }
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                let mut st = lock(&self.shared.state);
                let e = self.error(
                    SinkErrorKind::LeaseLost,
                    "the lease was taken by another process (this one was paused or cut off longer than the lease); nothing more is written — resume the session to continue".into(),
                );
                fail(&self.shared, &mut st, e);
            }
            // The server may be electing a leader: the lease deadline decides.
            Err(e) => tracing::warn!(error = %e, "lease renewal failed; retrying"),
        }
    }

    /// Counts the line in flight as stored at stream sequence `seq`.
    fn acknowledged(&self, seq: u64) {
        let mut st = lock(&self.shared.state);
        st.acked += 1;
        st.last_stream_seq = seq;
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
            .is_some_and(|id| id.as_str() == line.id.to_string());
        (ours && last.sequence > expected).then_some(last.sequence)
    }

    async fn publish(&self, line: Line) {
        let started = Instant::now();
        let mut backoff = Duration::from_millis(20);
        loop {
            let expected = {
                let mut st = lock(&self.shared.state);
                if st.failed.is_some() {
                    return;
                }
                if Instant::now() >= st.lease_until {
                    let e = self.error(
                        SinkErrorKind::LeaseLost,
                        "this writer's lease lapsed before the line was stored; nothing more is written — resume the session to continue".into(),
                    );
                    fail(&self.shared, &mut st, e);
                    return;
                }
                st.last_stream_seq
            };
            let mut headers = HeaderMap::new();
            headers.insert(MSG_ID, line.id.to_string().as_str());
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
