//! How a listed session ended and which model it used, for `turnstile sessions`: from the
//! [`Ending`] the session index's record carries (`turnstile_journal::ending`), read off the
//! journal's first line and last 64 KiB only when there is none (`--no-index`, an unreadable
//! journal).
//!
//! - `in use`: the journal does not end with `session.shutdown` and a live process holds the
//!   Copilot CLI's in-use marker (turnstile's writers leave one too);
//! - `clean`: the journal ends with `session.shutdown` and no `session.error` follows the
//!   last prompt in the tail;
//! - `failed`: it ends with `session.shutdown` after a `session.error` of the last prompt;
//! - `crashed`: it ends without `session.shutdown` (killed, or a power cut) and nobody holds it.
//!
//! On a JetStream store the ending is the one the index entry carries, written when a writer
//! gives the session up (detach): a session whose lease a writer holds is `in use` whatever
//! its entry says, since that entry is from before the writer took it (a resumed session's
//! says it shut down). A session whose writer was killed keeps the entry of its last detach
//! until a resume records it again.
//!
//! Only an open journal has its marker looked up: a session that shut down is not running
//! (one resumed since has appended to its journal, which the index then reads again), and
//! the lookup is a directory read per session, most of a listing's time otherwise.

use std::path::{Path, PathBuf};

use serde::Serialize;
use turnstile_journal::ending::{EndState, Ending};

/// What the listing adds to a session's summary.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Status {
    /// `clean`, `failed`, `crashed` or `in use`; `unknown` when the journal cannot be read.
    pub status: &'static str,
    /// The model selected last (as far as the tail and the first line tell).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The status of the session in the directory `dir` gives, from `ending` when known,
/// otherwise from its journal (the directory is made only when it is needed).
pub fn of(ending: Option<Ending>, dir: impl Fn() -> PathBuf) -> Status {
    let ending = ending.or_else(|| read_journal(&dir().join("events.jsonl")));
    from_ending(ending, || held(&dir()))
}

/// The status of a session of a remote store from the ending its index entry carries
/// (`None`: an entry of an earlier build, shown `unknown`) and whether a writer holds its
/// lease (`in use` then, with the entry's model).
pub fn of_stored(ending: Option<Ending>, leased: bool) -> Status {
    if leased {
        return Status {
            status: "in use",
            model: ending.and_then(|e| e.model),
        };
    }
    from_ending(ending, || false)
}

fn from_ending(ending: Option<Ending>, held: impl FnOnce() -> bool) -> Status {
    let Some(ending) = ending else {
        return Status {
            status: "unknown",
            model: None,
        };
    };
    let status = match ending.state() {
        EndState::Clean => "clean",
        EndState::Failed => "failed",
        EndState::Open if held() => "in use",
        EndState::Open => "crashed",
    };
    Status {
        status,
        model: ending.model,
    }
}

/// Whether a live process holds the session's in-use marker.
fn held(dir: &Path) -> bool {
    turnstile_journal::session_dir::SessionDir::open(dir)
        .ok()
        .and_then(|d| turnstile_journal::inuse::live_holder(&d, std::process::id()).ok())
        .flatten()
        .is_some()
}

fn read_journal(path: &Path) -> Option<Ending> {
    let file = turnstile_journal::session_dir::open_read_nofollow(path).ok()?;
    let len = file.metadata().ok()?.len();
    Ending::read(&file, len).ok()
}
