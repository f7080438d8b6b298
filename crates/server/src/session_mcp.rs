//! Which of a session's MCP servers start when it opens and which wait, as the Copilot CLI
//! does it: the servers of its plugins (`pluginDirectories`, read by
//! `turnstile_home::plugins`) and the built-in GitHub server (`enableConfigDiscovery`) wait for
//! the session's first use (its first message, or a client asking about its servers), and a
//! server `disabledMcpServers` names is listed as `disabled` and never started (a client may
//! still enable it).

use std::path::{Path, PathBuf};

use serde_json::json;
use turnstile_home::plugins::read_plugin_dirs;
use turnstile_mcp::{McpServers, PluginOrigin, ServerConfig, ServerOrigin};

/// The runtime's name for its GitHub server.
pub(crate) const GITHUB_SERVER: &str = "github-mcp-server";

/// The built-in GitHub MCP server the runtime adds with config discovery: the Copilot
/// endpoint's `/mcp` (every tool, `githubMcpToolConfig.enableAllTools`) or `/mcp/readonly`,
/// with the GitHub token as bearer, over streamable HTTP. `None` when the endpoint is not an
/// http(s) URL.
pub(crate) fn github_server(api_base: &str, token: &str, all_tools: bool) -> Option<ServerConfig> {
    let path = if all_tools { "mcp" } else { "mcp/readonly" };
    let url = format!("{}/{path}", api_base.trim_end_matches('/'));
    let entry = json!({GITHUB_SERVER: {
        "type": "http",
        "url": url,
        "headers": {"Authorization": format!("Bearer {token}")},
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
        let github = github_server("http://127.0.0.1:9/", "tok", false);
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
}
