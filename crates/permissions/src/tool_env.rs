//! The environment a tool's process sees: the engine's own, without its secrets.
//!
//! The engine's environment holds the keys and tokens it calls models and services with
//! (`TURNSTILE_API_KEY`, `GH_TOKEN`, ...). A tool process that inherited them would hand them
//! to the model with one `env`, and so to the journal. Every process the engine starts for a
//! tool (a `bash` command and its shells, detached ones included; a hook command; an MCP stdio
//! server) is started with [`for_tools`] in place of the inherited environment, which leaves
//! out:
//!
//! - the variables the engine reads its own credentials from ([`ENGINE_SECRETS`]), also those
//!   not named like a secret (`COPILOT_PROVIDER_HEADERS` may carry an `Authorization` header,
//!   `TURNSTILE_API_KEY_COMMAND` prints a key, `TURNSTILE_STORE_CREDS` names a credentials
//!   file);
//! - every variable named like a secret ([`named_like_secret`]), whoever set it: its last
//!   `_`-separated word is `KEY`, `TOKEN`, `SECRET`, `CREDENTIALS`, `PAT` or `APIKEY`, or it
//!   contains `PASSWORD`, `PASSWD` or `PASSPHRASE` (all case-insensitive).
//!
//! `TURNSTILE_TOOL_ENV_PASSTHROUGH` ([`PASSTHROUGH_VAR`]) names variables to pass anyway,
//! separated by commas or white space, exactly as spelled (`GH_TOKEN,NPM_TOKEN`): the user's
//! choice to let tools use them. An MCP server's configured `env` entries are set on top of
//! the filtered environment by its spawner, so a variable the configuration gives explicitly
//! (`"GH_TOKEN": "${GH_TOKEN}"`) reaches that server.
//!
//! This keeps secrets out of the environment only: a tool can still read a file that holds
//! one (`~/.config/gh/hosts.yml`, a credentials file), or another process's environment where
//! the kernel lets it (`/proc/<pid>/environ` of the same user).

use std::ffi::{OsStr, OsString};

/// The variable naming the ones passed to tools although they are withheld by default.
pub const PASSTHROUGH_VAR: &str = "TURNSTILE_TOOL_ENV_PASSTHROUGH";

/// The variables the engine reads its own credentials from (`docs/config.md`, the providers'
/// and the SDK server's token variables), withheld whatever their names look like.
pub const ENGINE_SECRETS: &[&str] = &[
    "TURNSTILE_API_KEY",
    "TURNSTILE_API_KEY_COMMAND",
    "TURNSTILE_STORE_CREDS",
    "COPILOT_PROVIDER_API_KEY",
    "COPILOT_PROVIDER_BEARER_TOKEN",
    "COPILOT_PROVIDER_HEADERS",
    "COPILOT_SDK_AUTH_TOKEN",
    "COPILOT_CONNECTION_TOKEN",
    "COPILOT_GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
];

/// Last words of a name that make it a secret's (`GH_TOKEN`, `AWS_SECRET_ACCESS_KEY`).
const SECRET_LAST_WORDS: &[&str] = &["KEY", "TOKEN", "SECRET", "CREDENTIALS", "PAT", "APIKEY"];
/// Parts of a name that make it a secret's anywhere (`DB_PASSWORD_FILE`).
const SECRET_PARTS: &[&str] = &["PASSWORD", "PASSWD", "PASSPHRASE"];

/// Whether `name` looks like a secret's name (see the module doc), case-insensitively.
pub fn named_like_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let last_word = upper.rsplit('_').next().unwrap_or_default();
    SECRET_LAST_WORDS.contains(&last_word) || SECRET_PARTS.iter().any(|p| upper.contains(p))
}

/// Whether the variable `name` is kept from tools, given the names passed through.
pub fn withheld(name: &OsStr, passthrough: &[&OsStr]) -> bool {
    if passthrough.contains(&name) {
        return false;
    }
    // A name that is not UTF-8 is judged by its readable part: a secret's suffix survives.
    let name = name.to_string_lossy();
    ENGINE_SECRETS.iter().any(|s| s.eq_ignore_ascii_case(&name)) || named_like_secret(&name)
}

/// The names `TURNSTILE_TOOL_ENV_PASSTHROUGH`'s value lists (commas or white space between).
pub fn passthrough_names(value: &OsStr) -> Vec<&OsStr> {
    // Split on the bytes: a name need not be UTF-8, and both separators are ASCII.
    use std::os::unix::ffi::OsStrExt;
    value
        .as_bytes()
        .split(|b| *b == b',' || b.is_ascii_whitespace())
        .filter(|name| !name.is_empty())
        .map(OsStr::from_bytes)
        .collect()
}

/// `vars` without the ones withheld from tools, `passthrough` being the value of
/// [`PASSTHROUGH_VAR`] (if set).
pub fn filter(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    passthrough: Option<&OsStr>,
) -> Vec<(OsString, OsString)> {
    let passed = passthrough.map(passthrough_names).unwrap_or_default();
    vars.into_iter()
        .filter(|(name, _)| !withheld(name, &passed))
        .collect()
}

/// The environment to start a tool's process with: the engine's own, filtered. Spawners clear
/// the inherited environment and set exactly this (`env_clear().envs(for_tools())`).
pub fn for_tools() -> Vec<(OsString, OsString)> {
    let passthrough = std::env::var_os(PASSTHROUGH_VAR);
    filter(std::env::vars_os(), passthrough.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(kept: &[(OsString, OsString)]) -> Vec<&str> {
        kept.iter().map(|(k, _)| k.to_str().unwrap()).collect()
    }

    #[test]
    fn secrets_by_name_are_withheld_whatever_their_case() {
        for name in [
            "GH_TOKEN",
            "gh_token",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "STRIPE_SECRET",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_DEVOPS_EXT_PAT",
            "SERPAPI_APIKEY",
            "DB_PASSWORD",
            "PGPASSWORD",
            "MYSQL_PASSWD",
            "SSH_KEY_PASSPHRASE",
            "TOKEN",
            "Key",
            "AZURE_OPENAI_API_KEY",
        ] {
            assert!(withheld(OsStr::new(name), &[]), "{name}");
        }
    }

    #[test]
    fn ordinary_names_pass() {
        for name in [
            "PATH",
            "HOME",
            "SSH_AUTH_SOCK",
            "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS",
            "KEYBOARD_LAYOUT",
            "TOKENIZERS_PARALLELISM",
            "MONKEY",
            "PATTERN",
            "LANG",
            "TURNSTILE_MODEL",
        ] {
            assert!(!withheld(OsStr::new(name), &[]), "{name}");
        }
    }

    #[test]
    fn the_engine_s_own_credentials_are_withheld_whatever_they_are_named() {
        for name in ENGINE_SECRETS {
            assert!(withheld(OsStr::new(name), &[]), "{name}");
        }
        assert!(!named_like_secret("COPILOT_PROVIDER_HEADERS"));
        assert!(!named_like_secret("TURNSTILE_API_KEY_COMMAND"));
        assert!(!named_like_secret("TURNSTILE_STORE_CREDS"));
    }

    #[test]
    fn named_variables_pass_through_exactly_as_spelled() {
        let env = vars(&[
            ("PATH", "/bin"),
            ("GH_TOKEN", "t1"),
            ("NPM_TOKEN", "t2"),
            ("OPENAI_API_KEY", "k"),
            ("DB_PASSWORD", "p"),
        ]);
        let kept = filter(
            env.clone(),
            Some(OsStr::new(" GH_TOKEN,db_password\tNPM_TOKEN ,")),
        );
        assert_eq!(names(&kept), ["PATH", "GH_TOKEN", "NPM_TOKEN"]);
        assert_eq!(names(&filter(env.clone(), None)), ["PATH"]);
        assert_eq!(names(&filter(env, Some(OsStr::new("")))), ["PATH"]);
    }

    #[test]
    fn values_travel_unchanged() {
        let kept = filter(vars(&[("A", "x=y z"), ("B_TOKEN", "s")]), None);
        assert_eq!(kept, vars(&[("A", "x=y z")]));
    }

    #[test]
    fn a_name_that_is_not_utf8_is_judged_by_what_can_be_read() {
        use std::os::unix::ffi::OsStrExt;
        let odd = OsStr::from_bytes(b"\xffX_TOKEN");
        assert!(withheld(odd, &[]));
        assert!(!withheld(odd, &[odd]));
        assert_eq!(
            passthrough_names(OsStr::from_bytes(b"A,\xffX_TOKEN")),
            [OsStr::new("A"), odd]
        );
    }
}
