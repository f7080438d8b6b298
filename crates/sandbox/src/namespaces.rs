//! The namespace layer: a user namespace (so an unprivileged process may mount), a mount
//! namespace of the sandbox's own, and a network namespace when the network is off.
//!
//! In the new mount namespace:
//! - every directory on the way from a writable root to a protected path is bind-mounted onto
//!   itself, so it is a mount point: it cannot be renamed or removed (`EBUSY`), and the
//!   protected subtree cannot be moved out from under its rule;
//! - a read-only subtree is bind-mounted onto itself and made read-only (`mount_setattr`,
//!   recursively); nothing beneath it can be written, whatever the spelling of the path, and
//!   no hard link leaves it (links do not cross mounts);
//! - a hidden directory gets an empty read-only `tmpfs` over it, a hidden file `/dev/null`.
//!
//! Landlock, applied after this, forbids a sandboxed process to change its mounts, so none of
//! this can be undone from inside. The plan is computed in the engine; `Plan::enter` runs in
//! the forked child and only makes system calls.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::{Policy, SandboxError};

/// One mount the child makes.
#[derive(Debug)]
enum Mount {
    /// A writable bind of a directory onto itself (a mount point cannot be renamed).
    Pin(CString),
    /// A read-only bind of a subtree onto itself.
    ReadOnly(CString),
    /// An empty read-only tmpfs over a directory.
    HideDir(CString),
    /// `/dev/null` over a file.
    HideFile(CString),
}

/// What the child does before Landlock.
#[derive(Debug)]
pub struct Plan {
    flags: libc::c_int,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    mounts: Vec<Mount>,
}

fn cstring(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::NulInPath(path.to_owned()))
}

impl Plan {
    /// The plan of `policy`: paths resolved now (real paths), maps written for this user.
    pub(crate) fn new(policy: &Policy) -> Result<Self, SandboxError> {
        let mut pins: Vec<PathBuf> = Vec::new();
        let mut mounts = Vec::new();
        let roots: Vec<PathBuf> = policy
            .writable
            .iter()
            .filter_map(|r| std::fs::canonicalize(r).ok())
            .collect();
        let protect = |path: &Path, pins: &mut Vec<PathBuf>| {
            for root in &roots {
                if !path.starts_with(root) {
                    continue;
                }
                let mut at = path.parent();
                while let Some(dir) = at {
                    if !pins.iter().any(|p| p == dir) {
                        pins.push(dir.to_owned());
                    }
                    if dir == root {
                        break;
                    }
                    at = dir.parent();
                }
            }
        };
        let mut read_only = Vec::new();
        for path in &policy.read_only {
            if let Ok(real) = std::fs::canonicalize(path) {
                protect(&real, &mut pins);
                read_only.push(real);
            }
        }
        let mut hidden = Vec::new();
        for path in &policy.hidden {
            if let Ok(real) = std::fs::canonicalize(path) {
                protect(&real, &mut pins);
                hidden.push(real);
            }
        }
        // Outer directories first: a bind onto a parent made after a child's would hide it.
        pins.sort_by_key(|p| p.components().count());
        for pin in &pins {
            mounts.push(Mount::Pin(cstring(pin)?));
        }
        read_only.sort_by_key(|p| p.components().count());
        for path in &read_only {
            mounts.push(Mount::ReadOnly(cstring(path)?));
        }
        for path in &hidden {
            let c = cstring(path)?;
            mounts.push(if path.is_dir() {
                Mount::HideDir(c)
            } else {
                Mount::HideFile(c)
            });
        }
        // Always a user namespace: in it the sandbox holds no capability over the engine or
        // any process outside (even when the user is root), which shuts their `/proc/<pid>/`.
        let mut flags = libc::CLONE_NEWUSER;
        if !mounts.is_empty() {
            flags |= libc::CLONE_NEWNS;
        }
        if !policy.network {
            flags |= libc::CLONE_NEWNET;
        }
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Ok(Plan {
            flags,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            mounts,
        })
    }

    /// Whether the policy needs namespaces at all.
    pub fn needed(&self) -> bool {
        self.flags != 0
    }

    /// Enters the namespaces and makes the mounts (in the forked child: system calls only).
    pub(crate) fn enter(&self) -> std::io::Result<()> {
        if self.flags == 0 {
            return Ok(());
        }
        // SAFETY: every call below is a plain system call on NUL-terminated strings and
        // buffers owned by `self`, which outlives the call; none allocates.
        unsafe {
            check(libc::unshare(self.flags))?;
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", &self.uid_map)?;
            write_file(c"/proc/self/gid_map", &self.gid_map)?;
            if self.flags & libc::CLONE_NEWNS == 0 {
                return Ok(());
            }
            // Nothing mounted here may propagate back to the engine's namespace.
            check(libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            for mount in &self.mounts {
                match mount {
                    Mount::Pin(path) => bind(path, path)?,
                    Mount::ReadOnly(path) => {
                        bind(path, path)?;
                        read_only(path)?;
                    }
                    Mount::HideDir(path) => check(libc::mount(
                        c"none".as_ptr(),
                        path.as_ptr(),
                        c"tmpfs".as_ptr(),
                        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        c"size=4k,mode=0500".as_ptr().cast(),
                    ))?,
                    Mount::HideFile(path) => {
                        bind(c"/dev/null", path)?;
                        read_only(path)?;
                    }
                }
            }
            // The working directory was entered before the mounts: it still names the
            // directory under them, so relative paths would go around every mount made here.
            // Enter it again by its path, which now resolves to the top mount.
            let mut cwd = [0u8; libc::PATH_MAX as usize];
            if libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()).is_null() {
                return Err(std::io::Error::last_os_error());
            }
            check(libc::chdir(cwd.as_ptr().cast()))?;
        }
        Ok(())
    }
}

fn check(rc: libc::c_int) -> std::io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// SAFETY (callers): `from` and `to` are NUL-terminated.
unsafe fn bind(from: &std::ffi::CStr, to: &std::ffi::CStr) -> std::io::Result<()> {
    // SAFETY: see the function's contract.
    check(unsafe {
        libc::mount(
            from.as_ptr(),
            to.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    })
}

/// The kernel's `struct mount_attr` (`linux/mount.h`).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_int = 0x8000;

/// Makes the mount at `path` and every mount beneath it read-only, changing no other flag (a
/// remount would have to repeat the locked ones).
///
/// SAFETY (callers): `path` is NUL-terminated.
unsafe fn read_only(path: &std::ffi::CStr) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `attr` lives across the call and its size is passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// SAFETY (callers): `path` is NUL-terminated.
unsafe fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if n < 0 || n as usize != bytes.len() {
            return Err(err);
        }
    }
    Ok(())
}
