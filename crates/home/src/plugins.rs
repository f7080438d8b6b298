//! Plugin directories as the Copilot CLI reads them (the SDK's `pluginDirectories`): a
//! directory is a plugin when it holds a manifest, `plugin.json`, at its root or in `.plugin/`,
//! `.github/plugin/` or `.claude-plugin/` (the first found, in that order). The manifest names
//! the plugin (`name`, required) and may give its `version` and MCP servers (`mcpServers`: the
//! servers' object, or the path of a file holding `{"mcpServers": {...}}`, relative to the
//! plugin); a `.mcp.json` at the plugin's root, when there is one, is its servers instead.
//!
//! The servers come back as the configuration object the SDK's `mcpServers` takes, with the
//! plugin root variables (`${CLAUDE_PLUGIN_ROOT}`, `${COPILOT_PLUGIN_ROOT}`, `${PLUGIN_ROOT}`)
//! replaced by the plugin's directory in every string. A directory that is not a usable plugin
//! is a warning naming it; the others are read.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Where a plugin's manifest is looked for, in order (relative to the plugin).
pub const MANIFEST_PLACES: [&str; 4] = [
    "plugin.json",
    ".plugin/plugin.json",
    ".github/plugin/plugin.json",
    ".claude-plugin/plugin.json",
];

/// The servers' file at a plugin's root, which the runtime prefers to the manifest's field.
pub const MCP_FILE: &str = ".mcp.json";

/// The most plugin directories one session reads.
pub const MAX_PLUGIN_DIRS: usize = 64;

/// The largest manifest or servers' file read; a bigger one is a warning.
pub const MAX_PLUGIN_FILE_BYTES: u64 = 1 << 20;

/// The variables a plugin's server configuration may use for its own directory.
const ROOT_VARIABLES: [&str; 3] = [
    "${CLAUDE_PLUGIN_ROOT}",
    "${COPILOT_PLUGIN_ROOT}",
    "${PLUGIN_ROOT}",
];

/// One plugin read from its directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Plugin {
    /// The manifest's `name`.
    pub name: String,
    /// The manifest's `version`.
    pub version: Option<String>,
    /// The plugin's directory.
    pub root: PathBuf,
    /// Its MCP servers (`{NAME: CONFIG}`, root variables replaced); empty when it has none.
    pub mcp_servers: serde_json::Map<String, Value>,
}

/// A plugin directory that was not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("plugin directory {} not loaded: {reason}", path.display())]
pub struct PluginWarning {
    /// The directory (or the file in it) at fault.
    pub path: PathBuf,
    /// What is wrong.
    pub reason: String,
}

/// Reads the plugins of `dirs` (relative ones are `cwd`'s), in order; beyond
/// [`MAX_PLUGIN_DIRS`] the rest are warnings.
pub fn read_plugin_dirs(dirs: &[PathBuf], cwd: &Path) -> (Vec<Plugin>, Vec<PluginWarning>) {
    let mut plugins = Vec::new();
    let mut warnings = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let root = cwd.join(dir);
        if i >= MAX_PLUGIN_DIRS {
            warnings.push(PluginWarning {
                path: root,
                reason: format!("a session reads at most {MAX_PLUGIN_DIRS} plugin directories"),
            });
            continue;
        }
        match read_plugin(&root) {
            Ok(plugin) => plugins.push(plugin),
            Err(reason) => warnings.push(PluginWarning { path: root, reason }),
        }
    }
    (plugins, warnings)
}

/// Reads one plugin directory.
fn read_plugin(root: &Path) -> Result<Plugin, String> {
    let manifest_path = MANIFEST_PLACES
        .iter()
        .map(|place| root.join(place))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("no plugin.json found; tried {}", MANIFEST_PLACES.join(", ")))?;
    let manifest = read_json(&manifest_path)?;
    let name = manifest
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| format!("{}: no `name` string", manifest_path.display()))?
        .to_owned();
    let version = manifest
        .get("version")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mcp_file = root.join(MCP_FILE);
    let servers = if mcp_file.is_file() {
        servers_of(&read_json(&mcp_file)?, &mcp_file)?
    } else {
        match manifest.get("mcpServers") {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::String(file)) => {
                let path = root.join(file);
                servers_of(&read_json(&path)?, &path)?
            }
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                return Err(format!(
                    "{}: `mcpServers` is neither an object nor a file name",
                    manifest_path.display()
                ));
            }
        }
    };
    let root_text = root.to_string_lossy();
    let mcp_servers = servers
        .into_iter()
        .map(|(name, mut config)| {
            expand_root(&mut config, &root_text);
            (name, config)
        })
        .collect();
    Ok(Plugin {
        name,
        version,
        root: root.to_owned(),
        mcp_servers,
    })
}

/// The servers' object of a servers' file: `{"mcpServers": {...}}`, or the object itself.
fn servers_of(value: &Value, path: &Path) -> Result<serde_json::Map<String, Value>, String> {
    let servers = value.get("mcpServers").unwrap_or(value);
    servers
        .as_object()
        .cloned()
        .ok_or_else(|| format!("{}: the MCP servers are not an object", path.display()))
}

/// A JSON file of at most [`MAX_PLUGIN_FILE_BYTES`].
fn read_json(path: &Path) -> Result<Value, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{}: cannot be read ({e})", path.display()))?
        .len();
    if size > MAX_PLUGIN_FILE_BYTES {
        return Err(format!(
            "{}: {size} bytes, more than the {MAX_PLUGIN_FILE_BYTES} a plugin file may have",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot be read ({e})", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not JSON ({e})", path.display()))
}

/// Replaces the plugin root variables in every string of `value`.
fn expand_root(value: &mut Value, root: &str) {
    match value {
        Value::String(text) => {
            for variable in ROOT_VARIABLES {
                if text.contains(variable) {
                    *text = text.replace(variable, root);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| expand_root(v, root)),
        Value::Object(map) => map.values_mut().for_each(|v| expand_root(v, root)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(path: &Path, value: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, value.to_string()).unwrap();
    }

    #[test]
    fn reads_manifests_and_servers_where_the_runtime_looks() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let server = |name: &str| json!({"type": "stdio", "command": "node", "args": [name]});
        // At the root, servers in `.mcp.json`.
        write(
            &base.join("one/plugin.json"),
            &json!({"name": "one", "version": "1.0.0"}),
        );
        write(
            &base.join("one/.mcp.json"),
            &json!({"mcpServers": {"a": server("a"), "b": server("b")}}),
        );
        // In `.github/plugin/`, servers in the manifest.
        write(
            &base.join("two/.github/plugin/plugin.json"),
            &json!({"name": "two", "mcpServers": {"c": server("c")}}),
        );
        // In `.claude-plugin/`, servers in a file the manifest names, with the root variable.
        write(
            &base.join("three/.claude-plugin/plugin.json"),
            &json!({"name": "three", "mcpServers": "./servers.json"}),
        );
        write(
            &base.join("three/servers.json"),
            &json!({"mcpServers": {"d": {"command": "${CLAUDE_PLUGIN_ROOT}/run", "args": ["${PLUGIN_ROOT}/x"]}}}),
        );
        // `.mcp.json` wins over the manifest's servers.
        write(
            &base.join("four/.plugin/plugin.json"),
            &json!({"name": "four", "mcpServers": {"ignored": server("i")}}),
        );
        write(&base.join("four/.mcp.json"), &json!({"e": server("e")}));
        // Not plugins.
        write(&base.join("none/.mcp.json"), &json!({"mcpServers": {}}));
        write(&base.join("nameless/plugin.json"), &json!({"version": "1"}));
        let dirs: Vec<PathBuf> = ["one", "two", "three", "four", "none", "nameless", "missing"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let (plugins, warnings) = read_plugin_dirs(&dirs, base);
        let found: Vec<(&str, Vec<&String>)> = plugins
            .iter()
            .map(|p| (p.name.as_str(), p.mcp_servers.keys().collect()))
            .collect();
        assert_eq!(
            found,
            vec![
                ("one", vec![&"a".to_owned(), &"b".to_owned()]),
                ("two", vec![&"c".to_owned()]),
                ("three", vec![&"d".to_owned()]),
                ("four", vec![&"e".to_owned()]),
            ]
        );
        assert_eq!(plugins[0].version.as_deref(), Some("1.0.0"));
        let three = base.join("three").to_string_lossy().into_owned();
        assert_eq!(
            plugins[2].mcp_servers["d"],
            json!({"command": format!("{three}/run"), "args": [format!("{three}/x")]})
        );
        let at: Vec<PathBuf> = warnings.iter().map(|w| w.path.clone()).collect();
        assert_eq!(
            at,
            vec![
                base.join("none"),
                base.join("nameless"),
                base.join("missing")
            ]
        );
        assert!(
            warnings[0].reason.contains("no plugin.json"),
            "{}",
            warnings[0]
        );
        assert!(warnings[1].reason.contains("`name`"), "{}", warnings[1]);
    }

    #[test]
    fn bounds_the_directories_and_the_files() {
        let tmp = tempfile::tempdir().unwrap();
        let big = tmp.path().join("big");
        std::fs::create_dir_all(&big).unwrap();
        let padding = "x".repeat(MAX_PLUGIN_FILE_BYTES as usize);
        std::fs::write(
            big.join("plugin.json"),
            format!("{{\"name\": \"big\", \"pad\": \"{padding}\"}}"),
        )
        .unwrap();
        let (plugins, warnings) = read_plugin_dirs(std::slice::from_ref(&big), tmp.path());
        assert!(plugins.is_empty());
        assert!(warnings[0].reason.contains("more than"), "{}", warnings[0]);
        let many: Vec<PathBuf> = (0..=MAX_PLUGIN_DIRS).map(|_| big.clone()).collect();
        let (_, warnings) = read_plugin_dirs(&many, tmp.path());
        assert!(warnings.last().unwrap().reason.contains("at most"));
    }
}
