//! The session settings `run`, `resume` and the SDK server share: permissions, file
//! confinement, durability and the autopilot cap. The flags are one source of the effective
//! settings (see `config`); the settings files and the environment fill in the rest.

use clap::Args;
use std::time::Duration;
use turnstile_journal::Durability;
use turnstile_loop::hooks::HookTrust;
use turnstile_permissions::{PatternError, PermissionPolicy};

use turnstile_providers::{ResponseLimits, Timeouts};

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
    /// Most tool calls in one model answer; past it the call fails (`response_too_large`).
    /// Each call also counts 64 bytes against --max-model-answer-bytes.
    #[arg(long, env = "TURNSTILE_MAX_TOOL_CALLS", default_value_t = ResponseLimits::DEFAULT_TOOL_CALLS as u64, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tool_calls: u64,
    /// Overall deadline of one model call in seconds (retries included); past it the call
    /// fails (`timeout`).
    #[arg(long, env = "TURNSTILE_MODEL_TIMEOUT", default_value_t = Timeouts::DEFAULT_DEADLINE.as_secs_f64(), value_name = "SECS", value_parser = positive_secs)]
    pub model_timeout: f64,
    /// Longest time in seconds a model answer may go without useful progress (text, tool
    /// call bytes, a finish; not empty deltas or keep-alives); past it the call fails (`timeout`).
    #[arg(long, env = "TURNSTILE_MODEL_IDLE_TIMEOUT", default_value_t = Timeouts::DEFAULT_IDLE.as_secs_f64(), value_name = "SECS", value_parser = positive_secs)]
    pub model_idle_timeout: f64,
    /// Most built-in tool calls of one turn running at once; the others wait in request order.
    #[arg(long, env = "TURNSTILE_MAX_PARALLEL_TOOLS", default_value_t = turnstile_loop::session::DEFAULT_PARALLEL_TOOLS as u64, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_parallel_tools: u64,
    /// Most sub-agents (`task`) of a session working at once; the others wait before their
    /// first model call.
    #[arg(long, env = "TURNSTILE_MAX_PARALLEL_AGENTS", default_value_t = turnstile_loop::session::DEFAULT_PARALLEL_AGENTS as u64, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_parallel_agents: u64,
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
            max_tool_calls: usize::try_from(self.max_tool_calls).unwrap_or(usize::MAX),
        }
    }

    /// The timeouts of a model call: the overall deadline and the idle timeout of the flags,
    /// the default request timeout.
    pub fn model_timeouts(&self) -> Timeouts {
        Timeouts {
            stall: Duration::from_secs_f64(self.model_idle_timeout),
            deadline: Duration::from_secs_f64(self.model_timeout),
            ..Timeouts::default()
        }
    }

    /// The bounds on what a session runs at once.
    pub fn apply_parallel(&self, config: &mut turnstile_loop::SessionConfig) {
        config.max_parallel_tools = usize::try_from(self.max_parallel_tools).unwrap_or(usize::MAX);
        config.max_parallel_agents =
            usize::try_from(self.max_parallel_agents).unwrap_or(usize::MAX);
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

/// A positive number of seconds (at most a day), for the model timeouts.
fn positive_secs(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 {
        Ok(secs)
    } else {
        Err(format!(
            "{text:?}: give a number of seconds above 0 and at most 86400"
        ))
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
