//! Trusted folders (`session.permissions.folderTrust.*`): the file is
//! `turnstile_home::folder_trust`'s; what is added here is how a folder asked about is
//! resolved (through links when it exists, else lexically, as the session's allowed paths
//! are).

use std::path::{Path, PathBuf};

use turnstile_home::folder_trust::TrustedFolders;

pub(crate) use turnstile_home::folder_trust::TrustError;

/// The trusted folders of one home.
#[derive(Debug, Clone)]
pub(crate) struct FolderTrust {
    file: TrustedFolders,
}

impl FolderTrust {
    /// The store of the home holding `state_dir`.
    pub(crate) fn beside(state_dir: &Path) -> Self {
        FolderTrust {
            file: TrustedFolders::beside(state_dir),
        }
    }

    /// Whether `folder` (or a folder above it) is trusted; compared by path component, so
    /// trusting `/w/p` does not trust `/w/p-other`.
    pub(crate) fn is_trusted(&self, folder: &Path) -> Result<bool, TrustError> {
        self.file.covers(&canonical_or_lexical(folder))
    }

    /// Trusts `folder` (which must exist).
    pub(crate) fn add(&self, folder: &Path) -> Result<(), TrustError> {
        self.file.add(folder)
    }
}

/// The folder as trust compares it: resolved through links when it exists.
fn canonical_or_lexical(folder: &Path) -> PathBuf {
    folder
        .canonicalize()
        .unwrap_or_else(|_| crate::permission_state::lexical(folder))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_resolved_before_it_is_compared() {
        let home = tempfile::tempdir().unwrap();
        let trust = FolderTrust::beside(&home.path().join("session-state"));
        let project = home.path().join("project");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        assert!(!trust.is_trusted(&project).unwrap());
        trust.add(&project.join("sub/..")).unwrap();
        for inside in [
            project.clone(),
            project.join("sub"),
            project.join("not-yet"),
        ] {
            assert!(trust.is_trusted(&inside).unwrap(), "{}", inside.display());
        }
        for outside in [
            home.path().join("project-other"),
            project.join("../elsewhere"),
            home.path().to_path_buf(),
        ] {
            assert!(
                !trust.is_trusted(&outside).unwrap(),
                "{}",
                outside.display()
            );
        }
    }
}
