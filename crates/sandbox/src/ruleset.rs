//! The Landlock layer: one ruleset, built once in the engine, that every sandboxed child
//! restricts itself with.
//!
//! Handled (denied unless a rule grants it): every write right of ABI 6 but device ioctls
//! (writing, truncating, creating, removing, linking and renaming files), executing files, TCP
//! connect and bind when the network is off; scoped: signals and abstract UNIX sockets.
//! Reading is not handled here: the namespaces hide what a `read` deny names. Device ioctls
//! are left alone because terminals and `/dev/null` need them and they write no file.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use crate::except::{cover_all_but, open_path};
use crate::{Exec, Policy, SandboxError};

/// The oldest Landlock ABI the sandbox accepts: 6 adds signal and abstract-socket scoping,
/// without which a tool could signal the user's other processes.
pub const MIN_ABI: i32 = 6;

/// Devices every program may write: output thrown away, terminals, shared memory.
const DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// The dynamic loaders: executing an ELF program executes its interpreter too, and Landlock
/// checks that.
const LOADER_DIRS: [&str; 4] = ["/lib64", "/lib", "/usr/lib64", "/usr/lib"];

fn landlock_error(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(e.to_string())
}

fn write_rights() -> BitFlags<AccessFs> {
    AccessFs::from_write(ABI::V6) & !AccessFs::IoctlDev
}

/// Builds the ruleset of `policy` and returns its descriptor.
pub fn build(policy: &Policy) -> Result<OwnedFd, SandboxError> {
    let write = write_rights();
    let handled = write | AccessFs::Execute;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(landlock_error)?;
    if !policy.network {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(landlock_error)?;
    }
    let mut created = ruleset
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?;
    let mut grant = |fd: OwnedFd, st: &libc::stat, access: BitFlags<AccessFs>| {
        let is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(ABI::V6)
        };
        if access.is_empty() {
            return Ok(());
        }
        created
            .as_mut()
            .add_rule(PathBeneath::new(fd, access))
            .map(|_| ())
            .map_err(landlock_error)
    };
    for root in &policy.writable {
        if let Ok((fd, st)) = open_path(root, true) {
            grant(fd, &st, write)?;
        }
    }
    for device in DEVICES {
        if let Ok((fd, st)) = open_path(Path::new(device), true) {
            grant(fd, &st, write)?;
        }
    }
    match &policy.exec {
        Exec::Any => {
            let (fd, st) = open_path(Path::new("/"), true)?;
            grant(fd, &st, AccessFs::Execute.into())?;
        }
        Exec::Only(files) => {
            for file in files
                .iter()
                .map(PathBuf::as_path)
                .chain(loaders().iter().map(PathBuf::as_path))
            {
                if let Ok((fd, st)) = open_path(file, true) {
                    grant(fd, &st, AccessFs::Execute.into())?;
                }
            }
        }
        Exec::AllBut(files) => {
            for (fd, st) in cover_all_but(files, &path_dirs())? {
                grant(fd, &st, AccessFs::Execute.into())?;
            }
        }
    }
    Option::<OwnedFd>::from(created).ok_or_else(|| landlock_error("the kernel gave no ruleset"))
}

/// The directories of the engine's `PATH`.
pub fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| d.is_absolute())
                .collect()
        })
        .unwrap_or_default()
}

/// Every dynamic loader (`ld-linux*`, `ld-*.so*`) in the usual library directories, by real
/// path.
fn loaders() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut look = |dir: &Path| {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let loader =
                name.starts_with("ld-linux") || (name.starts_with("ld-") && name.contains(".so"));
            if loader
                && let Ok(real) = std::fs::canonicalize(entry.path())
                && !found.contains(&real)
            {
                found.push(real);
            }
        }
    };
    for dir in LOADER_DIRS {
        look(Path::new(dir));
        // Multiarch directories: /lib/x86_64-linux-gnu and the like.
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().ends_with("-linux-gnu") {
                    look(&entry.path());
                }
            }
        }
    }
    found
}
