//! The syncer thread: "durable up to N" requests become one fsync covering every line written
//! so far (group commit); a failed fsync poisons the writer.

use std::sync::{Mutex, MutexGuard};

use super::index_facts::index_record;
use super::{Shared, State};

pub(super) fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock cannot leave State inconsistent (plain counters).
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(super) fn poison(shared: &Shared, st: &mut State, reason: String) {
    if st.poisoned.is_none() {
        tracing::error!(journal = %shared.path.display(), %reason, "journal writer poisoned");
        st.poisoned = Some(reason);
    }
    shared.progress.notify_all();
    shared.durable_tx.send_replace((st.durable, true));
}

pub(super) fn syncer_loop(shared: &Shared) {
    let mut st = lock(&shared.state);
    loop {
        while st.requested <= st.durable && !st.closing && st.poisoned.is_none() {
            st = shared
                .work
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if st.poisoned.is_some() || (st.closing && st.requested <= st.durable) {
            return;
        }
        // Group commit: everything written so far is covered by this one fsync.
        let target = st.written;
        drop(st);
        let result = shared.file.sync_data();
        st = lock(&shared.state);
        match result {
            Ok(()) => {
                st.durable = st.durable.max(target);
                shared.progress.notify_all();
                shared.durable_tx.send_replace((st.durable, false));
                // After the waiters are woken, so the index costs them nothing.
                let due = st
                    .facts
                    .as_mut()
                    .is_some_and(|f| std::mem::take(&mut f.due));
                if due && let Some((root, record)) = index_record(shared, &st) {
                    drop(st);
                    crate::index::append(&root, &record);
                    st = lock(&shared.state);
                }
            }
            Err(e) => poison(shared, &mut st, format!("fsync failed: {e}")),
        }
    }
}
