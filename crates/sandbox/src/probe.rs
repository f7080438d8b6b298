//! What the running kernel offers, asked once per process.

use std::sync::OnceLock;

/// The sandbox layers the kernel offers to an unprivileged process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layers {
    /// The Landlock ABI version (0: no Landlock, disabled or too old a kernel).
    pub landlock_abi: i32,
    /// Whether a process may create a user namespace (and mount and network namespaces in
    /// it): some distributions and containers forbid it.
    pub user_namespaces: bool,
}

impl Layers {
    /// One line for `turnstile config` and the start-up warning: each layer and whether it is
    /// in effect.
    pub fn describe(&self) -> String {
        let landlock = if self.landlock_abi >= crate::ruleset::MIN_ABI {
            format!("Landlock ABI {}", self.landlock_abi)
        } else if self.landlock_abi > 0 {
            format!(
                "Landlock ABI {} (too old: ABI {} needed)",
                self.landlock_abi,
                crate::ruleset::MIN_ABI
            )
        } else {
            "no Landlock".to_owned()
        };
        let userns = if self.user_namespaces {
            "user, mount and network namespaces"
        } else {
            "no user namespaces"
        };
        format!("{landlock}; {userns}")
    }

    /// Whether every layer the sandbox uses is there.
    pub fn complete(&self) -> bool {
        self.landlock_abi >= crate::ruleset::MIN_ABI && self.user_namespaces
    }
}

/// The layers of this kernel (asked once: a child that tries a user namespace, and
/// Landlock's version call).
pub fn probe() -> Layers {
    static LAYERS: OnceLock<Layers> = OnceLock::new();
    *LAYERS.get_or_init(|| Layers {
        landlock_abi: landlock_abi(),
        user_namespaces: user_namespaces(),
    })
}

fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call only returns the
    // ABI version (or an error); it touches no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(abi).unwrap_or(0).max(0)
}

/// Tries, in a short-lived child, what [`crate::namespaces`] does first.
fn user_namespaces() -> bool {
    use std::os::unix::process::CommandExt;
    let mut probe = std::process::Command::new("/bin/sh");
    probe
        .args(["-c", "exit 0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: unshare is a plain system call, async-signal-safe.
    unsafe {
        probe.pre_exec(|| {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    probe.status().is_ok_and(|s| s.success())
}
