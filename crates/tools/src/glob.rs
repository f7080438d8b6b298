//! `glob`: lists files matching a glob pattern, ripgrep-style.
//!
//! - The tree is walked with ripgrep's `ignore` crate: `.gitignore`,
//!   `.ignore` and `.rgignore` are respected and hidden files skipped, as
//!   `rg --files` does. `.gitignore` counts even outside a git repository, so
//!   a session's scratch directory behaves like its checkout.
//! - A pattern without `/` matches file names at any depth (`*.txt`); one
//!   with `/` matches the path relative to the searched directory
//!   (`src/**/*.rs`). An absolute pattern searches from its literal prefix.
//! - Matches are printed relative to the working directory with `./` first,
//!   one a line (TOOLS.md), sorted by path.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use ignore::types::Types;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{
    BlockingTool, PermissionAsk, ToolContext, ToolFailure, ToolOutput, ToolSpec, args, not_found,
    paths, reads,
};

/// The `glob` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobTool;

/// Matches listed at most; past that the model should narrow the pattern.
pub const MAX_GLOB_RESULTS: usize = 1000;
/// The result when nothing matched.
pub const NO_MATCHES: &str = "No files matched the pattern.";

/// A glob pattern with ripgrep's `-g` reading: basename match without `/`,
/// relative-path match with it, `!` in front to exclude.
#[derive(Debug, Clone)]
pub(crate) struct GlobFilter {
    matcher: GlobMatcher,
    whole_path: bool,
    negated: bool,
}

impl GlobFilter {
    /// Compiles `pattern`; a bad pattern is an argument error naming it.
    pub(crate) fn new(pattern: &str) -> Result<Self, ToolFailure> {
        let (negated, pattern) = match pattern.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, pattern),
        };
        let pattern = pattern.trim_start_matches("./");
        Self::build(pattern, pattern.contains('/'), negated)
    }

    fn build(pattern: &str, whole_path: bool, negated: bool) -> Result<Self, ToolFailure> {
        if pattern.is_empty() {
            return Err(ToolFailure::invalid("The glob pattern must not be empty."));
        }
        let glob = GlobBuilder::new(pattern)
            // `*` stays within one directory, as in a shell and in .gitignore.
            .literal_separator(true)
            .build()
            .map_err(|e| ToolFailure::invalid(format!("Invalid glob pattern '{pattern}': {e}")))?;
        Ok(GlobFilter {
            matcher: glob.compile_matcher(),
            whole_path,
            negated,
        })
    }

    /// Whether the file at `rel` (relative to the searched directory) passes.
    pub(crate) fn matches(&self, rel: &Path) -> bool {
        let hit = if self.whole_path {
            self.matcher.is_match(rel)
        } else {
            rel.file_name()
                .is_some_and(|name| self.matcher.is_match(Path::new(name)))
        };
        hit != self.negated
    }
}

/// The files under `roots` that survive the ignore rules, `types` and
/// `filter` (matched relative to their root), as absolute paths, sorted and
/// deduplicated. A root that is a file is taken as is, as ripgrep does.
pub(crate) fn walk_files(
    roots: &[PathBuf],
    types: Option<Types>,
    filter: Option<&GlobFilter>,
    cancel: &CancellationToken,
) -> Result<Vec<PathBuf>, ToolFailure> {
    let mut files = Vec::new();
    for root in roots {
        if std::fs::symlink_metadata(root).is_err() {
            return Err(not_found(root));
        }
        let mut builder = WalkBuilder::new(root);
        builder.require_git(false).follow_links(false);
        if let Some(types) = &types {
            builder.types(types.clone());
        }
        for entry in builder.build() {
            if cancel.is_cancelled() {
                return Err(ToolFailure::cancelled());
            }
            // Unreadable corners of the tree are skipped, as ripgrep does.
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            let rel = match path.strip_prefix(root) {
                Ok(rel) if !rel.as_os_str().is_empty() => rel,
                _ => Path::new(path.file_name().unwrap_or(path.as_os_str())),
            };
            if filter.is_none_or(|f| f.matches(rel)) {
                files.push(path.to_path_buf());
            }
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// The directories to search: `paths` (or the older `path`), default the working directory.
pub(crate) fn search_roots(args: &Value, ctx: &ToolContext) -> Result<Vec<PathBuf>, ToolFailure> {
    let given = match args::string_list(args, "paths")? {
        Some(list) if !list.is_empty() => list,
        _ => args::string_list(args, "path")?.unwrap_or_default(),
    };
    if given.is_empty() {
        return Ok(vec![paths::working_dir(ctx)]);
    }
    given.iter().map(|p| paths::resolve(p, ctx)).collect()
}

/// The checked arguments of one call.
pub struct GlobArgs {
    roots: Vec<PathBuf>,
    filter: GlobFilter,
}

fn parse(args: &Value, ctx: &ToolContext) -> Result<GlobArgs, ToolFailure> {
    let pattern = args::required_str(args, "pattern")?.trim().to_owned();
    if pattern.starts_with('/') {
        // An absolute pattern: search from its literal directory prefix, and
        // match the rest against paths below it.
        let (root, rest) = split_literal_prefix(&pattern);
        let root = paths::resolve(&root, ctx)?;
        let filter = GlobFilter::build(&rest, true, false)?;
        return Ok(GlobArgs {
            roots: vec![root],
            filter,
        });
    }
    Ok(GlobArgs {
        roots: search_roots(args, ctx)?,
        filter: GlobFilter::new(&pattern)?,
    })
}

/// Splits an absolute pattern into the directories before the first glob
/// character and the pattern after them.
fn split_literal_prefix(pattern: &str) -> (String, String) {
    let components: Vec<&str> = pattern.split('/').collect();
    let first_glob = components
        .iter()
        .position(|c| c.contains(['*', '?', '[', '{']))
        .unwrap_or(components.len().saturating_sub(1));
    let root = components[..first_glob].join("/");
    let rest = components[first_glob..].join("/");
    (
        if root.is_empty() {
            "/".to_owned()
        } else {
            root
        },
        rest,
    )
}

impl BlockingTool for GlobTool {
    const NAME: &'static str = "glob";
    type Args = GlobArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "glob".to_owned(),
            description: "Finds files by glob pattern, skipping hidden and git-ignored files. `*.rs` matches file names at any depth; a pattern with `/` (e.g. `src/**/*.ts`) matches paths relative to the searched directory. Prints matching files relative to the working directory, one per line.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The glob pattern, e.g. `*.txt` or `src/**/*.rs`."},
                    "paths": {"type": "string", "description": "Directory to search in (default: the working directory)."}
                },
                "required": ["pattern"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(args: &Value, ctx: &ToolContext) -> Result<GlobArgs, ToolFailure> {
        parse(args, ctx)
    }

    fn reads(a: &GlobArgs) -> Vec<PermissionAsk> {
        reads::search_asks(reads::SEARCH_FILES, &a.roots)
    }

    fn work(a: GlobArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        let files = walk_files(&a.roots, None, Some(&a.filter), &ctx.cancel)?;
        Ok(ToolOutput::text(render(&files, &paths::working_dir(ctx))))
    }

    fn summary(args: &Value, _ctx: &ToolContext) -> Option<String> {
        args::optional_str(args, "pattern")
            .ok()
            .flatten()
            .map(str::to_owned)
    }
}

fn render(files: &[PathBuf], cwd: &Path) -> String {
    if files.is_empty() {
        return NO_MATCHES.to_owned();
    }
    let mut shown: Vec<String> = files
        .iter()
        .map(|f| paths::display_relative(f, cwd))
        .collect();
    shown.sort();
    let total = shown.len();
    shown.truncate(MAX_GLOB_RESULTS);
    if total > MAX_GLOB_RESULTS {
        shown.push(format!(
            "[... {} more files not shown; use a narrower pattern ...]",
            total - MAX_GLOB_RESULTS
        ));
    }
    shown.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;
    use std::fs;

    fn tree() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        for file in [
            "alpha.txt",
            "beta.txt",
            "gamma.txt",
            "notes.md",
            "src/lib.rs",
            "src/deep/mod.rs",
            "src/deep/data.txt",
            "target/debug/out.txt",
            "build.log",
            ".hidden/secret.txt",
            ".dot.txt",
        ] {
            let path = dir.path().join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "x").unwrap();
        }
        fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
        let ctx = ToolContext::new(dir.path());
        (dir, ctx)
    }

    async fn glob(ctx: &ToolContext, args: Value) -> String {
        GlobTool.run(args, ctx).await.unwrap().content
    }

    #[tokio::test]
    async fn basename_patterns_match_at_any_depth() {
        let (_dir, ctx) = tree();
        assert_eq!(
            glob(&ctx, json!({"pattern": "*.txt"})).await,
            "./alpha.txt\n./beta.txt\n./gamma.txt\n./src/deep/data.txt"
        );
    }

    #[tokio::test]
    async fn respects_gitignore_and_hidden() {
        let (_dir, ctx) = tree();
        let all = glob(&ctx, json!({"pattern": "*"})).await;
        assert!(!all.contains("target"), "{all}");
        assert!(!all.contains("build.log"), "{all}");
        assert!(!all.contains("hidden"), "{all}");
        assert!(!all.contains(".dot.txt"), "{all}");
        assert!(all.contains("./notes.md"));
    }

    #[tokio::test]
    async fn path_patterns_and_roots() {
        let (dir, ctx) = tree();
        assert_eq!(
            glob(&ctx, json!({"pattern": "src/**/*.rs"})).await,
            "./src/deep/mod.rs\n./src/lib.rs"
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "src/*.rs"})).await,
            "./src/lib.rs"
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "*.rs", "paths": "src/deep"})).await,
            "./src/deep/mod.rs"
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "*.rs", "path": "src/deep"})).await,
            "./src/deep/mod.rs"
        );
        let abs = format!("{}/src/**/*.rs", dir.path().display());
        assert_eq!(
            glob(&ctx, json!({"pattern": abs})).await,
            "./src/deep/mod.rs\n./src/lib.rs"
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "{alpha,beta}.txt"})).await,
            "./alpha.txt\n./beta.txt"
        );
    }

    #[tokio::test]
    async fn nothing_matched_and_errors() {
        let (_dir, ctx) = tree();
        assert_eq!(glob(&ctx, json!({"pattern": "*.zip"})).await, NO_MATCHES);
        let err = GlobTool
            .run(json!({"pattern": "*", "paths": "../"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("outside_cwd"));
        let err = GlobTool
            .run(json!({"pattern": "*", "paths": "missing"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("not_found"));
        let err = GlobTool
            .permission(&json!({"pattern": "a[" }), &ctx)
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("invalid_arguments"));
        assert_eq!(
            GlobTool.permission(&json!({"pattern": "*"}), &ctx).unwrap(),
            None
        );
        assert_eq!(
            GlobTool.intention_summary(&json!({"pattern": "*.txt"}), &ctx),
            Some("*.txt".to_owned())
        );
    }

    #[test]
    fn literal_prefix() {
        assert_eq!(
            split_literal_prefix("/a/b/**/*.rs"),
            ("/a/b".to_owned(), "**/*.rs".to_owned())
        );
        assert_eq!(
            split_literal_prefix("/a/b/c.txt"),
            ("/a/b".to_owned(), "c.txt".to_owned())
        );
        assert_eq!(split_literal_prefix("/*"), ("/".to_owned(), "*".to_owned()));
    }

    #[test]
    fn negated_filter() {
        let f = GlobFilter::new("!*.min.js").unwrap();
        assert!(!f.matches(Path::new("a/b.min.js")));
        assert!(f.matches(Path::new("a/b.js")));
    }
}
