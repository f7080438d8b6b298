//! Which working directories' hook files may run. A hook runs arbitrary commands with the
//! user's rights at every tool call, and whoever can write `.github/hooks/` (a cloned
//! repository, or the agent itself with a write permission) chooses them, so hooks load only
//! from a folder the user trusted: listed in `trustedFolders` of `$COPILOT_HOME/config.json`
//! (the Copilot CLI's own list; `~/.copilot/config.json` without `COPILOT_HOME`), or the
//! session was started with `--trust-hooks`. Nothing the agent can do in a session trusts a
//! folder: the list lives outside the working directory and is only read.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The user's hook trust: the flag and the trusted folders.
#[derive(Debug, Clone, Default)]
pub struct HookTrust {
    /// `--trust-hooks`: the working directory of this session is trusted.
    pub trust_flag: bool,
    /// Trusted folders (each trusts its subfolders too), canonical where they exist.
    pub folders: Vec<PathBuf>,
    /// Where the list came from, for messages.
    pub config_path: Option<PathBuf>,
    /// A problem reading the list (the folders it would have trusted are not trusted).
    pub config_problem: Option<String>,
}

/// Largest config file read; a larger one is not read (nothing is trusted through it).
const MAX_CONFIG_BYTES: u64 = 4 << 20;

impl HookTrust {
    /// Trusts every folder (for tests and callers that decided already).
    pub fn everything() -> Self {
        HookTrust {
            trust_flag: true,
            ..Default::default()
        }
    }

    /// The trust of a user: `trust_flag` and the `trustedFolders` of
    /// `$COPILOT_HOME/config.json` (else `~/.copilot/config.json`).
    pub fn from_env(trust_flag: bool) -> Self {
        let home = std::env::var_os("COPILOT_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".copilot"))
            });
        match home {
            Some(home) => Self::from_config_file(&home.join("config.json"), trust_flag),
            None => HookTrust {
                trust_flag,
                ..Default::default()
            },
        }
    }

    /// The trust recorded in the config file at `path` (a missing file trusts nothing).
    pub fn from_config_file(path: &Path, trust_flag: bool) -> Self {
        let mut trust = HookTrust {
            trust_flag,
            config_path: Some(path.to_path_buf()),
            ..Default::default()
        };
        match read_folders(path) {
            Ok(folders) => trust.folders = folders,
            Err(problem) => trust.config_problem = Some(problem),
        }
        trust
    }

    /// Whether hooks in `cwd` may run.
    pub fn is_trusted(&self, cwd: &Path) -> bool {
        if self.trust_flag {
            return true;
        }
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        self.folders.iter().any(|f| cwd.starts_with(f))
    }

    /// The warning for hooks of an untrusted `cwd` that were not loaded.
    pub fn untrusted_warning(&self, hooks_dir: &Path, cwd: &Path) -> String {
        let config = self.config_path.as_ref().map_or_else(
            || "$COPILOT_HOME/config.json".to_owned(),
            |p| p.display().to_string(),
        );
        let problem = self
            .config_problem
            .as_ref()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default();
        format!(
            "hooks in {} are not loaded: the folder {} is not trusted. Trust it by adding it to \"trustedFolders\" in {config}{problem}, or start the session with --trust-hooks",
            hooks_dir.display(),
            cwd.display()
        )
    }
}

fn read_folders(path: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "{} is larger than {MAX_CONFIG_BYTES} bytes",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let config: Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    // `trustedFolders` is the runtime's key; older releases wrote `trusted_folders`.
    let mut folders = Vec::new();
    for key in ["trustedFolders", "trusted_folders"] {
        match config.get(key) {
            None => {}
            Some(Value::Array(list)) => {
                for item in list {
                    let Some(s) = item.as_str().filter(|s| Path::new(s).is_absolute()) else {
                        return Err(format!(
                            "{}: every entry of {key:?} must be an absolute path",
                            path.display()
                        ));
                    };
                    let p = PathBuf::from(s);
                    folders.push(p.canonicalize().unwrap_or(p));
                }
            }
            Some(_) => {
                return Err(format!(
                    "{}: {key:?} must be a list of paths",
                    path.display()
                ));
            }
        }
    }
    Ok(folders)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_lists_folders_and_subfolders() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        std::fs::create_dir_all(work.join("sub")).unwrap();
        let config = tmp.path().join("config.json");
        std::fs::write(
            &config,
            serde_json::json!({"trustedFolders": [work], "model": "x"}).to_string(),
        )
        .unwrap();
        let trust = HookTrust::from_config_file(&config, false);
        assert!(trust.is_trusted(&work));
        assert!(trust.is_trusted(&work.join("sub")));
        assert!(!trust.is_trusted(tmp.path()));
        assert!(HookTrust::from_config_file(&config, true).is_trusted(tmp.path()));
    }

    #[test]
    fn a_bad_config_trusts_nothing_and_says_why() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("config.json");
        for bad in [
            "{",
            r#"{"trustedFolders": "/"}"#,
            r#"{"trustedFolders": ["relative"]}"#,
        ] {
            std::fs::write(&config, bad).unwrap();
            let trust = HookTrust::from_config_file(&config, false);
            assert!(!trust.is_trusted(Path::new("/")), "{bad}");
            let warning = trust.untrusted_warning(Path::new("/w/.github/hooks"), Path::new("/w"));
            assert!(
                warning.contains("config.json") && warning.contains("--trust-hooks"),
                "{warning}"
            );
        }
        let missing = HookTrust::from_config_file(&tmp.path().join("none.json"), false);
        assert!(missing.config_problem.is_none() && missing.folders.is_empty());
    }
}
