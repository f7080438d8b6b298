//! Live OpenTelemetry traces of the sessions this process runs (`turnstile run`, `resume`, the
//! SDK server), on when the user names a receiver (`OTEL_EXPORTER_OTLP_ENDPOINT`, …; see
//! `turnstile_otel::LiveConfig`).
//!
//! Each session's events go through `turnstile_otel::LiveSession` (the export's mapping) in
//! the task that hands them to the session's printer or clients; finished spans wait in a
//! bounded queue, and one thread of this process posts them (`export --otlp`'s request, the
//! same headers and timeout). The session never waits for it: a full queue drops its oldest
//! spans, a failing receiver is warned about once and the session goes on. At the end (when
//! the [`LiveTraces`] guard is dropped) the sessions' last spans are sent, each wait bounded by
//! the request timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use turnstile_journal::{Event, Uuid};
use turnstile_otel::{Batcher, LiveConfig, LiveSession, MapOptions, SpanQueue};
use turnstile_server::watchers::{SessionWatch, SessionWatchers};

/// The live export a command holds for as long as its sessions run: dropped, it sends the
/// sessions' last spans (`LiveExport::shutdown`), so no return path can forget to. Declare it
/// after the async runtime the sessions run on, so that it is dropped first: the streams' ends
/// are tasks of that runtime.
#[derive(Debug)]
pub struct LiveTraces(Option<LiveExport>);

impl LiveTraces {
    /// The live export the environment asks for ([`LiveExport::from_env`]).
    pub fn from_env() -> LiveTraces {
        LiveTraces(LiveExport::from_env())
    }

    /// The export, when there is one.
    pub fn export(&self) -> Option<&LiveExport> {
        self.0.as_ref()
    }
}

impl Drop for LiveTraces {
    fn drop(&mut self) {
        if let Some(export) = &self.0 {
            export.shutdown();
        }
    }
}

/// The live export of this process: its queue, its sender thread, its sessions.
#[derive(Clone)]
pub struct LiveExport {
    queue: Arc<SpanQueue>,
    options: MapOptions,
    /// Sessions whose stream has not ended, and the signal that one did.
    open: Arc<(Mutex<usize>, Condvar)>,
    /// Told once the sender has sent the queue's last spans.
    done: Arc<Mutex<Option<std::sync::mpsc::Receiver<()>>>>,
    /// The longest each step of the shutdown waits.
    wait: Duration,
    endpoint: String,
}

impl std::fmt::Debug for LiveExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveExport")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl LiveExport {
    /// The live export the environment asks for; `None` when it asks for none, or when its
    /// settings cannot be used (a warning says why: telemetry never stops a session).
    pub fn from_env() -> Option<LiveExport> {
        let config = match LiveConfig::resolve(|name| std::env::var(name).ok()) {
            Ok(config) => config?,
            Err(e) => {
                eprintln!("warning: live traces are off: {e}");
                return None;
            }
        };
        match Self::start(config) {
            Ok(live) => Some(live),
            Err(e) => {
                eprintln!("warning: live traces are off: {e:#}");
                None
            }
        }
    }

    fn start(config: LiveConfig) -> Result<LiveExport> {
        let export = config.export.clone();
        let headers = crate::commands::export_otlp::headers(&export)?;
        let queue = Arc::new(SpanQueue::new(config.queue_spans));
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let sender = Sender {
            queue: Arc::clone(&queue),
            batcher: Batcher::new(&export.service_name, env!("CARGO_PKG_VERSION")),
            headers,
            config: config.clone(),
            failed: AtomicBool::new(false),
            dropped: 0,
        };
        std::thread::Builder::new()
            .name("otel-live".to_owned())
            .spawn(move || {
                sender.run();
                let _ = done_tx.send(());
            })
            .context("cannot start the thread that sends live traces")?;
        Ok(LiveExport {
            queue,
            options: MapOptions {
                capture_content: export.capture_content,
            },
            open: Arc::default(),
            done: Arc::new(Mutex::new(Some(done_rx))),
            wait: export.timeout,
            endpoint: export.endpoint,
        })
    }

    /// The watcher of session `id`'s events; `endpoint`, the `session.info` message of the
    /// endpoint in effect, for a resumed session (its stream starts after the journal's).
    pub fn watch(&self, id: Uuid, endpoint: Option<&str>) -> Box<dyn SessionWatch> {
        *self.open.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        let mut session = LiveSession::new(&id.to_string(), self.options, Arc::clone(&self.queue));
        if let Some(endpoint) = endpoint {
            session.endpoint_in_effect(endpoint);
        }
        Box::new(Watch {
            session: Some(session),
            open: Arc::clone(&self.open),
        })
    }

    /// Waits (bounded) for the sessions' streams to end, then for their last spans to be
    /// sent; what the receiver has not taken by then is left (the journal still holds it:
    /// `turnstile export --otlp` sends it with the same ids).
    fn shutdown(&self) {
        let (count, ended) = &*self.open;
        let until = Instant::now() + self.wait;
        let mut open = count.lock().unwrap_or_else(|e| e.into_inner());
        while *open > 0 {
            let now = Instant::now();
            if now >= until {
                break;
            }
            open = ended
                .wait_timeout(open, until - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(open);
        self.queue.close();
        let done = self.done.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(done) = done
            && done.recv_timeout(self.wait).is_err()
        {
            eprintln!(
                "warning: live traces: the receiver at {} did not take the last spans within {:?}; `turnstile export --otlp` sends them from the journal",
                self.endpoint, self.wait
            );
        }
    }
}

/// `events` of session `id`, watched by `live` when there is one (`endpoint` as for
/// [`LiveExport::watch`]).
pub fn watched(
    live: Option<&LiveExport>,
    id: Uuid,
    endpoint: Option<&str>,
    events: tokio::sync::mpsc::UnboundedReceiver<Arc<Event>>,
) -> tokio::sync::mpsc::UnboundedReceiver<Arc<Event>> {
    turnstile_server::watchers::tee(live.map(|live| live.watch(id, endpoint)), events)
}

impl SessionWatchers for LiveExport {
    fn open(&self, session: Uuid) -> Option<Box<dyn SessionWatch>> {
        // The server records the endpoint of each session it opens, resumed ones included.
        Some(self.watch(session, None))
    }
}

/// One session's watcher: its mapping, and its place among the open sessions.
struct Watch {
    session: Option<LiveSession>,
    open: Arc<(Mutex<usize>, Condvar)>,
}

impl SessionWatch for Watch {
    fn event(&mut self, event: &Event) {
        if let Some(session) = self.session.as_mut() {
            session.observe(event);
        }
    }

    fn end(mut self: Box<Self>) {
        if let Some(session) = self.session.take() {
            session.finish();
        }
    }
}

impl Drop for Watch {
    /// Ended or dropped (its task cancelled), the session is no longer waited for.
    fn drop(&mut self) {
        let (count, ended) = &*self.open;
        let mut open = count.lock().unwrap_or_else(|e| e.into_inner());
        *open = open.saturating_sub(1);
        ended.notify_all();
    }
}

/// The thread that posts the queue's spans.
struct Sender {
    queue: Arc<SpanQueue>,
    batcher: Batcher,
    headers: reqwest::header::HeaderMap,
    config: LiveConfig,
    failed: AtomicBool,
    dropped: u64,
}

impl Sender {
    fn run(mut self) {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("warning: live traces are off: cannot start their runtime: {e}");
                return;
            }
        };
        // Built here, not before the session starts: loading the TLS roots is most of the
        // process's start-up cost of live traces (measured in docs/performance.md).
        let client = match reqwest::Client::builder()
            .timeout(self.config.export.timeout)
            .connect_timeout(self.config.export.timeout)
            .build()
        {
            Ok(client) => client,
            Err(e) => {
                eprintln!("warning: live traces are off: cannot build the HTTP client: {e}");
                return;
            }
        };
        loop {
            let taken = self.queue.take(self.config.schedule_delay);
            if taken.dropped > 0 {
                if self.dropped == 0 {
                    eprintln!(
                        "warning: live traces: the queue of {} spans is full (the receiver at {} is slow or down); the oldest spans are dropped",
                        self.config.queue_spans, self.config.export.endpoint
                    );
                }
                self.dropped += taken.dropped;
            }
            for span in taken.spans {
                if let Some(request) = self.batcher.push(span) {
                    self.send(&runtime, &client, request);
                }
            }
            if let Some(request) = self.batcher.flush() {
                self.send(&runtime, &client, request);
            }
            if taken.last {
                break;
            }
        }
        if self.dropped > 0 {
            eprintln!(
                "warning: live traces: {} spans were dropped in all (OTEL_BSP_MAX_QUEUE_SIZE sets the queue)",
                self.dropped
            );
        }
    }

    /// Posts one request; the first failure is told, later ones are not (the session goes
    /// on, and the journal keeps everything for `export --otlp`).
    fn send(&self, runtime: &tokio::runtime::Runtime, client: &reqwest::Client, request: Vec<u8>) {
        let sent = runtime.block_on(crate::commands::export_otlp::post(
            client,
            &self.config.export,
            &self.headers,
            request,
        ));
        let failure = match sent {
            Ok(0) => return,
            Ok(rejected) => anyhow::anyhow!("the receiver rejected {rejected} spans"),
            Err(e) => e,
        };
        if !self.failed.swap(true, Ordering::Relaxed) {
            eprintln!(
                "warning: live traces: {failure:#}; the session goes on, later failures are not reported, and `turnstile export --otlp` sends the session from its journal"
            );
        }
    }
}
