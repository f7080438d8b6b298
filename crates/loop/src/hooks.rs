//! Hooks: commands (from `.github/hooks/*.json` in the working dir) or an SDK client, run at
//! fixed points of the loop with JSON in and JSON out.
//!
//! File format: `{"version":1,"hooks":{"preToolUse":[{"type":"command","bash":"...","timeoutSec":15}]}}`.
//! A command gets the input as JSON on stdin and may print a JSON object on stdout. What the
//! loop reads from the output:
//! - `preToolUse`: `{"permissionDecision":"allow"|"deny", "permissionDecisionReason": "...",
//!   "modifiedArgs": {...}}`;
//! - `postToolUse`: `{"modifiedResult": {"textResultForLlm": "..."}}`;
//! - `userPromptSubmitted`: `{"modifiedPrompt": "..."}`;
//! - `sessionStart`, `sessionEnd`, `errorOccurred`: notifications, output ignored.
//!
//! A hook that fails (non-zero exit, bad JSON, timeout) is reported as an error in its
//! `hook.end` and otherwise ignored: it never crashes the session.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::tools::BoxFuture;

/// The hook points the loop calls.
pub const HOOK_TYPES: [&str; 6] = [
    "preToolUse",
    "postToolUse",
    "userPromptSubmitted",
    "sessionStart",
    "sessionEnd",
    "errorOccurred",
];

/// Runs hooks of a kind; implemented by command hooks and by the SDK server's client hooks.
pub trait HookRunner: Send + Sync {
    /// Whether anything is registered for `hook_type` (so the loop emits nothing otherwise).
    fn handles(&self, hook_type: &str) -> bool;
    /// Runs every hook of `hook_type` in order with `input`; returns the last non-empty output.
    fn invoke<'a>(
        &'a self,
        hook_type: &'a str,
        input: Value,
    ) -> BoxFuture<'a, Result<Option<Value>, String>>;
}

/// Hooks declared as commands in `.github/hooks/*.json`.
#[derive(Debug, Clone, Default)]
pub struct CommandHooks {
    cwd: PathBuf,
    hooks: Vec<(String, CommandHook)>,
}

/// One command hook.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandHook {
    /// Always "command".
    #[serde(rename = "type")]
    pub kind: String,
    /// The command, run with `bash -c` in the working directory.
    pub bash: String,
    /// Kill the command after this many seconds (default 30).
    #[serde(default)]
    pub timeout_sec: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct HookFile {
    version: u32,
    #[serde(default)]
    hooks: std::collections::BTreeMap<String, Vec<CommandHook>>,
}

/// A hook file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct HookFileError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub reason: String,
}

const DEFAULT_TIMEOUT_SECS: u64 = 30;

impl CommandHooks {
    /// Loads every `*.json` in `<cwd>/.github/hooks`, in name order. No folder means no hooks.
    pub fn load(cwd: &Path) -> Result<Self, HookFileError> {
        let dir = cwd.join(".github").join("hooks");
        let mut hooks = Vec::new();
        let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        for path in files {
            let err = |reason: String| HookFileError {
                path: path.clone(),
                reason,
            };
            let text = std::fs::read_to_string(&path).map_err(|e| err(e.to_string()))?;
            let file: HookFile =
                serde_json::from_str(&text).map_err(|e| err(format!("not a hook file: {e}")))?;
            if file.version != 1 {
                return Err(err(format!(
                    "unsupported version {} (expected 1)",
                    file.version
                )));
            }
            for (hook_type, list) in file.hooks {
                if !HOOK_TYPES.contains(&hook_type.as_str()) {
                    tracing::warn!(file = %path.display(), %hook_type, "hook type not supported; ignored");
                    continue;
                }
                for hook in list {
                    if hook.kind != "command" {
                        return Err(err(format!(
                            "hook type {:?} is not supported (only \"command\")",
                            hook.kind
                        )));
                    }
                    hooks.push((hook_type.clone(), hook));
                }
            }
        }
        Ok(CommandHooks {
            cwd: cwd.to_path_buf(),
            hooks,
        })
    }

    async fn run_one(&self, hook: &CommandHook, input: &Value) -> Result<Option<Value>, String> {
        let mut child = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(&hook.bash)
            .current_dir(&self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start hook `{}`: {e}", hook.bash))?;
        let mut stdin = child.stdin.take().ok_or("hook stdin unavailable")?;
        let payload = serde_json::to_vec(input).map_err(|e| e.to_string())?;
        let mut stdout = child.stdout.take().ok_or("hook stdout unavailable")?;
        let mut stderr = child.stderr.take().ok_or("hook stderr unavailable")?;
        let timeout = Duration::from_secs(hook.timeout_sec.unwrap_or(DEFAULT_TIMEOUT_SECS));
        let work = async {
            // A hook that never reads stdin must not block us: ignore a broken pipe.
            let _ = stdin.write_all(&payload).await;
            drop(stdin);
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let (r1, r2, status) = tokio::join!(
                stdout.read_to_end(&mut out),
                stderr.read_to_end(&mut err),
                child.wait()
            );
            r1.and(r2).map_err(|e| e.to_string())?;
            Ok::<_, String>((status.map_err(|e| e.to_string())?, out, err))
        };
        let (status, out, err) = match tokio::time::timeout(timeout, work).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(format!(
                    "hook `{}` timed out after {}s",
                    hook.bash,
                    timeout.as_secs()
                ));
            }
        };
        if !status.success() {
            let stderr = String::from_utf8_lossy(&err);
            return Err(format!(
                "hook `{}` failed ({status}): {}",
                hook.bash,
                stderr.trim()
            ));
        }
        let text = String::from_utf8_lossy(&out);
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        serde_json::from_str(text).map(Some).map_err(|e| {
            format!(
                "hook `{}` printed something that is not JSON: {e}",
                hook.bash
            )
        })
    }
}

impl HookRunner for CommandHooks {
    fn handles(&self, hook_type: &str) -> bool {
        self.hooks.iter().any(|(t, _)| t == hook_type)
    }

    fn invoke<'a>(
        &'a self,
        hook_type: &'a str,
        input: Value,
    ) -> BoxFuture<'a, Result<Option<Value>, String>> {
        Box::pin(async move {
            let mut last = None;
            for (_, hook) in self.hooks.iter().filter(|(t, _)| t == hook_type) {
                if let Some(out) = self.run_one(hook, &input).await? {
                    last = Some(out);
                }
            }
            Ok(last)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks_with(json: &str) -> (tempfile::TempDir, CommandHooks) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".github/hooks")).unwrap();
        std::fs::write(tmp.path().join(".github/hooks/h.json"), json).unwrap();
        let hooks = CommandHooks::load(tmp.path()).unwrap();
        (tmp, hooks)
    }

    #[tokio::test]
    async fn command_gets_json_and_returns_json() {
        let (_t, hooks) = hooks_with(
            r#"{"version":1,"hooks":{"preToolUse":[{"type":"command","bash":"jq -c '{permissionDecision:\"deny\",permissionDecisionReason:.toolName}' 2>/dev/null || python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({\"permissionDecision\":\"deny\",\"permissionDecisionReason\":d[\"toolName\"]}))'"}]}}"#,
        );
        assert!(hooks.handles("preToolUse"));
        assert!(!hooks.handles("postToolUse"));
        let out = hooks
            .invoke("preToolUse", serde_json::json!({"toolName":"bash"}))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(out["permissionDecision"], "deny");
        assert_eq!(out["permissionDecisionReason"], "bash");
    }

    #[tokio::test]
    async fn failing_slow_and_garbage_hooks_are_errors() {
        let (_t, hooks) = hooks_with(
            r#"{"version":1,"hooks":{"sessionStart":[{"type":"command","bash":"echo boom >&2; exit 3"}],"sessionEnd":[{"type":"command","bash":"sleep 5","timeoutSec":1}],"errorOccurred":[{"type":"command","bash":"echo not-json"}]}}"#,
        );
        let e = hooks
            .invoke("sessionStart", serde_json::json!({}))
            .await
            .unwrap_err();
        assert!(e.contains("failed") && e.contains("boom"), "{e}");
        let e = hooks
            .invoke("sessionEnd", serde_json::json!({}))
            .await
            .unwrap_err();
        assert!(e.contains("timed out"), "{e}");
        let e = hooks
            .invoke("errorOccurred", serde_json::json!({}))
            .await
            .unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
    }

    #[test]
    fn bad_files_name_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".github/hooks")).unwrap();
        std::fs::write(tmp.path().join(".github/hooks/bad.json"), "{").unwrap();
        let e = CommandHooks::load(tmp.path()).unwrap_err().to_string();
        assert!(e.contains("bad.json"), "{e}");
        assert!(
            CommandHooks::load(&tmp.path().join("nowhere"))
                .unwrap()
                .hooks
                .is_empty()
        );
    }
}
