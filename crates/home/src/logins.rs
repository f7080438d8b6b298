//! The GitHub logins the Copilot CLI records in the home's `config.json`, as its
//! `account.login`/`account.logout` record them: `lastLoggedInUser` (`{host, login}`, the one
//! signed in last), `loggedInUsers` (each `{host, login}` once, in the order they signed in),
//! and, only when the user asked for plaintext storage (`storeTokenPlaintext`),
//! `copilotTokens` (`{"HOST:LOGIN": TOKEN}`). Without that setting no token is written
//! anywhere: there is no system keychain here, so the token lives in the runtime's memory
//! only. The file's other keys are kept in place; it is written through
//! [`crate::settings::document`], owner-only.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::settings::CONFIG_FILE;
use crate::settings::document::{self, CONFIG_HEADER, DocumentError};

const LAST: &str = "lastLoggedInUser";
const USERS: &str = "loggedInUsers";
const TOKENS: &str = "copilotTokens";

/// The logins recorded in one Copilot home.
#[derive(Debug, Clone)]
pub struct StoredLogins {
    config: PathBuf,
}

impl StoredLogins {
    /// The `config.json` of the Copilot home `home`.
    pub fn in_home(home: &Path) -> Self {
        StoredLogins {
            config: home.join(CONFIG_FILE),
        }
    }

    /// Records that `login` at `host` signed in, with `token` when it is to be stored in
    /// plaintext.
    pub fn record(
        &self,
        host: &str,
        login: &str,
        token: Option<&str>,
    ) -> Result<(), DocumentError> {
        self.edit(|object| {
            let who = json!({"host": host, "login": login});
            object.insert(LAST.into(), who.clone());
            let users = object.entry(USERS).or_insert_with(|| json!([]));
            if !users.is_array() {
                *users = json!([]);
            }
            if let Some(list) = users.as_array_mut()
                && !list.contains(&who)
            {
                list.push(who);
            }
            if let Some(token) = token {
                let tokens = object.entry(TOKENS).or_insert_with(|| json!({}));
                if !tokens.is_object() {
                    *tokens = json!({});
                }
                if let Some(map) = tokens.as_object_mut() {
                    map.insert(format!("{host}:{login}"), json!(token));
                }
            }
        })
    }

    /// Forgets `login` at `host`: its entry, its stored token, and `lastLoggedInUser` when
    /// it was that login. A file that never named it is left as it is.
    pub fn forget(&self, host: &str, login: &str) -> Result<(), DocumentError> {
        let who = json!({"host": host, "login": login});
        let key = format!("{host}:{login}");
        let _edit = document::edit_lock();
        let Some(mut object) = document::read_object(&self.config)? else {
            return Ok(());
        };
        let before = object.clone();
        if let Some(list) = object.get_mut(USERS).and_then(Value::as_array_mut) {
            list.retain(|u| *u != who);
        }
        if let Some(map) = object.get_mut(TOKENS).and_then(Value::as_object_mut) {
            map.shift_remove(&key);
        }
        if object.get(LAST) == Some(&who) {
            object.shift_remove(LAST);
        }
        if object != before {
            document::write_object(&self.config, &object, CONFIG_HEADER)?;
        }
        Ok(())
    }

    fn edit(&self, change: impl FnOnce(&mut Map<String, Value>)) -> Result<(), DocumentError> {
        let _edit = document::edit_lock();
        let mut object = document::read_object(&self.config)?.unwrap_or_default();
        change(&mut object);
        document::write_object(&self.config, &object, CONFIG_HEADER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(dir: &tempfile::TempDir) -> String {
        std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap()
    }

    #[test]
    fn recorded_and_forgotten_as_the_cli_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            format!("{CONFIG_HEADER}{{\n  \"firstLaunchAt\": \"t\"\n}}\n"),
        )
        .unwrap();
        let logins = StoredLogins::in_home(dir.path());
        logins.record("https://github.com", "a", None).unwrap();
        logins.record("https://github.com", "b", None).unwrap();
        logins.record("https://github.com", "a", None).unwrap();
        assert_eq!(
            text(&dir),
            format!(
                "{CONFIG_HEADER}{{\n  \"firstLaunchAt\": \"t\",\n  \"lastLoggedInUser\": {{\n    \"host\": \"https://github.com\",\n    \"login\": \"a\"\n  }},\n  \"loggedInUsers\": [\n    {{\n      \"host\": \"https://github.com\",\n      \"login\": \"a\"\n    }},\n    {{\n      \"host\": \"https://github.com\",\n      \"login\": \"b\"\n    }}\n  ]\n}}\n"
            )
        );
        logins.forget("https://github.com", "a").unwrap();
        logins.forget("https://github.com", "b").unwrap();
        assert_eq!(
            text(&dir),
            format!(
                "{CONFIG_HEADER}{{\n  \"firstLaunchAt\": \"t\",\n  \"loggedInUsers\": []\n}}\n"
            )
        );
    }

    #[test]
    fn a_token_is_written_only_when_asked_and_removed_with_its_login() {
        let dir = tempfile::tempdir().unwrap();
        let logins = StoredLogins::in_home(dir.path());
        logins.record("https://github.com", "a", None).unwrap();
        assert!(!text(&dir).contains("copilotTokens"));
        logins
            .record("https://github.com", "a", Some("tok-1"))
            .unwrap();
        assert!(text(&dir).contains("\"https://github.com:a\": \"tok-1\""));
        logins.forget("https://github.com", "a").unwrap();
        assert!(!text(&dir).contains("tok-1"));
    }
}
