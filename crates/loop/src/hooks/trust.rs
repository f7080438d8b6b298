//! Which working directories' hook files may run. A hook runs arbitrary commands with the
//! user's rights at every tool call, and whoever can write `.github/hooks/` (a cloned
//! repository, or the agent itself with a write permission) chooses them, so hooks load only
//! from a folder the user trusted: listed in `trustedFolders` of the Copilot CLI's settings
//! files (`$COPILOT_HOME/settings.json` and `config.json`, read by the command that starts
//! the session and handed over here), or the session was started with `--trust-hooks`.
//! Nothing the agent can do in a session trusts a folder: the list lives outside the working
//! directory and is only read.

use std::path::{Path, PathBuf};

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

impl HookTrust {
    /// Trusts every folder (for tests and callers that decided already).
    pub fn everything() -> Self {
        HookTrust {
            trust_flag: true,
            ..Default::default()
        }
    }

    /// Trusts `folders` (each with its subfolders; canonical paths, as the settings reader
    /// gives them) and, with `trust_flag`, any working directory.
    pub fn folders(folders: Vec<PathBuf>, trust_flag: bool) -> Self {
        HookTrust {
            trust_flag,
            folders,
            ..Default::default()
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_trust_their_subfolders() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("work/sub")).unwrap();
        let work = tmp.path().join("work").canonicalize().unwrap();
        let trust = HookTrust::folders(vec![work.clone()], false);
        assert!(trust.is_trusted(&work));
        assert!(trust.is_trusted(&work.join("sub")));
        assert!(!trust.is_trusted(tmp.path()));
        assert!(HookTrust::folders(Vec::new(), true).is_trusted(tmp.path()));
        let warning = trust.untrusted_warning(Path::new("/w/.github/hooks"), Path::new("/w"));
        assert!(
            warning.contains("trustedFolders") && warning.contains("--trust-hooks"),
            "{warning}"
        );
    }
}
