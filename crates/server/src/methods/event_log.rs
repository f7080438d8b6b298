//! `session.eventLog.*`: a cursor over the session's journal, read from the file with the
//! journal's reader. A cursor names the last event returned and the byte offset where its
//! line starts (`<eventId>|<offset>`; `b:` in front for backward pages): the next read seeks
//! there, checks that the same event is still on that line, and goes on, so a page costs its
//! own events, not the history before it. Pages are bounded in events (`max`, at most 1000)
//! and in bytes. A forward read at the tail may wait (`waitMs`, at most 30 s) for the next
//! event of a session open in this server; while it waits, the live-only events announced
//! since the read arrived come too (from the last 256 the session keeps, `sessions.rs`).

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use turnstile_journal::{Event, JournalReader, ReadError, ReadMode, Record, Uuid};

use super::{Ctx, open_session};
use crate::rpc::{RpcError, codes};

/// Events in a page when `max` is absent (the schema's default).
const DEFAULT_MAX: usize = 200;
/// The schema's largest `max`.
const MAX_MAX: usize = 1000;
/// The schema's longest `waitMs`.
const MAX_WAIT_MS: u64 = 30_000;
/// Bytes of event data in one page at most; a page may stop short of `max` because of it
/// (and says `hasMore`).
const PAGE_BYTES: u64 = 8 << 20;

/// `types`: `"*"` or a non-empty list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum Types {
    /// `"*"` (any other string is refused).
    All(String),
    /// These types only.
    Some(Vec<String>),
}

/// `session.eventLog.read` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadParams {
    session_id: String,
    cursor: Option<String>,
    max: Option<u64>,
    wait_ms: Option<u64>,
    types: Option<Types>,
    agent_scope: Option<String>,
    agent_ids: Option<Vec<String>>,
    direction: Option<String>,
}

/// Which events a read returns.
struct Filter {
    types: Option<Vec<String>>,
    primary_only: bool,
    agent_ids: Option<Vec<String>>,
    /// Events rewinds removed and their markers: the runtime's journal no longer has them.
    hidden: HashSet<Uuid>,
}

impl Filter {
    fn from_params(params: &ReadParams) -> Result<Self, RpcError> {
        let types = match &params.types {
            None => None,
            Some(Types::All(star)) if star == "*" => None,
            Some(Types::All(other)) => {
                return Err(RpcError::invalid_params(format!(
                    "types {other:?}: expected \"*\" or a list of event types"
                )));
            }
            Some(Types::Some(list)) if list.is_empty() => {
                return Err(RpcError::invalid_params(
                    "types: the list must not be empty (use \"*\" for every type)",
                ));
            }
            Some(Types::Some(list)) => Some(list.clone()),
        };
        let primary_only = match params.agent_scope.as_deref() {
            None | Some("all") => false,
            Some("primary") => true,
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "agentScope {other:?} is not one of primary, all"
                )));
            }
        };
        if params.agent_ids.as_ref().is_some_and(Vec::is_empty) {
            return Err(RpcError::invalid_params("agentIds must not be empty"));
        }
        Ok(Filter {
            types,
            primary_only,
            agent_ids: params.agent_ids.clone(),
            hidden: HashSet::new(),
        })
    }

    fn matches(&self, event: &Event) -> bool {
        if self.hidden.contains(&event.id) {
            return false;
        }
        let kind = event.event_type.as_str();
        if let Some(types) = &self.types
            && !types.iter().any(|t| t == kind)
        {
            return false;
        }
        // agentIds takes precedence over agentScope.
        if let Some(ids) = &self.agent_ids {
            return event
                .agent_id
                .as_ref()
                .is_some_and(|a| ids.iter().any(|id| id == a));
        }
        !self.primary_only || event.agent_id.is_none() || kind.starts_with("subagent.")
    }
}

/// Where a cursor points.
#[derive(Debug, Clone, PartialEq)]
struct Cursor {
    backward: bool,
    id: String,
    start: u64,
}

impl Cursor {
    fn parse(text: &str) -> Option<Self> {
        let (backward, rest) = match text.strip_prefix("b:") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (id, start) = rest.rsplit_once('|')?;
        turnstile_journal::parse_session_id(id).ok()?;
        Some(Cursor {
            backward,
            id: id.to_owned(),
            start: start.parse().ok()?,
        })
    }

    fn text(&self) -> String {
        let prefix = if self.backward { "b:" } else { "" };
        format!("{prefix}{}|{}", self.id, self.start)
    }

    fn at(record: &Record, backward: bool) -> Self {
        Cursor {
            backward,
            id: record.event.id.to_string(),
            start: record.offset,
        }
    }
}

/// A page.
struct Page {
    events: Vec<Value>,
    cursor: String,
    has_more: bool,
    expired: bool,
}

fn failed(path: &Path, e: impl std::fmt::Display) -> RpcError {
    RpcError::new(
        codes::SESSION_FAILED,
        format!("cannot read {}: {e}", path.display()),
    )
}

/// A reader from byte `offset` on.
fn reader_at(path: &Path, offset: u64) -> Result<JournalReader<BufReader<File>>, RpcError> {
    let mut file = File::open(path).map_err(|e| failed(path, e))?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| failed(path, e))?;
    Ok(JournalReader::new(
        path,
        BufReader::with_capacity(1 << 16, file),
        ReadMode::Lenient,
    )
    .starting_at(0, offset))
}

/// The next whole record; `None` at the end or at a torn last line (being written).
fn next(reader: &mut JournalReader<BufReader<File>>) -> Result<Option<Record>, RpcError> {
    match reader.next() {
        None | Some(Err(ReadError::TornTail { .. })) => Ok(None),
        Some(Ok(record)) => Ok(Some(record)),
        Some(Err(e)) => Err(RpcError::new(codes::SESSION_FAILED, e.to_string())),
    }
}

/// Whether the line starting at `cursor.start` is still the cursor's event; the offset just
/// past it when it is.
fn verify(path: &Path, cursor: &Cursor) -> Result<Option<u64>, RpcError> {
    let len = std::fs::metadata(path).map_err(|e| failed(path, e))?.len();
    if cursor.start >= len {
        return Ok(None);
    }
    if cursor.start > 0 {
        // A line starts only after a newline.
        let mut file = File::open(path).map_err(|e| failed(path, e))?;
        file.seek(SeekFrom::Start(cursor.start - 1))
            .map_err(|e| failed(path, e))?;
        let mut byte = [0u8; 1];
        file.read_exact(&mut byte).map_err(|e| failed(path, e))?;
        if byte[0] != b'\n' {
            return Ok(None);
        }
    }
    let mut reader = reader_at(path, cursor.start)?;
    Ok(match next(&mut reader)? {
        Some(record) if record.event.id.to_string() == cursor.id => Some(reader.offset()),
        _ => None,
    })
}

/// A forward page from `from` (a byte offset at a line start).
fn forward(
    path: &Path,
    from: u64,
    max: usize,
    filter: &Filter,
    after: Option<Cursor>,
) -> Result<Page, RpcError> {
    let mut reader = reader_at(path, from)?;
    let mut events = Vec::new();
    let mut bytes = 0u64;
    let mut last = after;
    let mut has_more = false;
    while let Some(record) = next(&mut reader)? {
        if !filter.matches(&record.event) {
            continue;
        }
        if events.len() == max || (bytes >= PAGE_BYTES && !events.is_empty()) {
            has_more = true;
            break;
        }
        bytes += record.len;
        events.push(record.event.to_live_value());
        last = Some(Cursor::at(&record, false));
    }
    Ok(Page {
        events,
        cursor: last.map(|c| c.text()).unwrap_or_default(),
        has_more,
        expired: false,
    })
}

/// A backward page: the newest `max` matching events before byte `before` (the end when
/// `None`), in chronological order.
fn backward(
    path: &Path,
    before: Option<u64>,
    max: usize,
    filter: &Filter,
) -> Result<Page, RpcError> {
    let mut reader = reader_at(path, 0)?;
    let mut window: VecDeque<Record> = VecDeque::with_capacity(max.min(1024));
    let mut bytes = 0u64;
    let mut dropped = false;
    while let Some(record) = next(&mut reader)? {
        if before.is_some_and(|b| record.offset >= b) {
            break;
        }
        if !filter.matches(&record.event) {
            continue;
        }
        bytes += record.len;
        window.push_back(record);
        while window.len() > max || (bytes > PAGE_BYTES && window.len() > 1) {
            if let Some(old) = window.pop_front() {
                bytes -= old.len;
            }
            dropped = true;
        }
    }
    let cursor = window
        .front()
        .map(|r| Cursor::at(r, true).text())
        .unwrap_or_else(|| "b:".to_owned());
    Ok(Page {
        events: window.iter().map(|r| r.event.to_live_value()).collect(),
        cursor,
        has_more: dropped,
        expired: false,
    })
}

/// One read of the file.
fn read_once(path: &Path, params: &ReadParams, filter: &Filter) -> Result<Page, RpcError> {
    let max = params.max.unwrap_or(DEFAULT_MAX as u64);
    if max == 0 || max > MAX_MAX as u64 {
        return Err(RpcError::invalid_params(format!(
            "max {max} is out of range (1 to {MAX_MAX})"
        )));
    }
    let max = max as usize;
    let cursor = params
        .cursor
        .as_deref()
        .filter(|c| !c.is_empty() && *c != "b:");
    let parsed = cursor.map(Cursor::parse);
    let backward_asked = match params.direction.as_deref() {
        None | Some("forward") => false,
        Some("backward") => true,
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "direction {other:?} is not one of forward, backward"
            )));
        }
    } || parsed
        .as_ref()
        .is_some_and(|c| c.as_ref().is_some_and(|c| c.backward));
    let verified = match &parsed {
        Some(Some(c)) => verify(path, c)?.map(|end| (c.clone(), end)),
        _ => None,
    };
    let expired = parsed.is_some() && verified.is_none();
    let mut page = match (backward_asked, verified) {
        (true, Some((c, _))) => backward(path, Some(c.start), max, filter)?,
        (true, None) => backward(path, None, max, filter)?,
        (false, Some((c, end))) => forward(path, end, max, filter, Some(c))?,
        // No cursor, or one that no longer fits the journal: from the beginning (a
        // boundary window that may overlap what was read before).
        (false, None) => forward(path, 0, max, filter, None)?,
    };
    page.expired = expired;
    Ok(page)
}

/// `session.eventLog.read`.
pub(crate) async fn read(ctx: &Ctx<'_>, params: ReadParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    let mut filter = Filter::from_params(&params)?;
    let path = ctx.server.config().state_root.session(session.id()).events;
    let wait = Duration::from_millis(params.wait_ms.unwrap_or(0).min(MAX_WAIT_MS));
    let deadline = tokio::time::Instant::now() + wait;
    let mut appended = session.appended();
    let backward = params.direction.as_deref() == Some("backward")
        || params
            .cursor
            .as_deref()
            .is_some_and(|c| c.starts_with("b:"));
    // A forward read that waits also gets the live-only events announced since it arrived (a
    // `session.title_changed`, say), as the Copilot CLI's log holds them; they are not in the
    // journal, so the cursor does not move for them. They come from the session's recent ones,
    // not a subscription taken here: a request sent right after this one may run first.
    let live = !wait.is_zero() && !backward;
    loop {
        // Marked seen before reading: an event appended during the read wakes the next wait.
        appended.borrow_and_update();
        filter.hidden = turnstile_replay::hidden_in_file(&path)
            .map_err(|e| RpcError::new(codes::SESSION_FAILED, e.to_string()))?;
        let mut page = read_once(&path, &params, &filter)?;
        let from_file = !page.events.is_empty();
        if live {
            let announced = session.live_since(ctx.received);
            page.events.extend(
                announced
                    .iter()
                    .filter(|event| filter.matches(event))
                    .take(MAX_MAX)
                    .map(|event| event.to_live_value()),
            );
        }
        let done = !page.events.is_empty() || backward || wait.is_zero() || session.is_closing();
        let timed_out = tokio::time::Instant::now() >= deadline;
        if done || timed_out {
            let cursor = if !from_file && !page.expired {
                // Nothing new: the cursor stays where it was.
                params.cursor.clone().unwrap_or(page.cursor)
            } else {
                page.cursor
            };
            return Ok(json!({
                "events": page.events,
                "cursor": cursor,
                "hasMore": page.has_more,
                "cursorStatus": if page.expired { "expired" } else { "ok" },
            }));
        }
        tokio::select! {
            _ = appended.changed() => {}
            // Closed: nothing more will come; the next pass answers what is there.
            _ = session.wait_closed() => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = ctx.peer.closed() => return Err(RpcError::new(codes::SESSION_FAILED, "the client disconnected")),
        }
    }
}

/// `session.eventLog.tail`: the cursor just past the last whole event, found from the end of
/// the file (no scan of the history).
pub(crate) fn tail(
    ctx: &Ctx<'_>,
    params: super::session_id_params::SessionIdParams,
) -> Result<Value, RpcError> {
    let session = open_session(ctx, params.id())?;
    let path = ctx.server.config().state_root.session(session.id()).events;
    Ok(json!({"cursor": last_cursor(&path)?.map(|c| c.text()).unwrap_or_default()}))
}

/// The cursor of the last whole line of `path`, reading backwards in growing chunks.
fn last_cursor(path: &Path) -> Result<Option<Cursor>, RpcError> {
    let mut file = File::open(path).map_err(|e| failed(path, e))?;
    let len = file.metadata().map_err(|e| failed(path, e))?.len();
    // The end of the last whole line: a torn tail (no newline yet) does not count.
    let mut chunk = 64 * 1024u64;
    loop {
        let start = len.saturating_sub(chunk);
        file.seek(SeekFrom::Start(start))
            .map_err(|e| failed(path, e))?;
        let mut buf = Vec::with_capacity((len - start) as usize);
        (&mut file)
            .take(len - start)
            .read_to_end(&mut buf)
            .map_err(|e| failed(path, e))?;
        let Some(end) = buf.iter().rposition(|&b| b == b'\n') else {
            if start == 0 {
                return Ok(None);
            }
            chunk *= 4;
            continue;
        };
        match buf[..end].iter().rposition(|&b| b == b'\n') {
            Some(prev) => {
                let line_start = start + prev as u64 + 1;
                return cursor_of_line(path, line_start);
            }
            None if start == 0 => return cursor_of_line(path, 0),
            None => chunk *= 4,
        }
    }
}

fn cursor_of_line(path: &Path, start: u64) -> Result<Option<Cursor>, RpcError> {
    let mut reader = reader_at(path, start)?;
    Ok(next(&mut reader)?.map(|r| Cursor::at(&r, false)))
}

/// `session.eventLog.registerInterest` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InterestParams {
    session_id: String,
    event_type: String,
}

/// `session.eventLog.registerInterest`: a fresh handle per registration. turnstile has no
/// behaviour gated on a consumer's interest (no OAuth, elicitation or sampling flows), so
/// the registration is only kept until released.
pub(crate) fn register_interest(ctx: &Ctx<'_>, params: InterestParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    Ok(json!({"handle": session.register_interest(&params.event_type)}))
}

/// `session.eventLog.releaseInterest` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReleaseParams {
    session_id: String,
    handle: String,
}

/// `session.eventLog.releaseInterest`: idempotent.
pub(crate) fn release_interest(ctx: &Ctx<'_>, params: ReleaseParams) -> Result<Value, RpcError> {
    let session = open_session(ctx, &params.session_id)?;
    session.release_interest(&params.handle);
    Ok(json!({"success": true}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let c = Cursor {
            backward: false,
            id: "0d3c1a52-9d2e-4c47-8d0f-3b1c6c2b9e10".into(),
            start: 1234,
        };
        assert_eq!(Cursor::parse(&c.text()), Some(c.clone()));
        let b = Cursor {
            backward: true,
            ..c
        };
        assert_eq!(Cursor::parse(&b.text()), Some(b));
        for bad in [
            "garbage",
            "x|1",
            "0d3c1a52-9d2e-4c47-8d0f-3b1c6c2b9e10|-1",
            "|5",
            "b:",
        ] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }
}
