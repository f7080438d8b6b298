//! A fixture: a recorded journal, the working-dir contents it ran against, and its manifest.
//!
//! What [`Fixture::load`] accepts:
//! - a fixture directory: `events.jsonl`, optionally `fixture.json` and `workdir/`;
//! - a manifest file `NAME.fixture.json` (its `journal` and `workdir` are relative to it);
//! - a journal file (`events.jsonl` of a fixture directory gets that directory's manifest and
//!   `workdir/`; any other journal, e.g. a session of a state directory, has no working-dir
//!   contents and default settings).

use std::path::{Path, PathBuf};

use crate::error::FixtureError;
use crate::journal::{JournalLine, read_journal};
use crate::manifest::{
    JOURNAL_FILE, MANIFEST_FILE, MANIFEST_SUFFIX, Manifest, Profile, WORKDIR_DIR,
};
use crate::plan::{Plan, plan};
use crate::workdir::copy_tree;
use turnstile_journal::payload::SystemMessageMetadata;

/// A recorded session ready to be replayed.
#[derive(Debug, Clone)]
pub struct Fixture {
    name: String,
    journal: PathBuf,
    workdir: Option<PathBuf>,
    manifest: Manifest,
    lines: Vec<JournalLine>,
    profile: Profile,
    plan: Plan,
}

impl Fixture {
    /// Loads a fixture directory, a `*.fixture.json` manifest or a journal file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, FixtureError> {
        let path = path.as_ref();
        let not_a_fixture = |reason: &str| FixtureError::NotAFixture {
            path: path.to_path_buf(),
            reason: reason.to_owned(),
        };
        let meta = std::fs::metadata(path).map_err(FixtureError::io(path))?;
        let (base, manifest, journal) = if meta.is_dir() {
            let manifest_file = path.join(MANIFEST_FILE);
            let manifest = if manifest_file.is_file() {
                Manifest::read(&manifest_file)?
            } else if path.join(JOURNAL_FILE).is_file() {
                Manifest::default()
            } else {
                return Err(not_a_fixture(
                    "a fixture directory holds events.jsonl (and optionally fixture.json, workdir/)",
                ));
            };
            (path.to_path_buf(), manifest, None)
        } else {
            let base = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if name.ends_with(".json") {
                (base, Manifest::read(path)?, None)
            } else if name == JOURNAL_FILE && base.join(MANIFEST_FILE).is_file() {
                let manifest = Manifest::read(&base.join(MANIFEST_FILE))?;
                (base, manifest, Some(path.to_path_buf()))
            } else if name == JOURNAL_FILE && base.join(WORKDIR_DIR).is_dir() {
                (base, Manifest::default(), Some(path.to_path_buf()))
            } else {
                // A bare journal: nothing around it belongs to it.
                let manifest = Manifest::default();
                return Self::assemble(path, path.to_path_buf(), None, manifest);
            }
        };
        let journal = journal.unwrap_or_else(|| {
            base.join(
                manifest
                    .journal
                    .as_deref()
                    .unwrap_or(Path::new(JOURNAL_FILE)),
            )
        });
        let workdir = match &manifest.workdir {
            Some(dir) => {
                let dir = base.join(dir);
                if !dir.is_dir() {
                    return Err(FixtureError::NotAFixture {
                        path: path.to_path_buf(),
                        reason: format!("its workdir {} is not a directory", dir.display()),
                    });
                }
                Some(dir)
            }
            None => Some(base.join(WORKDIR_DIR)).filter(|d| d.is_dir()),
        };
        Self::assemble(path, journal, workdir, manifest)
    }

    fn assemble(
        given: &Path,
        journal: PathBuf,
        workdir: Option<PathBuf>,
        manifest: Manifest,
    ) -> Result<Self, FixtureError> {
        let lines = read_journal(&journal)?;
        let profile = manifest.compare.unwrap_or(if written_by_turnstile(&lines) {
            Profile::Strict
        } else {
            Profile::Behaviour
        });
        let mut plan = plan(&lines, profile, &journal)?;
        if let Some(cwd) = &manifest.recorded_cwd {
            plan.recorded_cwd = Some(cwd.clone());
        }
        if let Some(max) = manifest.max_autopilot_continues {
            plan.max_autopilot_continues = max;
        }
        Ok(Fixture {
            name: given.display().to_string(),
            journal,
            workdir,
            manifest,
            lines,
            profile,
            plan,
        })
    }

    /// The fixture as it was named when loaded.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The recorded journal.
    pub fn journal_path(&self) -> &Path {
        &self.journal
    }

    /// The working-dir contents the recording ran against, if the fixture has them.
    pub fn workdir(&self) -> Option<&Path> {
        self.workdir.as_deref()
    }

    /// The manifest (defaults when the fixture has none).
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The recorded events.
    pub fn lines(&self) -> &[JournalLine] {
        &self.lines
    }

    /// How a replay of this fixture is compared with it.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The working directory the recording ran in.
    pub fn recorded_cwd(&self) -> Option<&str> {
        self.plan.recorded_cwd.as_deref()
    }

    /// The id of the recorded session (`session.start`'s `sessionId`).
    pub fn recorded_session_id(&self) -> Option<&str> {
        self.plan.recorded_session_id.as_deref()
    }

    /// The prompts a replay sends, in order.
    pub fn prompts(&self) -> Vec<&str> {
        self.plan.prompts().map(|s| s.prompt.as_str()).collect()
    }

    /// How many LLM calls (top-level `assistant.turn_start`) the recording made.
    pub fn llm_calls(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.is_top_level() && l.event_type() == "assistant.turn_start")
            .count()
    }

    /// Every tool the recording's model called that ran (a call the recording itself answered
    /// with "does not exist" is not counted), with the line of its first call.
    pub fn tools_used(&self) -> Vec<(String, u64)> {
        let mut unknown = std::collections::HashSet::new();
        for line in &self.lines {
            if line.event_type() != "tool.execution_complete" {
                continue;
            }
            let data = line.data();
            let unknown_tool = data["error"]["code"] == "unknown_tool"
                || data["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("does not exist"));
            if unknown_tool && let Some(id) = data["toolCallId"].as_str() {
                unknown.insert(id.to_owned());
            }
        }
        let mut used: Vec<(String, u64)> = Vec::new();
        for line in &self.lines {
            if line.is_top_level() && line.event_type() == "assistant.message" {
                let data = line.data();
                for request in data["toolRequests"].as_array().into_iter().flatten() {
                    let id = request["toolCallId"].as_str().unwrap_or_default();
                    if let Some(name) = request["name"].as_str()
                        && !unknown.contains(id)
                        && !used.iter().any(|(n, _)| n == name)
                    {
                        used.push((name.to_owned(), line.number));
                    }
                }
            }
        }
        used
    }

    pub(crate) fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Copies the fixture's working-dir contents into `dest` (created if missing); a fixture
    /// without any leaves `dest` as it is.
    pub fn prepare_workdir(&self, dest: &Path) -> Result<(), FixtureError> {
        match &self.workdir {
            Some(dir) => copy_tree(dir, dest),
            None => std::fs::create_dir_all(dest).map_err(FixtureError::io(dest)),
        }
    }
}

/// Every fixture in `dir`, sorted: each subdirectory holding `events.jsonl` or `fixture.json`,
/// and each `*.fixture.json` manifest directly inside such a subdirectory or in `dir`.
pub fn discover(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>, FixtureError> {
    let dir = dir.as_ref();
    let mut found = Vec::new();
    for entry in sorted_entries(dir)? {
        if entry.is_dir() {
            if entry.join(JOURNAL_FILE).is_file() || entry.join(MANIFEST_FILE).is_file() {
                found.push(entry.clone());
            }
            found.extend(
                sorted_entries(&entry)?
                    .into_iter()
                    .filter(|p| is_named_manifest(p)),
            );
        } else if is_named_manifest(&entry) {
            found.push(entry);
        }
    }
    Ok(found)
}

fn is_named_manifest(path: &Path) -> bool {
    path.is_file()
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(MANIFEST_SUFFIX))
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, FixtureError> {
    let mut entries = std::fs::read_dir(dir)
        .map_err(FixtureError::io(dir))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(FixtureError::io(dir))?;
    entries.sort();
    Ok(entries)
}

/// Whether turnstile wrote the journal: its main agent's first `system.message` carries
/// turnstile's mark (`SystemMessageMetadata::turnstile`), or, in journals written before
/// turnstile wrote the Copilot CLI's `producer`, `session.start` names turnstile.
fn written_by_turnstile(lines: &[JournalLine]) -> bool {
    let producer = lines
        .iter()
        .find(|l| l.event_type() == "session.start")
        .and_then(|l| l.data()["producer"].as_str().map(str::to_owned));
    if producer.as_deref() == Some("turnstile") {
        return true;
    }
    lines
        .iter()
        .find(|l| l.event_type() == "system.message" && l.is_top_level())
        .and_then(|l| {
            let metadata = l.data().get("metadata").cloned()?;
            let metadata: SystemMessageMetadata = serde_json::from_value(metadata).ok()?;
            metadata.turnstile_version().map(|_| ())
        })
        .is_some()
}
