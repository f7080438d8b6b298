//! `grep`: searches file contents with ripgrep's libraries.
//!
//! - Files are found as `glob` finds them (ignore rules, hidden files
//!   skipped), narrowed by `glob` and by `type` (ripgrep's built-in file
//!   types, e.g. `rust`, `py`, `js`); binary files are skipped.
//! - `output_mode`: `files_with_matches` (default, as in the runtime) prints
//!   one path a line; `content` prints matching lines as `PATH:text`, or
//!   `PATH:LINE:text` with `-n` (TOOLS.md), context lines (`-A`/`-B`/`-C`) as
//!   `PATH-LINE-text` with `--` between groups, like ripgrep; `count` prints
//!   `PATH:N`, N being matching lines. Paths are shown as ripgrep shows them
//!   for the search roots as the model gave them: below the working directory
//!   (no `paths`) as `./src/main.rs`, below `paths: "src"` as `src/main.rs`,
//!   below an absolute root as absolute paths (the runtime's output, which
//!   runs ripgrep on the roots as given).
//! - `-i` ignores case; `multiline` lets a match span lines and `.` match a
//!   newline (`rg -U --multiline-dotall`); `head_limit` keeps the first N
//!   lines of output. Output is capped at 64 KiB and each line at 1000
//!   characters, so one minified file cannot flood the model.

use std::path::PathBuf;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::types::{Types, TypesBuilder};
use serde_json::{Value, json};

use super::glob::{GlobFilter, search_roots, walk_files};
use super::{
    BlockingTool, PermissionAsk, ToolContext, ToolFailure, ToolOutput, ToolSpec, args, reads,
};

/// The `grep` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

/// The result when nothing matched.
pub const NO_MATCHES: &str = "No matches found.";
/// Bytes of output at most.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// Characters of one line shown at most.
pub const MAX_LINE_CHARS: usize = 1000;

/// What the search prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Content,
    FilesWithMatches,
    Count,
}

/// The checked arguments of one call.
pub struct GrepArgs {
    matcher: RegexMatcher,
    roots: Vec<PathBuf>,
    /// Each root as the output spells it (`.` for the working directory).
    labels: Vec<String>,
    mode: Mode,
    filter: Option<GlobFilter>,
    types: Option<Types>,
    before: usize,
    after: usize,
    line_numbers: bool,
    head_limit: Option<usize>,
    multiline: bool,
}

fn parse(args: &Value, ctx: &ToolContext) -> Result<GrepArgs, ToolFailure> {
    let pattern = args::required_str(args, "pattern")?;
    let mode = match args::optional_str(args, "output_mode")? {
        None | Some("files_with_matches") => Mode::FilesWithMatches,
        Some("content") => Mode::Content,
        Some("count") => Mode::Count,
        Some(other) => {
            return Err(ToolFailure::invalid(format!(
                "Parameter 'output_mode' must be content, files_with_matches or count, not '{other}'."
            )));
        }
    };
    let case_insensitive = args::optional_bool(args, "-i")?.unwrap_or(false);
    let multiline = args::optional_bool(args, "multiline")?.unwrap_or(false);
    let around = args::optional_usize(args, "-C")?.unwrap_or(0);
    // -A / -B win over -C for their side, as in ripgrep.
    let after = args::optional_usize(args, "-A")?.unwrap_or(around);
    let before = args::optional_usize(args, "-B")?.unwrap_or(around);
    let line_numbers = args::optional_bool(args, "-n")?.unwrap_or(false);
    let head_limit = args::optional_usize(args, "head_limit")?.filter(|n| *n > 0);

    let mut builder = RegexMatcherBuilder::new();
    // ^ and $ match at line boundaries, as ripgrep always sets.
    builder.case_insensitive(case_insensitive).multi_line(true);
    if multiline {
        builder.dot_matches_new_line(true);
    } else {
        // A line-oriented search needs a matcher that never matches '\n'.
        builder.line_terminator(Some(b'\n'));
    }
    let matcher = builder
        .build(pattern)
        .map_err(|e| ToolFailure::invalid(format!("Invalid regex pattern '{pattern}': {e}")))?;

    let filter = match args::optional_str(args, "glob")? {
        Some(glob) if !glob.trim().is_empty() => Some(GlobFilter::new(glob.trim())?),
        _ => None,
    };
    let types = match args::optional_str(args, "type")? {
        Some(name) if !name.trim().is_empty() => {
            let mut types = TypesBuilder::new();
            types.add_defaults().select(name.trim());
            Some(types.build().map_err(|e| {
                ToolFailure::invalid(format!(
                    "Unknown file type '{}' ({e}); use a ripgrep type name such as rust, py, js, ts, go, java, c, cpp, md.",
                    name.trim()
                ))
            })?)
        }
        _ => None,
    };
    let roots = search_roots(args, ctx)?;
    let labels = root_labels(args, roots.len());
    Ok(GrepArgs {
        matcher,
        roots,
        labels,
        mode,
        filter,
        types,
        before,
        after,
        line_numbers,
        head_limit,
        multiline,
    })
}

impl BlockingTool for GrepTool {
    const NAME: &'static str = "grep";
    type Args = GrepArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".to_owned(),
            description: "Searches file contents with a regular expression (ripgrep syntax), skipping hidden, git-ignored and binary files. output_mode files_with_matches (default) lists matching files; content shows matching lines (`PATH:LINE:text` with -n); count shows matches per file.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression to search for."},
                    "paths": {"type": "array", "items": {"type": "string"}, "description": "Files or directories to search (default: the working directory)."},
                    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "What to print (default files_with_matches)."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs` or `src/**/*.ts`."},
                    "type": {"type": "string", "description": "Only search files of this ripgrep type, e.g. rust, py, js."},
                    "-i": {"type": "boolean", "description": "Ignore case."},
                    "-A": {"type": "integer", "description": "Lines of context after each match (content mode)."},
                    "-B": {"type": "integer", "description": "Lines of context before each match (content mode)."},
                    "-C": {"type": "integer", "description": "Lines of context before and after each match (content mode)."},
                    "-n": {"type": "boolean", "description": "Show line numbers (content mode)."},
                    "head_limit": {"type": "integer", "description": "Print only the first N lines or entries."},
                    "multiline": {"type": "boolean", "description": "Let a match span lines, with `.` matching newlines."}
                },
                "required": ["pattern"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(args: &Value, ctx: &ToolContext) -> Result<GrepArgs, ToolFailure> {
        parse(args, ctx)
    }

    fn reads(a: &GrepArgs) -> Vec<PermissionAsk> {
        reads::search_asks(reads::SEARCH_DIRECTORY, &a.roots)
    }

    fn work(a: GrepArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        let cancel = &ctx.cancel;
        let files = walk_files(&a.roots, a.types.clone(), a.filter.as_ref(), cancel)?;
        let mut out = Output::new(a.head_limit);
        for file in &files {
            if cancel.is_cancelled() {
                return Err(ToolFailure::cancelled());
            }
            if out.full() {
                break;
            }
            search_file(&a, file, &mut out);
        }
        Ok(ToolOutput::text(out.render()))
    }

    fn summary(args: &Value, _ctx: &ToolContext) -> Option<String> {
        args::optional_str(args, "pattern")
            .ok()
            .flatten()
            .map(str::to_owned)
    }
}

fn search_file(a: &GrepArgs, file: &std::path::Path, out: &mut Output) {
    let mut builder = SearcherBuilder::new();
    builder
        .line_number(true)
        .multi_line(a.multiline)
        // Stop at the first NUL, as ripgrep does: binary files are not text to show.
        .binary_detection(BinaryDetection::quit(b'\x00'));
    if a.mode == Mode::Content {
        builder.before_context(a.before).after_context(a.after);
    }
    let mut searcher = builder.build();
    let path = shown_path(a, file);
    let mut sink = FileSink {
        args: a,
        path: &path,
        out,
        matched_lines: 0,
        started: false,
    };
    // An unreadable file is skipped, as ripgrep skips it (with a warning we have nowhere to put).
    let _ = searcher.search_path(&a.matcher, file, &mut sink);
    let matched = sink.matched_lines;
    match a.mode {
        Mode::FilesWithMatches if matched > 0 => out.push(path),
        Mode::Count if matched > 0 => out.push(format!("{path}:{matched}")),
        _ => {}
    }
}

/// The roots as the model spelled them, one per root of `search_roots` (`.` when it gave none).
fn root_labels(args: &Value, roots: usize) -> Vec<String> {
    let given = match args::string_list(args, "paths") {
        Ok(Some(list)) if !list.is_empty() => list,
        _ => args::string_list(args, "path")
            .ok()
            .flatten()
            .unwrap_or_default(),
    };
    if given.len() != roots {
        return vec![".".to_owned(); roots];
    }
    given
        .into_iter()
        .map(|g| {
            let trimmed = g.trim_end_matches('/');
            if trimmed.is_empty() {
                g
            } else {
                trimmed.to_owned()
            }
        })
        .collect()
}

/// `file` as the output names it: its root's spelling joined with the path below that root.
fn shown_path(a: &GrepArgs, file: &std::path::Path) -> String {
    for (root, label) in a.roots.iter().zip(&a.labels) {
        if let Ok(rest) = file.strip_prefix(root) {
            if rest.as_os_str().is_empty() {
                return label.clone();
            }
            let sep = if label.ends_with('/') { "" } else { "/" };
            return format!("{label}{sep}{}", rest.display());
        }
    }
    file.display().to_string()
}

/// Collects one file's results into the shared output.
struct FileSink<'a> {
    args: &'a GrepArgs,
    path: &'a str,
    out: &'a mut Output,
    matched_lines: u64,
    /// Whether this file has printed a line yet (for `--` between files).
    started: bool,
}

impl FileSink<'_> {
    fn line(&mut self, separator: char, number: Option<u64>, bytes: &[u8]) {
        if !self.started {
            self.started = true;
            // ripgrep separates files' context groups too.
            if self.args.before + self.args.after > 0 && !self.out.lines.is_empty() {
                self.out.push("--".to_owned());
            }
        }
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim_end_matches(['\n', '\r']);
        let text = clip_line(text);
        let line = match number.filter(|_| self.args.line_numbers) {
            Some(n) => format!("{}{separator}{n}{separator}{text}", self.path),
            None => format!("{}{separator}{text}", self.path),
        };
        self.out.push(line);
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        match self.args.mode {
            Mode::FilesWithMatches => {
                self.matched_lines += 1;
                Ok(false) // one match is all this mode needs
            }
            Mode::Count => {
                self.matched_lines += mat.lines().count() as u64;
                Ok(true)
            }
            Mode::Content => {
                let first = mat.line_number();
                for (i, line) in mat.lines().enumerate() {
                    self.matched_lines += 1;
                    self.line(':', first.map(|n| n + i as u64), line);
                }
                Ok(!self.out.full())
            }
        }
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, Self::Error> {
        if matches!(context.kind(), SinkContextKind::Other) {
            return Ok(true); // passthru lines; not used here
        }
        self.line('-', context.line_number(), context.bytes());
        Ok(!self.out.full())
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, Self::Error> {
        self.out.push("--".to_owned());
        Ok(!self.out.full())
    }
}

/// A line cut to `MAX_LINE_CHARS` characters, saying how much was cut.
fn clip_line(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(MAX_LINE_CHARS) {
        None => text.into(),
        Some((cut, _)) => format!(
            "{} [... {} more characters ...]",
            &text[..cut],
            text[cut..].chars().count()
        )
        .into(),
    }
}

/// The printed lines, bounded by `head_limit` and by `MAX_OUTPUT_BYTES`.
struct Output {
    lines: Vec<String>,
    bytes: usize,
    head_limit: Option<usize>,
    truncated: bool,
}

impl Output {
    fn new(head_limit: Option<usize>) -> Self {
        Output {
            lines: Vec::new(),
            bytes: 0,
            head_limit,
            truncated: false,
        }
    }

    fn full(&self) -> bool {
        self.truncated || self.head_limit.is_some_and(|n| self.lines.len() >= n)
    }

    fn push(&mut self, line: String) {
        if self.full() {
            return;
        }
        if self.bytes + line.len() + 1 > MAX_OUTPUT_BYTES {
            self.truncated = true;
            return;
        }
        self.bytes += line.len() + 1;
        self.lines.push(line);
    }

    fn render(self) -> String {
        if self.lines.is_empty() && !self.truncated {
            return NO_MATCHES.to_owned();
        }
        let mut text = self.lines.join("\n");
        if self.truncated {
            text.push_str(&format!(
                "\n[... output truncated at {} KiB; narrow the search or use head_limit ...]",
                MAX_OUTPUT_BYTES / 1024
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;
    use std::fs;

    fn tree() -> (tempfile::TempDir, ToolContext, String) {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            (
                "alpha.txt",
                "alpha: the first file\nIt mentions apples and TODO items.\n",
            ),
            ("beta.txt", "beta\nno todo here\nTODO: one\nTODO: two\n"),
            (
                "src/main.rs",
                "fn main() {\n    // TODO wire up\n    run();\n}\n",
            ),
            ("src/lib.py", "def f():\n    pass  # TODO\n"),
            ("ignored/x.txt", "TODO ignored\n"),
            (".hidden.txt", "TODO hidden\n"),
            ("blob.bin", "TODO\0binary\n"),
        ];
        for (name, text) in files {
            let path = dir.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        fs::write(dir.path().join(".gitignore"), "ignored/\n").unwrap();
        let ctx = ToolContext::new(dir.path());
        let root = dir.path().display().to_string();
        (dir, ctx, root)
    }

    async fn grep(ctx: &ToolContext, args: Value) -> String {
        GrepTool.run(args, ctx).await.unwrap().content
    }

    #[tokio::test]
    async fn files_with_matches_is_the_default() {
        let (_dir, ctx, root) = tree();
        assert_eq!(
            grep(&ctx, json!({"pattern": "TODO"})).await,
            format!("./alpha.txt\n./beta.txt\n./src/lib.py\n./src/main.rs")
        );
        // Below a root given as a relative or an absolute path, paths start as it was given.
        assert_eq!(
            grep(&ctx, json!({"pattern": "TODO", "paths": "src/"})).await,
            "src/lib.py\nsrc/main.rs"
        );
        assert_eq!(
            grep(
                &ctx,
                json!({"pattern": "TODO", "paths": [format!("{root}/src"), "beta.txt"]})
            )
            .await,
            format!("beta.txt\n{root}/src/lib.py\n{root}/src/main.rs")
        );
    }

    #[tokio::test]
    async fn content_with_line_numbers() {
        let (_dir, ctx, _root) = tree();
        assert_eq!(
            grep(&ctx, json!({"pattern": "TODO", "output_mode": "content", "-n": true, "paths": ["beta.txt"]})).await,
            "beta.txt:3:TODO: one\nbeta.txt:4:TODO: two"
        );
        assert_eq!(
            grep(&ctx, json!({"pattern": "apples", "output_mode": "content"})).await,
            format!("./alpha.txt:It mentions apples and TODO items.")
        );
    }

    #[tokio::test]
    async fn context_lines() {
        let (_dir, ctx, _root) = tree();
        assert_eq!(
            grep(&ctx, json!({"pattern": "run", "output_mode": "content", "-n": true, "-C": 1, "paths": "src/main.rs"})).await,
            "src/main.rs-2-    // TODO wire up\nsrc/main.rs:3:    run();\nsrc/main.rs-4-}"
        );
        let out = grep(&ctx, json!({"pattern": "^beta|two", "output_mode": "content", "-A": 0, "-B": 1, "path": "beta.txt"})).await;
        assert_eq!(
            out,
            "beta.txt:beta\n--\nbeta.txt-TODO: one\nbeta.txt:TODO: two"
        );
    }

    #[tokio::test]
    async fn count_case_glob_type_and_head_limit() {
        let (_dir, ctx, _root) = tree();
        assert_eq!(
            grep(
                &ctx,
                json!({"pattern": "todo", "output_mode": "count", "-i": true})
            )
            .await,
            format!("./alpha.txt:1\n./beta.txt:3\n./src/lib.py:1\n./src/main.rs:1")
        );
        assert_eq!(
            grep(&ctx, json!({"pattern": "TODO", "glob": "*.rs"})).await,
            format!("./src/main.rs")
        );
        assert_eq!(
            grep(&ctx, json!({"pattern": "TODO", "type": "py"})).await,
            format!("./src/lib.py")
        );
        assert_eq!(
            grep(&ctx, json!({"pattern": "TODO", "head_limit": 2})).await,
            format!("./alpha.txt\n./beta.txt")
        );
        assert_eq!(
            grep(&ctx, json!({"pattern": "nothing-like-this"})).await,
            NO_MATCHES
        );
    }

    #[tokio::test]
    async fn multiline() {
        let (_dir, ctx, _root) = tree();
        assert_eq!(
            grep(&ctx, json!({"pattern": "main.*run"})).await,
            NO_MATCHES
        );
        assert_eq!(
            grep(&ctx, json!({"pattern": "main.*run", "multiline": true})).await,
            format!("./src/main.rs")
        );
        assert_eq!(
            grep(&ctx, json!({"pattern": "fn main\\(\\) \\{\\n.*TODO", "multiline": true, "output_mode": "content", "-n": true})).await,
            format!("./src/main.rs:1:fn main() {{\n./src/main.rs:2:    // TODO wire up")
        );
    }

    #[tokio::test]
    async fn bad_arguments() {
        let (_dir, ctx, _root) = tree();
        for args in [
            json!({"pattern": "("}),
            json!({"pattern": "x", "type": "no-such-type"}),
            json!({"pattern": "x", "output_mode": "lines"}),
            json!({"pattern": "x", "-A": -1}),
            json!({"pattern": "x", "glob": "a["}),
        ] {
            assert_eq!(
                GrepTool
                    .permission(&args, &ctx)
                    .unwrap_err()
                    .code
                    .as_deref(),
                Some("invalid_arguments"),
                "{args}"
            );
        }
        let err = GrepTool
            .permission(&json!({"pattern": "x", "paths": ["/"]}), &ctx)
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("outside_cwd"));
        assert_eq!(
            GrepTool.permission(&json!({"pattern": "x"}), &ctx).unwrap(),
            None
        );
    }

    #[test]
    fn a_session_asking_for_reads_is_asked_for_the_first_root() {
        let (_dir, mut ctx, root) = tree();
        ctx.ask_reads_in_cwd = true;
        let ask = GrepTool
            .permission(&json!({"pattern": "x", "paths": ["src", "."]}), &ctx)
            .unwrap()
            .unwrap();
        let src = std::path::Path::new(&root)
            .join("src")
            .display()
            .to_string();
        assert_eq!(
            ask.request["intention"],
            format!("Search in directory: {src}")
        );
        assert_eq!(ask.request["path"], src);
    }

    #[test]
    fn long_lines_are_clipped() {
        let long = "é".repeat(MAX_LINE_CHARS + 5);
        assert!(clip_line(&long).ends_with("é [... 5 more characters ...]"));
        assert_eq!(clip_line("short"), "short");
    }
}
