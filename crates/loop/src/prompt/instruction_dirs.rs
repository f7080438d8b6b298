//! The instruction files of a session's extra instruction directories (SDK
//! `instructionDirectories`): each directory's `.github/instructions/**/*.instructions.md`, as
//! the Copilot CLI reads them. A file without an `applyTo` pattern in its front matter is
//! inlined in the system prompt; one with a pattern is listed, with its path, for the model
//! to read when it works on matching files (the CLI's table and words).

use std::path::{Path, PathBuf};

use super::instruction_file::read_instructions;

/// Instruction files read at most from one directory's `.github/instructions` tree; the rest
/// are left out with a warning in the log.
pub const MAX_FILES_PER_DIRECTORY: usize = 64;

/// Directory levels below `.github/instructions` searched at most.
pub const MAX_DEPTH: usize = 8;

/// The suffix that marks an instructions file.
const SUFFIX: &str = ".instructions.md";

/// One `*.instructions.md` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its front matter's `applyTo` glob, when it names one.
    pub apply_to: Option<String>,
    /// Its front matter's `description`.
    pub description: Option<String>,
    /// Its text after the front matter (cut at the prompt's bound).
    pub text: String,
}

/// The instruction files of `dirs`, in their order, each directory's files sorted by path.
/// An unreadable file or directory is skipped (and logged): a prompt without it is better than
/// no session.
pub fn read_instruction_dirs(dirs: &[PathBuf]) -> Vec<InstructionFile> {
    let mut files = Vec::new();
    for dir in dirs {
        let mut found = Vec::new();
        collect(
            &dir.join(".github").join("instructions"),
            0,
            &mut found,
            dir,
        );
        found.sort();
        for path in found {
            let Some(read) = read_instructions(&path) else {
                continue;
            };
            let (front, body) = split_front_matter(&read.text);
            if body.trim().is_empty() {
                continue;
            }
            files.push(InstructionFile {
                apply_to: field(front, "applyTo"),
                description: field(front, "description"),
                text: body.trim().to_owned(),
                path,
            });
        }
    }
    files
}

fn collect(dir: &Path, depth: usize, found: &mut Vec<PathBuf>, root: &Path) {
    if depth > MAX_DEPTH {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "instructions directory not read");
            return;
        }
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        // Symbolic links are not followed: a link could lead the walk out of the directory
        // or round in a loop.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            collect(&path, depth + 1, found, root);
        } else if kind.is_file() && entry.file_name().to_string_lossy().ends_with(SUFFIX) {
            if found.len() >= MAX_FILES_PER_DIRECTORY {
                tracing::warn!(
                    dir = %root.display(),
                    max = MAX_FILES_PER_DIRECTORY,
                    "more instruction files than read from one directory; the rest are left out"
                );
                return;
            }
            found.push(path);
        }
    }
}

/// The front matter (between a first line `---` and the next `---`) and the rest.
fn split_front_matter(text: &str) -> (&str, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return ("", text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (&rest[..offset], &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    ("", text)
}

/// A `key: value` line of the front matter, quotes taken off.
fn field(front: &str, key: &str) -> Option<String> {
    front.lines().find_map(|line| {
        let value = line
            .strip_prefix(key)?
            .trim_start()
            .strip_prefix(':')?
            .trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        (!value.is_empty()).then(|| value.to_owned())
    })
}

/// The prompt's text for `files`: the inlined ones, then the table of the ones for a pattern
/// (the Copilot CLI's words); empty for none.
pub fn render(files: &[InstructionFile]) -> String {
    let mut parts: Vec<String> = files
        .iter()
        .filter(|f| f.apply_to.is_none())
        .map(|f| f.text.clone())
        .collect();
    let scoped: Vec<&InstructionFile> = files.iter().filter(|f| f.apply_to.is_some()).collect();
    if !scoped.is_empty() {
        let mut table = String::from(
            "Here is a list of instruction files that contain rules for modifying or creating new code.\n\
             These files are important for ensuring that the code is modified or created correctly.\n\
             Please make sure to follow the rules specified in these files when working with the codebase.\n\
             If you have not already read the file, use the `view` tool to acquire it.\n\
             Make sure to acquire the instructions before making any changes to the code.\n\
             | Pattern | File Path | Description |\n\
             | ------- | --------- | ----------- |",
        );
        for file in scoped {
            table.push_str(&format!(
                "\n| {} | '{}' | {} |",
                file.apply_to.as_deref().unwrap_or_default(),
                file.path.display(),
                file.description.as_deref().unwrap_or_default()
            ));
        }
        parts.push(table);
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn plain_files_are_inlined_and_scoped_ones_listed() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join(".github/instructions");
        write(
            &base.join("extra.instructions.md"),
            "Always include SENTINEL_ONE.\n",
        );
        write(
            &base.join("sub/deep.instructions.md"),
            "---\napplyTo: \"**/*.ts\"\ndescription: TypeScript rules\n---\nDeep SENTINEL_TWO.",
        );
        write(&base.join("notes.md"), "not an instructions file");
        // Files outside `.github/instructions` are not these instructions.
        write(
            &dir.path().join("top.instructions.md"),
            "not in the instructions tree",
        );
        let files = read_instruction_dirs(&[dir.path().to_path_buf()]);
        assert_eq!(files.len(), 2, "{files:?}");
        let text = render(&files);
        let deep = base.join("sub/deep.instructions.md");
        assert_eq!(
            text,
            format!(
                "Always include SENTINEL_ONE.\n\nHere is a list of instruction files that contain rules for modifying or creating new code.\n\
                 These files are important for ensuring that the code is modified or created correctly.\n\
                 Please make sure to follow the rules specified in these files when working with the codebase.\n\
                 If you have not already read the file, use the `view` tool to acquire it.\n\
                 Make sure to acquire the instructions before making any changes to the code.\n\
                 | Pattern | File Path | Description |\n\
                 | ------- | --------- | ----------- |\n\
                 | **/*.ts | '{}' | TypeScript rules |",
                deep.display()
            )
        );
        assert!(
            !text.contains("SENTINEL_TWO"),
            "a scoped file is listed, not inlined"
        );
    }

    #[test]
    fn a_directory_gives_at_most_its_bound_of_files() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join(".github/instructions");
        for i in 0..MAX_FILES_PER_DIRECTORY + 5 {
            write(&base.join(format!("f{i:03}.instructions.md")), "x");
        }
        let files = read_instruction_dirs(&[dir.path().to_path_buf()]);
        assert_eq!(files.len(), MAX_FILES_PER_DIRECTORY);
        assert!(read_instruction_dirs(&[dir.path().join("missing")]).is_empty());
    }
}
