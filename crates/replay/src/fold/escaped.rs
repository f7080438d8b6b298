//! Tool results whose text the reading thread kept escaped, as written in the journal: most are
//! compacted away before a large fold ends, so only those still in the conversation at its end
//! are unescaped.
//!
//! The conversation's messages are public types holding plain `String`s, so the escaped texts
//! are told apart by the address of their bytes (with their length), kept in
//! [`Folder::escaped`]. Addresses are only ever reused after a text is freed, and the fold frees
//! messages in two places only, a compaction and a rewind, after each of which the map is
//! pruned to the texts still held: an address in the map is always that of its own text.

use std::collections::HashMap;

use super::Folder;
use crate::conversation::Message;

impl Folder {
    /// Notes a tool result's text that is still escaped, before it joins the conversation.
    pub(super) fn note_escaped(&mut self, text: &str) {
        // An empty text has no escapes (and no address of its own).
        if !text.is_empty() {
            self.escaped.insert(text.as_ptr() as usize, text.len());
        }
    }

    /// The tool results of the conversation and of the hidden messages, mutably.
    fn tool_texts(&mut self) -> impl Iterator<Item = &mut String> {
        let state = &mut self.state;
        state
            .conversation
            .iter_mut()
            .chain(state.hidden.messages.iter_mut())
            .filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content),
                _ => None,
            })
    }

    /// Keeps the tool results' texts compactions drop from now on, for
    /// [`Folder::take_dropped`].
    pub(crate) fn keep_dropped(&mut self) {
        self.dropped.get_or_insert_with(Vec::new);
    }

    /// Frees the texts kept by [`Folder::keep_dropped`] and frees them at once from now on.
    pub(crate) fn free_dropped(&mut self) {
        self.dropped = None;
    }

    /// The tool results' texts compactions dropped since the last call (freeing them is most
    /// of a compaction's cost: the fold on two threads hands them back to the reading thread,
    /// which allocated them).
    pub(crate) fn take_dropped(&mut self) -> Vec<String> {
        self.dropped
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Forgets the escaped texts no longer held (after messages were dropped).
    pub(super) fn prune_escaped(&mut self) {
        if self.escaped.is_empty() {
            return;
        }
        let mut escaped = std::mem::take(&mut self.escaped);
        let mut kept = HashMap::new();
        for text in self.tool_texts() {
            let at = text.as_ptr() as usize;
            if let Some(len) = escaped.remove(&at) {
                kept.insert(at, len);
            }
        }
        self.escaped = kept;
    }

    /// Unescapes the tool results still escaped: the state is then exactly what reading every
    /// result in full gives. Called at the end of every fold of a file's lines.
    pub(crate) fn resolve_escaped(&mut self) {
        if self.escaped.is_empty() {
            return;
        }
        let escaped = std::mem::take(&mut self.escaped);
        for text in self.tool_texts() {
            if escaped.get(&(text.as_ptr() as usize)) == Some(&text.len()) {
                *text = crate::fold_tool_fast::unescape(text);
            }
        }
    }
}
