//! `turnstile config`: the effective settings and where each came from (a flag, an
//! environment variable, a settings file, or the default). Secrets are never printed: a key
//! or token shows as `(set)`, header values are left out.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Value, json};

use crate::config::{Effective, ProviderType, Source, WireApiSetting};
use crate::provider_flags::ProviderFlags;
use crate::session_flags::SessionFlags;

/// `turnstile config` arguments: the flags of `run`, to see what they change.
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// Print JSON: `{"settings": [{"name", "value", "source"}], "files": [{"path", "exists"}]}`.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ProviderFlags,
    #[command(flatten)]
    pub session: SessionFlags,
}

/// Runs `turnstile config`.
pub fn run(args: &ConfigArgs) -> Result<ExitCode> {
    let mut flags = args.session.config_flags();
    args.model.fill(&mut flags)?;
    let effective = crate::config::effective(&flags)?;
    let mut rows = rows(&effective);
    let layers = turnstile_sandbox::probe();
    rows.push(if !effective.sandbox.value {
        (
            "sandbox".into(),
            json!("off"),
            effective.sandbox.source.to_string(),
        )
    } else if layers.complete() {
        ("sandbox".into(), json!(layers.describe()), "kernel".into())
    } else {
        (
            "sandbox".into(),
            json!(format!("unavailable: {}", layers.describe())),
            "kernel".into(),
        )
    });
    let mut out = std::io::stdout().lock();
    if args.json {
        let settings: Vec<Value> = rows
            .into_iter()
            .map(|(name, value, source)| json!({"name": name, "value": value, "source": source}))
            .collect();
        let files: Vec<Value> = effective
            .files
            .iter()
            .map(|f| json!({"path": f.path, "exists": f.exists}))
            .collect();
        writeln!(out, "{}", json!({"settings": settings, "files": files}))
    } else {
        for f in &effective.files {
            let state = if f.exists { "read" } else { "absent" };
            writeln!(out, "# {} ({state})", f.path.display())?;
        }
        let width = rows.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
        rows.iter().try_for_each(|(name, value, source)| {
            let shown = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            writeln!(out, "{name:width$}  {shown}  ({source})")
        })
    }
    .context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `(name, value, source)` of every setting, in a fixed order.
fn rows(e: &Effective) -> Vec<(String, Value, String)> {
    let mut rows = Vec::new();
    let mut row = |name: &str, value: Value, source: &Source| {
        rows.push((name.to_string(), value, source.to_string()))
    };
    row("model", json!(e.model.value), &e.model.source);
    let kind = match e.provider_type.value {
        ProviderType::Openai => "openai",
        ProviderType::Azure => "azure",
        ProviderType::Anthropic => "anthropic",
    };
    row("provider.type", json!(kind), &e.provider_type.source);
    let wire = match e.wire_api.value {
        WireApiSetting::Completions => "completions",
        WireApiSetting::Responses => "responses",
    };
    row("provider.wireApi", json!(wire), &e.wire_api.source);
    row(
        "provider.baseUrl",
        json!(e.base_url.value),
        &e.base_url.source,
    );
    for (name, secret) in [
        ("provider.apiKey", &e.api_key),
        ("provider.bearerToken", &e.bearer_token),
    ] {
        if let Some(s) = secret {
            row(name, json!("(set)"), &s.source);
        }
    }
    if let Some(c) = &e.api_key_command {
        row("provider.apiKeyCommand", json!(c.value), &c.source);
    }
    if let Some(v) = &e.azure_api_version {
        row("provider.azure.apiVersion", json!(v.value), &v.source);
    }
    for h in &e.headers {
        row(
            &format!("provider.headers.{}", h.value.0),
            json!("(set)"),
            &h.source,
        );
    }
    if let Some(n) = &e.max_output_tokens {
        row("provider.maxOutputTokens", json!(n.value), &n.source);
    }
    if let Some(source) = &e.allow_all_tools {
        row("allowAllTools", json!(true), source);
    }
    for (name, list) in [
        ("allowedTools", &e.allowed_tools),
        ("deniedTools", &e.denied_tools),
    ] {
        for p in list {
            row(name, json!(p.value), &p.source);
        }
    }
    row(
        "durability",
        json!(e.durability.value.as_str()),
        &e.durability.source,
    );
    for f in &e.trusted_folders {
        row("trustedFolders", json!(f.value), &f.source);
    }
    for s in &e.mcp_servers {
        let (name, server) = &s.value;
        let what = match (&server.command, &server.url) {
            (Some(command), _) => format!("command {command}"),
            (None, Some(url)) => format!("url {url}"),
            (None, None) => String::new(),
        };
        row(&format!("mcpServers.{name}"), json!(what), &s.source);
        // The rest of the entry, secrets left out: env and header values.
        let keys = |map: &Option<std::collections::BTreeMap<String, String>>| {
            map.as_ref().map(|m| m.keys().cloned().collect::<Vec<_>>())
        };
        let detail = json!({
            "type": server.kind, "args": server.args, "tools": server.tools,
            "envNames": keys(&server.env), "headerNames": keys(&server.headers),
            "other": server.other,
        });
        row(&format!("mcpServers.{name}.entry"), detail, &s.source);
    }
    rows
}
