//! Which files a tool call may change, known before it runs, so their preimages can be kept:
//! `create` and `edit` name theirs (`path`); a `bash` line's are what the shell analysis
//! sees it write (redirections, `tee`) and the file arguments of `rm`, `touch`, `mv`, `cp`
//! and `truncate`. A write the words do not show (a program that writes on its own, a path
//! built at run time) is not captured, as in the runtime. Only files under the session's
//! working directory are kept (`docs/decisions.md`).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Most files one call's changes are captured for; a line naming more keeps the first ones.
pub const MAX_PATHS_PER_CALL: usize = 64;

/// Programs whose non-option arguments are files they change (or, for `cp` and `mv`, read:
/// an unchanged file is dropped when the call ends).
const FILE_PROGRAMS: &[&str] = &["rm", "touch", "mv", "cp", "truncate"];

/// The files `tool` called with `args` may change, absolute and normalized, each once, all
/// under `cwd` (itself absolute and normalized).
pub fn write_set(tool: &str, args: &Value, cwd: &Path) -> Vec<PathBuf> {
    let named: Vec<String> = match tool {
        "create" | "edit" => args
            .get("path")
            .and_then(Value::as_str)
            .map(|p| vec![p.to_owned()])
            .unwrap_or_default(),
        "bash" => args
            .get("command")
            .and_then(Value::as_str)
            .map(shell_writes)
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for raw in named.iter().filter(|p| !p.is_empty()) {
        let path = turnstile_tools::paths::normalize(&cwd.join(raw));
        if path.starts_with(cwd) && path != cwd && !out.contains(&path) {
            out.push(path);
        }
        if out.len() == MAX_PATHS_PER_CALL {
            break;
        }
    }
    out
}

/// The files a shell line visibly writes.
fn shell_writes(command: &str) -> Vec<String> {
    let analysis = turnstile_permissions::shell::analyze(command);
    let mut out = analysis.redirect_paths();
    for c in &analysis.commands {
        if FILE_PROGRAMS.contains(&c.name.as_str()) {
            let files = c.args.iter().filter(|w| !w.value.starts_with('-'));
            out.extend(files.map(|w| w.value.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn file_tools_name_their_path_and_bash_its_targets() {
        let cwd = Path::new("/w");
        assert_eq!(
            write_set("create", &json!({"path": "a.txt"}), cwd),
            [PathBuf::from("/w/a.txt")]
        );
        assert_eq!(
            write_set(
                "bash",
                &json!({"command": "echo hi > b.txt; echo x >> pre.txt; rm -f gone.txt; cat c > /dev/null"}),
                cwd
            ),
            [
                PathBuf::from("/w/b.txt"),
                PathBuf::from("/w/pre.txt"),
                PathBuf::from("/w/gone.txt")
            ]
        );
        assert!(write_set("view", &json!({"path": "a.txt"}), cwd).is_empty());
    }

    #[test]
    fn paths_outside_the_working_directory_are_not_captured() {
        let cwd = Path::new("/w");
        for path in ["../x", "/etc/passwd", ".", "sub/../../y"] {
            assert!(
                write_set("create", &json!({"path": path}), cwd).is_empty(),
                "{path}"
            );
        }
    }
}
