//! The seal of a stored journal (`docs/stores.md`): the same records as the file store's
//! `events.jsonl.seal` (`turnstile-seal`), one message a record on the session's seal subject
//! (`<prefix>.seal.<id>`) in a stream of its own. The lease holder's publisher appends them
//! (`sink/seal.rs`) after the lines they cover, fenced like the lines by the subject's
//! expected last sequence; a reader takes the seal before the journal, so that the seal never
//! covers lines the journal read lacks; the working copy of a session gets the stored seal
//! (never its own), which its writer then continues.

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::stream::Stream;
use turnstile_journal::layout::EVENTS_FILE;
use turnstile_journal::seal_file::seal_name;
use turnstile_journal::session_dir::{Access, SessionDir};
use turnstile_journal::{StateRoot, Uuid};
use turnstile_seal::MAX_SEAL_BYTES;
use turnstile_store::StoreError;

use crate::leader;
use crate::read::Read;

/// Where a session's stored seal ends: the records it holds and the stream sequence of the
/// last (0: none), which the next record's publish names as the expected last one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SealTail {
    /// Records stored.
    pub records: u64,
    /// Stream sequence of the last.
    pub last_seq: u64,
}

/// The message id of the `record`-th (1-based) record of the seal of `session`: a retried
/// publish is deduplicated, a copy of the seal under another session id is not.
pub(crate) fn seal_message_id(session: Uuid, record: u64) -> String {
    format!("{session}:seal:{record}")
}

/// A session's stored seal: its bytes (the records, each ending with `\n`) and where it ends.
#[derive(Debug, Clone, Default)]
pub struct StoredSeal {
    /// The seal as a file holds it; empty when the session has none.
    pub bytes: Vec<u8>,
    /// Where it ends.
    pub tail: SealTail,
}

/// Reads the seal on `subject` of `stream`, up to the leader's last message; at most
/// [`MAX_SEAL_BYTES`].
pub(crate) async fn read(
    client: &async_nats::Client,
    stream: &Stream,
    subject: &str,
) -> Result<StoredSeal, String> {
    let last = leader::last_sequence(stream, subject)
        .await
        .map_err(|e| e.to_string())?;
    let mut seal = StoredSeal::default();
    Read::to(subject.to_owned(), DeliverPolicy::All, last)
        .each(client, stream, |message| {
            if (seal.bytes.len() + message.payload.len()) as u64 > MAX_SEAL_BYTES {
                return Err(format!(
                    "the seal is over {MAX_SEAL_BYTES} bytes, more than a reader holds"
                ));
            }
            seal.bytes.extend_from_slice(&message.payload);
            seal.tail.records += 1;
            seal.tail.last_seq = message.seq;
            Ok(())
        })
        .await?;
    Ok(seal)
}

/// Makes the working copy's seal of `id` under `root` the stored one: written whole beside
/// the copy's journal and renamed over the seal there, or removed when the store has none (a
/// copy's own seal is never trusted over the store's, as its journal is not).
pub(crate) fn write_copy(root: &StateRoot, id: Uuid, seal: &[u8]) -> Result<(), StoreError> {
    let paths = root.session(id);
    let dir = SessionDir::open(&paths.dir)?;
    let name = seal_name(EVENTS_FILE);
    if seal.is_empty() {
        if dir.stat(&name)?.is_some() {
            dir.remove(&name)?;
        }
        return Ok(());
    }
    let part = format!("{name}.part");
    let io = |source| StoreError::Io {
        path: dir.join(&part),
        source,
    };
    let mut file = dir.open_file(&part, Access::CreateReadWrite)?;
    file.set_len(0).map_err(io)?;
    std::io::Write::write_all(&mut file, seal).map_err(io)?;
    file.sync_data().map_err(io)?;
    dir.rename(&part, &name)?;
    Ok(())
}
