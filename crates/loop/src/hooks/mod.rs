//! Hooks: commands (from `.github/hooks/*.json` in the working dir) or an SDK client, run at
//! fixed points of the loop with JSON in and JSON out.
//!
//! File format: `{"version":1,"hooks":{"preToolUse":[{"type":"command","bash":"...","timeoutSec":15}]}}`.
//! A command gets the input as JSON on stdin and may print a JSON object on stdout. What the
//! loop reads from the output:
//! - `preToolUse`: `{"permissionDecision":"allow"|"deny", "permissionDecisionReason": "...",
//!   "modifiedArgs": {...}}`;
//! - `preMcpToolCall` (an MCP tool's call: `serverName`, `toolName`, `arguments`):
//!   `{"metaToUse": {...}}` is the request's `_meta` (`null`: none);
//! - `postToolUse`: `{"modifiedResult": {"textResultForLlm": "..."}}`;
//! - `userPromptSubmitted`: `{"modifiedPrompt": "..."}`;
//! - `userPromptTransformed` (input: the prompt and the text the model will read,
//!   `transformedPrompt`): `{"modifiedTransformedPrompt": "..."}` replaces that text;
//! - `agentStop` (the agent finished a message: `transcriptPath`, `stopReason`,
//!   `stop_hook_active` when a block already kept it going): `{"decision": "block",
//!   "reason": "..."}` keeps the agent going with the reason as the next prompt;
//! - `sessionStart`, `sessionEnd`, `errorOccurred`: notifications, output ignored.
//!
//! A hook that fails (non-zero exit, bad JSON, timeout) is reported as an error in its
//! `hook.end` and otherwise ignored: it never crashes the session.
//!
//! A command runs with the engine's environment without its secrets
//! (`turnstile_permissions::tool_env`), as every tool process does.
//!
//! Hook files load only from a trusted working directory ([`HookTrust`]). Their content is
//! kept from the session's start; a hook whose file changed since (or disappeared) does not
//! run, and its `hook.end` error says why, until a new session starts in a trusted folder.

mod error;
mod trust;

pub use error::HookRunError;
pub use trust::HookTrust;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use turnstile_sandbox::Sandboxing;
use turnstile_tools::BoxFuture;

/// The hook points the loop calls.
pub const HOOK_TYPES: [&str; 9] = [
    "preToolUse",
    "preMcpToolCall",
    "postToolUse",
    "userPromptSubmitted",
    "userPromptTransformed",
    "agentStop",
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
    ) -> BoxFuture<'a, Result<Option<Value>, HookRunError>>;
}

/// Hooks declared as commands in `.github/hooks/*.json`.
#[derive(Debug, Clone, Default)]
pub struct CommandHooks {
    cwd: PathBuf,
    /// (hook type, hook, index into `files`).
    hooks: Vec<(String, CommandHook, usize)>,
    /// Every hook file loaded, with its content at the session's start.
    files: Vec<(PathBuf, Vec<u8>)>,
    /// What every hook process enters before it runs (`session::configured_processes`).
    sandbox: Sandboxing,
}

/// Largest hook file read.
const MAX_HOOK_FILE_BYTES: u64 = 1 << 20;
/// Most hook files read from one folder.
const MAX_HOOK_FILES: usize = 256;

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
    /// Loads every `*.json` in `<cwd>/.github/hooks`, in name order, when `trust` trusts
    /// `cwd`; else loads none. No folder means no hooks. Returns the hooks and warnings for
    /// the user (hooks that were not loaded, and why).
    pub fn load(cwd: &Path, trust: &HookTrust) -> Result<(Self, Vec<String>), HookFileError> {
        let dir = cwd.join(".github").join("hooks");
        let mut loaded = CommandHooks {
            cwd: cwd.to_path_buf(),
            ..Default::default()
        };
        let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect(),
            Err(_) => Vec::new(),
        };
        if files.is_empty() {
            return Ok((loaded, Vec::new()));
        }
        if !trust.is_trusted(cwd) {
            return Ok((loaded, vec![trust.untrusted_warning(&dir, cwd)]));
        }
        if files.len() > MAX_HOOK_FILES {
            return Err(HookFileError {
                path: dir,
                reason: format!("more than {MAX_HOOK_FILES} hook files"),
            });
        }
        files.sort();
        for path in files {
            let err = |reason: String| HookFileError {
                path: path.clone(),
                reason,
            };
            let bytes = read_bounded(&path).map_err(err)?;
            let text = std::str::from_utf8(&bytes).map_err(|e| err(format!("not UTF-8: {e}")))?;
            let file: HookFile =
                serde_json::from_str(text).map_err(|e| err(format!("not a hook file: {e}")))?;
            if file.version != 1 {
                return Err(err(format!(
                    "unsupported version {} (expected 1)",
                    file.version
                )));
            }
            let index = loaded.files.len();
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
                    loaded.hooks.push((hook_type.clone(), hook, index));
                }
            }
            loaded.files.push((path, bytes));
        }
        Ok((loaded, Vec::new()))
    }

    /// Whether no hook was loaded.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// These hooks, run in `sandbox` (the session's sandbox for configured processes,
    /// `session::configured_processes`).
    pub fn confined(mut self, sandbox: Sandboxing) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Fails when the hook file at `index` is no longer what the session started with.
    fn check_unchanged(&self, index: usize) -> Result<(), HookRunError> {
        let Some((path, original)) = self.files.get(index) else {
            return Err(HookRunError::UnknownFile);
        };
        match read_bounded(path) {
            Ok(now) if now == *original => Ok(()),
            Ok(_) | Err(_) => Err(HookRunError::FileChanged { path: path.clone() }),
        }
    }

    async fn run_one(
        &self,
        hook: &CommandHook,
        input: &Value,
    ) -> Result<Option<Value>, HookRunError> {
        let command = || hook.bash.clone();
        let sandbox = self
            .sandbox
            .to_enter()
            .map_err(|why| HookRunError::SandboxUnavailable {
                command: command(),
                why: why.to_owned(),
            })?;
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(&hook.bash)
            .current_dir(&self.cwd)
            .env_clear()
            .envs(turnstile_permissions::tool_env::for_tools())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(sandbox) = sandbox {
            // SAFETY: `enter` makes only async-signal-safe system calls and allocates
            // nothing (turnstile-sandbox's contract for a child between fork and exec).
            unsafe {
                cmd.pre_exec(move || sandbox.enter());
            }
        }
        let mut child = cmd.spawn().map_err(|source| HookRunError::Spawn {
            command: command(),
            source,
        })?;
        let pipe = |name| HookRunError::PipeUnavailable(name);
        let mut stdin = child.stdin.take().ok_or_else(|| pipe("stdin"))?;
        let payload = serde_json::to_vec(input).map_err(HookRunError::Encode)?;
        let mut stdout = child.stdout.take().ok_or_else(|| pipe("stdout"))?;
        let mut stderr = child.stderr.take().ok_or_else(|| pipe("stderr"))?;
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
            let io = |source| HookRunError::Io {
                command: command(),
                source,
            };
            r1.and(r2).map_err(io)?;
            Ok::<_, HookRunError>((status.map_err(io)?, out, err))
        };
        let (status, out, err) = match tokio::time::timeout(timeout, work).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(HookRunError::TimedOut {
                    command: command(),
                    secs: timeout.as_secs(),
                });
            }
        };
        if !status.success() {
            return Err(HookRunError::Failed {
                command: command(),
                status,
                stderr: String::from_utf8_lossy(&err).trim().to_owned(),
            });
        }
        let text = String::from_utf8_lossy(&out);
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        serde_json::from_str(text)
            .map(Some)
            .map_err(|source| HookRunError::BadOutput {
                command: command(),
                source,
            })
    }
}

impl HookRunner for CommandHooks {
    fn handles(&self, hook_type: &str) -> bool {
        self.hooks.iter().any(|(t, _, _)| t == hook_type)
    }

    fn invoke<'a>(
        &'a self,
        hook_type: &'a str,
        input: Value,
    ) -> BoxFuture<'a, Result<Option<Value>, HookRunError>> {
        Box::pin(async move {
            let mut last = None;
            for (_, hook, file) in self.hooks.iter().filter(|(t, _, _)| t == hook_type) {
                self.check_unchanged(*file)?;
                if let Some(out) = self.run_one(hook, &input).await? {
                    last = Some(out);
                }
            }
            Ok(last)
        })
    }
}

/// Reads a file of at most [`MAX_HOOK_FILE_BYTES`].
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_HOOK_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_HOOK_FILE_BYTES {
        return Err(format!("larger than {MAX_HOOK_FILE_BYTES} bytes"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks_with(json: &str) -> (tempfile::TempDir, CommandHooks) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".github/hooks")).unwrap();
        std::fs::write(tmp.path().join(".github/hooks/h.json"), json).unwrap();
        let (hooks, warnings) = CommandHooks::load(tmp.path(), &HookTrust::everything()).unwrap();
        assert!(warnings.is_empty());
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
        let HookRunError::Failed { status, stderr, .. } = &e else {
            panic!("{e:?}");
        };
        assert_eq!((status.code(), stderr.as_str()), (Some(3), "boom"));
        assert_eq!(
            e.to_string(),
            "hook `echo boom >&2; exit 3` failed (exit status: 3): boom"
        );
        let e = hooks
            .invoke("sessionEnd", serde_json::json!({}))
            .await
            .unwrap_err();
        assert!(
            matches!(&e, HookRunError::TimedOut { secs: 1, .. }),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "hook `sleep 5` timed out after 1s");
        let e = hooks
            .invoke("errorOccurred", serde_json::json!({}))
            .await
            .unwrap_err();
        assert!(matches!(&e, HookRunError::BadOutput { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("hook `echo not-json` printed something that is not JSON: "),
            "{e}"
        );
    }

    #[test]
    fn bad_files_name_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".github/hooks")).unwrap();
        std::fs::write(tmp.path().join(".github/hooks/bad.json"), "{").unwrap();
        let trust = HookTrust::everything();
        let e = CommandHooks::load(tmp.path(), &trust)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.json"), "{e}");
        let (none, _) = CommandHooks::load(&tmp.path().join("nowhere"), &trust).unwrap();
        assert!(none.hooks.is_empty());
    }

    const ALLOW_ALL: &str = r#"{"version":1,"hooks":{"preToolUse":[{"type":"command","bash":"echo '{\"permissionDecision\":\"allow\"}'"}]}}"#;

    #[test]
    fn untrusted_folders_load_nothing_and_say_how_to_trust() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".github/hooks")).unwrap();
        std::fs::write(tmp.path().join(".github/hooks/x.json"), ALLOW_ALL).unwrap();
        let trust = HookTrust::folders(Vec::new(), false);
        let (hooks, warnings) = CommandHooks::load(tmp.path(), &trust).unwrap();
        assert!(!hooks.handles("preToolUse"));
        assert_eq!(warnings.len(), 1);
        let w = &warnings[0];
        assert!(w.contains(&tmp.path().display().to_string()), "{w}");
        assert!(
            w.contains("trustedFolders") && w.contains("--trust-hooks"),
            "{w}"
        );
        // Even an unreadable hook file is not read in an untrusted folder.
        std::fs::write(tmp.path().join(".github/hooks/bad.json"), "{").unwrap();
        assert!(CommandHooks::load(tmp.path(), &trust).is_ok());
        std::fs::remove_file(tmp.path().join(".github/hooks/bad.json")).unwrap();
        let trust = HookTrust::folders(vec![tmp.path().canonicalize().unwrap()], false);
        let (hooks, warnings) = CommandHooks::load(tmp.path(), &trust).unwrap();
        assert!(hooks.handles("preToolUse") && warnings.is_empty());
    }

    #[tokio::test]
    async fn a_hook_file_changed_during_the_session_does_not_run() {
        let (tmp, hooks) = hooks_with(ALLOW_ALL);
        let out = hooks.invoke("preToolUse", serde_json::json!({})).await;
        assert_eq!(out.unwrap().unwrap()["permissionDecision"], "allow");
        std::fs::write(
            tmp.path().join(".github/hooks/h.json"),
            ALLOW_ALL.replace("allow", "allow "),
        )
        .unwrap();
        let e = hooks
            .invoke("preToolUse", serde_json::json!({}))
            .await
            .unwrap_err();
        let HookRunError::FileChanged { path } = &e else {
            panic!("{e:?}");
        };
        assert!(path.ends_with(".github/hooks/h.json"), "{e}");
        assert!(
            e.to_string()
                .ends_with("h.json changed since the session started; its hooks do not run until a new session starts in a trusted folder"),
            "{e}"
        );
        std::fs::remove_file(tmp.path().join(".github/hooks/h.json")).unwrap();
        assert!(matches!(
            hooks.invoke("preToolUse", serde_json::json!({})).await,
            Err(HookRunError::FileChanged { .. })
        ));
    }
}
