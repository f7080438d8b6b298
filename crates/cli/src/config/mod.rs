//! The effective settings of a command and where each came from: flags override the
//! environment, the environment overrides the settings files (`settings.json` over
//! `config.json`, read by `turnstile_home::settings`, here `file`), and the files override the
//! defaults. The hook trust, the model provider, the permission patterns and the durability
//! of `run`, `resume`, `serve` and `config` all come from here.

/// The settings files' reader, `turnstile-home`'s.
pub use turnstile_home::settings as file;

mod near_keys;

use std::fmt;
use std::path::PathBuf;

use anyhow::{Result, bail};

pub use file::{
    DurabilitySetting, FileSettings, McpServerSettings, ProviderSettings, ProviderType,
    SettingsFile, WireApiSetting,
};

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Nobody set it.
    Default,
    /// A settings file.
    File(PathBuf),
    /// An environment variable.
    Env(String),
    /// A command-line flag.
    Flag(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(path) => write!(f, "file {}", path.display()),
            Source::Env(name) => write!(f, "env {name}"),
            Source::Flag(name) => write!(f, "flag {name}"),
        }
    }
}

/// A value and its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub source: Source,
}

impl<T> Sourced<T> {
    fn new(value: T, source: Source) -> Self {
        Sourced { value, source }
    }
}

/// What the command line says (each `None`/empty when not given).
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--model`.
    pub model: Option<String>,
    /// `--provider` (openai, azure or anthropic).
    pub provider_type: Option<ProviderType>,
    /// `--wire-api`.
    pub wire_api: Option<WireApiSetting>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--api-key-command`.
    pub api_key_command: Option<String>,
    /// `--azure-api-version`.
    pub azure_api_version: Option<String>,
    /// `--provider-header NAME:VALUE`.
    pub headers: Vec<(String, String)>,
    /// `--max-output-tokens`.
    pub max_output_tokens: Option<u64>,
    /// `--allow-tool`.
    pub allowed_tools: Vec<String>,
    /// `--deny-tool`.
    pub denied_tools: Vec<String>,
    /// `--allow-all-tools`.
    pub allow_all_tools: bool,
    /// `--durability`.
    pub durability: Option<DurabilitySetting>,
    /// `--no-sandbox`.
    pub no_sandbox: bool,
}

/// The settings in effect.
#[derive(Debug, Clone)]
pub struct Effective {
    /// The model name.
    pub model: Sourced<String>,
    /// The provider's kind.
    pub provider_type: Sourced<ProviderType>,
    /// Its wire format (OpenAI kinds).
    pub wire_api: Sourced<WireApiSetting>,
    /// Its base URL.
    pub base_url: Sourced<String>,
    /// The API key.
    pub api_key: Option<Sourced<String>>,
    /// The bearer token.
    pub bearer_token: Option<Sourced<String>>,
    /// The key command.
    pub api_key_command: Option<Sourced<String>>,
    /// Azure's API version.
    pub azure_api_version: Option<Sourced<String>>,
    /// Extra HTTP headers (a later source's header replaces an earlier one of that name).
    pub headers: Vec<Sourced<(String, String)>>,
    /// Largest answer in tokens.
    pub max_output_tokens: Option<Sourced<u64>>,
    /// Allow every tool call (`--allow-all-tools`, `COPILOT_ALLOW_ALL=true`).
    pub allow_all_tools: Option<Source>,
    /// Allow patterns, from every source.
    pub allowed_tools: Vec<Sourced<String>>,
    /// Deny patterns, from every source.
    pub denied_tools: Vec<Sourced<String>>,
    /// When journals are fsynced.
    pub durability: Sourced<DurabilitySetting>,
    /// Whether tool commands, hooks and MCP servers run in the kernel sandbox.
    pub sandbox: Sourced<bool>,
    /// Folders whose hooks may run.
    pub trusted_folders: Vec<Sourced<PathBuf>>,
    /// MCP servers, by name (carried for the MCP client).
    pub mcp_servers: Vec<Sourced<(String, McpServerSettings)>>,
    /// The files read, in order of precedence (highest first).
    pub files: Vec<SettingsFile>,
}

/// The default model name.
pub const DEFAULT_MODEL: &str = "gpt-4.1";
/// The default base URL (a local OpenAI-compatible server).
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8000/v1";

/// The settings files of the Copilot home, highest precedence first; none without a home.
pub fn read_files() -> Result<Vec<SettingsFile>> {
    let Some(home) = turnstile_home::copilot_home() else {
        return Ok(Vec::new());
    };
    let files = vec![
        file::read(&home.join(file::SETTINGS_FILE))?,
        file::read(&home.join(file::CONFIG_FILE))?,
    ];
    for f in files.iter().filter(|f| f.exists) {
        // Read again for its keys: the settings' type keeps none of those it ignores.
        if let Ok(text) = std::fs::read_to_string(&f.path) {
            for warning in near_keys::warnings(&f.path, &text) {
                eprintln!("warning: {warning}");
            }
        }
    }
    Ok(files)
}

/// The effective settings of `flags`, the process environment and the settings files.
pub fn effective(flags: &Flags) -> Result<Effective> {
    resolve(flags, &|name| std::env::var(name).ok(), read_files()?)
}

/// The first value of `names` set (non-empty) in the environment, with its name.
fn env_first(env: &dyn Fn(&str) -> Option<String>, names: &[&str]) -> Option<Sourced<String>> {
    names.iter().find_map(|name| {
        env(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| Sourced::new(v, Source::Env((*name).to_string())))
    })
}

/// Resolves `flags` over `env` over `files` (highest precedence first) over the defaults.
pub fn resolve(
    flags: &Flags,
    env: &dyn Fn(&str) -> Option<String>,
    files: Vec<SettingsFile>,
) -> Result<Effective> {
    // The first file that sets a field wins.
    fn from_files<T>(
        files: &[SettingsFile],
        get: impl Fn(&FileSettings) -> Option<T>,
    ) -> Option<Sourced<T>> {
        files
            .iter()
            .find_map(|f| get(&f.settings).map(|v| Sourced::new(v, Source::File(f.path.clone()))))
    }
    let provider = |get: &dyn Fn(&ProviderSettings) -> Option<String>| {
        from_files(&files, |s| s.provider.as_ref().and_then(get))
    };
    let flag = |value: Option<String>, name: &str| {
        value.map(|v| Sourced::new(v, Source::Flag(name.into())))
    };
    let string = |flag_value: Option<String>,
                  flag_name: &str,
                  env_names: &[&str],
                  file: Option<Sourced<String>>| {
        flag(flag_value, flag_name)
            .or_else(|| env_first(env, env_names))
            .or(file)
    };

    let model = string(
        flags.model.clone(),
        "--model",
        &[
            "TURNSTILE_MODEL",
            "COPILOT_MODEL",
            "COPILOT_PROVIDER_WIRE_MODEL",
        ],
        provider(&|p| p.wire_model.clone())
            .or_else(|| from_files(&files, |s| s.model.clone()))
            .or_else(|| provider(&|p| p.model_id.clone())),
    )
    .unwrap_or_else(|| Sourced::new(DEFAULT_MODEL.into(), Source::Default));

    let provider_type = match flags.provider_type {
        Some(kind) => Sourced::new(kind, Source::Flag("--provider".into())),
        None => match env_first(env, &["COPILOT_PROVIDER_TYPE"]) {
            Some(s) => Sourced::new(
                parse_type(&s.value).ok_or_else(|| {
                    anyhow::anyhow!(
                        "COPILOT_PROVIDER_TYPE={:?}: expected openai, azure or anthropic",
                        s.value
                    )
                })?,
                s.source,
            ),
            None => from_files(&files, |s| s.provider.as_ref().and_then(|p| p.kind))
                .unwrap_or_else(|| Sourced::new(ProviderType::Openai, Source::Default)),
        },
    };
    let wire_api = match flags.wire_api {
        Some(w) => Sourced::new(w, Source::Flag("--wire-api".into())),
        None => match env_first(env, &["COPILOT_PROVIDER_WIRE_API"]) {
            Some(s) => Sourced::new(
                match s.value.as_str() {
                    "completions" => WireApiSetting::Completions,
                    "responses" => WireApiSetting::Responses,
                    other => bail!(
                        "COPILOT_PROVIDER_WIRE_API={other:?}: expected completions or responses"
                    ),
                },
                s.source,
            ),
            None => from_files(&files, |s| s.provider.as_ref().and_then(|p| p.wire_api))
                .unwrap_or_else(|| Sourced::new(WireApiSetting::Completions, Source::Default)),
        },
    };
    if let Some(transport) = provider(&|p| p.transport.clone()).filter(|t| t.value != "http") {
        bail!(
            "{}: provider.transport {:?} is not supported by turnstile; use \"http\"",
            transport.source,
            transport.value
        );
    }
    let base_url = string(
        flags.base_url.clone(),
        "--base-url",
        &["TURNSTILE_BASE_URL", "COPILOT_PROVIDER_BASE_URL"],
        provider(&|p| p.base_url.clone()),
    )
    .unwrap_or_else(|| Sourced::new(DEFAULT_BASE_URL.into(), Source::Default));
    let bearer_token = string(
        None,
        "",
        &["COPILOT_PROVIDER_BEARER_TOKEN"],
        provider(&|p| p.bearer_token.clone()),
    );
    let api_key = string(
        None,
        "",
        &[
            "TURNSTILE_API_KEY",
            "COPILOT_PROVIDER_API_KEY",
            "OPENAI_API_KEY",
        ],
        provider(&|p| p.api_key.clone()),
    );
    let api_key_command = string(
        flags.api_key_command.clone(),
        "--api-key-command",
        &["TURNSTILE_API_KEY_COMMAND"],
        provider(&|p| p.api_key_command.clone()),
    );
    let azure_api_version = string(
        flags.azure_api_version.clone(),
        "--azure-api-version",
        &["COPILOT_PROVIDER_AZURE_API_VERSION"],
        provider(&|p| p.azure.as_ref().and_then(|a| a.api_version.clone())),
    );
    let max_output_tokens = match flags.max_output_tokens {
        Some(n) => Some(Sourced::new(n, Source::Flag("--max-output-tokens".into()))),
        None => match env_first(env, &["COPILOT_PROVIDER_MAX_OUTPUT_TOKENS"]) {
            Some(s) => Some(Sourced::new(
                s.value.trim().parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    anyhow::anyhow!(
                        "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS={:?}: expected a whole number of at least 1",
                        s.value
                    )
                })?,
                s.source,
            )),
            None => from_files(&files, |s| s.provider.as_ref().and_then(|p| p.max_output_tokens)),
        },
    };

    // Headers add up, file then env then flags, a later one replacing one of the same name.
    let mut headers: Vec<Sourced<(String, String)>> = Vec::new();
    let mut add_header = |name: String, value: String, source: Source| {
        headers.retain(|h| !h.value.0.eq_ignore_ascii_case(&name));
        headers.push(Sourced::new((name, value), source));
    };
    for f in files.iter().rev() {
        for (n, v) in f
            .settings
            .provider
            .iter()
            .flat_map(|p| p.headers.iter().flatten())
        {
            add_header(n.clone(), v.clone(), Source::File(f.path.clone()));
        }
    }
    if let Some(text) = env("COPILOT_PROVIDER_HEADERS") {
        for line in text.split('\n').flat_map(|l| l.split("\\n")) {
            if line.trim().is_empty() {
                continue;
            }
            let (name, value) =
                header_line(line).map_err(|e| anyhow::anyhow!("COPILOT_PROVIDER_HEADERS: {e}"))?;
            add_header(name, value, Source::Env("COPILOT_PROVIDER_HEADERS".into()));
        }
    }
    for (n, v) in &flags.headers {
        add_header(
            n.clone(),
            v.clone(),
            Source::Flag("--provider-header".into()),
        );
    }

    // Permission patterns add up: a deny in a file is never dropped by a flag.
    let mut allowed_tools = Vec::new();
    let mut denied_tools = Vec::new();
    for f in files.iter().rev() {
        let source = || Source::File(f.path.clone());
        allowed_tools.extend(
            f.settings
                .allowed_tools
                .iter()
                .flatten()
                .map(|p| Sourced::new(p.clone(), source())),
        );
        denied_tools.extend(
            f.settings
                .denied_tools
                .iter()
                .flatten()
                .map(|p| Sourced::new(p.clone(), source())),
        );
    }
    allowed_tools.extend(
        flags
            .allowed_tools
            .iter()
            .map(|p| Sourced::new(p.clone(), Source::Flag("--allow-tool".into()))),
    );
    denied_tools.extend(
        flags
            .denied_tools
            .iter()
            .map(|p| Sourced::new(p.clone(), Source::Flag("--deny-tool".into()))),
    );
    let allow_all_tools = if flags.allow_all_tools {
        Some(Source::Flag("--allow-all-tools".into()))
    } else {
        env("COPILOT_ALLOW_ALL")
            .filter(|v| v == "true")
            .map(|_| Source::Env("COPILOT_ALLOW_ALL".into()))
    };

    let durability = match flags.durability {
        Some(d) => Sourced::new(d, Source::Flag("--durability".into())),
        None => match env_first(env, &["TURNSTILE_DURABILITY"]) {
            Some(s) => Sourced::new(
                match s.value.as_str() {
                    "event" => DurabilitySetting::Event,
                    "turn" => DurabilitySetting::Turn,
                    "off" => DurabilitySetting::Off,
                    other => bail!("TURNSTILE_DURABILITY={other:?}: expected event, turn or off"),
                },
                s.source,
            ),
            None => from_files(&files, |s| s.durability)
                .unwrap_or_else(|| Sourced::new(DurabilitySetting::Turn, Source::Default)),
        },
    };

    let sandbox = if flags.no_sandbox {
        Sourced::new(false, Source::Flag("--no-sandbox".into()))
    } else {
        match env_first(env, &["TURNSTILE_SANDBOX"]) {
            Some(s) => Sourced::new(
                match s.value.as_str() {
                    "on" => true,
                    "off" => false,
                    other => bail!("TURNSTILE_SANDBOX={other:?}: expected on or off"),
                },
                s.source,
            ),
            None => from_files(&files, |s| s.sandbox)
                .unwrap_or_else(|| Sourced::new(true, Source::Default)),
        }
    };

    let mut trusted_folders = Vec::new();
    let mut mcp_servers: Vec<Sourced<(String, McpServerSettings)>> = Vec::new();
    for f in &files {
        for folder in f.settings.trusted_folders.iter().flatten() {
            let path = PathBuf::from(folder);
            trusted_folders.push(Sourced::new(
                path.canonicalize().unwrap_or(path),
                Source::File(f.path.clone()),
            ));
        }
        for (name, server) in f.settings.mcp_servers.iter().flatten() {
            if !mcp_servers.iter().any(|s| s.value.0 == *name) {
                mcp_servers.push(Sourced::new(
                    (name.clone(), server.clone()),
                    Source::File(f.path.clone()),
                ));
            }
        }
    }

    Ok(Effective {
        model,
        provider_type,
        wire_api,
        base_url,
        api_key,
        bearer_token,
        api_key_command,
        azure_api_version,
        headers,
        max_output_tokens,
        allow_all_tools,
        allowed_tools,
        denied_tools,
        durability,
        sandbox,
        trusted_folders,
        mcp_servers,
        files,
    })
}

fn parse_type(text: &str) -> Option<ProviderType> {
    match text {
        "openai" => Some(ProviderType::Openai),
        "azure" => Some(ProviderType::Azure),
        "anthropic" => Some(ProviderType::Anthropic),
        _ => None,
    }
}

/// `Name: Value` (the Copilot CLI's header syntax, for the environment and `--provider-header`).
pub fn header_line(line: &str) -> Result<(String, String), String> {
    let Some((name, value)) = line.split_once(':') else {
        return Err(format!("{line:?} is not \"Name: Value\""));
    };
    let name = name.trim();
    let valid = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+.^_`|~-".contains(&b));
    if !valid {
        return Err(format!("{name:?} is not a valid header name"));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn file(path: &str, text: &str) -> SettingsFile {
        SettingsFile {
            path: PathBuf::from(path),
            settings: file::parse(text).unwrap(),
            exists: true,
        }
    }

    #[test]
    fn flags_over_env_over_files_over_defaults() {
        let files = vec![
            file(
                "/h/settings.json",
                r#"{"model": "from-settings", "provider": {"type": "anthropic", "headers": {"X-A": "s"}}, "deniedTools": ["shell(rm)"]}"#,
            ),
            file(
                "/h/config.json",
                r#"{"model": "from-config", "durability": "off", "provider": {"baseUrl": "http://127.0.0.1:1", "headers": {"X-A": "c", "X-B": "c"}}, "trustedFolders": ["/nonexistent/t"]}"#,
            ),
        ];
        let vars: BTreeMap<&str, &str> = BTreeMap::from([
            ("COPILOT_PROVIDER_BASE_URL", "http://127.0.0.1:2"),
            ("COPILOT_PROVIDER_HEADERS", "X-B: env\\nX-C: env"),
            ("COPILOT_ALLOW_ALL", "true"),
        ]);
        let env = |name: &str| vars.get(name).map(|v| v.to_string());
        let e = resolve(&Flags::default(), &env, files.clone()).unwrap();
        assert_eq!(e.model.value, "from-settings");
        assert_eq!(e.model.source, Source::File("/h/settings.json".into()));
        assert_eq!(e.provider_type.value, ProviderType::Anthropic);
        assert_eq!(e.base_url.value, "http://127.0.0.1:2");
        assert_eq!(
            e.base_url.source,
            Source::Env("COPILOT_PROVIDER_BASE_URL".into())
        );
        assert_eq!(e.durability.value, DurabilitySetting::Off);
        let headers: Vec<(&str, &str)> = e
            .headers
            .iter()
            .map(|h| (h.value.0.as_str(), h.value.1.as_str()))
            .collect();
        assert_eq!(headers, [("X-A", "s"), ("X-B", "env"), ("X-C", "env")]);
        assert_eq!(
            e.allow_all_tools,
            Some(Source::Env("COPILOT_ALLOW_ALL".into()))
        );
        assert_eq!(e.trusted_folders[0].value, PathBuf::from("/nonexistent/t"));

        let flags = Flags {
            model: Some("from-flag".into()),
            base_url: Some("http://127.0.0.1:3".into()),
            provider_type: Some(ProviderType::Openai),
            durability: Some(DurabilitySetting::Event),
            denied_tools: vec!["write".into()],
            ..Flags::default()
        };
        let e = resolve(&flags, &env, files).unwrap();
        assert_eq!(e.model.value, "from-flag");
        assert_eq!(e.base_url.source, Source::Flag("--base-url".into()));
        assert_eq!(e.provider_type.value, ProviderType::Openai);
        assert_eq!(e.durability.value, DurabilitySetting::Event);
        let denied: Vec<&str> = e.denied_tools.iter().map(|d| d.value.as_str()).collect();
        assert_eq!(denied, ["shell(rm)", "write"], "a file's deny stays");

        let e = resolve(&Flags::default(), &|_| None, Vec::new()).unwrap();
        assert_eq!(
            (
                e.model.value.as_str(),
                e.base_url.value.as_str(),
                e.model.source
            ),
            (DEFAULT_MODEL, DEFAULT_BASE_URL, Source::Default)
        );
    }

    #[test]
    fn bad_environment_values_are_errors() {
        for (name, value) in [
            ("COPILOT_PROVIDER_TYPE", "vertex"),
            ("COPILOT_PROVIDER_WIRE_API", "chat"),
            ("COPILOT_PROVIDER_MAX_OUTPUT_TOKENS", "many"),
            ("COPILOT_PROVIDER_HEADERS", "no colon"),
            ("TURNSTILE_DURABILITY", "always"),
        ] {
            let env = |n: &str| (n == name).then(|| value.to_string());
            let e = resolve(&Flags::default(), &env, Vec::new()).unwrap_err();
            assert!(e.to_string().contains(name), "{e}");
        }
        let files = vec![file(
            "/h/settings.json",
            r#"{"provider": {"transport": "websockets"}}"#,
        )];
        let e = resolve(&Flags::default(), &|_| None, files).unwrap_err();
        assert!(e.to_string().contains("/h/settings.json"), "{e}");
    }

    #[test]
    fn the_sandbox_is_on_unless_the_user_turns_it_off() {
        let off = || vec![file("/h/settings.json", r#"{"sandbox": false}"#)];
        let e = resolve(&Flags::default(), &|_| None, Vec::new()).unwrap();
        assert_eq!((e.sandbox.value, e.sandbox.source), (true, Source::Default));
        let e = resolve(&Flags::default(), &|_| None, off()).unwrap();
        assert!(!e.sandbox.value);
        assert_eq!(e.sandbox.source, Source::File("/h/settings.json".into()));
        let on = |name: &str| (name == "TURNSTILE_SANDBOX").then(|| "on".to_string());
        let e = resolve(&Flags::default(), &on, off()).unwrap();
        assert!(e.sandbox.value, "the environment wins over the file");
        let flags = Flags {
            no_sandbox: true,
            ..Flags::default()
        };
        let e = resolve(&flags, &on, off()).unwrap();
        assert_eq!(
            (e.sandbox.value, e.sandbox.source),
            (false, Source::Flag("--no-sandbox".into()))
        );
        let bad = |name: &str| (name == "TURNSTILE_SANDBOX").then(|| "maybe".to_string());
        let e = resolve(&Flags::default(), &bad, Vec::new()).unwrap_err();
        assert!(e.to_string().contains("TURNSTILE_SANDBOX"), "{e}");
        let e = file::parse(r#"{"sandbox": "no"}"#).unwrap_err();
        assert!(e.to_string().contains("sandbox"), "{e}");
    }
}
