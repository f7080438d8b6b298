//! The facts the system prompt states about the session: where it runs, on what, with which
//! tools, and the instructions the repository carries.

use std::path::{Path, PathBuf};

use super::instruction_file::read_instructions;
pub use super::instruction_file::{CustomInstructions, MAX_INSTRUCTIONS_BYTES};

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
    /// The instruction files of the session's extra instruction directories (SDK
    /// `instructionDirectories`, [`super::read_instruction_dirs`]).
    pub instruction_files: Vec<super::InstructionFile>,
    /// The client's additional instructions (append-mode content, unknown sections).
    pub additional_instructions: Vec<String>,
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
            instruction_files: Vec::new(),
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
