//! Attachments of a user message (`session.send` `attachments`): typed as the SDK sends them,
//! prepared once at send time (files looked at, bytes interned as assets), and rendered into
//! the model's user message the way the Copilot CLI renders them.
//!
//! Preparing ([`prepare`]) gives what the journal records: the `user.message` attachments (with
//! each file's frozen `taggedFilesEntry`), the `session.binary_asset` events for bytes the model
//! gets natively (images), and the text that joins the prompt (`<ide_selection>` blocks, the
//! image reminder). Rendering ([`model_content`]) works from the journal's record alone, so a
//! resumed session shows the model exactly what it saw before.

mod inspect;
mod prepare;
mod render;

use serde::{Deserialize, Serialize};

pub use inspect::{LARGE_FILE_BYTES, MAX_DIRECTORY_ENTRIES};
pub use prepare::{MAX_ASSET_BYTES, MAX_ATTACHMENTS, MAX_SELECTION_BYTES, Prepared, prepare};
pub use render::{Asset, model_content};

pub use turnstile_providers::ContentPart;

/// One attachment as a client sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Attachment {
    /// A file, listed for the model with its size in lines (images are sent as images).
    #[serde(rename_all = "camelCase")]
    File {
        /// The file (absolute, or relative to the working directory).
        path: String,
        /// Name shown to people.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display_name: Option<String>,
        /// Lines the attachment is about (1-based, inclusive).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        line_range: Option<LineRange>,
    },
    /// A directory, listed with its number of entries.
    #[serde(rename_all = "camelCase")]
    Directory {
        /// The directory (absolute, or relative to the working directory).
        path: String,
        /// Name shown to people.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display_name: Option<String>,
    },
    /// Text selected in an editor, shown to the model before the prompt.
    #[serde(rename_all = "camelCase")]
    Selection {
        /// The file the selection is in.
        file_path: String,
        /// Name shown to people.
        display_name: String,
        /// Where the selection is (0-based lines, as editors count).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        selection: Option<SelectionRange>,
        /// The selected text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// Inline bytes (base64) with their MIME type: images, text, documents.
    #[serde(rename_all = "camelCase")]
    Blob {
        /// The bytes, base64.
        data: String,
        /// Their MIME type.
        mime_type: String,
        /// Name shown to people (and to the model for non-image blobs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        display_name: Option<String>,
    },
    /// A GitHub issue, pull request or discussion.
    #[serde(rename_all = "camelCase")]
    GithubReference {
        /// Its number.
        number: u64,
        /// Its title.
        title: String,
        /// `issue`, `pr` or `discussion`.
        reference_type: String,
        /// `open`, `closed`, `merged`, ...
        state: String,
        /// Its URL.
        url: String,
    },
}

/// Lines of a file attachment (1-based, inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRange {
    /// First line.
    pub start: u64,
    /// Last line.
    pub end: u64,
}

/// Where a selection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectionRange {
    /// Where it starts.
    pub start: Position,
    /// Where it ends.
    pub end: Position,
}

/// A position in a file (0-based line and character).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    /// Line, from 0.
    pub line: u64,
    /// Character in the line, from 0.
    pub character: u64,
}
