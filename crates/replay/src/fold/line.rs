//! Journal lines applied to a [`Folder`] straight from their bytes: a standard-layout line's
//! envelope and `data` are checked and read in one pass, never parsed into an `Event`; a tool
//! result's payload may be read ahead, on the reading thread.

use turnstile_journal::Uuid;
use turnstile_journal::payload::{Payload, ToolExecutionComplete};

use super::{EventRef, Folder};
use crate::audit::fields::{Fields, Kind};
use crate::audit::json;
use crate::audit::line::{Scratch, head_type, standard_envelope};
use crate::fold_tool::{
    ReadTool, ScannedTool, read_tool_result, read_tool_result_full, scan_tool_result,
};

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

/// A tool result line read ahead, on the reading thread.
#[derive(Debug)]
pub(crate) enum Ahead {
    /// Its payload read; the folding thread checks the line ([`ToolRead::Full`]).
    Read(PreparedTool),
    /// Its `data` validated there too, its members and payload read ([`ToolRead::Lean`]).
    Scanned(ScannedTool),
}

/// Reads the payload of a standard-layout `tool.execution_complete` line (`body` without its
/// `\n`) exactly as [`Folder::apply_standard_line`] would read it from the same bytes, so that
/// the work can happen on another thread; `None` for any other line, and for one whose `data`
/// is not valid (the folding thread then names it).
pub(crate) fn prepare_line(body: &[u8], how: ToolRead, stack: &mut Vec<u8>) -> Option<Ahead> {
    if head_type(body)? != ToolExecutionComplete::TYPE.as_bytes() {
        return None;
    }
    let (_, data, _, _) = standard_envelope(body)?;
    let data = simdutf8::basic::from_utf8(data).ok()?;
    match how {
        ToolRead::Lean => scan_tool_result(data, stack).map(Ahead::Scanned),
        ToolRead::Full => Some(Ahead::Read(read_tool_result_full(data))),
    }
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
        self.prepared = prepared;
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

    /// [`Folder::apply_standard_line`] for a tool result line whose `data` the reading thread
    /// validated and read ([`scan_tool_result`]): its members are not scanned again.
    pub(crate) fn apply_scanned_line(
        &mut self,
        body: &[u8],
        line_len: u64,
        scanned: ScannedTool,
    ) -> bool {
        let Some(head) = self.line_head(body) else {
            return false;
        };
        let (data, kind) = (head.data, head.kind);
        let mut fields = Fields::default();
        if kind.reads_fields() {
            let inner = &mut self.scratch.inner;
            for &[ks, ke, vs, ve] in &scanned.members {
                let (Some(key), Some(value)) = (data.get(ks..ke), data.get(vs..ve)) else {
                    return false;
                };
                fields.set_raw(kind, key, value, &mut self.store, inner);
            }
        }
        let Some(event) = EventRef::from_line(&head) else {
            return false;
        };
        self.prepared = Some(scanned.outcome);
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
