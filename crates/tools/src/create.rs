//! `create`: writes a new file (creating missing parent directories); an
//! existing path is refused so the model cannot clobber a file by accident:
//! changing a file is `edit`'s job.

use std::fs;
use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::view::summary_path;
use super::{
    BlockingTool, PermissionAsk, PermissionKind, ToolContext, ToolFailure, ToolOutput, ToolSpec,
    args, diff, io_failure, paths,
};

/// The `create` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct CreateTool;

/// The checked arguments of one call.
pub struct CreateArgs {
    path: PathBuf,
    file_text: String,
}

fn parse(args: &Value, ctx: &ToolContext) -> Result<CreateArgs, ToolFailure> {
    let path = paths::resolve_for_write(args::required_str(args, "path")?, ctx)?;
    let file_text = args::required_str(args, "file_text")?.to_owned();
    Ok(CreateArgs { path, file_text })
}

fn refuse_existing(path: &std::path::Path) -> Result<(), ToolFailure> {
    // symlink_metadata: a dangling symlink is "there" too; writing through it is not creating.
    if fs::symlink_metadata(path).is_ok() {
        return Err(ToolFailure::new(
            format!(
                "Path {} already exists. create only makes new files; use the edit tool to change an existing file.",
                path.display()
            ),
            "already_exists",
        ));
    }
    Ok(())
}

impl BlockingTool for CreateTool {
    const NAME: &'static str = "create";
    type Args = CreateArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "create".to_owned(),
            description: "Creates a new file with the given text, making missing parent directories. Fails if the path already exists (use edit to change a file).".to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Absolute path (or relative to the working directory) of the new file."},
                    "file_text": {"type": "string", "description": "The whole content of the new file."}
                },
                "required": ["path", "file_text"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(args: &Value, ctx: &ToolContext) -> Result<CreateArgs, ToolFailure> {
        parse(args, ctx)
    }

    fn needs(a: &CreateArgs) -> Result<Option<PermissionAsk>, ToolFailure> {
        refuse_existing(&a.path)?;
        let file_name = a.path.display().to_string();
        let intention = format!("Create file: {file_name}");
        Ok(Some(PermissionAsk {
            kind: PermissionKind::Write,
            request: json!({
                "kind": "write",
                "intention": intention,
                "fileName": file_name,
                "diff": diff::unified(&file_name, None, &a.file_text),
                "newFileContents": a.file_text,
                "canOfferSessionApproval": true,
            }),
            intention,
            subject: file_name,
            shell: None,
        }))
    }

    fn work(a: CreateArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        create(&a)
    }

    fn summary(args: &Value, ctx: &ToolContext) -> Option<String> {
        summary_path(args, ctx)
    }
}

fn create(a: &CreateArgs) -> Result<ToolOutput, ToolFailure> {
    refuse_existing(&a.path)?;
    if let Some(parent) = a.path.parent() {
        fs::create_dir_all(parent).map_err(|e| io_failure("create the directory", parent, &e))?;
    }
    // create_new: if something appeared since the check, fail rather than overwrite it.
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&a.path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => match refuse_existing(&a.path) {
                Err(failure) => failure,
                Ok(()) => io_failure("create", &a.path, &e),
            },
            _ => io_failure("create", &a.path, &e),
        })?;
    file.write_all(a.file_text.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| io_failure("write", &a.path, &e))?;
    let path = a.path.display().to_string();
    Ok(ToolOutput {
        content: format!(
            "Created file {path} with {} characters",
            a.file_text.chars().count()
        ),
        detailed_content: Some(diff::unified(&path, None, &a.file_text)),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tool;

    #[tokio::test]
    async fn creates_with_parents() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let out = CreateTool
            .run(json!({"path": "a/b/new.txt", "file_text": "héllo\n"}), &ctx)
            .await
            .unwrap();
        let path = dir.path().join("a/b/new.txt");
        assert_eq!(
            out.content,
            format!("Created file {} with 6 characters", path.display())
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "héllo\n");
        assert!(out.detailed_content.unwrap().contains("+héllo"));
    }

    #[tokio::test]
    async fn refuses_existing() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        fs::write(dir.path().join("x"), "keep").unwrap();
        let args = json!({"path": "x", "file_text": "new"});
        let err = CreateTool.permission(&args, &ctx).unwrap_err();
        assert_eq!(err.code.as_deref(), Some("already_exists"));
        assert!(err.message.contains("use the edit tool"));
        let err = CreateTool.run(args, &ctx).await.unwrap_err();
        assert_eq!(err.code.as_deref(), Some("already_exists"));
        assert_eq!(fs::read_to_string(dir.path().join("x")).unwrap(), "keep");
    }

    #[tokio::test]
    async fn refuses_outside_and_bad_args() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path().join("inner"));
        fs::create_dir(dir.path().join("inner")).unwrap();
        let err = CreateTool
            .run(json!({"path": "../escape.txt", "file_text": ""}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("outside_cwd"));
        assert!(!dir.path().join("escape.txt").exists());
        let err = CreateTool
            .permission(&json!({"path": "y"}), &ctx)
            .unwrap_err();
        assert_eq!(err.code.as_deref(), Some("invalid_arguments"));
    }

    #[test]
    fn permission_is_a_write_request() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let ask = CreateTool
            .permission(&json!({"path": "n.txt", "file_text": "one\n"}), &ctx)
            .unwrap()
            .unwrap();
        let path = dir.path().join("n.txt").display().to_string();
        assert_eq!(ask.kind, PermissionKind::Write);
        assert_eq!(ask.subject, path);
        assert_eq!(ask.request["kind"], "write");
        assert_eq!(ask.request["fileName"], path.as_str());
        assert_eq!(ask.request["newFileContents"], "one\n");
        assert!(ask.request["diff"].as_str().unwrap().contains("+one"));
    }
}
