//! Journal lines applied to a [`Folder`] straight from their bytes: a standard-layout line's
//! envelope and `data` are checked and read in one pass, never parsed into an `Event`; a tool
//! result's payload may be read ahead, on the reading thread.

use turnstile_journal::Uuid;
use turnstile_journal::payload::{AssistantMessage, Payload, ToolExecutionComplete};

use super::{EventRef, Folder};
use crate::fold_assistant::{AssistantRead, read_assistant};
use crate::fold_tool::{ReadTool, read_tool_result, read_tool_result_full, scan_tool_result};
use crate::fold_tool_fast::Member;
use crate::raw::envelope::{HEAD, Tail, standard_envelope, standard_layout, tail_values};
use crate::raw::fields::{Fields, Kind};
use crate::raw::json;
use crate::raw::types::Scratch;

/// What the fold keeps of a `tool.execution_complete` payload (or why it could not be read).
pub(crate) type PreparedTool = ReadTool;

/// How the fold reads a `tool.execution_complete` payload; both ways give the same result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
// Only the tests take the payload type's way.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum ToolRead {
    /// Checked like the payload type, keeping only what the fold uses ([`read_tool_result`]).
    #[default]
    Lean,
    /// Through the journal's payload type.
    Full,
}

impl ToolRead {
    /// Reads `data` of a tool result.
    pub(crate) fn read(self, data: &str) -> ReadTool {
        match self {
            ToolRead::Lean => read_tool_result(data),
            ToolRead::Full => read_tool_result_full(data),
        }
    }
}

/// A line read ahead, on the reading thread.
#[derive(Debug)]
pub(crate) enum Ahead {
    /// A tool result's payload read; the folding thread checks the line ([`ToolRead::Full`]).
    Read(PreparedTool),
    /// A standard-layout line checked there in full ([`ToolRead::Lean`]).
    Scanned(ScannedLine),
}

/// A standard-layout line whose envelope was read and whose `data` was validated (JSON and
/// UTF-8) on the reading thread, with what the folding thread needs of it.
#[derive(Debug)]
pub(crate) struct ScannedLine {
    /// Bytes of the type name (it starts right after the fixed head).
    name_len: usize,
    /// Where `data` starts and ends in the line.
    data: (usize, usize),
    /// The fixed tail, whose id, parent id and timestamp the folding thread checks (a share of
    /// the work that balances the two threads).
    tail: Tail,
    /// Where the top-level members of `data` (as ranges of `data`) are in the run's list.
    members: (usize, usize),
    /// What the payload type reads from a tool result's `data`.
    tool: Option<ReadTool>,
    /// An `assistant.message` payload deserialized (boxed: most lines have none).
    assistant: Option<Box<serde_json::Result<AssistantRead>>>,
}

/// A payload deserialized ahead of its line's fold.
#[derive(Debug, Default)]
pub(crate) struct ReadAhead {
    /// A tool result's, as [`ToolRead::read`] reads it.
    pub(crate) tool: Option<PreparedTool>,
    /// An `assistant.message`'s.
    pub(crate) assistant: Option<Box<serde_json::Result<AssistantRead>>>,
}

/// Reads a standard-layout line (`body` without its `\n`) exactly as
/// [`Folder::apply_standard_line`] would read it from the same bytes, so that the work can
/// happen on another thread: its envelope, `data` checked, its members, and the payload of a
/// tool result (and with `assistant`, of an `assistant.message`). `None` for any other line, and
/// for one whose `data` is not valid (the folding thread then names it). With
/// [`ToolRead::Full`], only a tool result's payload is read.
///
/// The members go to the end of `members`, the list of a whole run of lines (one allocation
/// per run, not per line); `stack` and `inner` are scratch space.
pub(crate) fn prepare_line(
    body: &[u8],
    how: ToolRead,
    assistant: bool,
    members: &mut Vec<Member>,
    stack: &mut Vec<u8>,
    inner: &mut Vec<Member>,
) -> Option<Ahead> {
    let (name, data, tail) = standard_layout(body)?;
    let tool = name == ToolExecutionComplete::TYPE.as_bytes();
    if how == ToolRead::Full {
        let data = simdutf8::basic::from_utf8(data).ok()?;
        return tool.then(|| Ahead::Read(read_tool_result_full(data)));
    }
    let data_start = data.as_ptr() as usize - body.as_ptr() as usize;
    let text = simdutf8::basic::from_utf8(data).ok()?;
    let first = members.len();
    let mut line = ScannedLine {
        name_len: name.len(),
        data: (data_start, data_start + data.len()),
        tail,
        members: (first, first),
        tool: None,
        assistant: None,
    };
    if tool {
        // The folding thread unescapes the results that last ([`Folder::resolve_escaped`]).
        line.tool = Some(scan_tool_result(text, stack, true, members, inner)?);
    } else {
        let base = data.as_ptr() as usize;
        let valid = json::scan_object(data, stack, &mut |k, v| {
            let at = |s: &[u8]| s.as_ptr() as usize - base;
            members.push([at(k), at(k) + k.len(), at(v), at(v) + v.len()]);
        });
        if !valid {
            members.truncate(first);
            return None;
        }
        if assistant && name == AssistantMessage::TYPE.as_bytes() {
            line.assistant = Some(Box::new(read_assistant(text)));
        }
    }
    line.members.1 = members.len();
    Some(Ahead::Scanned(line))
}

/// The envelope of a standard-layout line, its type classified.
struct LineHead<'a> {
    name: &'a [u8],
    data: &'a [u8],
    id: u128,
    ephemeral_type: bool,
    kind: Kind,
}

impl<'a> EventRef<'a> {
    /// The event of a standard-layout line; `None` when its type or `data` is not UTF-8.
    fn from_line(head: &LineHead<'a>) -> Option<Self> {
        // Type names on this path are plain ASCII; `data` must be UTF-8 to be JSON at all.
        let (Ok(event_type), Ok(data)) = (
            std::str::from_utf8(head.name),
            simdutf8::basic::from_utf8(head.data),
        ) else {
            return None;
        };
        Some(EventRef {
            event_type,
            data,
            agent_id: None,
            id: Uuid::from_u128(head.id),
            ephemeral_type: head.ephemeral_type,
        })
    }
}

impl Folder {
    /// Gives the payload [`prepare_line`] read from the next line (`None`: read it here).
    pub(crate) fn set_prepared(&mut self, prepared: Option<PreparedTool>) {
        self.prepared = ReadAhead {
            tool: prepared,
            assistant: None,
        };
    }

    /// Applies the next journal line (without its `\n`) when it is in the standard layout with
    /// valid `data` (checked here, in the same pass that reads the fields); false, with nothing
    /// applied, for any other line (the caller parses it in full).
    pub(crate) fn apply_standard_line(&mut self, body: &[u8], line_len: u64) -> bool {
        let Some(head) = self.line_head(body) else {
            return false;
        };
        let (data, kind) = (head.data, head.kind);
        let mut fields = Fields::default();
        let Scratch { stack, inner, .. } = &mut self.scratch;
        let store = &mut self.store;
        let ok = if kind.reads_fields() {
            json::scan_object(data, stack, &mut |k, v| {
                fields.set_raw(kind, k, v, store, inner)
            })
        } else {
            json::scan_object(data, stack, &mut |_, _| {})
        };
        if !ok {
            return false;
        }
        let Some(event) = EventRef::from_line(&head) else {
            return false;
        };
        self.persisted(event, &fields, line_len);
        true
    }

    /// [`Folder::apply_standard_line`] for a line that [`prepare_line`] read from `body` on
    /// the reading thread (its members in `members`, the run's list): its envelope is not read
    /// and its `data` not checked again. False,
    /// with nothing applied, when its type is not one the fast path takes.
    pub(crate) fn apply_scanned_line(
        &mut self,
        body: &[u8],
        line_len: u64,
        scanned: ScannedLine,
        members: &[Member],
    ) -> bool {
        let (Some(name), Some(data)) = (
            body.get(HEAD.len()..HEAD.len() + scanned.name_len),
            body.get(scanned.data.0..scanned.data.1),
        ) else {
            return false;
        };
        let Some((id, _parent)) = tail_values(body, scanned.tail) else {
            return false;
        };
        self.store.clear();
        let Some((_, ephemeral_type, kind)) = self.scratch.classify(name, &mut self.store) else {
            return false;
        };
        let mut fields = Fields::default();
        if kind.reads_fields() {
            let inner = &mut self.scratch.inner;
            let Some(members) = members.get(scanned.members.0..scanned.members.1) else {
                return false;
            };
            for &[ks, ke, vs, ve] in members {
                let (Some(key), Some(value)) = (data.get(ks..ke), data.get(vs..ve)) else {
                    return false;
                };
                fields.set_raw(kind, key, value, &mut self.store, inner);
            }
        }
        // `classify` takes plain ASCII names only.
        let Ok(event_type) = std::str::from_utf8(name) else {
            return false;
        };
        // SAFETY: `prepare_line` checked these very bytes to be UTF-8: `body` is the line it
        // was given, in the buffer the reading thread filled and handed over with this
        // `ScannedLine`, unchanged since (only read until it is recycled), and `scanned.data`
        // is the range of `data` it checked.
        let data = unsafe { std::str::from_utf8_unchecked(data) };
        let event = EventRef {
            event_type,
            data,
            agent_id: None,
            id: Uuid::from_u128(id),
            ephemeral_type,
        };
        self.prepared = ReadAhead {
            tool: scanned.tool,
            assistant: scanned.assistant,
        };
        self.persisted(event, &fields, line_len);
        true
    }

    /// The envelope of a standard-layout line with its type classified, `self.store` cleared
    /// for its fields; `None` for any other layout or a type the fast path does not take.
    fn line_head<'a>(&mut self, body: &'a [u8]) -> Option<LineHead<'a>> {
        let (name, data, id, _parent) = standard_envelope(body)?;
        self.store.clear();
        let (_, ephemeral_type, kind) = self.scratch.classify(name, &mut self.store)?;
        Some(LineHead {
            name,
            data,
            id,
            ephemeral_type,
            kind,
        })
    }
}
