//! The session settings `run`, `resume` and the SDK server share: permissions, file
//! confinement, durability and the autopilot cap. The flags are one source of the effective
//! settings (see `config`); the settings files and the environment fill in the rest.

use clap::Args;
use turnstile_journal::Durability;
use turnstile_loop::hooks::HookTrust;
use turnstile_permissions::{PatternError, PermissionPolicy};
use turnstile_providers::ResponseLimits;

use crate::config::{self, DurabilitySetting, Effective};

/// Flags that shape every session a command runs.
#[derive(Debug, Clone, Args)]
pub struct SessionFlags {
    /// Allow every tool call without asking.
    #[arg(long)]
    pub allow_all_tools: bool,
    /// Allow calls matching PATTERN: shell, shell(git), shell(git push:*), write, write(GLOB), read, read(GLOB), custom-tool(NAME), a built-in tool name, an MCP server's name or SERVER(TOOL).
    #[arg(long, value_name = "PATTERN")]
    pub allow_tool: Vec<String>,
    /// Deny calls matching PATTERN (deny wins over allow, also over a client's approval).
    #[arg(long, value_name = "PATTERN")]
    pub deny_tool: Vec<String>,
    /// Let web_fetch fetch from HOST without asking (example.com, *.example.com, 127.0.0.1:8080); a named host may be a local address.
    #[arg(long, value_name = "HOST")]
    pub allow_url: Vec<String>,
    /// Refuse web_fetch fetches from HOST, also after a redirect (deny wins).
    #[arg(long, value_name = "HOST")]
    pub deny_url: Vec<String>,
    /// Run the hook files of `.github/hooks` in the working directory even if the folder is
    /// not in `trustedFolders` of `$COPILOT_HOME/settings.json` or `config.json`.
    #[arg(long)]
    pub trust_hooks: bool,
    /// Let file tools reach outside the working directory.
    #[arg(long)]
    pub allow_outside_cwd: bool,
    /// Run tool commands without the kernel sandbox (Landlock, user namespaces): the
    /// permission rules are then held by the approval step alone. Needed only where the
    /// kernel lacks a layer (see `turnstile config`).
    #[arg(long)]
    pub no_sandbox: bool,
    /// When the journal is fsynced: event, turn or off [default: TURNSTILE_DURABILITY, else `durability` of the settings files, else turn].
    #[arg(long, value_name = "WHEN", value_parser = ["event", "turn", "off"])]
    pub durability: Option<String>,
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
    /// The model's context window in tokens; the history is compacted when a request would
    /// pass 80% of it [default: the provider's, else the known-models table, else 128000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub context_window: Option<u64>,
}

impl SessionFlags {
    /// Whether tool commands, hooks and MCP servers run sandboxed, as `effective` says
    /// (`--no-sandbox`, `TURNSTILE_SANDBOX`, `sandbox` of the settings files): refuses to
    /// start where the kernel lacks a layer and the user did not opt out, and says in one line
    /// what opting out gives up and where it was chosen.
    pub fn sandbox(effective: &Effective) -> anyhow::Result<bool> {
        if !effective.sandbox.value {
            eprintln!(
                "warning: tool commands, hooks and MCP servers run without a sandbox ({}): file, program and network rules are held by the approval step alone",
                effective.sandbox.source
            );
            return Ok(false);
        }
        let layers = turnstile_sandbox::probe();
        if !layers.complete() {
            anyhow::bail!(
                "this kernel cannot confine tool commands ({}): file, program and network rules would be held by the approval step alone; run with --no-sandbox (or `\"sandbox\": false` in settings.json) to accept that",
                layers.describe()
            );
        }
        Ok(true)
    }

    /// The limits on a model's answers.
    pub fn model_limits(&self) -> ResponseLimits {
        ResponseLimits {
            max_line_bytes: self.max_model_line_bytes,
            max_answer_bytes: self.max_model_answer_bytes,
            max_body_bytes: self.max_model_body_bytes,
        }
    }

    /// What these flags say to the settings resolution.
    pub fn config_flags(&self) -> config::Flags {
        // `--allow-url HOST` is the rule `url(HOST)`: one policy holds both.
        let urls = |v: &[String]| v.iter().map(|h| format!("url({h})")).collect::<Vec<_>>();
        config::Flags {
            allowed_tools: [self.allow_tool.clone(), urls(&self.allow_url)].concat(),
            denied_tools: [self.deny_tool.clone(), urls(&self.deny_url)].concat(),
            allow_all_tools: self.allow_all_tools,
            durability: self.durability.as_deref().and_then(|d| match d {
                "event" => Some(DurabilitySetting::Event),
                "turn" => Some(DurabilitySetting::Turn),
                "off" => Some(DurabilitySetting::Off),
                _ => None,
            }),
            no_sandbox: self.no_sandbox,
            ..config::Flags::default()
        }
    }
}

/// The permission policy of the effective allow/deny patterns (flags, settings files,
/// `COPILOT_ALLOW_ALL`); patterns may name the configured MCP servers `mcp_servers`.
pub fn policy(
    effective: &Effective,
    mcp_servers: &[String],
) -> Result<PermissionPolicy, PatternError> {
    let allowed: Vec<String> = effective
        .allowed_tools
        .iter()
        .map(|p| p.value.clone())
        .collect();
    let denied: Vec<String> = effective
        .denied_tools
        .iter()
        .map(|p| p.value.clone())
        .collect();
    PermissionPolicy::from_flags_with_mcp(
        effective.allow_all_tools.is_some(),
        &allowed,
        &denied,
        mcp_servers,
    )
}

/// The durability in effect.
pub fn durability(effective: &Effective) -> Durability {
    match effective.durability.value {
        DurabilitySetting::Event => Durability::Event,
        DurabilitySetting::Turn => Durability::Turn,
        DurabilitySetting::Off => Durability::Off,
    }
}

/// Whose hook files may run: `--trust-hooks` and the settings files' trusted folders.
pub fn hook_trust(trust_flag: bool, effective: &Effective) -> HookTrust {
    HookTrust {
        trust_flag,
        folders: effective
            .trusted_folders
            .iter()
            .map(|f| f.value.clone())
            .collect(),
        config_path: effective.files.first().map(|f| f.path.clone()),
        config_problem: None,
    }
}
