//! The credential of a call: a bearer token, the output of a key command, or a static key;
//! and the header it goes in (`Authorization: Bearer`, Azure's `api-key`, Anthropic's
//! `x-api-key`).

use std::process::Stdio;

use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use tokio::io::AsyncReadExt;

use super::super::{ModelError, ModelErrorKind};
use super::config::{ApiFlavor, KeyCommand, OpenAiConfig};
use super::token_source::TokenSource;

/// Most of a key command's output read (a key is short; anything longer is not a key).
const MAX_KEY_OUTPUT: u64 = 64 * 1024;
/// Most of a key command's stderr quoted in an error.
const MAX_STDERR_QUOTE: usize = 300;

/// The credential header of a call, if any: the token source's token, else `bearer_token`,
/// else the key command's output, else `api_key`; in `api-key` for Azure keys, `x-api-key` for Anthropic keys, else
/// `Authorization: Bearer`.
pub(super) async fn credential(
    config: &OpenAiConfig,
) -> Result<Option<(HeaderName, HeaderValue)>, ModelError> {
    let Some(secret) = secret(config).await? else {
        return Ok(None);
    };
    match (secret, &config.flavor) {
        (Secret::Bearer(token), _) => bearer(&token).map(Some),
        (Secret::Key(key), ApiFlavor::Azure { .. }) => Ok(Some((
            HeaderName::from_static("api-key"),
            secret_value(&key, "the API key")?,
        ))),
        (Secret::Key(key), ApiFlavor::Anthropic) => Ok(Some((
            HeaderName::from_static("x-api-key"),
            secret_value(&key, "the API key")?,
        ))),
        (Secret::Key(key), ApiFlavor::OpenAi | ApiFlavor::Copilot) => bearer(&key).map(Some),
    }
}

/// The secret of a call before it is put in a header: a bearer token, or a key (static or
/// printed by the key command, which runs now: it is asked for every call).
pub(super) enum Secret {
    /// `bearer_token`: always `Authorization: Bearer`.
    Bearer(String),
    /// The key command's output, else `api_key`: in the flavor's header.
    Key(String),
}

impl Secret {
    /// The text itself.
    pub(super) fn into_text(self) -> String {
        match self {
            Secret::Bearer(t) | Secret::Key(t) => t,
        }
    }
}

/// The token source's token (asked now), else `bearer_token`, else the key command's output
/// (run now), else `api_key`; `None` when there is none.
pub(super) async fn secret(config: &OpenAiConfig) -> Result<Option<Secret>, ModelError> {
    if let Some(source) = &config.token_source {
        return Ok(Some(Secret::Bearer(
            source.0.token().await?.trim().to_owned(),
        )));
    }
    if let Some(token) = config
        .bearer_token
        .as_deref()
        .filter(|t| !t.trim().is_empty())
    {
        return Ok(Some(Secret::Bearer(token.trim().to_owned())));
    }
    let key = match &config.api_key_command {
        Some(command) => Some(command.token().await?),
        None => config.api_key.clone().filter(|k| !k.trim().is_empty()),
    };
    Ok(key.map(|k| Secret::Key(k.trim().to_owned())))
}

fn bearer(token: &str) -> Result<(HeaderName, HeaderValue), ModelError> {
    Ok((
        AUTHORIZATION,
        secret_value(&format!("Bearer {}", token.trim()), "the bearer token")?,
    ))
}

/// A header value marked sensitive (kept out of debug output).
fn secret_value(text: &str, what: &str) -> Result<HeaderValue, ModelError> {
    let mut value = HeaderValue::from_str(text.trim()).map_err(|_| {
        ModelError::new(
            ModelErrorKind::Config,
            format!("{what} holds characters an HTTP header cannot carry (a line break?)"),
        )
    })?;
    value.set_sensitive(true);
    Ok(value)
}

impl TokenSource for KeyCommand {
    fn token(&self) -> crate::BoxFuture<'_, Result<String, ModelError>> {
        Box::pin(run_key_command(self))
    }
}

/// Runs the key command (`sh -c`) and returns its trimmed stdout. Run once per model call:
/// a rotating credential is always fresh, and nothing secret is kept between calls.
pub(super) async fn run_key_command(command: &KeyCommand) -> Result<String, ModelError> {
    let fail = |why: String| {
        ModelError::new(
            ModelErrorKind::Config,
            format!("the provider's apiKeyCommand `{}` {why}", command.command),
        )
    };
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&command.command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(format!("could not start: {e}")))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let run = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let mut stdout = stdout.take(MAX_KEY_OUTPUT + 1);
        let mut stderr = stderr.take(MAX_KEY_OUTPUT);
        let (read_out, read_err) =
            tokio::join!(stdout.read_to_end(&mut out), stderr.read_to_end(&mut err),);
        read_out.map_err(|e| fail(format!("could not be read: {e}")))?;
        let _ = read_err;
        let status = child
            .wait()
            .await
            .map_err(|e| fail(format!("could not be waited for: {e}")))?;
        Ok::<_, ModelError>((status, out, err))
    };
    let (status, out, err) = match tokio::time::timeout(command.timeout, run).await {
        Ok(result) => result?,
        // Dropping the child kills it (kill_on_drop).
        Err(_) => {
            return Err(fail(format!(
                "did not finish within {} ms (it was killed)",
                command.timeout.as_millis()
            )));
        }
    };
    if !status.success() {
        let stderr = String::from_utf8_lossy(&err);
        let first: String = stderr.trim().chars().take(MAX_STDERR_QUOTE).collect();
        return Err(fail(format!(
            "failed ({status}){}",
            if first.is_empty() {
                String::new()
            } else {
                format!(": {first}")
            }
        )));
    }
    if out.len() as u64 > MAX_KEY_OUTPUT {
        return Err(fail(format!(
            "printed more than {MAX_KEY_OUTPUT} bytes, which is not a key"
        )));
    }
    let key = String::from_utf8(out)
        .map_err(|_| fail("printed something that is not UTF-8".into()))?
        .trim()
        .to_string();
    if key.is_empty() {
        return Err(fail(
            "printed nothing (the key is its standard output)".into(),
        ));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_key_command_prints_the_key() {
        let key = run_key_command(&KeyCommand::new("printf '  sk-from-cmd\\n'"))
            .await
            .unwrap();
        assert_eq!(key, "sk-from-cmd");
    }

    #[tokio::test]
    async fn a_failing_silent_or_slow_key_command_is_a_config_error() {
        let e = run_key_command(&KeyCommand::new("echo nope >&2; exit 3"))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ModelErrorKind::Config);
        assert!(
            e.message.contains("nope") && e.message.contains("apiKeyCommand"),
            "{e}"
        );
        let e = run_key_command(&KeyCommand::new("true")).await.unwrap_err();
        assert!(e.message.contains("printed nothing"), "{e}");
        let slow = KeyCommand {
            command: "sleep 30".into(),
            timeout: Duration::from_millis(100),
        };
        let e = run_key_command(&slow).await.unwrap_err();
        assert!(e.message.contains("killed"), "{e}");
    }

    #[tokio::test]
    async fn the_bearer_token_wins_and_azure_keys_go_in_api_key() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:1", "m");
        config.api_key = Some("sk".into());
        let (name, value) = credential(&config).await.unwrap().unwrap();
        assert_eq!(
            (name.as_str(), value.to_str().unwrap()),
            ("authorization", "Bearer sk")
        );
        config.flavor = ApiFlavor::Azure { api_version: None };
        let (name, value) = credential(&config).await.unwrap().unwrap();
        assert_eq!((name.as_str(), value.to_str().unwrap()), ("api-key", "sk"));
        config.flavor = ApiFlavor::Anthropic;
        let (name, value) = credential(&config).await.unwrap().unwrap();
        assert_eq!(
            (name.as_str(), value.to_str().unwrap()),
            ("x-api-key", "sk")
        );
        config.bearer_token = Some("bt".into());
        config.api_key_command = Some(KeyCommand::new("exit 1"));
        let (name, value) = credential(&config).await.unwrap().unwrap();
        assert_eq!(
            (name.as_str(), value.to_str().unwrap()),
            ("authorization", "Bearer bt")
        );
        config.api_key = Some("bad\nkey".into());
        config.bearer_token = None;
        config.api_key_command = None;
        assert_eq!(
            credential(&config).await.unwrap_err().kind,
            ModelErrorKind::Config
        );
    }
}
