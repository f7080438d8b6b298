//! `view`: shows a file with numbered lines (`N. text`, TOOLS.md), or lists a directory.
//!
//! - `view_range` is `[start, end]`, 1-based and inclusive; `end` -1 means to
//!   the end, and an `end` past the last line is clamped.
//! - Files over 256 KiB are refused unless `view_range` picks a part or
//!   `forceReadLargeFiles` is set; files with NUL bytes are refused as binary.
//! - An image (PNG, JPEG, GIF, WebP, known by its first bytes) is sent to the model as a
//!   picture (`view_image.rs`).
//! - A directory lists its entries and those of its subdirectories (two
//!   levels), one per line relative to it, directories with a trailing `/`,
//!   sorted; hidden entries are listed, but hidden directories (`.git`) are not
//!   opened, nor are symlinks, so the listing stays small and inside the tree.
//! - A session that asks for reads inside the working directory asks `Read file: PATH` or
//!   `List directory: PATH` (`reads`); others read there unasked.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{
    BlockingTool, PermissionAsk, ToolContext, ToolFailure, ToolOutput, ToolSpec, args, diff,
    io_failure, paths, reads, view_image,
};

/// The `view` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ViewTool;

/// Files larger than this need `view_range` or `forceReadLargeFiles`.
pub const LARGE_FILE_BYTES: u64 = 256 * 1024;
/// Directory entries listed at most.
pub const MAX_DIR_ENTRIES: usize = 1000;
/// Bytes looked at for a NUL to call a file binary (what git and ripgrep do).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// The checked arguments of one call.
pub struct ViewArgs {
    path: PathBuf,
    /// 1-based first line and inclusive last line (`None` = to the end).
    range: Option<(usize, Option<usize>)>,
    force: bool,
}

fn parse(args: &Value, ctx: &ToolContext) -> Result<ViewArgs, ToolFailure> {
    let path = paths::resolve(args::required_str(args, "path")?, ctx)?;
    let force = args::optional_bool(args, "forceReadLargeFiles")?.unwrap_or(false);
    let range = match args::object(args)?.get("view_range") {
        None | Some(Value::Null) => None,
        Some(value) => Some(parse_range(value)?),
    };
    Ok(ViewArgs { path, range, force })
}

fn parse_range(value: &Value) -> Result<(usize, Option<usize>), ToolFailure> {
    let bad = || {
        ToolFailure::invalid(
            "Parameter 'view_range' must be [start, end]: 1-based line numbers, end -1 for the end of the file.",
        )
    };
    let as_int = |v: &Value| match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    let items = value.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
    let start = as_int(&items[0]).ok_or_else(bad)?;
    let end = as_int(&items[1]).ok_or_else(bad)?;
    let start = usize::try_from(start)
        .ok()
        .filter(|s| *s >= 1)
        .ok_or_else(|| ToolFailure::invalid("view_range start must be 1 or more."))?;
    let end = match end {
        -1 => None,
        e => Some(
            usize::try_from(e)
                .ok()
                .filter(|e| *e >= start)
                .ok_or_else(|| {
                    ToolFailure::invalid(format!(
                        "view_range end must be -1 or at least the start line ({start})."
                    ))
                })?,
        ),
    };
    Ok((start, end))
}

impl BlockingTool for ViewTool {
    const NAME: &'static str = "view";
    type Args = ViewArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "view".to_owned(),
            description: "Shows a file's lines numbered as `N. text`, or lists a directory two levels deep (directories end with `/`). Use view_range to see part of a long file; files over 256 KiB need view_range or forceReadLargeFiles.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Absolute path (or relative to the working directory) of the file or directory."},
                    "view_range": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "minItems": 2,
                        "maxItems": 2,
                        "description": "[start, end]: 1-based, inclusive line numbers; end -1 reads to the end of the file."
                    },
                    "forceReadLargeFiles": {"type": "boolean", "description": "Read a file over 256 KiB in full."}
                },
                "required": ["path"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(args: &Value, ctx: &ToolContext) -> Result<ViewArgs, ToolFailure> {
        parse(args, ctx)
    }

    fn reads(a: &ViewArgs) -> Vec<PermissionAsk> {
        let what = if a.path.is_dir() {
            reads::LIST_DIRECTORY
        } else {
            reads::READ_FILE
        };
        vec![reads::read_ask(what, &a.path)]
    }

    fn work(a: ViewArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        view(&a)
    }

    fn summary(args: &Value, ctx: &ToolContext) -> Option<String> {
        summary_path(args, ctx)
    }
}

/// The call's path, absolute when it resolves (the summary the file tools give).
pub(crate) fn summary_path(args: &Value, ctx: &ToolContext) -> Option<String> {
    let raw = args::optional_str(args, "path").ok().flatten()?;
    Some(match paths::resolve(raw, ctx) {
        Ok(path) => path.display().to_string(),
        Err(_) => raw.to_owned(),
    })
}

/// The text the model reads, and the runtime's detailed text (`diff::shown`, `diff::listed`).
fn view(a: &ViewArgs) -> Result<ToolOutput, ToolFailure> {
    let meta = fs::metadata(&a.path).map_err(|e| io_failure("read", &a.path, &e))?;
    let shown_as = a.path.display().to_string();
    if meta.is_dir() {
        let listing = list_dir(&a.path)?;
        let detail = diff::listed(&shown_as, &listing);
        return Ok(ToolOutput::detailed(listing, detail));
    }
    // An image goes to the model as a picture, whatever its size against the text bounds.
    if let Some(mime_type) = view_image::sniff(&a.path) {
        return view_image::view_image(&a.path, &shown_as, mime_type);
    }
    if meta.len() > LARGE_FILE_BYTES && !a.force && a.range.is_none() {
        return Err(ToolFailure::new(
            format!(
                "File {} is {} bytes, more than the {} KiB view shows at once. View part of it with view_range (e.g. [1, 200]), or set forceReadLargeFiles to read all of it.",
                a.path.display(),
                meta.len(),
                LARGE_FILE_BYTES / 1024
            ),
            "too_large",
        ));
    }
    let (content, first, raw) = view_file(&a.path, a.range)?;
    let raw: Vec<&str> = raw.iter().map(String::as_str).collect();
    let detail = diff::shown(&shown_as, first, &raw);
    Ok(ToolOutput::detailed(content, detail))
}

/// The numbered lines the model reads, the number of the first, and the same lines unnumbered.
fn view_file(
    path: &Path,
    range: Option<(usize, Option<usize>)>,
) -> Result<(String, usize, Vec<String>), ToolFailure> {
    let file = fs::File::open(path).map_err(|e| io_failure("open", path, &e))?;
    let mut reader = BufReader::new(file);
    let head = reader
        .fill_buf()
        .map_err(|e| io_failure("read", path, &e))?;
    if head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(ToolFailure::new(
            format!(
                "File {} looks binary (it contains NUL bytes); view shows text files only.",
                path.display()
            ),
            "binary",
        ));
    }
    let (start, end) = range.unwrap_or((1, None));
    let mut shown = Vec::new();
    let mut raw = Vec::new();
    let mut count = 0usize;
    // The runtime numbers the pieces of the text split at each '\n': a file that ends with a
    // newline has an empty last line, shown as `N. `. Split ourselves rather than `lines()`,
    // which fails on invalid UTF-8.
    let mut line = Vec::new();
    let mut ended_with_newline = false;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_failure("read", path, &e))?;
        let last = n == 0;
        if last && (count == 0 || !ended_with_newline) {
            break; // an empty file has nothing to number
        }
        ended_with_newline = line.last() == Some(&b'\n');
        count += 1;
        if end.is_some_and(|end| count > end) {
            break;
        }
        if count >= start {
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = String::from_utf8_lossy(text);
            shown.push(format!("{count}. {text}"));
            raw.push(text.into_owned());
        }
        if last {
            break;
        }
    }
    if count == 0 {
        return Ok((String::new(), 1, Vec::new()));
    }
    if start > count {
        return Err(ToolFailure::invalid(format!(
            "Invalid view_range: start line {start} is past the end of {} ({count} lines).",
            path.display()
        )));
    }
    Ok((shown.join("\n"), start, raw))
}

fn list_dir(dir: &Path) -> Result<String, ToolFailure> {
    let mut entries: Vec<(PathBuf, bool)> = Vec::new();
    for (name, is_dir, descend) in read_entries(dir).map_err(|e| io_failure("list", dir, &e))? {
        if descend {
            // A subdirectory we cannot read still shows up itself.
            for (child, child_is_dir, _) in read_entries(&dir.join(&name)).unwrap_or_default() {
                entries.push((Path::new(&name).join(child), child_is_dir));
            }
        }
        entries.push((PathBuf::from(name), is_dir));
    }
    if entries.is_empty() {
        return Ok(format!("Directory {} is empty.", dir.display()));
    }
    // Path order puts a directory's children right after it.
    entries.sort();
    let total = entries.len();
    let mut lines: Vec<String> = entries
        .into_iter()
        .take(MAX_DIR_ENTRIES)
        .map(|(path, is_dir)| {
            let mut line = path.display().to_string();
            if is_dir {
                line.push('/');
            }
            line
        })
        .collect();
    if total > MAX_DIR_ENTRIES {
        lines.push(format!(
            "[... {} more entries not shown ...]",
            total - MAX_DIR_ENTRIES
        ));
    }
    Ok(lines.join("\n"))
}

/// A directory's entries as (name, is a directory (symlinks followed), worth descending into).
fn read_entries(dir: &Path) -> std::io::Result<Vec<(std::ffi::OsString, bool, bool)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let real_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let is_dir = real_dir || fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
        let hidden = name.to_string_lossy().starts_with('.');
        out.push((name, is_dir, real_dir && !hidden));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        (dir, ctx)
    }

    async fn view_ok(ctx: &ToolContext, args: Value) -> String {
        ViewTool.run(args, ctx).await.unwrap().content
    }

    #[tokio::test]
    async fn numbers_lines() {
        let (dir, ctx) = setup();
        fs::write(
            dir.path().join("a.txt"),
            "alpha: the first file\nsecond\r\nthird\n",
        )
        .unwrap();
        assert_eq!(
            view_ok(&ctx, json!({"path": "a.txt"})).await,
            "1. alpha: the first file\n2. second\n3. third\n4. "
        );
        let abs = dir.path().join("a.txt");
        assert_eq!(
            view_ok(&ctx, json!({"path": abs.to_str().unwrap()})).await,
            "1. alpha: the first file\n2. second\n3. third\n4. "
        );
        // Without a final newline there is no empty last line.
        fs::write(dir.path().join("b.txt"), "one\ntwo").unwrap();
        assert_eq!(
            view_ok(&ctx, json!({"path": "b.txt"})).await,
            "1. one\n2. two"
        );
        fs::write(dir.path().join("empty"), "").unwrap();
        assert_eq!(view_ok(&ctx, json!({"path": "empty"})).await, "");
    }

    #[tokio::test]
    async fn ranges() {
        let (dir, ctx) = setup();
        let text: String = (1..=10).map(|i| format!("line{i}\n")).collect();
        fs::write(dir.path().join("f"), text).unwrap();
        assert_eq!(
            view_ok(&ctx, json!({"path": "f", "view_range": [3, 5]})).await,
            "3. line3\n4. line4\n5. line5"
        );
        assert_eq!(
            view_ok(&ctx, json!({"path": "f", "view_range": [9, -1]})).await,
            "9. line9\n10. line10\n11. "
        );
        assert_eq!(
            view_ok(&ctx, json!({"path": "f", "view_range": [10, 99]})).await,
            "10. line10\n11. "
        );
        for bad in [
            json!([0, 3]),
            json!([5, 2]),
            json!([1]),
            json!("1-3"),
            json!([12, -1]),
        ] {
            let err = ViewTool
                .run(json!({"path": "f", "view_range": bad}), &ctx)
                .await
                .unwrap_err();
            assert_eq!(err.code.as_deref(), Some("invalid_arguments"), "{bad}");
        }
    }

    #[tokio::test]
    async fn large_files_need_a_range_or_force() {
        let (dir, ctx) = setup();
        let line = "x".repeat(99) + "\n";
        fs::write(dir.path().join("big"), line.repeat(3000)).unwrap();
        let err = ViewTool
            .run(json!({"path": "big"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("too_large"));
        assert!(err.message.contains("view_range"));
        let part = view_ok(&ctx, json!({"path": "big", "view_range": [2999, -1]})).await;
        assert_eq!(
            part.lines().count(),
            3,
            "2999, 3000 and the empty line after the last newline"
        );
        let all = view_ok(&ctx, json!({"path": "big", "forceReadLargeFiles": true})).await;
        assert!(all.ends_with(&format!("3000. {}\n3001. ", "x".repeat(99))));
    }

    #[tokio::test]
    async fn directories_list_two_levels() {
        let (dir, ctx) = setup();
        fs::create_dir_all(dir.path().join("src/deep/deeper")).unwrap();
        fs::create_dir_all(dir.path().join(".git/objects")).unwrap();
        fs::write(dir.path().join("src/main.rs"), "").unwrap();
        fs::write(dir.path().join("src/deep/deeper/x"), "").unwrap();
        fs::write(dir.path().join(".env"), "").unwrap();
        fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        assert_eq!(
            view_ok(&ctx, json!({"path": "."})).await,
            ".env\n.git/\nCargo.toml\nsrc/\nsrc/deep/\nsrc/main.rs"
        );
        fs::create_dir(dir.path().join("void")).unwrap();
        assert!(
            view_ok(&ctx, json!({"path": "void"}))
                .await
                .contains("is empty")
        );
    }

    #[tokio::test]
    async fn missing_binary_and_outside() {
        let (dir, ctx) = setup();
        let err = ViewTool
            .run(json!({"path": "nope.txt"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "Path {} does not exist. Please provide a valid path.",
                dir.path().join("nope.txt").display()
            )
        );
        fs::write(dir.path().join("bin"), b"ab\0cd").unwrap();
        let err = ViewTool
            .run(json!({"path": "bin"}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("binary"));
        let err = ViewTool
            .permission(&json!({"path": "../x"}), &ctx)
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("outside_cwd"));
        assert_eq!(
            ViewTool.permission(&json!({"path": "a"}), &ctx).unwrap(),
            None
        );
        assert_eq!(
            ViewTool.intention_summary(&json!({"path": "a"}), &ctx),
            Some(dir.path().join("a").display().to_string())
        );
    }

    #[test]
    fn a_session_asking_for_reads_is_asked_for_the_file_or_the_directory() {
        let (dir, mut ctx) = setup();
        ctx.ask_reads_in_cwd = true;
        fs::create_dir(dir.path().join("sub")).unwrap();
        let asked = |path: &str| {
            let ask = ViewTool
                .permission(&json!({ "path": path }), &ctx)
                .unwrap()
                .unwrap();
            ask.request["intention"].as_str().unwrap().to_owned()
        };
        let sub = dir.path().join("sub").display().to_string();
        assert_eq!(asked("sub"), format!("List directory: {sub}"));
        let file = dir.path().join("sub/x.txt").display().to_string();
        assert_eq!(asked("sub/x.txt"), format!("Read file: {file}"));
        // Leaving the directory is refused before anything is asked.
        let err = ViewTool
            .permission(&json!({"path": "../x"}), &ctx)
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("outside_cwd"));
    }
}
