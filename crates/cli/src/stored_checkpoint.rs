//! The folded state in the JetStream store's checkpoint entry: recorded from a working copy's
//! trusted replay checkpoint (`turnstile checkpoint`, and when a session closes), and adopted
//! by a host whose copy was just made from the subject, so its resume folds only the tail.
//! The entry's hash is checked against the copy before the state is used; any mismatch means
//! the usual full fold. Reading the sidecar and hashing the copy's prefix (tens of megabytes for
//! a long session) run on tokio's blocking pool, never on the worker that drives the store.

use std::path::Path;

use anyhow::{Context, Result};
use turnstile_journal::Uuid;
use turnstile_journal::layout::EVENTS_FILE;
use turnstile_replay::{Checkpoint, adopt_checkpoint};
use turnstile_store::journal_bytes;
use turnstile_store_nats::{NatsStore, StoreCheckpoint};

/// Whether a copy's resume starts from the store's folded state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adopted {
    /// The copy's own checkpoint is trusted; the store's was not needed.
    LocalKept,
    /// The store's folded state now stands as the copy's checkpoint, covering this many events.
    FromStore(u64),
    /// The store has no folded state for the session.
    NoneStored,
    /// The entry's hash is not that of the copy's prefix (or its state does not cover exactly
    /// that prefix): not used, the journal is folded whole.
    Mismatch,
}

/// `plain` (a checkpoint entry of exactly the copy in `dir`) with the copy's trusted replay
/// checkpoint as its folded state, when that checkpoint covers the same events and bytes.
pub fn with_folded_state(dir: &Path, plain: &StoreCheckpoint) -> Option<StoreCheckpoint> {
    let sidecar = Checkpoint::trusted(dir).ok()?;
    if sidecar.offset != plain.bytes || sidecar.event_count != plain.events {
        return None;
    }
    Some(StoreCheckpoint {
        folded: Some(serde_json::to_value(&sidecar).ok()?),
        ..plain.clone()
    })
}

/// After a session closed and its plain entry was recorded: adds the working copy's folded
/// state to it. A failure costs the next host a full fold only, so it is a warning.
pub async fn record_after_close(store: &NatsStore, id: Uuid, dir: &Path) {
    let plain = match store.checkpoint_entry(id).await {
        Ok(Some(entry)) if !entry.has_folded_state() => entry.checkpoint,
        Ok(_) => return,
        Err(e) => {
            eprintln!("warning: cannot read the stored checkpoint of {id}: {e}");
            return;
        }
    };
    let copy_dir = dir.to_path_buf();
    let full = tokio::task::spawn_blocking(move || with_folded_state(&copy_dir, &plain)).await;
    let Ok(Some(full)) = full else {
        return;
    };
    if let Err(e) = store.put_checkpoint(id, &full).await {
        eprintln!("warning: the folded state of {id} was not stored: {e}");
    }
}

/// Makes the store's folded state the checkpoint of the copy in `dir` when the copy has no
/// trusted one of its own and the entry's hash is that of the copy's first bytes.
pub async fn adopt(store: &NatsStore, id: Uuid, dir: &Path) -> Result<Adopted> {
    let copy_dir = dir.to_path_buf();
    let has_own = tokio::task::spawn_blocking(move || Checkpoint::trusted(&copy_dir).is_ok())
        .await
        .context("the checkpoint check stopped")?;
    if has_own {
        return Ok(Adopted::LocalKept);
    }
    let Some(entry) = store.checkpoint(id).await? else {
        return Ok(Adopted::NoneStored);
    };
    let copy_dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || adopt_entry(&copy_dir, id, entry))
        .await
        .context("the checkpoint adoption stopped")?
}

/// [`adopt`]'s file work: checks `entry` against the copy in `dir` and writes its state as
/// the copy's checkpoint.
fn adopt_entry(dir: &Path, id: Uuid, entry: StoreCheckpoint) -> Result<Adopted> {
    let Some(folded) = entry.folded else {
        return Ok(Adopted::NoneStored);
    };
    let events = dir.join(EVENTS_FILE);
    let copy = std::fs::File::open(&events)
        .with_context(|| format!("cannot read {}", events.display()))?;
    let hashed = journal_bytes::sha256_hex_of_prefix(copy, entry.bytes)
        .with_context(|| format!("cannot read {}", events.display()))?;
    if hashed.as_deref() != Some(entry.sha256.as_str()) {
        return Ok(Adopted::Mismatch);
    }
    let Ok(sidecar) = serde_json::from_value::<Checkpoint>(folded) else {
        return Ok(Adopted::Mismatch);
    };
    if sidecar.offset != entry.bytes || sidecar.event_count != entry.events {
        return Ok(Adopted::Mismatch);
    }
    let events_covered = sidecar.event_count;
    adopt_checkpoint(dir, sidecar)
        .with_context(|| format!("cannot write the checkpoint of session {id}"))?;
    Ok(Adopted::FromStore(events_covered))
}
