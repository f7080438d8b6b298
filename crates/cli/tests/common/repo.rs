//! The repository the tests run in: its root, its fixtures, and `turnstile` started there
//! (with no `COPILOT_HOME` from the caller's environment).

use std::path::PathBuf;

use assert_cmd::Command;

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    root().join("fixtures").join(name)
}

/// The `turnstile` binary, run in the repository's root.
pub fn turnstile() -> Command {
    let mut cmd = Command::cargo_bin("turnstile").unwrap();
    cmd.current_dir(root()).env_remove("COPILOT_HOME");
    cmd
}

/// A process's output as text (lossy: a test prints it on failure).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
