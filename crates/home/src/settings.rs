//! The settings files of the Copilot home: `settings.json`, where the Copilot CLI keeps user
//! settings, and `config.json`, which it manages (and where older releases kept them). Both
//! are JSON with comments; keys turnstile does not know are the CLI's own and are left alone.
//! Read here, resolved against flags and the environment by the command line (`config/`);
//! edited whole through [`document`] (the one writer of both files), as `user.settings.*`
//! sees them through [`user`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::jsonc::strip_comments;

mod catalog;
pub mod document;
pub mod user;

/// The user settings file, as the Copilot CLI names it.
pub const SETTINGS_FILE: &str = "settings.json";
/// The file the Copilot CLI manages (older releases kept the settings there).
pub const CONFIG_FILE: &str = "config.json";

/// Why a settings file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file exists but could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is too large to be a settings file.
    #[error("{} is larger than {MAX_FILE_BYTES} bytes; it is not a settings file", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The file's text is not settings.
    #[error("{}:{source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where and what.
        source: ParseError,
    },
}

/// Why a settings text is not settings; the text starts with the line (and column).
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Not a JSON object of the settings' shape.
    #[error("{line}:{column}: not a JSON object of settings: {what}")]
    NotSettings {
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// The parser's message without its position.
        what: String,
    },
    /// A field of the wrong shape.
    #[error("{line}:{column}: field `{field}`: {what}; fix or remove it")]
    Field {
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// The field's path (`provider.type`).
        field: String,
        /// The parser's message without its position.
        what: String,
    },
    /// A trusted folder that is not an absolute path.
    #[error("{line}: field `trustedFolders`: {folder:?} is not an absolute path; write it in full")]
    RelativeFolder {
        /// Line, from 1.
        line: usize,
        /// The folder as written.
        folder: String,
    },
    /// An MCP server with neither a command nor a URL.
    #[error(
        "{line}: field `mcpServers.{name}`: a server needs a \"command\" (local) or a \"url\" (remote)"
    )]
    ServerWithoutCommand {
        /// Line, from 1.
        line: usize,
        /// The server's name.
        name: String,
    },
}

/// Largest settings file read.
pub(crate) const MAX_FILE_BYTES: u64 = 4 << 20;

/// The settings turnstile reads from a file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSettings {
    /// The model (the Copilot CLI's `model`).
    pub model: Option<String>,
    /// The model provider, in the SDK's `ProviderConfig` shape (a turnstile extension).
    pub provider: Option<ProviderSettings>,
    /// Folders whose hook files may run (the Copilot CLI's `trustedFolders`).
    #[serde(alias = "trusted_folders")]
    pub trusted_folders: Option<Vec<String>>,
    /// `--allow-tool` patterns (a turnstile extension).
    pub allowed_tools: Option<Vec<String>>,
    /// `--deny-tool` patterns (a turnstile extension).
    pub denied_tools: Option<Vec<String>>,
    /// `event`, `turn` or `off` (a turnstile extension).
    pub durability: Option<DurabilitySetting>,
    /// MCP servers, in the format of `mcp-config.json`'s `mcpServers`.
    pub mcp_servers: Option<BTreeMap<String, McpServerSettings>>,
    /// `false` runs tool commands, hooks and MCP servers without the kernel sandbox, as
    /// `--no-sandbox` does (a turnstile extension; only the user's own settings files are
    /// read, never a repository's).
    pub sandbox: Option<bool>,
    /// `--model-timeout` in seconds (a turnstile extension).
    #[serde(default, deserialize_with = "positive_secs")]
    pub model_timeout: Option<f64>,
    /// `--model-idle-timeout` in seconds (a turnstile extension).
    #[serde(default, deserialize_with = "positive_secs")]
    pub model_idle_timeout: Option<f64>,
    /// `--max-tool-calls` (a turnstile extension).
    #[serde(default, deserialize_with = "at_least_one")]
    pub max_tool_calls: Option<u64>,
    /// `--max-parallel-tools` (a turnstile extension).
    #[serde(default, deserialize_with = "at_least_one")]
    pub max_parallel_tools: Option<u64>,
    /// `--max-parallel-agents` (a turnstile extension).
    #[serde(default, deserialize_with = "at_least_one")]
    pub max_parallel_agents: Option<u64>,
}

/// A number of seconds above 0 and at most a day, or absent.
fn positive_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        Some(secs) if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) => Err(
            serde::de::Error::custom("give a number of seconds above 0 and at most 86400"),
        ),
        secs => Ok(secs),
    }
}

/// A count of at least 1, or absent.
fn at_least_one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<u64>::deserialize(d)? {
        Some(0) => Err(serde::de::Error::custom("give a number of at least 1")),
        n => Ok(n),
    }
}

/// When journals are fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DurabilitySetting {
    /// After every event.
    Event,
    /// At the end of every turn.
    Turn,
    /// Never.
    Off,
}

impl DurabilitySetting {
    /// The spelling of the file and the flag.
    pub fn as_str(self) -> &'static str {
        match self {
            DurabilitySetting::Event => "event",
            DurabilitySetting::Turn => "turn",
            DurabilitySetting::Off => "off",
        }
    }
}

/// `provider`: the SDK's `ProviderConfig` fields, plus `apiKeyCommand`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderSettings {
    /// `openai`, `azure` or `anthropic`.
    #[serde(rename = "type")]
    pub kind: Option<ProviderType>,
    /// `completions` or `responses`.
    pub wire_api: Option<WireApiSetting>,
    /// Base URL of the API.
    pub base_url: Option<String>,
    /// API key.
    pub api_key: Option<String>,
    /// Bearer token.
    pub bearer_token: Option<String>,
    /// Command printing the key.
    pub api_key_command: Option<String>,
    /// Azure options.
    pub azure: Option<AzureSettings>,
    /// Extra HTTP headers.
    pub headers: Option<BTreeMap<String, String>>,
    /// Model name sent on the wire.
    pub wire_model: Option<String>,
    /// Well-known model id (carried; the model name when no other names one).
    pub model_id: Option<String>,
    /// Largest answer in tokens.
    pub max_output_tokens: Option<u64>,
    /// `http` only.
    pub transport: Option<String>,
}

/// `provider.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderType {
    /// OpenAI-compatible.
    Openai,
    /// Azure OpenAI.
    Azure,
    /// Anthropic Messages.
    Anthropic,
}

/// `provider.wireApi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireApiSetting {
    /// Chat Completions.
    Completions,
    /// The Responses API.
    Responses,
}

/// `provider.azure`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AzureSettings {
    /// The API version of the deployment route.
    pub api_version: Option<String>,
}

/// One MCP server: a command (`stdio`/`local`) or a URL (`http`/`sse`); carried, not run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerSettings {
    /// `local`, `stdio`, `http` or `sse`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The command of a local server.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Option<Vec<String>>,
    /// Its environment.
    pub env: Option<BTreeMap<String, String>>,
    /// The URL of a remote server.
    pub url: Option<String>,
    /// Headers for a remote server.
    pub headers: Option<BTreeMap<String, String>>,
    /// Tools to expose (`*` for all).
    pub tools: Option<Vec<String>>,
    /// Anything else the server entry says, kept as given.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// One settings file as read.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    /// Where it is.
    pub path: PathBuf,
    /// What it says (all absent when the file does not exist).
    pub settings: FileSettings,
    /// Whether the file exists.
    pub exists: bool,
}

/// Reads a settings file; a missing one says nothing. A file that is not JSON, or a field of
/// the wrong shape, is an error naming the file, the line and column, and the field.
pub fn read(path: &Path) -> Result<SettingsFile, SettingsError> {
    let absent = || SettingsFile {
        path: path.to_path_buf(),
        settings: FileSettings::default(),
        exists: false,
    };
    // One reader of the settings files' text (its size cap included): `document.rs`.
    let Some(text) = document::read_text(path)? else {
        return Ok(absent());
    };
    let settings = parse(&text).map_err(|source| SettingsError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(SettingsFile {
        path: path.to_path_buf(),
        settings,
        exists: true,
    })
}

/// Parses a file's text; the error reads `LINE:COLUMN: ...` (the caller puts the path first).
pub fn parse(text: &str) -> Result<FileSettings, ParseError> {
    let stripped = strip_comments(text);
    if stripped.trim().is_empty() {
        return Ok(FileSettings::default());
    }
    let mut de = serde_json::Deserializer::from_str(&stripped);
    let settings: FileSettings = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        let (line, column) = (inner.line(), inner.column());
        let what = strip_position(&inner.to_string());
        if field == "." || field.is_empty() {
            ParseError::NotSettings { line, column, what }
        } else {
            ParseError::Field {
                line,
                column,
                field,
                what,
            }
        }
    })?;
    check(&settings, &stripped)?;
    Ok(settings)
}

/// What the types cannot say: absolute trusted folders, servers with a command or a URL.
fn check(settings: &FileSettings, text: &str) -> Result<(), ParseError> {
    for folder in settings.trusted_folders.iter().flatten() {
        if !Path::new(folder).is_absolute() {
            return Err(ParseError::RelativeFolder {
                line: line_of(text, &format!("{folder:?}")),
                folder: folder.clone(),
            });
        }
    }
    for (name, server) in settings.mcp_servers.iter().flatten() {
        if server.command.is_none() && server.url.is_none() {
            return Err(ParseError::ServerWithoutCommand {
                line: line_of(text, &format!("{name:?}")),
                name: name.clone(),
            });
        }
    }
    Ok(())
}

/// The line (from 1) where `needle` first appears, else 1.
fn line_of(text: &str, needle: &str) -> usize {
    text.find(needle)
        .map_or(1, |at| text[..at].matches('\n').count() + 1)
}

/// serde_json's message without its trailing ` at line L column C` (the caller says where).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_turnstile_knows_and_leaves_the_rest() {
        let s = parse(
            r#"// User settings
{
  "model": "gpt-5",
  "theme": "dark",
  "trustedFolders": ["/work"],
  "allowedTools": ["shell(git)"],
  "deniedTools": ["shell(rm)"],
  "durability": "event",
  "provider": {"type": "anthropic", "baseUrl": "http://127.0.0.1:1", "maxOutputTokens": 512},
  "mcpServers": {"fs": {"type": "local", "command": "node", "args": ["x.js"], "tools": ["*"], "timeout": 5}}
}"#,
        )
        .unwrap();
        assert_eq!(s.model.as_deref(), Some("gpt-5"));
        assert_eq!(s.durability, Some(DurabilitySetting::Event));
        let p = s.provider.unwrap();
        assert_eq!(
            (p.kind, p.max_output_tokens),
            (Some(ProviderType::Anthropic), Some(512))
        );
        let fs = &s.mcp_servers.unwrap()["fs"];
        assert_eq!(fs.command.as_deref(), Some("node"));
        assert_eq!(fs.other["timeout"], 5);
    }

    #[test]
    fn bad_files_name_line_and_field() {
        for (text, line, field) in [
            ("{\n  \"model\": 5\n}", "2:", "`model`"),
            (
                "{\n \"provider\": {\n  \"type\": \"vertex\"\n }\n}",
                "3:",
                "`provider.type`",
            ),
            (
                "{\n \"provider\": {\"baseURL\": \"x\"}\n}",
                "2:",
                "`provider.baseURL`",
            ),
            ("{\n\n \"durability\": \"sometimes\"}", "3:", "`durability`"),
            (
                "{\"trustedFolders\": [\n \"rel\"]}",
                "2",
                "`trustedFolders`",
            ),
            (
                "{\"mcpServers\": {\n \"x\": {\"args\": []}}}",
                "2",
                "`mcpServers.x`",
            ),
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(e.starts_with(line) && e.contains(field), "{text}: {e}");
        }
        let e = parse("{\n\"model\": ").unwrap_err().to_string();
        assert!(e.starts_with("2:"), "{e}");
        assert!(parse("").unwrap().model.is_none());
    }
}
