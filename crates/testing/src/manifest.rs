//! `fixture.json`: what a journal alone does not say about how it was recorded.
//!
//! Every field is optional; a fixture without a manifest is replayed with the defaults below.
//!
//! ```json
//! {
//!   "description": "permission denied by rule, then with no rule",
//!   "journal": "events.jsonl",
//!   "workdir": "workdir",
//!   "allowAllTools": false,
//!   "allowTool": ["shell(ls)"],
//!   "denyTool": ["shell(rm)"]
//! }
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::FixtureError;

/// File name of a fixture directory's manifest.
pub const MANIFEST_FILE: &str = "fixture.json";
/// Suffix of a manifest that sits beside other fixtures' manifests (`NAME.fixture.json`).
pub const MANIFEST_SUFFIX: &str = ".fixture.json";
/// File name of a fixture directory's journal.
pub const JOURNAL_FILE: &str = "events.jsonl";
/// Directory name of a fixture's working-dir contents.
pub const WORKDIR_DIR: &str = "workdir";

/// How a replayed journal is compared with its recording: `turnstile diff`'s profiles, so a
/// failed check and `diff` of the same two journals compare the same things.
pub use turnstile_diff::Profile;

/// The settings of a fixture (`fixture.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// One line on what the fixture shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The recorded journal, relative to the manifest [default: `events.jsonl`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<PathBuf>,
    /// The working-dir contents the recording ran against, relative to the manifest
    /// [default: `workdir/` when it exists].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<PathBuf>,
    /// `--allow-all-tools` [default: true unless `allowTool` is given].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_all_tools: Option<bool>,
    /// `--allow-tool` patterns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_tool: Vec<String>,
    /// `--deny-tool` patterns [default: the rules the recording's denials name].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_tool: Option<Vec<String>>,
    /// `--allow-outside-cwd`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_outside_cwd: bool,
    /// `--max-autopilot-continues` [default: read off the recording].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_autopilot_continues: Option<u32>,
    /// The comparison profile [default: strict for turnstile's journals, else behaviour].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare: Option<Profile>,
    /// The working directory the recording ran in [default: `context.cwd` of `session.start`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_cwd: Option<String>,
}

impl Manifest {
    /// Reads a manifest file.
    pub fn read(path: &Path) -> Result<Self, FixtureError> {
        let text = std::fs::read_to_string(path).map_err(FixtureError::io(path))?;
        serde_json::from_str(&text).map_err(|e| FixtureError::Manifest {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_camel_case_and_unknown_ones_are_refused() {
        let m: Manifest = serde_json::from_str(
            r#"{"allowAllTools": false, "allowTool": ["shell(ls)"], "denyTool": ["shell(rm)"], "compare": "behaviour"}"#,
        )
        .unwrap();
        assert_eq!(m.allow_all_tools, Some(false));
        assert_eq!(m.deny_tool, Some(vec!["shell(rm)".to_owned()]));
        assert_eq!(m.compare, Some(Profile::Behaviour));
        let e = serde_json::from_str::<Manifest>(r#"{"allowAll": true}"#).unwrap_err();
        assert!(e.to_string().contains("allowAll"), "{e}");
    }
}
