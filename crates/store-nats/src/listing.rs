//! The compacted listing: every session's index entry in one object (`sessions` in the bucket
//! `<stream>_listing`), in listing order, tagged with the index stream's sequence it covers.
//! A listing reads it in large chunks, then only the index messages after that sequence, and
//! merges those in ([`merge`]: a later message of a key replaces the compacted entry, a
//! deletion removes it); a listing that found many messages after it writes the object anew
//! from what it listed ([`worth_compacting`]).
//!
//! Why a stale object is never wrong, only slower: an object covering sequence S is the index
//! as a reader of every message up to S saw it. The index bucket keeps one message per key
//! and removes one only when a later message of the same key is stored (no age limit, no
//! message deletes, a KV purge leaves a marker), so a key whose entry in the object is not its
//! current one has a message after S, which every listing merges in. That holds for any S: a
//! compaction that lost the race to a newer one and replaced it afterwards only makes the
//! next listings read more messages. The object's metadata also names the index stream's
//! creation time, so an index deleted and made anew (sequences starting over) is never read
//! through an object of the old one.
//!
//! The object's lines are in the format its `format` metadata names (`listing_format.rs`); one
//! this build does not know is refused ([`Unread::Format`]) and left in place.
//!
//! The object is replaced whole (the client's object store writes new chunks, then the
//! description naming them, then purges the old chunks); a reader that finds its chunks gone,
//! short, or not entries takes no object and reads the whole index, which then writes a
//! new object. Chunks no description names (two compactions at once: the later description
//! wins) are purged after each write.

use std::collections::HashMap;
use std::collections::hash_map::Entry as Slot;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::object_store::{InfoErrorKind, ObjectMetadata};
use async_nats::jetstream::{self, stream::Stream};
use futures_util::StreamExt;
use turnstile_store::StoreError;

use crate::config::NatsConfig;
use crate::leader;
use crate::listing_format::{self, Entry, Format};
use crate::objects::{LazyBucket, Opened};
use crate::read::{self, Stored};
use crate::records::IndexValue;

/// The object's name in its bucket.
const OBJECT: &str = "sessions";

/// Metadata of the object: the last index sequence it covers, the index stream's creation
/// time, how many entries it holds.
const COVERS: &str = "covers";
const INDEX_CREATED: &str = "index-created";
const ENTRIES: &str = "entries";
/// Metadata naming the object's line format (absent: format 1).
const FORMAT: &str = "format";

/// The largest compacted listing read or written (about 4 million sessions): a listing holds
/// every entry in memory anyway; above this the index is read message by message.
pub const MAX_LISTING_BYTES: u64 = 1 << 30;

/// The largest chunk: as large as the server takes (1 MB by default), to send few messages.
const LARGEST_CHUNK: usize = 8 << 20;

/// Room left in each chunk message for what the client adds to it.
const CHUNK_HEADROOM: usize = 1 << 10;

/// How long a read of the object may go without a chunk: chunks gone mid-read mean it was
/// replaced, and reading the index itself is then quicker than waiting.
const READ_STALL: Duration = Duration::from_secs(2);

/// Chunks received and not yet parsed, at most.
const PARSE_QUEUE: usize = 8;

/// Of the sessions listed, how many index messages after the object make a rewrite worth it
/// (one in this many), when more than the configured minimum.
const REWRITE_SHARE: usize = 64;

/// A compacted listing read back.
#[derive(Debug)]
pub(crate) struct Compacted {
    /// The last index sequence it covers.
    pub(crate) covers: u64,
    /// Its entries, newest first.
    pub(crate) entries: Vec<Entry>,
    /// Its line format (an earlier one than this build writes is worth replacing: its
    /// entries carry no ending).
    pub(crate) format: Format,
}

/// Why no compacted listing was taken; each costs a read of the whole index, never a wrong
/// listing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unread {
    /// None was written yet.
    #[error("there is none")]
    Missing,
    /// It was made from another index (deleted and made anew) or names a sequence past the
    /// index's end.
    #[error("it belongs to another index (created {created}, covering sequence {covers})")]
    Foreign { created: String, covers: u64 },
    /// Its line format is not one this build reads (a later build wrote it): left in place.
    #[error(
        "it is in line format {0}, which this build does not read (it reads formats 1 and {current})",
        current = listing_format::CURRENT
    )]
    Format(String),
    /// Its size is over [`MAX_LISTING_BYTES`].
    #[error("it is {0} bytes, over the {MAX_LISTING_BYTES} bytes read back")]
    TooLarge(u64),
    /// Its chunks are not the entries its description names (replaced meanwhile, damaged).
    #[error("its chunks are not what its description names: {0}")]
    Damaged(String),
    /// The server could not be asked.
    #[error("{0}")]
    Remote(String),
}

/// The compacted listing of one store, its bucket opened on first use.
#[derive(Clone, Debug)]
pub(crate) struct ListingBucket {
    bucket: LazyBucket,
}

impl Default for ListingBucket {
    fn default() -> Self {
        ListingBucket {
            bucket: LazyBucket::new(NatsConfig::listing_bucket),
        }
    }
}

impl ListingBucket {
    /// The compacted listing, if one was made from `index` (whose last sequence is `until`).
    pub(crate) async fn read(
        &self,
        js: &jetstream::Context,
        config: &NatsConfig,
        index: &Stream,
        until: u64,
    ) -> Result<Compacted, Unread> {
        let bucket = self
            .bucket
            .open(js, config, false)
            .await
            .map_err(|e| Unread::Remote(e.to_string()))?
            .ok_or(Unread::Missing)?;
        let info = match bucket.objects.info(OBJECT).await {
            Ok(info) if !info.deleted => info,
            Ok(_) => return Err(Unread::Missing),
            Err(e) if e.kind() == InfoErrorKind::NotFound => return Err(Unread::Missing),
            Err(e) => return Err(Unread::Remote(e.to_string())),
        };
        let covers = info
            .metadata
            .get(COVERS)
            .and_then(|c| c.parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        let created = info
            .metadata
            .get(INDEX_CREATED)
            .cloned()
            .unwrap_or_default();
        if covers > until || created != index_created(index) {
            return Err(Unread::Foreign { created, covers });
        }
        let format =
            Format::named(info.metadata.get(FORMAT).map(String::as_str)).map_err(Unread::Format)?;
        let size = info.size as u64;
        if size > MAX_LISTING_BYTES {
            return Err(Unread::TooLarge(size));
        }
        let expected = info
            .metadata
            .get(ENTRIES)
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        let chunks = format!("$O.{}.C.{}", bucket.name, info.nuid);
        let last = leader::last_sequence(&bucket.stream, &chunks)
            .await
            .map_err(|e| Unread::Remote(e.to_string()))?;
        // Parsed on a thread of its own while the next chunks arrive: the parse is most of a
        // large listing's time, and the reader keeps the other core.
        let (chunks_tx, chunks_rx) = std::sync::mpsc::sync_channel::<bytes::Bytes>(PARSE_QUEUE);
        let capacity = expected.min(MAX_LISTING_BYTES as usize / 64);
        let parser = std::thread::Builder::new()
            .name("listing-parse".into())
            .spawn(move || {
                let mut lines = Lines::with_capacity(format, capacity);
                for chunk in chunks_rx {
                    lines.feed(&chunk)?;
                }
                lines.finish()
            })
            .map_err(|e| Unread::Remote(format!("cannot start the parser: {e}")))?;
        let mut received = 0u64;
        let read = read::Read::to(chunks, DeliverPolicy::All, last)
            .within(READ_STALL)
            .each(&js.client(), &bucket.stream, |chunk| {
                received += chunk.payload.len() as u64;
                if received > size {
                    return Err("the chunks hold more than the description names".to_owned());
                }
                // Blocks while the parser is PARSE_QUEUE chunks behind: the bound on what is
                // held besides the entries.
                chunks_tx
                    .send(chunk.payload)
                    .map_err(|_| "the parser stopped".to_owned())
            })
            .await;
        drop(chunks_tx);
        let parsed = parser
            .join()
            .unwrap_or_else(|_| Err("the parser panicked".to_owned()));
        // The parser's own error first: it is why a send failed.
        let entries = parsed.map_err(Unread::Damaged)?;
        read.map_err(Unread::Damaged)?;
        if received != size {
            return Err(Unread::Damaged(format!(
                "{received} bytes read of the {size} it names"
            )));
        }
        Ok(Compacted {
            covers,
            entries,
            format,
        })
    }

    /// Replaces the compacted listing by `entries` (newest first), the index up to sequence
    /// `covers`; then purges the chunks no description names.
    pub(crate) async fn write(
        &self,
        js: &jetstream::Context,
        config: &NatsConfig,
        index: &Stream,
        covers: u64,
        entries: &[Entry],
    ) -> Result<(), StoreError> {
        let what = "writing the compacted session listing";
        let Some(bucket) = self.bucket.open(js, config, true).await? else {
            return Err(crate::connect::remote(
                config,
                what,
                "the listing bucket cannot be made",
            ));
        };
        let meta = ObjectMetadata {
            name: OBJECT.to_owned(),
            chunk_size: Some(crate::objects::chunk_size(
                js,
                CHUNK_HEADROOM,
                LARGEST_CHUNK,
            )),
            metadata: HashMap::from([
                (COVERS.to_owned(), covers.to_string()),
                (INDEX_CREATED.to_owned(), index_created(index)),
                (ENTRIES.to_owned(), entries.len().to_string()),
                (FORMAT.to_owned(), listing_format::CURRENT.to_string()),
            ]),
            ..Default::default()
        };
        // Not retried: the entries are serialised as they are sent, and a failed write costs
        // the next listing a read of the index, never a wrong one.
        let put = bucket
            .objects
            .put(meta, &mut Serialised::new(entries))
            .await;
        // Swept even after a failure: a write cut short leaves chunks no description names.
        let swept = sweep(bucket).await;
        put.map_err(|e| crate::connect::remote(config, what, e))?;
        swept.map_err(|e| crate::connect::remote(config, what, e))
    }
}

/// Purges every chunk subject of the bucket but the one the current description names.
async fn sweep(bucket: &Opened) -> Result<(), async_nats::Error> {
    let current = match bucket.objects.info(OBJECT).await {
        Ok(info) if !info.deleted => Some(format!("$O.{}.C.{}", bucket.name, info.nuid)),
        Ok(_) => None,
        Err(e) if e.kind() == InfoErrorKind::NotFound => None,
        Err(e) => return Err(Box::new(e)),
    };
    let mut subjects = bucket
        .stream
        .info_with_subjects(format!("$O.{}.C.>", bucket.name))
        .await?;
    let mut stale = Vec::new();
    while let Some(subject) = subjects.next().await {
        let (subject, _) = subject?;
        if current.as_ref() != Some(&subject) {
            stale.push(subject);
        }
    }
    for subject in stale {
        bucket.stream.purge().filter(subject).await?;
    }
    Ok(())
}

/// What ties the object to one index stream: its creation time.
fn index_created(index: &Stream) -> String {
    format!("{:?}", index.cached_info().created)
}

/// Whether a listing that read `later` index messages after the object (every message when
/// there was none) and listed `listed` sessions should write the object anew.
pub(crate) fn worth_compacting(later: usize, listed: usize, minimum: usize) -> bool {
    later > 0 && later >= minimum.max(listed / REWRITE_SHARE)
}

/// The listing: `compacted` (newest first) less the keys of `later` (index messages after it,
/// in stream order), plus the entries of those messages whose last one is not a deletion,
/// newest first. Of sessions updated at the same time, the compacted ones keep their order
/// and come before the later ones, which keep stream order: the order a read of every index
/// message gives, as a key's message moves to the stream's end when it is written again.
pub(crate) fn merge(compacted: Vec<Entry>, later: Vec<Stored>, prefix: &str) -> Vec<Entry> {
    // A key that comes twice (a reader on a replica that caught up meanwhile) keeps its later
    // message, in the place of its first.
    let mut place: HashMap<&str, usize> = HashMap::with_capacity(later.len());
    let mut latest: Vec<&Stored> = Vec::with_capacity(later.len());
    for message in &later {
        let key = message
            .subject
            .as_str()
            .strip_prefix(prefix)
            .unwrap_or(message.subject.as_str());
        match place.entry(key) {
            Slot::Occupied(at) => latest[*at.get()] = message,
            Slot::Vacant(at) => {
                at.insert(latest.len());
                latest.push(message);
            }
        }
    }
    let mut all: Vec<Entry> = if place.is_empty() {
        compacted
    } else {
        compacted
            .into_iter()
            .filter(|e| !place.contains_key(e.key.as_str()))
            .collect()
    };
    let settled = all.len();
    for message in latest {
        if message.payload.is_empty() {
            // A deleted or purged key.
            continue;
        }
        match serde_json::from_slice::<IndexValue>(&message.payload) {
            Ok(value) => {
                let (summary, ending) = value.split();
                all.push(Entry {
                    key: message
                        .subject
                        .as_str()
                        .strip_prefix(prefix)
                        .unwrap_or(message.subject.as_str())
                        .to_owned(),
                    summary,
                    ending,
                })
            }
            Err(e) => {
                tracing::warn!(key = %message.subject, error = %e, "skipping a bad index entry")
            }
        }
    }
    if all.len() > settled {
        newest_first(&mut all);
    }
    all
}

/// Orders entries newest first, stably (the compacted part is in that order already, so the
/// sort costs about one pass over it and the sort of the later part).
fn newest_first(all: &mut Vec<Entry>) {
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| all[b].summary.updated.cmp(&all[a].summary.updated));
    let mut slots: Vec<Option<Entry>> = all.drain(..).map(Some).collect();
    all.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

/// The object's lines, parsed as chunks arrive, in their `format`.
struct Lines {
    format: Format,
    partial: Vec<u8>,
    entries: Vec<Entry>,
}

impl Lines {
    fn with_capacity(format: Format, entries: usize) -> Self {
        Lines {
            format,
            partial: Vec::new(),
            entries: Vec::with_capacity(entries),
        }
    }

    fn feed(&mut self, mut chunk: &[u8]) -> Result<(), String> {
        if !self.partial.is_empty() {
            let Some(end) = memchr::memchr(b'\n', chunk) else {
                self.partial.extend_from_slice(chunk);
                return Ok(());
            };
            self.partial.extend_from_slice(&chunk[..end]);
            let line = std::mem::take(&mut self.partial);
            self.line(&line)?;
            chunk = &chunk[end + 1..];
        }
        while let Some(end) = memchr::memchr(b'\n', chunk) {
            self.line(&chunk[..end])?;
            chunk = &chunk[end + 1..];
        }
        self.partial.extend_from_slice(chunk);
        Ok(())
    }

    fn line(&mut self, line: &[u8]) -> Result<(), String> {
        self.entries.push(self.format.decode(line)?);
        Ok(())
    }

    fn finish(self) -> Result<Vec<Entry>, String> {
        if !self.partial.is_empty() {
            return Err("the last line is cut".to_owned());
        }
        Ok(self.entries)
    }
}

/// The entries as the object's lines (format [`listing_format::CURRENT`]), serialised one at a time as the client reads them (the
/// object is never held whole); an error past [`MAX_LISTING_BYTES`].
struct Serialised<'a> {
    entries: std::slice::Iter<'a, Entry>,
    line: Vec<u8>,
    at: usize,
    total: u64,
}

impl<'a> Serialised<'a> {
    fn new(entries: &'a [Entry]) -> Self {
        Serialised {
            entries: entries.iter(),
            line: Vec::with_capacity(1024),
            at: 0,
            total: 0,
        }
    }

    /// The next line into `line`; false at the end.
    fn next_line(&mut self) -> std::io::Result<bool> {
        loop {
            let Some(entry) = self.entries.next() else {
                return Ok(false);
            };
            self.line.clear();
            self.at = 0;
            // A key that would break the line format is no subject the index can hold.
            if !listing_format::encode(entry, &mut self.line) {
                continue;
            }
            self.total += self.line.len() as u64;
            if self.total > MAX_LISTING_BYTES {
                return Err(std::io::Error::other(format!(
                    "the listing is over the {MAX_LISTING_BYTES} bytes kept compacted"
                )));
            }
            return Ok(true);
        }
    }
}

impl tokio::io::AsyncRead for Serialised<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        while out.remaining() > 0 {
            if this.at == this.line.len() && !this.next_line()? {
                break;
            }
            let n = out.remaining().min(this.line.len() - this.at);
            out.put_slice(&this.line[this.at..this.at + n]);
            this.at += n;
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use turnstile_journal::SessionSummary;
    use turnstile_journal::ending::Ending;

    fn entry(n: u8, updated: &str) -> Entry {
        let id = uuid::Uuid::from_u128(u128::from(n));
        Entry {
            key: id.to_string(),
            summary: SessionSummary {
                id: Some(id),
                cwd: Some("/w\tith \"tab\"".into()),
                created: Some("2026-12-01T00:00:00.000Z".into()),
                updated: Some(updated.into()),
                events: u64::from(n),
                size: 100,
                first_prompt: Some("line\nbreak \u{2028}".into()),
            },
            ending: n.is_multiple_of(2).then(|| Ending {
                shut_down: n.is_multiple_of(4),
                error_since_prompt: false,
                model: Some("gpt-4.1".into()),
            }),
        }
    }

    fn message(seq: u64, e: Option<&Entry>, key: &str) -> Stored {
        Stored {
            seq,
            subject: format!("$KV.B.{key}").into(),
            payload: e
                .map(|e| {
                    serde_json::to_vec(&IndexValue::new(e.summary.clone(), e.ending.clone()))
                        .unwrap()
                })
                .unwrap_or_default()
                .into(),
        }
    }

    fn serialised(entries: &[Entry]) -> Vec<u8> {
        let mut out = Vec::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime
            .block_on(Serialised::new(entries).read_to_end(&mut out))
            .unwrap();
        out
    }

    #[test]
    fn lines_round_trip_whatever_the_chunk_boundaries() {
        let entries: Vec<Entry> = (0..50)
            .map(|n| entry(n, &format!("2026-12-01T00:00:{:02}.000Z", 59 - n)))
            .collect();
        let bytes = serialised(&entries);
        for size in [1, 7, 100, bytes.len()] {
            let mut lines = Lines::with_capacity(Format::FieldsAndEnding, 0);
            for chunk in bytes.chunks(size) {
                lines.feed(chunk).unwrap();
            }
            assert_eq!(lines.finish().unwrap(), entries, "chunks of {size} bytes");
        }
    }

    #[test]
    fn a_cut_or_garbled_object_is_refused() {
        let bytes = serialised(&[entry(1, "a"), entry(2, "b")]);
        let mut cut = Lines::with_capacity(Format::FieldsAndEnding, 0);
        cut.feed(&bytes[..bytes.len() - 3]).unwrap();
        assert!(cut.finish().is_err());
        assert!(
            Lines::with_capacity(Format::Fields, 0)
                .feed(b"no tab here\n")
                .is_err()
        );
        assert!(
            Lines::with_capacity(Format::Json, 0)
                .feed(b"key\t{not json\n")
                .is_err()
        );
        // A format-1 object (key, tab, entry as JSON) is still read.
        let e = entry(3, "c");
        assert_eq!(e.ending, None);
        let mut old = format!("{}\t", e.key).into_bytes();
        serde_json::to_writer(&mut old, &e.summary).unwrap();
        old.push(b'\n');
        let mut lines = Lines::with_capacity(Format::Json, 0);
        lines.feed(&old).unwrap();
        assert_eq!(lines.finish().unwrap(), vec![e]);
    }

    #[test]
    fn later_messages_replace_remove_and_add_entries() {
        let (a, b, c) = (entry(1, "3"), entry(2, "2"), entry(3, "1"));
        let b2 = entry(2, "5");
        let d = entry(4, "4");
        let later = vec![
            message(10, Some(&d), &d.key),
            message(11, None, &c.key),
            message(12, Some(&entry(2, "0")), &b.key),
            message(13, Some(&b2), &b.key),
            message(14, None, "never-listed"),
        ];
        let merged = merge(vec![a.clone(), b, c], later, "$KV.B.");
        // b's later message wins, in the place of its first; c is deleted.
        assert_eq!(merged, vec![b2, d, a]);
    }

    #[test]
    fn ties_keep_the_compacted_order_then_the_stream_order() {
        let compacted = vec![entry(9, "5"), entry(3, "5"), entry(7, "1")];
        let later = vec![
            message(20, Some(&entry(1, "5")), &entry(1, "5").key),
            message(21, Some(&entry(2, "9")), &entry(2, "9").key),
        ];
        let keys: Vec<u8> = merge(compacted, later, "$KV.B.")
            .iter()
            .map(|e| e.summary.events as u8)
            .collect();
        assert_eq!(keys, vec![2, 9, 3, 1, 7]);
    }

    #[test]
    fn a_rewrite_waits_for_enough_later_messages() {
        assert!(!worth_compacting(0, 0, 0));
        assert!(!worth_compacting(999, 1000, 1000));
        assert!(worth_compacting(1000, 1000, 1000));
        // At a million sessions, one in 64 of them.
        assert!(!worth_compacting(10_000, 1_000_000, 1000));
        assert!(worth_compacting(15_625, 1_000_000, 1000));
    }
}
