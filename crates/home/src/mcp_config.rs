//! The user's MCP configuration in the Copilot home, edited as the Copilot CLI edits it
//! (`mcp.config.*`): the servers in `mcp-config.json` (`{"mcpServers": {NAME: CONFIG}}`) and
//! the names disabled for new sessions in `settings.json` (`disabledMcpServers`). Both runtimes
//! sharing a home see the same servers.
//!
//! A server's entry is written in the CLI's normal form: `tools` first (`["*"]` when absent),
//! then `timeout`, `type`, `command` and `args` (`[]` when absent), `cwd`, `env` for a local
//! server; `timeout`, `type`, `url`, `headers` for a remote one; keys turnstile does not know
//! are kept after those. Files are rewritten whole by [`crate::atomic_write`] (a symbolic link
//! is followed first, so a linked dotfile stays a link), under one process-wide lock.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use crate::json_type::json_type_name;
use crate::locate::home_of;
use crate::settings;

/// The servers' file, as the Copilot CLI names it.
pub const MCP_CONFIG_FILE: &str = "mcp-config.json";
/// The settings file holding the disabled names.
pub use crate::settings::SETTINGS_FILE;
/// The settings key of the names disabled for new sessions.
pub const DISABLED_KEY: &str = "disabledMcpServers";

/// Larger files are refused rather than read into memory.
const MAX_BYTES: u64 = 8 << 20;

/// Serializes this process's read-modify-write of `mcp-config.json` (`settings.json` is
/// edited under [`settings::document::edit_lock`]).
static WRITES: Mutex<()> = Mutex::new(());

/// Why the configuration could not be read, changed or written. The texts are the Copilot
/// CLI's, so that a client shows the same message with either runtime.
#[derive(Debug, thiserror::Error)]
pub enum UserConfigError {
    /// `mcp-config.json` is unreadable or not the servers' shape.
    #[error("Failed to read configuration from {}: Error: {why}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What is wrong, as `field: problem`.
        why: String,
    },
    /// A server's new configuration is not valid, or the file could not be written.
    #[error("Failed to write configuration to {}: {why}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What is wrong, as `field: problem`, or the I/O error.
        why: String,
    },
    /// `settings.json` is unreadable or not an object.
    #[error("Failed to read settings from {}: {why}", path.display())]
    Settings {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// An empty server name.
    #[error("MCP server name cannot be empty")]
    EmptyName,
    /// `add` of a name the file has.
    #[error("MCP server '{0}' already exists. Use 'mcp.config.update' to modify it.")]
    Exists(String),
    /// `update` or `remove` of a name the file lacks.
    #[error("MCP server '{0}' not found.")]
    NotFound(String),
}

/// The MCP configuration files of one Copilot home.
#[derive(Debug, Clone)]
pub struct UserMcpConfig {
    servers: PathBuf,
    settings: PathBuf,
}

impl UserMcpConfig {
    /// The files of the Copilot home `home`.
    pub fn in_home(home: &Path) -> Self {
        UserMcpConfig {
            servers: home.join(MCP_CONFIG_FILE),
            settings: home.join(SETTINGS_FILE),
        }
    }

    /// The files of the home holding `state_dir` (its `session-state` directory).
    pub fn beside(state_dir: &Path) -> Self {
        Self::in_home(home_of(state_dir))
    }

    /// `{"servers": {NAME: CONFIG}}` as the CLI lists them (a local server without `type`).
    pub fn list(&self) -> Result<Value, UserConfigError> {
        let servers = self.read_servers()?;
        let listed: Map<String, Value> = servers
            .into_iter()
            .map(|(name, mut entry)| {
                if let Value::Object(fields) = &mut entry
                    && is_local(fields.get("type"))
                {
                    fields.shift_remove("type");
                }
                (name, entry)
            })
            .collect();
        Ok(json!({ "servers": listed }))
    }

    /// Adds a server; a name the file has is refused. Without a configuration nothing
    /// changes (as with the CLI).
    pub fn add(&self, name: &str, config: Option<&Value>) -> Result<(), UserConfigError> {
        check_name(name)?;
        let Some(config) = config else {
            return Ok(());
        };
        let _guard = WRITES.lock().unwrap_or_else(|e| e.into_inner());
        let mut servers = self.read_servers()?;
        if servers.contains_key(name) {
            return Err(UserConfigError::Exists(name.to_owned()));
        }
        servers.insert(name.to_owned(), self.normal_for_write(name, config)?);
        self.write_servers(servers)
    }

    /// Replaces a server's configuration; a name the file lacks is refused.
    pub fn update(&self, name: &str, config: Option<&Value>) -> Result<(), UserConfigError> {
        check_name(name)?;
        let _guard = WRITES.lock().unwrap_or_else(|e| e.into_inner());
        let mut servers = self.read_servers()?;
        let Some(slot) = servers.get_mut(name) else {
            return Err(UserConfigError::NotFound(name.to_owned()));
        };
        let Some(config) = config else {
            return Ok(());
        };
        *slot = self.normal_for_write(name, config)?;
        self.write_servers(servers)
    }

    /// Removes a server (its name stays disabled if it was, as with the CLI).
    pub fn remove(&self, name: &str) -> Result<(), UserConfigError> {
        check_name(name)?;
        let _guard = WRITES.lock().unwrap_or_else(|e| e.into_inner());
        let mut servers = self.read_servers()?;
        if servers.shift_remove(name).is_none() {
            return Err(UserConfigError::NotFound(name.to_owned()));
        }
        self.write_servers(servers)
    }

    /// The names disabled for new sessions.
    pub fn disabled(&self) -> Result<Vec<String>, UserConfigError> {
        let settings = self.read_settings()?;
        Ok(disabled_of(&settings))
    }

    /// Disables `names` for new sessions (names the file lacks may be disabled too).
    pub fn disable(&self, names: &[String]) -> Result<(), UserConfigError> {
        self.change_disabled(|list| {
            for name in names {
                if !list.contains(name) {
                    list.push(name.clone());
                }
            }
        })
    }

    /// Enables `names` again for new sessions.
    pub fn enable(&self, names: &[String]) -> Result<(), UserConfigError> {
        self.change_disabled(|list| list.retain(|n| !names.contains(n)))
    }

    fn change_disabled(&self, edit: impl FnOnce(&mut Vec<String>)) -> Result<(), UserConfigError> {
        let _guard = settings::document::edit_lock();
        let mut settings = self.read_settings()?;
        let before = disabled_of(&settings);
        let mut list = before.clone();
        edit(&mut list);
        if list == before {
            return Ok(());
        }
        settings.insert(DISABLED_KEY.to_owned(), json!(list));
        settings::document::write_object(&self.settings, &settings, "").map_err(|e| {
            UserConfigError::Settings {
                path: self.settings.clone(),
                why: e.why(),
            }
        })
    }

    /// The servers of `mcp-config.json` in the CLI's normal form (none when there is no file);
    /// a damaged file is refused in the CLI's words.
    pub fn servers(&self) -> Result<Map<String, Value>, UserConfigError> {
        self.read_servers()
    }

    fn read_servers(&self) -> Result<Map<String, Value>, UserConfigError> {
        let bad = |why: String| UserConfigError::Read {
            path: self.servers.clone(),
            why,
        };
        let Some(text) = read_bounded(&self.servers).map_err(bad)? else {
            return Ok(Map::new());
        };
        // The CLI reads a file that is not JSON as one without `mcpServers`; the parser's
        // position is added so that the user can find the damage.
        let doc: Value = match serde_json::from_str(&text) {
            Ok(doc) => doc,
            Err(e) => {
                return Err(bad(format!(
                    "mcpServers: Required (the file is not JSON: line {} column {})",
                    e.line(),
                    e.column()
                )));
            }
        };
        let servers = match doc.get("mcpServers") {
            None | Some(Value::Null) => return Err(bad("mcpServers: Required".into())),
            Some(Value::Object(servers)) => servers,
            Some(_) => return Err(bad("mcpServers: Expected object".into())),
        };
        servers
            .iter()
            .map(|(name, entry)| Ok((name.clone(), normal(name, entry).map_err(bad)?)))
            .collect()
    }

    fn normal_for_write(&self, name: &str, config: &Value) -> Result<Value, UserConfigError> {
        normal(name, config).map_err(|why| UserConfigError::Write {
            path: self.servers.clone(),
            why,
        })
    }

    fn write_servers(&self, servers: Map<String, Value>) -> Result<(), UserConfigError> {
        write_atomic(&self.servers, &json!({ "mcpServers": servers })).map_err(|e| {
            UserConfigError::Write {
                path: self.servers.clone(),
                why: e.to_string(),
            }
        })
    }

    /// `settings.json`'s object, read by the settings files' one reader.
    fn read_settings(&self) -> Result<Map<String, Value>, UserConfigError> {
        settings::document::read_object(&self.settings)
            .map(Option::unwrap_or_default)
            .map_err(|e| UserConfigError::Settings {
                path: self.settings.clone(),
                why: e.why(),
            })
    }
}

fn check_name(name: &str) -> Result<(), UserConfigError> {
    if name.is_empty() {
        return Err(UserConfigError::EmptyName);
    }
    Ok(())
}

fn disabled_of(settings: &Map<String, Value>) -> Vec<String> {
    settings
        .get(DISABLED_KEY)
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn is_local(kind: Option<&Value>) -> bool {
    matches!(kind.and_then(Value::as_str), None | Some("local" | "stdio"))
}

/// A server entry in the CLI's normal form, or `mcpServers.NAME.FIELD: problem`.
fn normal(name: &str, entry: &Value) -> Result<Value, String> {
    let at = |field: &str, problem: String| format!("mcpServers.{name}.{field}: {problem}");
    let Value::Object(fields) = entry else {
        return Err(format!(
            "mcpServers.{name}: Expected object, received {}",
            json_type_name(entry)
        ));
    };
    let local = match fields.get("type") {
        None => true,
        Some(Value::String(t)) if matches!(t.as_str(), "local" | "stdio") => true,
        Some(Value::String(t)) if matches!(t.as_str(), "http" | "sse") => false,
        Some(_) => return Err(at("type", "Invalid literal value".into())),
    };
    let mut out = Map::new();
    let tools = fields.get("tools").cloned().unwrap_or_else(|| json!(["*"]));
    expect(&tools, "array", |p| at("tools", p))?;
    out.insert("tools".into(), tools);
    let order: &[(&str, &str, bool)] = if local {
        &[
            ("timeout", "number", false),
            ("type", "string", false),
            ("command", "string", true),
            ("args", "array", false),
            ("cwd", "string", false),
            ("env", "object", false),
        ]
    } else {
        &[
            ("timeout", "number", false),
            ("type", "string", false),
            ("url", "string", true),
            ("headers", "object", false),
        ]
    };
    for (key, want, required) in order {
        match fields.get(*key) {
            Some(value) => {
                expect(value, want, |p| at(key, p))?;
                out.insert((*key).into(), value.clone());
            }
            None if *required => return Err(at(key, "Required".into())),
            None if *key == "args" => {
                out.insert("args".into(), json!([]));
            }
            None => {}
        }
    }
    for (key, value) in fields {
        if !out.contains_key(key) {
            out.insert(key.clone(), value.clone());
        }
    }
    Ok(Value::Object(out))
}

fn expect(value: &Value, want: &str, at: impl Fn(String) -> String) -> Result<(), String> {
    let got = json_type_name(value);
    if got == want {
        Ok(())
    } else {
        Err(at(format!("Expected {want}, received {got}")))
    }
}

/// The text of `path`, `None` when it does not exist; a file over [`MAX_BYTES`] is refused.
fn read_bounded(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "larger than {MAX_BYTES} bytes; not read (fix or remove it)"
        ));
    }
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Writes `doc` as the CLI does (two-space JSON and a newline), replacing the file by
/// [`atomic_write`](crate::atomic_write); a symbolic link is followed to its file, whose
/// directory is made if missing.
fn write_atomic(path: &Path, doc: &Value) -> std::io::Result<()> {
    let target = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = serde_json::to_string_pretty(doc).map_err(std::io::Error::other)?;
    text.push('\n');
    crate::atomic_write(&target, text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> (tempfile::TempDir, UserMcpConfig) {
        let home = tempfile::tempdir().unwrap();
        let config = UserMcpConfig::in_home(home.path());
        (home, config)
    }

    fn file(home: &tempfile::TempDir, name: &str) -> String {
        std::fs::read_to_string(home.path().join(name)).unwrap()
    }

    #[test]
    fn add_writes_the_cli_normal_form_and_list_hides_a_local_type() {
        let (home, c) = config();
        assert_eq!(c.list().unwrap(), json!({"servers": {}}));
        c.add("x", Some(&json!({"command": "node"}))).unwrap();
        c.add(
            "y",
            Some(&json!({"env": {"A": "1"}, "command": "n", "type": "stdio", "timeout": 5, "cwd": "/tmp", "tools": []})),
        )
        .unwrap();
        c.add(
            "h",
            Some(&json!({"url": "http://127.0.0.1:9/mcp", "type": "http"})),
        )
        .unwrap();
        assert_eq!(
            file(&home, MCP_CONFIG_FILE),
            "{\n  \"mcpServers\": {\n    \"x\": {\n      \"tools\": [\n        \"*\"\n      ],\n      \"command\": \"node\",\n      \"args\": []\n    },\n    \"y\": {\n      \"tools\": [],\n      \"timeout\": 5,\n      \"type\": \"stdio\",\n      \"command\": \"n\",\n      \"args\": [],\n      \"cwd\": \"/tmp\",\n      \"env\": {\n        \"A\": \"1\"\n      }\n    },\n    \"h\": {\n      \"tools\": [\n        \"*\"\n      ],\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:9/mcp\"\n    }\n  }\n}\n"
        );
        let listed = c.list().unwrap();
        assert_eq!(
            serde_json::to_string(&listed["servers"]["y"]).unwrap(),
            r#"{"tools":[],"timeout":5,"command":"n","args":[],"cwd":"/tmp","env":{"A":"1"}}"#
        );
        assert_eq!(listed["servers"]["h"]["type"], "http");
    }

    #[test]
    fn add_update_remove_refuse_as_the_cli() {
        let (_home, c) = config();
        let cfg = json!({"command": "node"});
        assert!(matches!(
            c.add("", Some(&cfg)),
            Err(UserConfigError::EmptyName)
        ));
        c.add("a", Some(&cfg)).unwrap();
        let exists = c.add("a", Some(&cfg)).unwrap_err();
        assert_eq!(
            exists.to_string(),
            "MCP server 'a' already exists. Use 'mcp.config.update' to modify it."
        );
        assert_eq!(
            c.update("zz", Some(&cfg)).unwrap_err().to_string(),
            "MCP server 'zz' not found."
        );
        assert_eq!(
            c.remove("zz").unwrap_err().to_string(),
            "MCP server 'zz' not found."
        );
        c.update("a", Some(&json!({"command": "n2", "tools": ["t"]})))
            .unwrap();
        assert_eq!(c.list().unwrap()["servers"]["a"]["command"], "n2");
        c.remove("a").unwrap();
        assert_eq!(c.list().unwrap(), json!({"servers": {}}));
        // Without a configuration, add changes nothing.
        c.add("b", None).unwrap();
        assert_eq!(c.list().unwrap(), json!({"servers": {}}));
    }

    #[test]
    fn an_invalid_configuration_is_named_by_field_and_not_written() {
        let (home, c) = config();
        c.add("ok", Some(&json!({"command": "node"}))).unwrap();
        let before = file(&home, MCP_CONFIG_FILE);
        let cases = [
            (
                json!({"type": "weird", "command": "n"}),
                "mcpServers.z.type: Invalid literal value",
            ),
            (json!({"type": "local"}), "mcpServers.z.command: Required"),
            (json!({"type": "sse"}), "mcpServers.z.url: Required"),
            (
                json!({"command": 3}),
                "mcpServers.z.command: Expected string, received number",
            ),
            (
                json!({"command": "n", "args": "a b"}),
                "mcpServers.z.args: Expected array, received string",
            ),
            (
                json!("node"),
                "mcpServers.z: Expected object, received string",
            ),
        ];
        for (cfg, why) in cases {
            let err = c.add("z", Some(&cfg)).unwrap_err();
            let path = home.path().join(MCP_CONFIG_FILE);
            assert_eq!(
                err.to_string(),
                format!("Failed to write configuration to {}: {why}", path.display())
            );
        }
        assert_eq!(file(&home, MCP_CONFIG_FILE), before);
    }

    #[test]
    fn a_damaged_servers_file_is_named_and_left_alone() {
        let (home, c) = config();
        let path = home.path().join(MCP_CONFIG_FILE);
        for (text, why) in [
            (
                "{ not json",
                "mcpServers: Required (the file is not JSON: line 1 column 3)",
            ),
            ("{\"other\": 1}", "mcpServers: Required"),
            ("{\"mcpServers\": [1, 2]}", "mcpServers: Expected object"),
            (
                "{\"mcpServers\": {\"n\": {\"type\": \"local\"}}}",
                "mcpServers.n.command: Required",
            ),
        ] {
            std::fs::write(&path, text).unwrap();
            let expected = format!(
                "Failed to read configuration from {}: Error: {why}",
                path.display()
            );
            assert_eq!(c.list().unwrap_err().to_string(), expected);
            assert_eq!(
                c.add("t", Some(&json!({"command": "y"})))
                    .unwrap_err()
                    .to_string(),
                expected
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }

    #[test]
    fn an_oversized_file_is_refused_without_reading_it() {
        let (home, c) = config();
        let path = home.path().join(MCP_CONFIG_FILE);
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_BYTES + 1).unwrap();
        let err = c.list().unwrap_err().to_string();
        assert!(err.contains("larger than"), "{err}");
    }

    #[test]
    fn disable_and_enable_edit_the_settings_keeping_other_keys() {
        let (home, c) = config();
        // Enabling what is not disabled creates no file.
        c.enable(&["never".into()]).unwrap();
        assert!(!home.path().join(SETTINGS_FILE).exists());
        std::fs::write(
            home.path().join(SETTINGS_FILE),
            "{\n  // a comment\n  \"model\": \"gpt-5\",\n  \"disabledMcpServers\": [\"q\"]\n}\n",
        )
        .unwrap();
        c.disable(&["r".into(), "r".into(), "q".into()]).unwrap();
        assert_eq!(
            file(&home, SETTINGS_FILE),
            "{\n  \"model\": \"gpt-5\",\n  \"disabledMcpServers\": [\n    \"q\",\n    \"r\"\n  ]\n}\n"
        );
        c.enable(&["q".into()]).unwrap();
        assert_eq!(c.disabled().unwrap(), vec!["r".to_string()]);
        // Removing a server keeps its name disabled, as the CLI does.
        c.add("r", Some(&json!({"command": "x"}))).unwrap();
        c.remove("r").unwrap();
        assert_eq!(c.disabled().unwrap(), vec!["r".to_string()]);
    }

    #[test]
    fn a_damaged_settings_file_is_not_overwritten() {
        let (home, c) = config();
        let path = home.path().join(SETTINGS_FILE);
        std::fs::write(&path, "[1]").unwrap();
        let err = c.disable(&["a".into()]).unwrap_err().to_string();
        assert!(err.starts_with("Failed to read settings from"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[1]");
    }

    #[test]
    fn a_linked_file_stays_a_link() {
        let (home, c) = config();
        let real = home.path().join("dotfiles");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("mcp.json"), "{\"mcpServers\": {}}").unwrap();
        std::os::unix::fs::symlink(real.join("mcp.json"), home.path().join(MCP_CONFIG_FILE))
            .unwrap();
        c.add("a", Some(&json!({"command": "x"}))).unwrap();
        let link = std::fs::symlink_metadata(home.path().join(MCP_CONFIG_FILE)).unwrap();
        assert!(link.file_type().is_symlink());
        assert!(
            std::fs::read_to_string(real.join("mcp.json"))
                .unwrap()
                .contains("\"a\"")
        );
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(&real).unwrap().collect();
        assert_eq!(left.len(), 1);
    }
}
