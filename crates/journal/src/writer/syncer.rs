//! The syncer thread: "durable up to N" requests become one fsync covering every line written
//! so far (group commit); a failed fsync poisons the writer.

use super::shared::{Shared, lock, poison};

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
                if due && let Some((root, record)) = st.index_record(&shared.file) {
                    drop(st);
                    crate::index::append(&root, &record);
                    st = lock(&shared.state);
                }
            }
            Err(e) => poison(shared, &mut st, format!("fsync failed: {e}")),
        }
    }
}
