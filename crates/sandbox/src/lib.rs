//! Confines the processes a tool starts, by the kernel: a [`Policy`] in, a [`Sandbox`] out,
//! which a freshly forked child [`enter`s](Sandbox::enter) before it executes anything.
//!
//! The permission rules (`turnstile-permissions`) decide which calls need approval and tell the
//! user why, by reading the command line. A reading of bash is always one construct behind
//! bash, so what the rules promise about *effects* is enforced here, where the effect happens:
//!
//! - **Landlock** ([`ruleset`]): files may be written, created, removed or renamed only beneath
//!   the writable roots (the working directory, the temp directory, what a `write` rule
//!   allows); programs may be executed only as the exec policy says (an allow list for narrow
//!   `shell(PROG)` rules, everything but the denied programs' files otherwise); no TCP
//!   connection or bind when the network is off; signals and abstract UNIX sockets reach only
//!   processes of the same sandbox; `ptrace` and `/proc/<pid>/` of processes outside it are
//!   refused by Landlock's own rule for sandboxed processes. It needs no privilege, and a
//!   sandboxed process cannot change its mounts, so the next layer cannot be undone from inside.
//! - **User and mount namespaces** ([`namespaces`]): a read-only bind mount over every subtree
//!   that must stay unwritable inside a writable root (the session-state directory,
//!   `$COPILOT_HOME`, a `write(GLOB)` deny), an empty read-only file system over every path a
//!   `read(GLOB)` deny names. Landlock cannot express "writable except this subtree" (a rule
//!   grants everything beneath it), and a mount covers the object, not a spelling: symlinks,
//!   `..`, `/proc/self/cwd` and `~+` all reach the same mount. Links cannot cross mounts.
//! - **A network namespace** when the network is off: nothing but a loopback of its own, so UDP
//!   and raw sockets are covered as well as TCP.
//!
//! There is no seccomp filter: what one would add here is already closed. Mounting,
//! unmounting and `pivot_root` are refused to a Landlock domain; `ptrace` and `/proc/<pid>/`
//! of outside processes by Landlock's ptrace rule; the calls that need a capability in the
//! initial user namespace (`bpf`, `perf_event_open` beyond the user's own, module loading)
//! fail because the sandbox holds none there; and a nested namespace a tool creates stays
//! inside this one, under the same domain.
//!
//! Everything that allocates or reads the file system happens in [`Sandbox::new`], in the
//! engine; [`Sandbox::enter`] only makes system calls, because it runs between `fork` and
//! `exec` of a multi-threaded process, where only async-signal-safe calls are allowed. The
//! Landlock ruleset is one file descriptor built once per session and applied by every child.
//!
//! What this crate cannot give where the kernel lacks a layer is reported by [`probe`]; the
//! engine refuses rules it could not enforce instead of weakening them silently.

mod except;
pub mod namespaces;
mod probe;
pub mod ruleset;
mod sandboxing;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

pub use probe::{Layers, probe};
pub use sandboxing::Sandboxing;

/// Makes the calling process (the engine) non-dumpable: its environment and memory hold the
/// provider's key, and a sandboxed tool, which has no capability over it (it runs in a user
/// namespace of its own), then cannot read `/proc/<pid>/environ`, `mem` or `cwd` of the
/// engine, nor get a core dump of it. Children are dumpable again after `exec`.
pub fn shut_engine() {
    // SAFETY: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Which programs a sandboxed process may execute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exec {
    /// Any program.
    Any,
    /// Only these files (real paths; directories mean every file beneath), plus the dynamic
    /// loader they need.
    Only(Vec<PathBuf>),
    /// Any program but these files, by their real path and every hard link to them in the
    /// directories walked.
    AllBut(Vec<PathBuf>),
}

/// What a sandboxed process may do. Paths are absolute; those that do not exist are skipped
/// (a rule cannot name what is not there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Beneath these, files may be written, created, removed and renamed.
    pub writable: Vec<PathBuf>,
    /// Subtrees (or files) that stay unwritable even inside a writable root.
    pub read_only: Vec<PathBuf>,
    /// Subtrees (or files) that read as empty: an empty file system over a directory,
    /// `/dev/null` over a file.
    pub hidden: Vec<PathBuf>,
    /// Which programs may be executed.
    pub exec: Exec,
    /// Whether the sandbox may reach any network (TCP, UDP, raw); off means a network
    /// namespace of its own and no TCP connect or bind.
    pub network: bool,
}

/// A sandbox could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel lacks a layer the policy needs.
    #[error("the kernel does not offer {layer}, which {needed_for} needs")]
    Unsupported {
        /// The missing layer.
        layer: &'static str,
        /// What in the policy needs it.
        needed_for: &'static str,
    },
    /// Landlock refused the ruleset or one of its rules.
    #[error("building the Landlock ruleset: {0}")]
    Landlock(String),
    /// A path of the policy could not be opened or read.
    #[error("{path}: {source}")]
    Path {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A path holds a NUL byte (it cannot be given to the kernel).
    #[error("{0}: a path with a NUL byte cannot be sandboxed")]
    NulInPath(PathBuf),
}

/// A policy made ready for children to enter: the Landlock ruleset's descriptor and the
/// namespace plan, built in the engine. Cheap to share ([`std::sync::Arc`]) across calls.
#[derive(Debug)]
pub struct Sandbox {
    ruleset: OwnedFd,
    namespaces: namespaces::Plan,
    policy: Policy,
}

impl Sandbox {
    /// Builds the sandbox for `policy` (opens its paths, walks the directories an
    /// [`Exec::AllBut`] needs, creates the ruleset). Fails when the kernel lacks a layer the
    /// policy needs.
    pub fn new(policy: Policy) -> Result<Self, SandboxError> {
        let layers = probe();
        if layers.landlock_abi < ruleset::MIN_ABI {
            return Err(SandboxError::Unsupported {
                layer: "Landlock (ABI 6 or later)",
                needed_for: "every sandbox",
            });
        }
        let namespaces = namespaces::Plan::new(&policy)?;
        if namespaces.needed() && !layers.user_namespaces {
            return Err(SandboxError::Unsupported {
                layer: "unprivileged user namespaces",
                needed_for: "a read-only subtree, a hidden path or no network",
            });
        }
        let ruleset = ruleset::build(&policy)?;
        Ok(Sandbox {
            ruleset,
            namespaces,
            policy,
        })
    }

    /// The policy this sandbox enforces.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Confines the calling process; meant for a child between `fork` and `exec`
    /// (`Command::pre_exec`). It makes only async-signal-safe system calls and allocates
    /// nothing. On failure the child must not run the command: the error is returned so the
    /// spawn fails.
    pub fn enter(&self) -> std::io::Result<()> {
        self.namespaces.enter()?;
        // SAFETY: prctl and landlock_restrict_self are plain system calls with integer
        // arguments; the descriptor is ours and open for the life of `self`.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0u32,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}
