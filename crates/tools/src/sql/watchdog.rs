//! Stops a running query when the session aborts or the call runs past its time cap:
//! SQLite's interrupt makes the running statement fail with `SQLITE_INTERRUPT`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rusqlite::Connection;

use crate::ToolContext;

/// Interrupts the connection it watches on cancellation or after the cap, until dropped.
pub(super) struct Watchdog {
    task: Option<tokio::task::JoinHandle<()>>,
    timed_out: Arc<AtomicBool>,
}

impl Watchdog {
    /// Starts watching `conn` for the call `ctx`; without a runtime (a plain thread) there is
    /// nobody to watch and the query runs unbounded in time, as any blocking call would.
    pub(super) fn start(conn: &Connection, ctx: &ToolContext, cap: Duration) -> Self {
        let interrupt = conn.get_interrupt_handle();
        let cancel = ctx.cancel.clone();
        let timed_out = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&timed_out);
        let task = tokio::runtime::Handle::try_current().ok().map(|rt| {
            rt.spawn(async move {
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    _ = tokio::time::sleep(cap) => flag.store(true, Ordering::SeqCst),
                }
                interrupt.interrupt();
            })
        });
        Watchdog { task, timed_out }
    }

    /// Whether the cap ran out (rather than the session aborting).
    pub(super) fn timed_out(&self) -> bool {
        self.timed_out.load(Ordering::SeqCst)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
