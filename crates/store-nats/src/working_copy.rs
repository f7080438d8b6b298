//! The local working copy of a stored journal: the session directory the engine runs in,
//! made equal to the subject before a session opens. With a checkpoint whose hash matches the
//! copy's prefix, only the messages after it are fetched; any other copy is rewritten from
//! the subject (a copy is never trusted over the store).

use std::io::{Seek, SeekFrom, Write};

use async_nats::jetstream::consumer::DeliverPolicy;
use turnstile_journal::layout::EVENTS_FILE;
use turnstile_journal::session_dir::{Access, SessionDir};
use turnstile_journal::{StateRoot, Uuid};
use turnstile_store::{StoreError, journal_bytes};

use crate::read::Read;
use crate::records::StoreCheckpoint;

/// What a sync found.
#[derive(Debug, Clone, Copy)]
pub struct Synced {
    /// Lines in the journal.
    pub events: u64,
    /// Stream sequence of its last line.
    pub last_stream_seq: u64,
    /// Lines fetched from the store (the rest came from the copy, vouched by a checkpoint).
    pub fetched: u64,
}

/// The working copy's journal file of `id` under `root`, open for reading, if there is one.
fn open_copy(root: &StateRoot, id: Uuid) -> Result<Option<std::fs::File>, StoreError> {
    let paths = root.session(id);
    if std::fs::symlink_metadata(&paths.dir).is_err() {
        return Ok(None);
    }
    let dir = SessionDir::open(&paths.dir)?;
    if dir.stat(EVENTS_FILE)?.is_none() {
        return Ok(None);
    }
    Ok(Some(dir.open_file(EVENTS_FILE, Access::Read)?))
}

/// The size of the working copy of `id` under `root`; `None` when there is no copy.
pub(crate) fn copy_size(root: &StateRoot, id: Uuid) -> Result<Option<u64>, StoreError> {
    let Some(file) = open_copy(root, id)? else {
        return Ok(None);
    };
    let size = file.metadata().map_err(|source| StoreError::Io {
        path: root.session(id).events,
        source,
    })?;
    Ok(Some(size.len()))
}

/// The SHA-256 of the first `len` bytes of the working copy of `id`, read in bounded memory on
/// tokio's blocking pool; `None` when there is no copy or it is shorter.
pub(crate) async fn copy_prefix_hash(
    root: &StateRoot,
    id: Uuid,
    len: u64,
) -> Result<Option<String>, StoreError> {
    let Some(file) = open_copy(root, id)? else {
        return Ok(None);
    };
    let io = |source| StoreError::Io {
        path: root.session(id).events,
        source,
    };
    tokio::task::spawn_blocking(move || journal_bytes::sha256_hex_of_prefix(file, len))
        .await
        .map_err(|e| io(std::io::Error::other(e)))?
        .map_err(io)
}

/// Makes the working copy of `id` under `root` equal to the subject, which ends at stream
/// sequence `last` (0: empty). The lines fetched go to the file as they arrive: a journal of
/// any size is synced in bounded memory, and a read that fails part-way leaves whole lines of
/// the subject's prefix, which the next sync checks like any copy.
pub(crate) async fn sync(
    client: &async_nats::Client,
    stream: &async_nats::jetstream::stream::Stream,
    subject: &str,
    root: &StateRoot,
    id: Uuid,
    last: u64,
    checkpoint: Option<StoreCheckpoint>,
) -> Result<Synced, StoreError> {
    let copy = copy_size(root, id)?;
    let vouched = match (&checkpoint, copy) {
        (Some(cp), Some(size)) if cp.stream_seq <= last && size >= cp.bytes => {
            let prefix = copy_prefix_hash(root, id, cp.bytes).await?;
            (prefix.as_deref() == Some(cp.sha256.as_str())).then(|| cp.clone())
        }
        _ => None,
    };
    let (keep, kept_events, from, kept_seq) = match &vouched {
        Some(cp) => (cp.bytes, cp.events, cp.stream_seq + 1, cp.stream_seq),
        None => (0, 0, 1, 0),
    };
    if copy == Some(keep) && last < from {
        return Ok(Synced {
            events: kept_events,
            last_stream_seq: kept_seq,
            fetched: 0,
        });
    }
    let paths = if copy.is_some() {
        root.session(id)
    } else {
        root.create_session(id)?
    };
    let io = |source| StoreError::Io {
        path: paths.events.clone(),
        source,
    };
    let dir = SessionDir::open(&paths.dir)?;
    let mut file = dir.open_file(EVENTS_FILE, Access::ReadWrite)?;
    file.set_len(keep).map_err(io)?;
    file.seek(SeekFrom::End(0)).map_err(io)?;
    let mut out = std::io::BufWriter::new(&mut file);
    let (mut fetched, mut last_seq) = (0u64, kept_seq);
    let mut write_failed = None;
    let read = if last >= from {
        Read::to(
            subject.to_owned(),
            DeliverPolicy::ByStartSequence {
                start_sequence: from,
            },
            last,
        )
        .each(client, stream, |message| {
            match out.write_all(&message.payload) {
                Ok(()) => {
                    fetched += 1;
                    last_seq = message.seq;
                    Ok(())
                }
                Err(e) => {
                    write_failed = Some(e);
                    Err("the working copy could not be written".to_owned())
                }
            }
        })
        .await
    } else {
        Ok(())
    };
    if let Some(e) = write_failed {
        return Err(io(e));
    }
    read.map_err(|reason| StoreError::Remote {
        store: stream_name(stream),
        what: format!("reading session {id}"),
        reason,
    })?;
    out.flush().map_err(io)?;
    drop(out);
    file.sync_data().map_err(io)?;
    Ok(Synced {
        events: kept_events + fetched,
        last_stream_seq: last_seq,
        fetched,
    })
}

fn stream_name(stream: &async_nats::jetstream::stream::Stream) -> String {
    stream.cached_info().config.name.clone()
}
