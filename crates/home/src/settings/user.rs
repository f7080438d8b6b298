//! The user settings as `user.settings.get` and `user.settings.set` see them, as the Copilot
//! CLI keeps them: written to `settings.json`, read from `settings.json` overlaid with the
//! legacy `config.json` (where a key of both, `config.json` wins: such a key is *shadowed*).
//!
//! `get` lists every known setting (`catalog.rs`) with its effective value, its default
//! and whether it is at the default (not set in either file); a value of the wrong shape in a
//! file reads as not set, and a file that is not a JSON object reads as empty, as in the CLI.
//! `set` checks every new value before it writes any, replaces each key given (a key of value
//! `null` is removed; a key the CLI does not know is written as given), and refuses to replace
//! a `settings.json` it cannot read.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::catalog::{KNOWN, check, known};
use super::document::{self, DocumentError};
use super::{CONFIG_FILE, SETTINGS_FILE};

/// Why `user.settings.set` wrote nothing. The texts are the Copilot CLI's.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// A value of the wrong shape for its key.
    #[error("user.settings.set: invalid value for '{key}' ({issue})")]
    Invalid {
        /// The key.
        key: String,
        /// What is wrong, the field's path first.
        issue: String,
    },
    /// `settings.json` exists but is not a JSON object.
    #[error(
        "user.settings.set: refusing to overwrite settings.json (the existing file could not be parsed)"
    )]
    Unparseable,
    /// The file could not be read or written.
    #[error("user.settings.set: {0}")]
    File(DocumentError),
}

/// The settings files of one Copilot home.
#[derive(Debug, Clone)]
pub struct UserSettings {
    settings: PathBuf,
    config: PathBuf,
}

impl UserSettings {
    /// The files of the Copilot home `home`.
    pub fn in_home(home: &Path) -> Self {
        UserSettings {
            settings: home.join(SETTINGS_FILE),
            config: home.join(CONFIG_FILE),
        }
    }

    /// `{KEY: {value, default, isDefault}}` for every known setting, in the CLI's order.
    pub fn list(&self) -> Map<String, Value> {
        let effective = self.effective();
        KNOWN
            .iter()
            .map(|known| {
                let default = known.default_value();
                let set = effective
                    .get(known.key)
                    .filter(|v| check(known.key, known.kind, v).is_ok());
                let entry = json!({
                    "value": set.cloned().unwrap_or_else(|| default.clone()),
                    "default": default,
                    "isDefault": set.is_none(),
                });
                (known.key.to_owned(), entry)
            })
            .collect()
    }

    /// The effective value of `key` (set in either file, of the right shape).
    pub fn value(&self, key: &str) -> Option<Value> {
        let value = self.effective().remove(key)?;
        match known(key) {
            Some(k) if check(key, k.kind, &value).is_err() => None,
            _ => Some(value),
        }
    }

    /// Writes `changes` to `settings.json` and answers the keys a `config.json` entry shadows
    /// (written all the same; they take effect once the legacy entry is removed).
    pub fn set(&self, changes: &Map<String, Value>) -> Result<Vec<String>, SetError> {
        for (key, value) in changes {
            if value.is_null() {
                continue;
            }
            if let Some(k) = known(key) {
                check(key, k.kind, value).map_err(|issue| SetError::Invalid {
                    key: key.clone(),
                    issue,
                })?;
            }
        }
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        {
            let _edit = document::edit_lock();
            let existing = match document::read_object(&self.settings) {
                Ok(object) => object,
                Err(DocumentError::NotAnObject { .. }) => return Err(SetError::Unparseable),
                Err(e) => return Err(SetError::File(e)),
            };
            let exists = existing.is_some();
            let mut object = existing.unwrap_or_default();
            let before = object.clone();
            for (key, value) in changes {
                if value.is_null() {
                    // `shift_remove` keeps the other keys where they were.
                    object.shift_remove(key);
                } else {
                    object.insert(key.clone(), value.clone());
                }
            }
            if exists || object != before {
                document::write_object(&self.settings, &object, "").map_err(SetError::File)?;
            }
        }
        let legacy = self.legacy();
        Ok(changes
            .keys()
            .filter(|key| legacy.contains_key(*key))
            .cloned()
            .collect())
    }

    /// `settings.json` overlaid with `config.json`.
    fn effective(&self) -> Map<String, Value> {
        let mut effective = readable(&self.settings);
        for (key, value) in self.legacy() {
            effective.insert(key, value);
        }
        effective.retain(|_, v| !v.is_null());
        effective
    }

    /// `config.json`'s keys (the legacy settings among them).
    fn legacy(&self) -> Map<String, Value> {
        readable(&self.config)
    }
}

/// A settings file's object. One that cannot be read reads as empty, as in the CLI: the
/// runtime's own reader (`settings::read`, at start) is what names a damaged file.
fn readable(path: &Path) -> Map<String, Value> {
    document::read_object(path)
        .ok()
        .flatten()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> (tempfile::TempDir, UserSettings) {
        let dir = tempfile::tempdir().unwrap();
        let settings = UserSettings::in_home(dir.path());
        (dir, settings)
    }

    fn text(dir: &tempfile::TempDir, name: &str) -> String {
        std::fs::read_to_string(dir.path().join(name)).unwrap()
    }

    #[test]
    fn an_empty_home_lists_every_setting_at_its_default() {
        let (_dir, s) = home();
        let listed = s.list();
        assert_eq!(listed.len(), KNOWN.len());
        assert_eq!(listed.keys().next().map(String::as_str), Some("mouse"));
        assert_eq!(
            listed["beep"],
            json!({"value": false, "default": false, "isDefault": true})
        );
        assert_eq!(
            listed["model"],
            json!({"value": null, "default": null, "isDefault": true})
        );
    }

    #[test]
    fn set_writes_in_place_null_removes_and_config_json_shadows() {
        let (dir, s) = home();
        std::fs::write(
            dir.path().join(SETTINGS_FILE),
            "// mine\n{\"theme\": \"x\", \"beep\": true}",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            format!("{}{{\"mouse\": false}}", document::CONFIG_HEADER),
        )
        .unwrap();
        let changes = json!({"beep": false, "mouse": true, "unknownKey": 5, "theme": null});
        let shadowed = s.set(changes.as_object().unwrap()).unwrap();
        assert_eq!(shadowed, vec!["mouse".to_string()]);
        assert_eq!(
            text(&dir, SETTINGS_FILE),
            "{\n  \"beep\": false,\n  \"mouse\": true,\n  \"unknownKey\": 5\n}\n"
        );
        let listed = s.list();
        assert_eq!(
            listed["beep"],
            json!({"value": false, "default": false, "isDefault": false})
        );
        // config.json wins.
        assert_eq!(listed["mouse"]["value"], json!(false));
        assert!(!listed.contains_key("unknownKey"));
    }

    #[test]
    fn a_wrong_value_writes_nothing_and_is_named_as_the_cli_names_it() {
        let (dir, s) = home();
        for (changes, words) in [
            (
                json!({"beep": true, "copyOnSelect": "yes"}),
                "user.settings.set: invalid value for 'copyOnSelect' (copyOnSelect: Expected boolean, received string)",
            ),
            (
                json!({"keepAlive": "x"}),
                "user.settings.set: invalid value for 'keepAlive' (keepAlive: Invalid enum value. Expected 'on' | 'off' | 'busy', received 'x')",
            ),
            (
                json!({"statusLine": {}}),
                "user.settings.set: invalid value for 'statusLine' (statusLine.command: Required)",
            ),
        ] {
            let e = s.set(changes.as_object().unwrap()).unwrap_err();
            assert_eq!(e.to_string(), words);
        }
        assert!(!dir.path().join(SETTINGS_FILE).exists());
    }

    #[test]
    fn a_damaged_settings_file_is_not_replaced_and_reads_as_empty() {
        let (dir, s) = home();
        std::fs::write(dir.path().join(SETTINGS_FILE), "{ bad").unwrap();
        let e = s
            .set(json!({"beep": true}).as_object().unwrap())
            .unwrap_err();
        assert!(matches!(e, SetError::Unparseable), "{e}");
        assert_eq!(text(&dir, SETTINGS_FILE), "{ bad");
        assert_eq!(s.list()["beep"]["isDefault"], json!(true));
    }
}
