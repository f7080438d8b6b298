//! The session's sandbox: what the rules allow ([`PermissionPolicy::effects`]) turned into
//! the kernel policy every tool process enters (`turnstile-sandbox`), once per session.
//!
//! Beyond the rules, two things are never writable by a tool: the state directory (the
//! journals, `processes.json`, the session index) and `$COPILOT_HOME` (settings a later run
//! trusts, such as `trustedFolders`). Writable: the working directory, the temp directories,
//! and what an absolute `write(...)` allow rule opens.
//!
//! [`PermissionPolicy::effects`]: turnstile_permissions::PermissionPolicy::effects

use std::path::{Path, PathBuf};
use std::sync::Arc;

use turnstile_permissions::{PermissionPolicy, Programs};
use turnstile_sandbox::{Exec, Policy, Sandbox};
use turnstile_tools::Sandboxing;

use super::config::SessionConfig;

/// Programs that an allowed program runs itself, allowed with it: the documented list.
pub const HELPERS: [(&str, &[&str]); 1] =
    [("git", &["/usr/lib/git-core", "/usr/libexec/git-core"])];

/// The temp directories a tool may write in.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
    ];
    dirs.dedup();
    dirs
}

/// The state directory of a session directory: every session's directory lies in it
/// (`<state>/<id>` or `<state>/session-state/<id>`), and none may be written by a tool.
fn state_dir(session_dir: &Path) -> PathBuf {
    session_dir
        .parent()
        .map_or_else(|| session_dir.to_owned(), Path::to_owned)
}

/// Every file named `program` in the engine's `PATH` (real paths).
fn resolve(program: &str) -> Vec<PathBuf> {
    if program.contains('/') {
        return std::fs::canonicalize(program).into_iter().collect();
    }
    let mut found = Vec::new();
    for dir in turnstile_sandbox::ruleset::path_dirs() {
        if let Ok(real) = std::fs::canonicalize(dir.join(program))
            && !found.contains(&real)
        {
            found.push(real);
        }
    }
    found
}

/// The engine's own directories: the state directory and `$COPILOT_HOME`. No tool writes
/// in them, by the sandbox (shell commands) or by path (file tools).
pub(super) fn engine_dirs(session_dir: &Path) -> Vec<PathBuf> {
    engine_dirs_of(state_dir(session_dir))
}

fn engine_dirs_of(state_dir: PathBuf) -> Vec<PathBuf> {
    let mut dirs = vec![state_dir];
    dirs.extend(turnstile_home::copilot_home());
    dirs
}

/// The kernel policy of a session.
pub(super) fn policy(config: &SessionConfig, session_dir: &Path, can_ask: bool) -> Policy {
    let effects = config.permissions.effects(&config.cwd, can_ask);
    let mut writable = vec![config.cwd.clone()];
    writable.extend(temp_dirs());
    writable.extend(effects.extra_writable);
    let mut read_only = effects.unwritable;
    read_only.extend(engine_dirs(session_dir));
    let exec = match effects.programs {
        Programs::AllBut(names) => Exec::AllBut(names.iter().flat_map(|n| resolve(n)).collect()),
        Programs::Only(names) => {
            // The shell that runs the line is always allowed.
            let mut files = resolve("bash");
            for name in &names {
                files.extend(resolve(name));
                for (program, dirs) in HELPERS {
                    if name == program {
                        files.extend(dirs.iter().map(PathBuf::from).filter(|d| d.exists()));
                    }
                }
            }
            Exec::Only(files)
        }
    };
    Policy {
        writable,
        read_only,
        hidden: effects.unreadable,
        exec,
        network: effects.network,
    }
}

/// The session's sandboxing: off when the user opted out, else the sandbox of its rules, or
/// why it could not be built (then no tool process runs).
pub(super) fn sandboxing(config: &SessionConfig, session_dir: &Path, can_ask: bool) -> Sandboxing {
    if !config.sandbox {
        return Sandboxing::Off;
    }
    match Sandbox::new(policy(config, session_dir, can_ask)) {
        Ok(sandbox) => Sandboxing::On(Arc::new(sandbox)),
        Err(e) => Sandboxing::Broken(format!(
            "{e}; run with --no-sandbox to run tool commands unconfined"
        )),
    }
}

/// The sandbox of the processes the user configured rather than the model chose: command
/// hooks and stdio MCP servers. They run the user's own programs, which may need the network,
/// any program and writes anywhere the user may write (`npx` writes its cache in the home
/// directory), so only the rules' file effects hold for them: what a `read(GLOB)` deny hides
/// is hidden, what a `write(GLOB)` deny protects is read-only, and the engine's own
/// directories (the state directory `state_dir`, `$COPILOT_HOME`) are read-only. A model that
/// steers such a process (a file server's `read_file`, a hook fed the call's arguments) gets
/// no further than the rules allow the model itself.
///
/// `enabled` is the session's sandbox setting (`--no-sandbox` turns this off too).
pub fn configured_processes(
    permissions: &PermissionPolicy,
    cwd: &Path,
    state_dir: &Path,
    enabled: bool,
) -> Sandboxing {
    if !enabled {
        return Sandboxing::Off;
    }
    // Asking makes no difference here: these processes are not approved call by call.
    let effects = permissions.effects(cwd, false);
    let mut read_only = effects.unwritable;
    read_only.extend(engine_dirs_of(state_dir.to_owned()));
    let policy = Policy {
        writable: vec![PathBuf::from("/")],
        read_only,
        hidden: effects.unreadable,
        exec: Exec::Any,
        network: true,
    };
    match Sandbox::new(policy) {
        Ok(sandbox) => Sandboxing::On(Arc::new(sandbox)),
        Err(e) => Sandboxing::Broken(format!(
            "{e}; run with --no-sandbox to run hooks and MCP servers unconfined"
        )),
    }
}
