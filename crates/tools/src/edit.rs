//! `edit`: replaces exactly one occurrence of `old_str` with `new_str`.
//!
//! Exactly one, because an edit the model cannot place unambiguously is
//! better refused (with the count, so it adds context) than applied in the
//! wrong spot. `old_str` is required; files are made with `create`.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::view::summary_path;
use super::{
    BlockingTool, PermissionAsk, PermissionKind, ToolContext, ToolFailure, ToolOutput, ToolSpec,
    args, diff, io_failure, paths,
};

/// The `edit` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

/// The checked arguments of one call.
pub struct EditArgs {
    path: PathBuf,
    old_str: String,
    new_str: String,
}

fn parse(args: &Value, ctx: &ToolContext) -> Result<EditArgs, ToolFailure> {
    let path = paths::resolve_for_write(args::required_str(args, "path")?, ctx)?;
    let old_str = args::optional_str(args, "old_str")?.unwrap_or("");
    if old_str.is_empty() {
        return Err(ToolFailure::invalid(
            "Parameter 'old_str' is required and must not be empty: edit replaces exactly one occurrence of old_str with new_str. Use the create tool to make a new file.",
        ));
    }
    // An absent new_str deletes old_str, as in the runtime's editor.
    let new_str = args::optional_str(args, "new_str")?.unwrap_or("");
    Ok(EditArgs {
        path,
        old_str: old_str.to_owned(),
        new_str: new_str.to_owned(),
    })
}

/// The file's current text and its text after the edit, or why the edit cannot be made.
fn plan(a: &EditArgs) -> Result<(String, String), ToolFailure> {
    let meta = fs::metadata(&a.path).map_err(|e| io_failure("read", &a.path, &e))?;
    if meta.is_dir() {
        return Err(ToolFailure::invalid(format!(
            "Path {} is a directory; edit changes files.",
            a.path.display()
        )));
    }
    let bytes = fs::read(&a.path).map_err(|e| io_failure("read", &a.path, &e))?;
    let old = String::from_utf8(bytes).map_err(|_| {
        ToolFailure::new(
            format!(
                "File {} is not UTF-8 text; edit works on text files only.",
                a.path.display()
            ),
            "binary",
        )
    })?;
    let (mut needle, mut replacement) = (a.old_str.clone(), a.new_str.clone());
    let mut count = count_occurrences(&old, &needle);
    if count == 0 && old.contains("\r\n") && needle.contains('\n') && !needle.contains("\r\n") {
        // Models write "\n"; a CRLF file should still be editable.
        needle = needle.replace('\n', "\r\n");
        replacement = replacement.replace('\n', "\r\n");
        count = count_occurrences(&old, &needle);
    }
    match count {
        0 => Err(ToolFailure::new(
            format!(
                "No match found for old_str in {}. old_str must match the file exactly, including whitespace and indentation; view the file to check.",
                a.path.display()
            ),
            "no_match",
        )),
        1 => {
            let new = old.replacen(&needle, &replacement, 1);
            Ok((old, new))
        }
        n => Err(ToolFailure::new(
            format!(
                "old_str matches {n} times in {}; it must match exactly once. Add surrounding lines to old_str to make it unique.",
                a.path.display()
            ),
            "multiple_matches",
        )),
    }
}

/// Occurrences of `needle` in `haystack`, overlapping ones included (for
/// "aa" in "aaa" the place is ambiguous too).
fn count_occurrences(haystack: &str, needle: &str) -> usize {
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut count = 0;
    let mut from = 0;
    while let Some(at) = haystack.get(from..).and_then(|rest| rest.find(needle)) {
        count += 1;
        from += at + step;
    }
    count
}

fn write_request(path: &Path, old: &str, new: &str) -> PermissionAsk {
    let file_name = path.display().to_string();
    let intention = format!("Edit file: {file_name}");
    PermissionAsk {
        kind: PermissionKind::Write,
        request: json!({
            "kind": "write",
            "intention": intention,
            "fileName": file_name,
            "diff": diff::unified(&file_name, Some(old), new),
            // The file as the edit leaves it, as the runtime's request carries it.
            "newFileContents": new,
            "canOfferSessionApproval": true,
        }),
        intention,
        subject: file_name,
        shell: None,
    }
}

impl BlockingTool for EditTool {
    const NAME: &'static str = "edit";
    type Args = EditArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".to_owned(),
            description: "Edits a file by replacing exactly one occurrence of old_str with new_str. old_str must match the file exactly (whitespace included) and only once; include surrounding lines to make it unique. Omit new_str to delete old_str.".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Absolute path (or relative to the working directory) of the file."},
                    "old_str": {"type": "string", "description": "The exact text to replace; must occur exactly once."},
                    "new_str": {"type": "string", "description": "The text to put in its place (empty or omitted deletes old_str)."}
                },
                "required": ["path"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(args: &Value, ctx: &ToolContext) -> Result<EditArgs, ToolFailure> {
        parse(args, ctx)
    }

    fn needs(a: &EditArgs) -> Result<Option<PermissionAsk>, ToolFailure> {
        // Checking the match now means nobody is asked to approve an edit that cannot apply.
        let (old, new) = plan(a)?;
        Ok(Some(write_request(&a.path, &old, &new)))
    }

    fn work(a: EditArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        edit(&a)
    }

    fn summary(args: &Value, ctx: &ToolContext) -> Option<String> {
        summary_path(args, ctx)
    }
}

fn edit(a: &EditArgs) -> Result<ToolOutput, ToolFailure> {
    // Planned again: the file may have changed while permission was asked.
    let (old, new) = plan(a)?;
    fs::write(&a.path, &new).map_err(|e| io_failure("write", &a.path, &e))?;
    let path = a.path.display().to_string();
    Ok(ToolOutput {
        content: format!("File {path} updated with changes."),
        detailed_content: Some(diff::unified(&path, Some(&old), &new)),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;

    fn setup(content: &str) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.txt"), content).unwrap();
        let ctx = ToolContext::new(dir.path());
        (dir, ctx)
    }

    #[tokio::test]
    async fn one_occurrence_is_replaced() {
        let (dir, ctx) = setup("fn main() {\n    println!(\"hi\");\n}\n");
        let out = EditTool
            .run(
                json!({"path": "f.txt", "old_str": "\"hi\"", "new_str": "\"hello\""}),
                &ctx,
            )
            .await
            .unwrap();
        let path = dir.path().join("f.txt");
        assert_eq!(
            out.content,
            format!("File {} updated with changes.", path.display())
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "fn main() {\n    println!(\"hello\");\n}\n"
        );
        let detail = out.detailed_content.unwrap();
        assert!(detail.contains("-    println!(\"hi\");\n+    println!(\"hello\");"));
    }

    #[tokio::test]
    async fn zero_occurrences_fail() {
        let (dir, ctx) = setup("abc\n");
        let err = EditTool
            .run(
                json!({"path": "f.txt", "old_str": "xyz", "new_str": "q"}),
                &ctx,
            )
            .await
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("no_match"));
        assert!(err.message.starts_with(&format!(
            "No match found for old_str in {}",
            dir.path().join("f.txt").display()
        )));
        assert_eq!(
            fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            "abc\n"
        );
    }

    #[tokio::test]
    async fn two_occurrences_fail_with_the_count() {
        let (dir, ctx) = setup("x = 1\nx = 1\n");
        let args = json!({"path": "f.txt", "old_str": "x = 1", "new_str": "x = 2"});
        let err = EditTool.permission(&args, &ctx).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("multiple_matches"));
        assert!(err.message.contains("matches 2 times"));
        assert!(EditTool.run(args, &ctx).await.is_err());
        assert_eq!(
            fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            "x = 1\nx = 1\n"
        );
        assert_eq!(count_occurrences("aaa", "aa"), 2);
    }

    #[tokio::test]
    async fn deletion_and_crlf() {
        let (dir, ctx) = setup("one\r\ntwo\r\nthree\r\n");
        EditTool
            .run(json!({"path": "f.txt", "old_str": "one\ntwo\n"}), &ctx)
            .await
            .unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            "three\r\n"
        );
    }

    #[tokio::test]
    async fn bad_calls() {
        let (_dir, ctx) = setup("abc");
        for args in [
            json!({"path": "f.txt", "new_str": "x"}),
            json!({"path": "f.txt", "old_str": "", "new_str": "x"}),
        ] {
            assert_eq!(
                EditTool
                    .permission(&args, &ctx)
                    .unwrap_err()
                    .code
                    .as_deref(),
                Some("invalid_arguments")
            );
        }
        let err = EditTool
            .permission(&json!({"path": "missing.txt", "old_str": "a"}), &ctx)
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("not_found"));
        let err = EditTool
            .permission(&json!({"path": "/etc/hostname", "old_str": "a"}), &ctx)
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("outside_cwd"));
    }

    #[test]
    fn permission_carries_the_diff() {
        let (dir, ctx) = setup("a\nb\nc\n");
        let ask = EditTool
            .permission(
                &json!({"path": "f.txt", "old_str": "b", "new_str": "B"}),
                &ctx,
            )
            .unwrap()
            .unwrap();
        let path = dir.path().join("f.txt").display().to_string();
        assert_eq!(ask.kind, PermissionKind::Write);
        assert_eq!(ask.subject, path);
        assert_eq!(ask.intention, format!("Edit file: {path}"));
        assert!(
            ask.request["diff"]
                .as_str()
                .unwrap()
                .ends_with("@@ -1,4 +1,4 @@\n a\n-b\n+B\n c\n \n")
        );
    }
}
