//! The session settings `run`, `resume` and the SDK server share: permissions, file
//! confinement, durability and the autopilot cap. The flags are one source of the effective
//! settings (see `config`); the settings files and the environment fill in the rest.

use clap::Args;
use std::time::Duration;
use turnstile_journal::Durability;
use turnstile_loop::hooks::HookTrust;
use turnstile_permissions::{PatternError, PermissionPolicy};

use turnstile_providers::{ResponseLimits, Timeouts};

use crate::config::{self, DurabilitySetting, Effective, FileSettings};

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
    /// Each call also counts 64 bytes against --max-model-answer-bytes [default:
    /// `maxToolCalls` of the settings files, else 128].
    #[arg(long, env = "TURNSTILE_MAX_TOOL_CALLS", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tool_calls: Option<u64>,
    /// Overall deadline of one model call in seconds (retries included); past it the call
    /// fails (`timeout`) [default: `modelTimeout` of the settings files, else 1200].
    #[arg(long, env = "TURNSTILE_MODEL_TIMEOUT", value_name = "SECS", value_parser = positive_secs)]
    pub model_timeout: Option<f64>,
    /// Longest time in seconds a model answer may go without useful progress (text, tool
    /// call bytes, a finish; not empty deltas or keep-alives); past it the call fails
    /// (`timeout`) [default: `modelIdleTimeout` of the settings files, else 60].
    #[arg(long, env = "TURNSTILE_MODEL_IDLE_TIMEOUT", value_name = "SECS", value_parser = positive_secs)]
    pub model_idle_timeout: Option<f64>,
    /// Most built-in tool calls of one turn running at once; the others wait in request order
    /// [default: `maxParallelTools` of the settings files, else 8].
    #[arg(long, env = "TURNSTILE_MAX_PARALLEL_TOOLS", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_parallel_tools: Option<u64>,
    /// Most sub-agents (`task`) of a session working at once; the others wait before their
    /// first model call [default: `maxParallelAgents` of the settings files, else 4].
    #[arg(long, env = "TURNSTILE_MAX_PARALLEL_AGENTS", value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_parallel_agents: Option<u64>,
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
    pub fn model_limits(&self, effective: &Effective) -> ResponseLimits {
        let calls = setting(self.max_tool_calls, effective, |s| s.max_tool_calls)
            .unwrap_or(ResponseLimits::DEFAULT_TOOL_CALLS as u64);
        ResponseLimits {
            max_line_bytes: self.max_model_line_bytes,
            max_answer_bytes: self.max_model_answer_bytes,
            max_body_bytes: self.max_model_body_bytes,
            max_tool_calls: usize::try_from(calls).unwrap_or(usize::MAX),
        }
    }

    /// The timeouts of a model call: the overall deadline and the idle timeout (flags, the
    /// environment, the settings files), the default request timeout.
    pub fn model_timeouts(&self, effective: &Effective) -> Timeouts {
        let secs = |flag, get: fn(&FileSettings) -> Option<f64>, default: Duration| {
            setting(flag, effective, get).map_or(default, Duration::from_secs_f64)
        };
        Timeouts {
            stall: secs(
                self.model_idle_timeout,
                |s| s.model_idle_timeout,
                Timeouts::DEFAULT_IDLE,
            ),
            deadline: secs(
                self.model_timeout,
                |s| s.model_timeout,
                Timeouts::DEFAULT_DEADLINE,
            ),
            ..Timeouts::default()
        }
    }

    /// The bounds on what a session runs at once: (tool calls of a turn, sub-agents).
    pub fn parallel(&self, effective: &Effective) -> (usize, usize) {
        let count = |flag, get: fn(&FileSettings) -> Option<u64>, default: usize| {
            setting(flag, effective, get)
                .map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
        };
        (
            count(
                self.max_parallel_tools,
                |s| s.max_parallel_tools,
                turnstile_loop::session::DEFAULT_PARALLEL_TOOLS,
            ),
            count(
                self.max_parallel_agents,
                |s| s.max_parallel_agents,
                turnstile_loop::session::DEFAULT_PARALLEL_AGENTS,
            ),
        )
    }

    /// The bounds on what a session runs at once, set on `config`.
    pub fn apply_parallel(
        &self,
        effective: &Effective,
        config: &mut turnstile_loop::SessionConfig,
    ) {
        (config.max_parallel_tools, config.max_parallel_agents) = self.parallel(effective);
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

/// A bound from its flag (or variable, which clap reads into the flag), else the first
/// settings file that sets it.
fn setting<T: Copy>(
    flag: Option<T>,
    effective: &Effective,
    get: impl Fn(&FileSettings) -> Option<T>,
) -> Option<T> {
    flag.or_else(|| effective.files.iter().find_map(|f| get(&f.settings)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SettingsFile;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        session: SessionFlags,
    }

    fn effective(settings: &str) -> Effective {
        let file = SettingsFile {
            path: "/h/settings.json".into(),
            settings: turnstile_home::settings::parse(settings).unwrap(),
            exists: true,
        };
        crate::config::resolve(&config::Flags::default(), &|_| None, vec![file]).unwrap()
    }

    #[test]
    fn bounds_come_from_the_flags_then_the_settings_files_then_the_defaults() {
        let bare = Cli::parse_from(["t"]).session;
        let none = effective("{}");
        assert_eq!(bare.model_limits(&none).max_tool_calls, 128);
        assert_eq!(
            bare.model_timeouts(&none).deadline,
            Timeouts::DEFAULT_DEADLINE
        );
        assert_eq!(bare.parallel(&none), (8, 4));

        let set = effective(
            r#"{"maxToolCalls": 5, "modelTimeout": 90, "modelIdleTimeout": 2.5,
                "maxParallelTools": 2, "maxParallelAgents": 1}"#,
        );
        assert_eq!(bare.model_limits(&set).max_tool_calls, 5);
        let timeouts = bare.model_timeouts(&set);
        assert_eq!(timeouts.deadline, Duration::from_secs(90));
        assert_eq!(timeouts.stall, Duration::from_millis(2500));
        assert_eq!(bare.parallel(&set), (2, 1));

        let flagged =
            Cli::parse_from(["t", "--max-tool-calls", "7", "--max-parallel-tools", "3"]).session;
        assert_eq!(flagged.model_limits(&set).max_tool_calls, 7);
        assert_eq!(flagged.parallel(&set), (3, 1));
    }

    #[test]
    fn a_bound_of_zero_in_a_settings_file_is_an_error_naming_the_field() {
        for (text, field) in [
            (r#"{"maxParallelTools": 0}"#, "maxParallelTools"),
            (r#"{"modelTimeout": -1}"#, "modelTimeout"),
            (r#"{"modelIdleTimeout": 0}"#, "modelIdleTimeout"),
        ] {
            let e = turnstile_home::settings::parse(text).unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
    }
}
