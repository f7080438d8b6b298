//! The facts the system prompt states about the session: where it runs, on what, with which
//! tools, and the instructions the repository carries.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes read at most from one repository instructions file; the rest is cut with a note.
pub const MAX_INSTRUCTIONS_BYTES: u64 = 64 * 1024;

/// Repository instruction files, in the order they join the prompt (the Copilot CLI's order).
pub const INSTRUCTION_FILES: [&str; 2] = [".github/copilot-instructions.md", "AGENTS.md"];

/// What the prompt says about the session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptContext {
    /// The working directory.
    pub cwd: PathBuf,
    /// The enclosing git repository's root, if any.
    pub git_root: Option<PathBuf>,
    /// Operating system name as people write it (`Linux`, `macOS`, `Windows`).
    pub os: String,
    /// The model the session talks to.
    pub model: String,
    /// The engine's version.
    pub engine_version: String,
    /// Names of the tools offered to the model, in offer order.
    pub tools: Vec<String>,
    /// The enabled skills the `skill` tool loads, as (name, description), in order.
    pub skills: Vec<(String, String)>,
    /// Instructions found in the repository.
    pub custom_instructions: Vec<CustomInstructions>,
    /// The client's additional instructions (append-mode content, unknown sections).
    pub additional_instructions: Vec<String>,
}

/// One repository instructions file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomInstructions {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text (cut at [`MAX_INSTRUCTIONS_BYTES`]).
    pub text: String,
}

impl PromptContext {
    /// The context of a session in `cwd` talking to `model` with `tools`: finds the git root
    /// and reads the repository's instruction files (an unreadable one is skipped and logged:
    /// a prompt without it is better than no session).
    pub fn discover(cwd: &Path, model: &str, tools: Vec<String>) -> Self {
        PromptContext {
            cwd: cwd.to_path_buf(),
            git_root: git_root(cwd),
            os: os_name().to_owned(),
            model: model.to_owned(),
            engine_version: env!("CARGO_PKG_VERSION").to_owned(),
            tools,
            skills: Vec::new(),
            custom_instructions: INSTRUCTION_FILES
                .iter()
                .filter_map(|name| read_instructions(&cwd.join(name)))
                .collect(),
            additional_instructions: Vec::new(),
        }
    }
}

/// The OS as the prompt names it.
pub fn os_name() -> &'static str {
    match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "macOS",
        "windows" => "Windows",
        other => other,
    }
}

/// The nearest ancestor of `dir` (itself included) holding `.git`.
fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

fn read_instructions(path: &Path) -> Option<CustomInstructions> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "instructions file not read");
            return None;
        }
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut bytes = Vec::new();
    if let Err(e) = file
        .take(MAX_INSTRUCTIONS_BYTES + 1)
        .read_to_end(&mut bytes)
    {
        tracing::warn!(path = %path.display(), error = %e, "instructions file not read");
        return None;
    }
    let cut = bytes.len() as u64 > MAX_INSTRUCTIONS_BYTES;
    bytes.truncate(MAX_INSTRUCTIONS_BYTES as usize);
    let mut text = String::from_utf8_lossy(&bytes).trim_end().to_owned();
    if cut {
        text.push_str(&format!(
            "\n[cut: the file is longer than {MAX_INSTRUCTIONS_BYTES} bytes]"
        ));
    }
    (!text.trim().is_empty()).then(|| CustomInstructions {
        path: path.to_path_buf(),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_instruction_files_in_order_and_caps_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".github")).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "agents say hi\n").unwrap();
        let big = "x".repeat(MAX_INSTRUCTIONS_BYTES as usize + 100);
        std::fs::write(dir.path().join(".github/copilot-instructions.md"), &big).unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();

        let ctx = PromptContext::discover(dir.path(), "m", vec!["bash".into()]);
        assert_eq!(ctx.custom_instructions.len(), 2);
        assert!(
            ctx.custom_instructions[0]
                .path
                .ends_with("copilot-instructions.md")
        );
        assert!(ctx.custom_instructions[0].text.ends_with("bytes]"));
        assert!(ctx.custom_instructions[0].text.len() < big.len());
        assert_eq!(ctx.custom_instructions[1].text, "agents say hi");
        assert_eq!(ctx.git_root.as_deref(), Some(dir.path()));

        // A subdirectory has no instruction files of its own but shares the git root.
        let ctx = PromptContext::discover(&sub, "m", vec![]);
        assert!(ctx.custom_instructions.is_empty());
        assert_eq!(ctx.git_root.as_deref(), Some(dir.path()));
    }

    #[test]
    fn a_directory_named_like_an_instructions_file_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("AGENTS.md")).unwrap();
        let ctx = PromptContext::discover(dir.path(), "m", vec![]);
        assert!(ctx.custom_instructions.is_empty());
    }
}
