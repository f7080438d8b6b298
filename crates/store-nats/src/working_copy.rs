//! The local working copy of a stored journal: the session directory the engine runs in,
//! made equal to the subject before a session opens. With a checkpoint whose hash matches the
//! copy's prefix, only the messages after it are fetched; any other copy is rewritten from
//! the subject (a copy is never trusted over the store).

use std::io::{Read, Seek, SeekFrom, Write};

use async_nats::jetstream::consumer::DeliverPolicy;
use turnstile_journal::layout::EVENTS_FILE;
use turnstile_journal::session_dir::{Access, SessionDir};
use turnstile_journal::{StateRoot, Uuid};
use turnstile_store::{StoreError, journal_bytes};

use crate::read::read_until;
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

/// The bytes of the working copy of `id` under `root`, if there is one.
pub(crate) fn read_copy(root: &StateRoot, id: Uuid) -> Result<Option<Vec<u8>>, StoreError> {
    let paths = root.session(id);
    if std::fs::symlink_metadata(&paths.dir).is_err() {
        return Ok(None);
    }
    let dir = SessionDir::open(&paths.dir)?;
    if dir.stat(EVENTS_FILE)?.is_none() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    dir.open_file(EVENTS_FILE, Access::Read)?
        .read_to_end(&mut bytes)
        .map_err(|source| StoreError::Io {
            path: paths.events.clone(),
            source,
        })?;
    Ok(Some(bytes))
}

/// Makes the working copy of `id` under `root` equal to the subject, which ends at stream
/// sequence `last` (0: empty).
pub(crate) async fn sync(
    client: &async_nats::Client,
    stream: &async_nats::jetstream::stream::Stream,
    subject: &str,
    root: &StateRoot,
    id: Uuid,
    last: u64,
    checkpoint: Option<StoreCheckpoint>,
) -> Result<Synced, StoreError> {
    let copy = read_copy(root, id)?;
    let vouched = match (&checkpoint, &copy) {
        (Some(cp), Some(bytes))
            if cp.stream_seq <= last
                && bytes.len() as u64 >= cp.bytes
                && journal_bytes::sha256_hex(&bytes[..cp.bytes as usize]) == cp.sha256 =>
        {
            Some(cp.clone())
        }
        _ => None,
    };
    let (keep, kept_events, from) = match &vouched {
        Some(cp) => (cp.bytes, cp.events, cp.stream_seq + 1),
        None => (0, 0, 1),
    };
    let fetched = if last >= from {
        read_until(
            client,
            stream,
            subject.to_owned(),
            DeliverPolicy::ByStartSequence {
                start_sequence: from,
            },
            last,
        )
        .await
        .map_err(|reason| StoreError::Remote {
            store: stream_name(stream),
            what: format!("reading session {id}"),
            reason,
        })?
    } else {
        Vec::new()
    };
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
    let unchanged_prefix = copy
        .as_ref()
        .is_some_and(|bytes| bytes.len() as u64 == keep && fetched.is_empty());
    if !unchanged_prefix {
        file.set_len(keep).map_err(io)?;
        file.seek(SeekFrom::End(0)).map_err(io)?;
        let mut out = std::io::BufWriter::new(&mut file);
        for message in &fetched {
            out.write_all(&message.payload).map_err(io)?;
        }
        out.flush().map_err(io)?;
        drop(out);
        file.sync_data().map_err(io)?;
    }
    Ok(Synced {
        events: kept_events + fetched.len() as u64,
        last_stream_seq: fetched
            .last()
            .map_or(vouched.map_or(0, |cp| cp.stream_seq), |m| m.seq),
        fetched: fetched.len() as u64,
    })
}

fn stream_name(stream: &async_nats::jetstream::stream::Stream) -> String {
    stream.cached_info().config.name.clone()
}
