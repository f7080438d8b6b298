//! Where the Copilot home is: `$COPILOT_HOME`, else `~/.copilot`, as the Copilot CLI finds it.
//! (The journal's state root, `<home>/session-state`, is found by the same rule in
//! `turnstile_journal::layout`, which also takes `--state-dir`.)

use std::path::{Path, PathBuf};

/// The Copilot home: `$COPILOT_HOME`, else `~/.copilot`; none when neither is set.
pub fn copilot_home() -> Option<PathBuf> {
    std::env::var_os("COPILOT_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".copilot"))
        })
}

/// The home holding a state directory (`<home>/session-state`): its parent.
pub fn home_of(state_dir: &Path) -> &Path {
    state_dir.parent().unwrap_or(state_dir)
}
