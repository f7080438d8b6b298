//! Turning what the user typed (a session id, a unique id prefix, a session directory or an
//! `events.jsonl` path) into the session's files.

use std::path::Path;

use anyhow::{Context, Result, bail};
use turnstile_journal::{SessionPaths, StateRoot, parse_session_id};

/// Shortest id prefix accepted, so that a stray word is not taken for a session.
const MIN_PREFIX: usize = 4;

/// The most recently updated session of the root (`resume --last`), from the session index.
pub fn newest_session(root: &StateRoot) -> Result<uuid::Uuid> {
    let (newest, _) = turnstile_journal::SessionSummary::newest_indexed(root)?;
    newest.with_context(|| format!("no sessions in {}", root.dir().display()))
}

/// Resolves `target` against the file system and the state root.
pub fn resolve(target: &str, state_dir: Option<&Path>) -> Result<SessionPaths> {
    let as_path = Path::new(target);
    if as_path.exists() {
        let meta = std::fs::metadata(as_path).with_context(|| format!("cannot read {target}"))?;
        return Ok(if meta.is_dir() {
            let paths = SessionPaths::from_dir(as_path);
            if !paths.events.exists() {
                bail!(
                    "{target} is a directory but not a session directory (it has no events.jsonl)"
                );
            }
            paths
        } else {
            let dir = as_path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let mut paths = SessionPaths::from_dir(dir);
            paths.events = as_path.to_path_buf();
            paths
        });
    }
    if target.contains('/') || target.ends_with(".jsonl") {
        bail!("{target}: no such file or directory");
    }
    let root = StateRoot::resolve(state_dir)?;
    if let Ok(id) = parse_session_id(target) {
        let paths = root.session(id);
        if !paths.events.exists() {
            bail!(
                "session {id} not found in {} (list sessions with `turnstile sessions`)",
                root.dir().display()
            );
        }
        return Ok(paths);
    }
    let looks_like_prefix =
        target.len() >= MIN_PREFIX && target.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if !looks_like_prefix {
        bail!(
            "{target:?} is neither a file, a session directory, a session id nor an id prefix of at least {MIN_PREFIX} hex digits"
        );
    }
    let prefix = target.to_ascii_lowercase();
    let matches: Vec<_> = root
        .session_ids()?
        .into_iter()
        .filter(|id| id.hyphenated().to_string().starts_with(&prefix))
        .collect();
    match matches.as_slice() {
        [id] => Ok(root.session(*id)),
        [] => bail!(
            "no session id starts with {target:?} in {} (list sessions with `turnstile sessions`)",
            root.dir().display()
        ),
        many => {
            let names: Vec<String> = many.iter().map(|id| id.to_string()).collect();
            bail!(
                "{target:?} matches {} sessions: {}; type more of the id",
                many.len(),
                names.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_must_be_unique_and_hex() {
        let tmp = tempfile::tempdir().unwrap();
        let root = StateRoot::new(tmp.path());
        let a = uuid::Uuid::parse_str("aaaa1111-0000-4000-8000-000000000001").unwrap();
        let b = uuid::Uuid::parse_str("aaaa2222-0000-4000-8000-000000000002").unwrap();
        root.create_session(a).unwrap();
        root.create_session(b).unwrap();
        let dir = Some(tmp.path());
        assert_eq!(resolve("aaaa1", dir).unwrap().id, Some(a));
        assert!(
            resolve("aaaa", dir)
                .unwrap_err()
                .to_string()
                .contains("matches 2 sessions")
        );
        assert!(
            resolve("../../etc/none", dir)
                .unwrap_err()
                .to_string()
                .contains("no such file")
        );
        assert!(
            resolve("hello", dir)
                .unwrap_err()
                .to_string()
                .contains("neither")
        );
        assert!(
            resolve("bbbb", dir)
                .unwrap_err()
                .to_string()
                .contains("no session id starts")
        );
    }
}
