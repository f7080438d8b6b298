//! The `read` permission the file tools ask for what they read in a session that asks for
//! reads inside the working directory, as the Copilot CLI's SDK sessions do:
//! `{kind: "read", intention, path}` with the absolute path, one per file or directory read.
//! A path outside the working directory never gets here: `paths::resolve` refuses it first
//! (or `--allow-all-paths` lets every path through unasked).

use std::path::Path;

use serde_json::json;

use super::{PermissionAsk, PermissionKind, ToolContext};

/// The intention of a `view` of a file.
pub const READ_FILE: &str = "Read file";
/// The intention of a `view` of a directory.
pub const LIST_DIRECTORY: &str = "List directory";
/// The intention of a `glob` search of a directory.
pub const SEARCH_FILES: &str = "Search for files matching pattern in";
/// The intention of a `grep` search of a directory.
pub const SEARCH_DIRECTORY: &str = "Search in directory";

/// Whether the file tools ask for their reads in this context: the session asks for reads
/// inside its working directory and does not let every path through (`--allow-all-paths`
/// approves all paths, those inside included).
pub fn wanted(ctx: &ToolContext) -> bool {
    ctx.ask_reads_in_cwd && !ctx.allow_outside_cwd
}

/// The request for reading `path`, `what` being one of the intentions above.
pub fn read_ask(what: &str, path: &Path) -> PermissionAsk {
    let path = path.display().to_string();
    let intention = format!("{what}: {path}");
    PermissionAsk {
        kind: PermissionKind::Read,
        request: json!({"kind": "read", "intention": intention, "path": path}),
        intention,
        subject: path,
        shell: None,
    }
}

/// One request per search root (`glob`, `grep`).
pub fn search_asks(what: &str, roots: &[std::path::PathBuf]) -> Vec<PermissionAsk> {
    roots.iter().map(|root| read_ask(what, root)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_names_the_absolute_path() {
        let ask = read_ask(READ_FILE, Path::new("/w/a.txt"));
        assert_eq!(ask.kind, PermissionKind::Read);
        assert_eq!(ask.subject, "/w/a.txt");
        assert_eq!(
            ask.request,
            json!({"kind": "read", "intention": "Read file: /w/a.txt", "path": "/w/a.txt"})
        );
    }

    #[test]
    fn only_sessions_that_ask_and_confine_paths_ask() {
        let mut ctx = ToolContext::new("/w");
        assert!(!wanted(&ctx));
        ctx.ask_reads_in_cwd = true;
        assert!(wanted(&ctx));
        ctx.allow_outside_cwd = true;
        assert!(!wanted(&ctx));
    }
}
