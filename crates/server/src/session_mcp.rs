//! Which of a session's MCP servers start when it opens and which wait, as the Copilot CLI
//! does it: the servers of its plugins (`pluginDirectories`, read by
//! `turnstile_home::plugins`) and the built-in GitHub server (`enableConfigDiscovery`) wait for
//! the session's first use (its first message, or a client asking about its servers), and a
//! server `disabledMcpServers` names is listed as `disabled` and never started (a client may
//! still enable it).

use std::path::{Path, PathBuf};

use serde_json::json;
use turnstile_home::plugins::read_plugin_dirs;
use turnstile_journal::payload::GitHubMcpToolConfig;
use turnstile_mcp::{McpServers, PluginOrigin, ServerConfig, ServerOrigin};

/// The runtime's name for its GitHub server.
pub(crate) const GITHUB_SERVER: &str = "github-mcp-server";

/// The tools the runtime asks the read-only GitHub server for when the client names none
/// (`X-MCP-Tools`), as the Copilot CLI 1.0.81 sends them.
const DEFAULT_READONLY_TOOLS: &str = "get_file_contents,search_code,get_copilot_space,\
list_copilot_spaces,web_search,search_users,search_repositories,list_branches,list_commits,\
get_commit,issue_read,list_issues,search_issues,pull_request_read,list_pull_requests,\
search_pull_requests,actions_list,actions_get,get_job_logs,list_workflow_runs,\
get_workflow_run,list_workflows,get_workflow_run_logs,get_workflow";

/// The built-in GitHub MCP server the runtime adds with config discovery: the Copilot
/// endpoint's `/mcp` (every tool, `githubMcpToolConfig.enableAllTools`) or `/mcp/readonly`,
/// with the GitHub token as bearer, over streamable HTTP. The rest of the config goes in the
/// headers the Copilot CLI sends: `X-MCP-Toolsets` (`all`, else the additional toolsets),
/// `X-MCP-Tools` (read-only: the additional tools, else the default list), `X-MCP-Insiders`.
/// `None` when the endpoint is not an http(s) URL.
pub(crate) fn github_server(
    api_base: &str,
    token: &str,
    config: &GitHubMcpToolConfig,
) -> Option<ServerConfig> {
    let all_tools = config.enable_all_tools == Some(true);
    let path = if all_tools { "mcp" } else { "mcp/readonly" };
    let url = format!("{}/{path}", api_base.trim_end_matches('/'));
    let mut headers = serde_json::Map::new();
    headers.insert("Authorization".into(), json!(format!("Bearer {token}")));
    headers.insert("X-MCP-Host".into(), json!("copilot-cli"));
    let named =
        |list: &Option<Vec<String>>| list.as_ref().filter(|l| !l.is_empty()).map(|l| l.join(","));
    if all_tools {
        headers.insert("X-MCP-Toolsets".into(), json!("all"));
    } else {
        if let Some(toolsets) = named(&config.additional_toolsets) {
            headers.insert("X-MCP-Toolsets".into(), json!(toolsets));
        }
        let tools =
            named(&config.additional_tools).unwrap_or_else(|| DEFAULT_READONLY_TOOLS.into());
        headers.insert("X-MCP-Tools".into(), json!(tools));
    }
    if config.enable_insiders_mode == Some(true) {
        headers.insert("X-MCP-Insiders".into(), json!("true"));
    }
    let entry = json!({GITHUB_SERVER: {
        "type": "http",
        "url": url,
        "headers": headers,
        "tools": ["*"],
    }});
    let mut servers = McpServers::from_value(&entry, "the built-in GitHub server").ok()?;
    let mut server = servers.servers.pop()?;
    server.origin = Some(ServerOrigin::Builtin);
    Some(server)
}

/// A session's servers, split for opening.
#[derive(Debug, Default)]
pub(crate) struct SessionServers {
    /// Started with the session.
    pub(crate) now: McpServers,
    /// Added to its host without starting (`McpHost::defer`).
    pub(crate) later: Vec<ServerConfig>,
    /// The names `disabledMcpServers` gave.
    pub(crate) disabled: Vec<String>,
}

/// Splits `configured` (the server's and the params' servers), the built-in GitHub server
/// (`github`, when the session has it) and the servers of the plugins in `plugin_dirs`
/// (relative ones are `cwd`'s). A configured server keeps its name (a plugin's or the
/// built-in one of that name is left out). A plugin directory that cannot be read, and a
/// plugin's server that is not a valid configuration, is logged and left out.
pub(crate) fn split(
    configured: McpServers,
    github: Option<ServerConfig>,
    plugin_dirs: &[String],
    disabled: &[String],
    cwd: &Path,
) -> SessionServers {
    let (now, mut later): (Vec<ServerConfig>, Vec<ServerConfig>) = configured
        .servers
        .into_iter()
        .partition(|s| !disabled.contains(&s.name));
    if let Some(github) = github
        && !now.iter().chain(&later).any(|s| s.name == github.name)
    {
        later.push(github);
    }
    let dirs: Vec<PathBuf> = plugin_dirs.iter().map(PathBuf::from).collect();
    let (plugins, warnings) = read_plugin_dirs(&dirs, cwd);
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    for plugin in plugins {
        let origin = PluginOrigin {
            name: plugin.name.clone(),
            version: plugin.version.clone(),
        };
        let servers = serde_json::Value::Object(plugin.mcp_servers);
        let where_from = format!("plugin {} ({})", plugin.name, plugin.root.display());
        match McpServers::from_value(&servers, &where_from) {
            Ok(servers) => {
                for server in servers.from_plugin(&origin).servers {
                    let taken = now.iter().chain(&later).any(|s| s.name == server.name);
                    if !taken {
                        later.push(server);
                    }
                }
            }
            Err(e) => tracing::warn!("the MCP servers of {where_from} are not loaded: {e}"),
        }
    }
    SessionServers {
        now: McpServers { servers: now },
        later,
        disabled: disabled.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plugin_servers_wait_and_named_ones_are_disabled() {
        let tmp = tempfile::tempdir().unwrap();
        let plugin = tmp.path().join("plug");
        std::fs::create_dir_all(&plugin).unwrap();
        std::fs::write(
            plugin.join("plugin.json"),
            r#"{"name": "plug", "version": "2"}"#,
        )
        .unwrap();
        std::fs::write(
            plugin.join(".mcp.json"),
            json!({"mcpServers": {
                "p1": {"command": "srv"},
                "p2": {"command": "srv"},
                "own": {"command": "other"}
            }})
            .to_string(),
        )
        .unwrap();
        let configured = McpServers::from_value(
            &json!({"own": {"command": "mine"}, "off": {"command": "x"}}),
            "params",
        )
        .unwrap();
        let github = github_server(
            "http://127.0.0.1:9/",
            "tok",
            &GitHubMcpToolConfig::default(),
        );
        let split = split(
            configured,
            github,
            &["plug".into(), "missing".into()],
            &["off".into(), "p2".into()],
            tmp.path(),
        );
        assert_eq!(split.now.names(), ["own"]);
        let later: Vec<(&str, Option<&str>)> = split
            .later
            .iter()
            .map(|s| {
                let plugin = s.origin.as_ref().and_then(|o| o.plugin());
                (s.name.as_str(), plugin.map(|p| p.name.as_str()))
            })
            .collect();
        assert_eq!(
            later,
            [
                ("off", None),
                (GITHUB_SERVER, None),
                ("p1", Some("plug")),
                ("p2", Some("plug"))
            ]
        );
        let github = &split.later[1];
        assert_eq!(github.origin, Some(ServerOrigin::Builtin));
        match &github.transport {
            turnstile_mcp::Transport::Http { url, headers } => {
                assert_eq!(url, "http://127.0.0.1:9/mcp/readonly");
                assert_eq!(headers["Authorization"], "Bearer tok");
                assert!(headers["X-MCP-Tools"].starts_with("get_file_contents,"));
                assert!(!headers.contains_key("X-MCP-Toolsets"));
            }
            other => panic!("the GitHub server is remote: {other:?}"),
        }
        assert_eq!(
            split.later[2]
                .origin
                .as_ref()
                .and_then(|o| o.plugin())
                .and_then(|p| p.version.as_deref()),
            Some("2")
        );
        assert_eq!(split.disabled, ["off", "p2"]);
    }

    #[test]
    fn the_tool_config_goes_in_the_headers() {
        let headers = |config: GitHubMcpToolConfig| match github_server("http://h/", "t", &config)
            .unwrap()
            .transport
        {
            turnstile_mcp::Transport::Http { url, headers } => (url, headers),
            other => panic!("the GitHub server is remote: {other:?}"),
        };
        let (url, all) = headers(GitHubMcpToolConfig {
            enable_all_tools: Some(true),
            additional_toolsets: Some(vec!["actions".into()]),
            additional_tools: Some(vec!["get_me".into()]),
            enable_insiders_mode: Some(true),
        });
        assert_eq!(url, "http://h/mcp");
        assert_eq!(all["X-MCP-Toolsets"], "all");
        assert_eq!(all["X-MCP-Insiders"], "true");
        assert!(!all.contains_key("X-MCP-Tools"));
        let (url, some) = headers(GitHubMcpToolConfig {
            additional_toolsets: Some(vec!["actions".into(), "repos".into()]),
            additional_tools: Some(vec!["get_me".into()]),
            ..Default::default()
        });
        assert_eq!(url, "http://h/mcp/readonly");
        assert_eq!(some["X-MCP-Toolsets"], "actions,repos");
        assert_eq!(some["X-MCP-Tools"], "get_me");
        assert!(!some.contains_key("X-MCP-Insiders"));
    }
}
