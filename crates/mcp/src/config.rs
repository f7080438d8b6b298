//! MCP server configurations in the Copilot CLI's format: the `mcpServers` object of
//! `$COPILOT_HOME/mcp-config.json` and of the SDK's `session.create`/`resume` parameters.
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"type": "stdio", "command": "npx", "args": ["-y", "server"], "env": {"K": "v"}, "tools": ["*"]},
//!   "remote": {"type": "http", "url": "http://127.0.0.1:8080/mcp", "headers": {"Authorization": "Bearer t"}}
//! }}
//! ```
//!
//! The format carries many fields the runtime uses for its own features (telemetry, OAuth,
//! plugins); those are accepted and ignored. What turnstile acts on is parsed strictly: a wrong
//! type names the server and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::error::ConfigError;

/// The most servers one configuration may name (memory and processes stay bounded).
pub const MAX_SERVERS: usize = 64;

/// How turnstile talks to one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on its standard input and output.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to the engine's environment.
        env: BTreeMap<String, String>,
        /// Its working directory (`None`: the session's).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at a URL.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:8080/mcp`.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// The transport's name as the runtime reports it (`stdio`, `http`).
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The config key: the tools' name prefix and the permission patterns' head.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Tools to offer: `None` or `["*"]` for all of them.
    pub tools: Option<Vec<String>>,
    /// Tools left out after `tools` is applied.
    pub exclude_tools: Vec<String>,
    /// The limit of the start (initialize and tool listing) and of each call (`timeout`, ms).
    pub timeout: Option<Duration>,
    /// Where the server came from when not from a configuration file or the client's
    /// `mcpServers` (the runtime's `source`).
    pub origin: Option<ServerOrigin>,
}

/// Where a server came from, as the runtime reports it (`source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerOrigin {
    /// A plugin's (`source: "plugin"`).
    Plugin(PluginOrigin),
    /// The runtime's own, such as the GitHub server (`source: "builtin"`).
    Builtin,
}

impl ServerOrigin {
    /// The runtime's `source` word.
    pub fn source(&self) -> &'static str {
        match self {
            ServerOrigin::Plugin(_) => "plugin",
            ServerOrigin::Builtin => "builtin",
        }
    }

    /// The plugin, for a plugin's server.
    pub fn plugin(&self) -> Option<&PluginOrigin> {
        match self {
            ServerOrigin::Plugin(plugin) => Some(plugin),
            ServerOrigin::Builtin => None,
        }
    }
}

/// The plugin a server came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginOrigin {
    /// The plugin's name.
    pub name: String,
    /// Its version, when the manifest gives one.
    pub version: Option<String>,
}

impl ServerConfig {
    /// Whether the server's tool called `tool` is offered.
    pub fn offers(&self, tool: &str) -> bool {
        let included = match &self.tools {
            None => true,
            Some(list) => list.iter().any(|t| t == "*" || t == tool),
        };
        included && !self.exclude_tools.iter().any(|t| t == tool)
    }
}

/// The servers of one source, in the order they were written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpServers {
    /// The servers.
    pub servers: Vec<ServerConfig>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    tools: Option<Vec<String>>,
    #[serde(default)]
    exclude_tools: Vec<String>,
    timeout: Option<u64>,
}

impl McpServers {
    /// Servers from an `mcpServers` object (the SDK parameter); `origin` names where it came
    /// from in errors.
    pub fn from_value(value: &Value, origin: &str) -> Result<Self, ConfigError> {
        let Some(map) = value.as_object() else {
            return Err(ConfigError::at(
                origin,
                "mcpServers",
                "expected an object of server name to server configuration",
            ));
        };
        if map.len() > MAX_SERVERS {
            return Err(ConfigError::at(
                origin,
                "mcpServers",
                &format!("{} servers, at most {MAX_SERVERS} are supported", map.len()),
            ));
        }
        let mut servers = Vec::with_capacity(map.len());
        for (name, raw) in map {
            servers.push(server(name, raw, origin)?);
        }
        Ok(McpServers { servers })
    }

    /// Servers from the text of an `mcp-config.json` file (`{"mcpServers": {...}}`).
    pub fn parse_file_text(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let origin = path.display().to_string();
        let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
            origin: origin.clone(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        match value.get("mcpServers") {
            None if value.is_object() => Ok(McpServers::default()),
            None => Err(ConfigError::at(
                &origin,
                "",
                "expected an object with an \"mcpServers\" field",
            )),
            Some(servers) => Self::from_value(servers, &origin),
        }
    }

    /// Reads an `mcp-config.json` file; a missing file is `Ok(None)`.
    pub fn read_file(path: &Path) -> Result<Option<Self>, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse_file_text(&text, path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ConfigError::Read {
                path: path.to_owned(),
                source: e,
            }),
        }
    }

    /// These servers with `other`'s on top: a server of the same name is replaced in place.
    pub fn overlay(mut self, other: McpServers) -> Self {
        for server in other.servers {
            match self.servers.iter_mut().find(|s| s.name == server.name) {
                Some(slot) => *slot = server,
                None => self.servers.push(server),
            }
        }
        self
    }

    /// Whether there is no server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// These servers, each marked as supplied by `plugin`.
    pub fn from_plugin(mut self, plugin: &PluginOrigin) -> Self {
        for server in &mut self.servers {
            server.origin = Some(ServerOrigin::Plugin(plugin.clone()));
        }
        self
    }

    /// The servers' names, in order.
    pub fn names(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.name.clone()).collect()
    }
}

/// Checks a server name the way the SDK's schema does: no control characters, no empty
/// segment; and, since the name prefixes tool names, no parenthesis (patterns) either.
fn check_name(name: &str, origin: &str) -> Result<(), ConfigError> {
    let bad = name.is_empty()
        || name.len() > 128
        || name
            .chars()
            .any(|c| c.is_control() || matches!(c, '(' | ')' | '}' | ',' | ' '))
        || name.split('/').any(str::is_empty);
    if bad {
        return Err(ConfigError::at(
            origin,
            &format!("mcpServers.{name}"),
            "a server name is 1 to 128 characters without spaces, control characters, parentheses, commas, braces or empty '/' segments",
        ));
    }
    Ok(())
}

fn server(name: &str, raw: &Value, origin: &str) -> Result<ServerConfig, ConfigError> {
    check_name(name, origin)?;
    let field = |f: &str| {
        if f.is_empty() {
            format!("mcpServers.{name}")
        } else {
            format!("mcpServers.{name}.{f}")
        }
    };
    let raw: RawServer = serde_path_to_error::deserialize(raw).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        ConfigError::at(origin, &field(&path), &e.into_inner().to_string())
    })?;
    let kind = match raw.kind.as_deref() {
        Some(k) => k,
        None if raw.command.is_some() => "stdio",
        None if raw.url.is_some() => "http",
        None => {
            return Err(ConfigError::at(
                origin,
                &field(""),
                "needs a \"command\" (a local server) or a \"url\" (a remote one)",
            ));
        }
    };
    let transport = match kind {
        "stdio" | "local" => {
            let command = raw
                .command
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| {
                    ConfigError::at(
                        origin,
                        &field("command"),
                        "a stdio server needs the program to run",
                    )
                })?;
            Transport::Stdio {
                command,
                args: raw.args,
                env: raw.env,
                cwd: raw.cwd,
            }
        }
        "http" => {
            let url = raw.url.ok_or_else(|| {
                ConfigError::at(origin, &field("url"), "an http server needs its URL")
            })?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::at(
                    origin,
                    &field("url"),
                    &format!("{url:?} is not an http:// or https:// URL"),
                ));
            }
            Transport::Http {
                url,
                headers: raw.headers,
            }
        }
        "sse" => {
            return Err(ConfigError::at(
                origin,
                &field("type"),
                "the legacy SSE transport is not supported; use \"http\" (streamable HTTP), which current servers serve",
            ));
        }
        other => {
            return Err(ConfigError::at(
                origin,
                &field("type"),
                &format!("unknown transport {other:?} (expected stdio, local or http)"),
            ));
        }
    };
    let timeout = match raw.timeout {
        Some(0) => {
            return Err(ConfigError::at(
                origin,
                &field("timeout"),
                "must be a positive number of milliseconds",
            ));
        }
        t => t.map(Duration::from_millis),
    };
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        tools: raw.tools,
        exclude_tools: raw.exclude_tools,
        timeout,
        origin: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_copilot_format() {
        let servers = McpServers::from_value(
            &json!({
                "files": {"type": "local", "command": "npx", "args": ["-y", "x"], "env": {"A": "1"}, "tools": ["*"], "displayName": "ignored"},
                "remote": {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "y"}, "timeout": 1500},
                "bare": {"command": "srv"}
            }),
            "test",
        )
        .unwrap();
        assert_eq!(servers.names(), ["files", "remote", "bare"]);
        assert_eq!(servers.servers[0].transport.kind(), "stdio");
        assert_eq!(servers.servers[1].transport.kind(), "http");
        assert_eq!(
            servers.servers[1].timeout,
            Some(Duration::from_millis(1500))
        );
        assert!(servers.servers[0].offers("anything"));
    }

    #[test]
    fn tool_filters() {
        let servers = McpServers::from_value(
            &json!({"s": {"command": "x", "tools": ["a", "b"], "excludeTools": ["b"]}}),
            "test",
        )
        .unwrap();
        let s = &servers.servers[0];
        assert!(s.offers("a"));
        assert!(!s.offers("b"));
        assert!(!s.offers("c"));
    }

    #[test]
    fn errors_name_the_server_and_field() {
        let cases = [
            (json!({"s": {"command": 3}}), "mcpServers.s.command"),
            (json!({"s": {"type": "stdio"}}), "mcpServers.s.command"),
            (json!({"s": {"type": "http"}}), "mcpServers.s.url"),
            (
                json!({"s": {"type": "http", "url": "file:///etc"}}),
                "mcpServers.s.url",
            ),
            (
                json!({"s": {"type": "sse", "url": "http://x"}}),
                "mcpServers.s.type",
            ),
            (
                json!({"s": {"type": "pigeon", "command": "x"}}),
                "mcpServers.s.type",
            ),
            (json!({"s": {}}), "mcpServers.s"),
            (
                json!({"s": {"command": "x", "timeout": 0}}),
                "mcpServers.s.timeout",
            ),
            (
                json!({"s": {"command": "x", "env": {"A": 1}}}),
                "mcpServers.s.env",
            ),
            (json!({"a(b)": {"command": "x"}}), "mcpServers.a(b)"),
            (json!({"": {"command": "x"}}), "mcpServers."),
            (json!({"a\u{1}": {"command": "x"}}), "mcpServers.a\u{1}"),
        ];
        for (value, field) in cases {
            let err = McpServers::from_value(&value, "cfg.json").unwrap_err();
            let text = err.to_string();
            assert!(text.contains("cfg.json"), "{text}");
            assert!(text.contains(field), "{field}: {text}");
        }
        assert!(McpServers::from_value(&json!([]), "x").is_err());
        let many: serde_json::Map<String, Value> = (0..=MAX_SERVERS)
            .map(|i| (format!("s{i}"), json!({"command": "x"})))
            .collect();
        assert!(McpServers::from_value(&Value::Object(many), "x").is_err());
    }

    #[test]
    fn file_errors_give_the_line() {
        let err = McpServers::parse_file_text(
            "{\n  \"mcpServers\": {,}\n}",
            Path::new("/h/mcp-config.json"),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("/h/mcp-config.json:2"), "{text}");
        assert!(
            McpServers::parse_file_text("{}", Path::new("x"))
                .unwrap()
                .is_empty()
        );
        assert!(McpServers::parse_file_text("[]", Path::new("x")).is_err());
        assert_eq!(
            McpServers::read_file(Path::new("/nonexistent/mcp-config.json")).unwrap(),
            None
        );
    }

    #[test]
    fn overlay_replaces_by_name_in_place() {
        let a = McpServers::from_value(&json!({"x": {"command": "a"}, "y": {"command": "b"}}), "a")
            .unwrap();
        let b = McpServers::from_value(&json!({"x": {"command": "c"}, "z": {"command": "d"}}), "b")
            .unwrap();
        let merged = a.overlay(b);
        assert_eq!(merged.names(), ["x", "y", "z"]);
        assert!(
            matches!(&merged.servers[0].transport, Transport::Stdio { command, .. } if command == "c")
        );
    }
}
