//! The session settings `run`, `resume` and the SDK server share: permissions, file
//! confinement, durability and the autopilot cap.

use clap::Args;
use turnstile_journal::Durability;
use turnstile_loop::hooks::HookTrust;
use turnstile_loop::model::ResponseLimits;
use turnstile_loop::permissions::{PatternError, PermissionPolicy};

/// Flags that shape every session a command runs.
#[derive(Debug, Clone, Args)]
pub struct SessionFlags {
    /// Allow every tool call without asking.
    #[arg(long)]
    pub allow_all_tools: bool,
    /// Allow calls matching PATTERN: shell, shell(git), shell(git push:*), write, write(GLOB), read, read(GLOB), custom-tool(NAME), a built-in tool name.
    #[arg(long, value_name = "PATTERN")]
    pub allow_tool: Vec<String>,
    /// Deny calls matching PATTERN (deny wins over allow, also over a client's approval).
    #[arg(long, value_name = "PATTERN")]
    pub deny_tool: Vec<String>,
    /// Run the hook files of `.github/hooks` in the working directory even if the folder is
    /// not in `trustedFolders` of `$COPILOT_HOME/config.json`.
    #[arg(long)]
    pub trust_hooks: bool,
    /// Let file tools reach outside the working directory.
    #[arg(long)]
    pub allow_outside_cwd: bool,
    /// When the journal is fsynced: event, turn or off.
    #[arg(long, default_value = "turn", value_name = "WHEN")]
    pub durability: Durability,
    /// Nudges before autopilot gives up.
    #[arg(long, default_value_t = turnstile_loop::autopilot::DEFAULT_MAX_CONTINUES, value_name = "N")]
    pub max_autopilot_continues: u32,
    /// Longest SSE line (one streamed event) read from the model, in bytes; past it the call fails.
    #[arg(long, default_value_t = ResponseLimits::DEFAULT_LINE_BYTES, value_name = "BYTES")]
    pub max_model_line_bytes: usize,
    /// Largest model answer (text plus tool call arguments), in bytes; past it the call fails.
    #[arg(long, default_value_t = ResponseLimits::DEFAULT_ANSWER_BYTES, value_name = "BYTES")]
    pub max_model_answer_bytes: usize,
    /// Largest non-streamed model response body, in bytes; past it the call fails.
    #[arg(long, default_value_t = ResponseLimits::DEFAULT_BODY_BYTES, value_name = "BYTES")]
    pub max_model_body_bytes: usize,
}

impl SessionFlags {
    /// The limits on a model's answers.
    pub fn model_limits(&self) -> ResponseLimits {
        ResponseLimits {
            max_line_bytes: self.max_model_line_bytes,
            max_answer_bytes: self.max_model_answer_bytes,
            max_body_bytes: self.max_model_body_bytes,
        }
    }

    /// The permission policy of the allow/deny flags.
    pub fn policy(&self) -> Result<PermissionPolicy, PatternError> {
        PermissionPolicy::from_flags(self.allow_all_tools, &self.allow_tool, &self.deny_tool)
    }

    /// Whose hook files may run: `--trust-hooks` and the config file's trusted folders.
    pub fn hook_trust(&self) -> HookTrust {
        HookTrust::from_env(self.trust_hooks)
    }
}
