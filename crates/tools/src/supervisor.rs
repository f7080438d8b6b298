//! The engine's tool supervisor (the bash script every recorded command runs under) and the
//! proof that a live process is one: what lets a resume kill a process group without trusting
//! `processes.json` alone.
//!
//! Each supervisor gets a fresh random 128-bit token in its environment
//! ([`TOKEN_VAR`]`=<32 hex digits>`); `processes.json` records only the token's SHA-256. The
//! script unsets the variable before it runs the command, so the command's processes never
//! have it in their environment. A process proves it is the recorded supervisor when
//! ([`check`]):
//!
//! - its command line is exactly the supervisor's: `bash -c <SCRIPT> turnstile-tool <the
//!   recorded command>`;
//! - the environment it was started with (`/proc/<pid>/environ`, which bash's `unset` does not
//!   change) holds [`TOKEN_VAR`] exactly once, with a value whose SHA-256 is the recorded one.
//!
//! Why this cannot be forged into a kill of an unrelated process: a process gets its
//! environment from whoever executes it, so no process can put a recorded token into another
//! one's `/proc/<pid>/environ`. A process the engine did not start as a supervisor has no
//! token at all, unless whoever started it chose one; and for that token to count, its hash
//! must be in `processes.json` next to that process's pgid and start time. A tool's own
//! processes can read their supervisor's environment (same user), and today they can also
//! write the session directory, so a tool could record a token it knows: the processes it
//! could then have killed are ones started with that token (its own, which it may kill anyway,
//! or another session's supervisor, readable and signalable by the same user without any
//! resume). Once a kernel sandbox keeps tools from writing the session directory, a record
//! comes only from the engine, and so does every group a resume kills. Until then the check
//! still refuses pid 1, unrelated processes, and a recycled pid, whatever the file says.

use std::io::Read;

use sha2::{Digest, Sha256};

/// The supervisor (`$1` is the command). The command runs in the background so the trap can
/// fire while it runs (bash defers traps until a foreground child ends); its status is the
/// supervisor's. Exits 125 without running anything if the go line never comes. The token is
/// unset first, so the command's environment never holds it.
pub(crate) const SCRIPT: &str = r#"unset TURNSTILE_SUPERVISOR
trap 'trap - TERM; kill -KILL 0' TERM
IFS= read -r go || exit 125
bash -c "$1" </dev/null &
wait "$!"
"#;

/// The supervisor's `$0`, so `ps` names it.
pub(crate) const ARG0: &str = "turnstile-tool";

/// The variable holding a supervisor's token.
pub const TOKEN_VAR: &str = "TURNSTILE_SUPERVISOR";

/// The most bytes read of a process's command line or environment (bash's own limit on both
/// together is smaller): a larger one is not a supervisor's.
const MAX_PROC_FILE_BYTES: u64 = 8 << 20;

/// A supervisor's secret: 16 random bytes, as 32 lowercase hex digits.
pub(crate) struct Token(String);

impl Token {
    /// A fresh token from the kernel's random source.
    pub(crate) fn new() -> std::io::Result<Token> {
        let mut bytes = [0u8; 16];
        let mut filled = 0;
        while filled < bytes.len() {
            let rest = &mut bytes[filled..];
            // SAFETY: getrandom writes at most `rest.len()` bytes into `rest`, which we own.
            let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            filled += n as usize;
        }
        Ok(Token(hex(&bytes)))
    }

    /// The value set in the supervisor's environment.
    pub(crate) fn value(&self) -> &str {
        &self.0
    }

    /// What `processes.json` records of it.
    pub(crate) fn sha256(&self) -> String {
        sha256_hex(self.0.as_bytes())
    }
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The SHA-256 of `value`, in lowercase hex.
pub fn sha256_hex(value: &[u8]) -> String {
    hex(&Sha256::digest(value))
}

/// Why a live process is not the recorded supervisor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotSupervisor {
    /// Its command line or environment could not be read (gone, or not ours to read).
    #[error("its {file} cannot be read ({reason})")]
    Unreadable {
        /// `cmdline` or `environ`.
        file: &'static str,
        /// What failed.
        reason: String,
    },
    /// Its command line is not the supervisor's running the recorded command.
    #[error("it is not the engine's tool supervisor (its command line differs)")]
    OtherCommandLine,
    /// Its environment has no token, or several.
    #[error("it carries no supervisor token")]
    NoToken,
    /// Its token's hash is not the recorded one.
    #[error("its supervisor token is not the recorded one")]
    OtherToken,
}

/// Whether process `pid` is the supervisor recorded with `sha256` (of its token) running
/// `command` (`None`: a record that did not keep the command, which any command matches).
pub fn check(pid: i32, command: Option<&str>, sha256: &str) -> Result<(), NotSupervisor> {
    let cmdline = read_proc(pid, "cmdline")?;
    let args: Vec<&[u8]> = cmdline
        .strip_suffix(b"\0")
        .unwrap_or(&cmdline)
        .split(|b| *b == 0)
        .collect();
    let shape = matches!(
        args.as_slice(),
        [bash, dash_c, script, arg0, cmd]
            if *bash == b"bash"
                && *dash_c == b"-c"
                && *script == SCRIPT.as_bytes()
                && *arg0 == ARG0.as_bytes()
                && command.is_none_or(|c| *cmd == c.as_bytes())
    );
    if !shape {
        return Err(NotSupervisor::OtherCommandLine);
    }
    let environ = read_proc(pid, "environ")?;
    let prefix = format!("{TOKEN_VAR}=");
    let mut tokens = environ
        .split(|b| *b == 0)
        .filter_map(|entry| entry.strip_prefix(prefix.as_bytes()));
    let (Some(token), None) = (tokens.next(), tokens.next()) else {
        return Err(NotSupervisor::NoToken);
    };
    if sha256_hex(token) != sha256 {
        return Err(NotSupervisor::OtherToken);
    }
    Ok(())
}

/// `/proc/<pid>/<file>`, at most [`MAX_PROC_FILE_BYTES`].
fn read_proc(pid: i32, file: &'static str) -> Result<Vec<u8>, NotSupervisor> {
    let unreadable = |reason: String| NotSupervisor::Unreadable { file, reason };
    let handle = std::fs::File::open(format!("/proc/{pid}/{file}"))
        .map_err(|e| unreadable(e.to_string()))?;
    let mut bytes = Vec::new();
    handle
        .take(MAX_PROC_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(e.to_string()))?;
    if bytes.len() as u64 > MAX_PROC_FILE_BYTES {
        return Err(unreadable(format!("over {MAX_PROC_FILE_BYTES} bytes")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// Waits (boundedly) until `pid` has exec'd into something whose command line is `want`.
    fn wait_cmdline(pid: u32, want: &[u8]) {
        for _ in 0..500 {
            if std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("process {pid} never showed the expected command line");
    }

    fn cmdline(args: &[&str]) -> Vec<u8> {
        args.iter()
            .flat_map(|a| [a.as_bytes(), b"\0"].concat())
            .collect()
    }

    /// A process shaped like a supervisor of `sleep 300`, with `env` set and waiting for its
    /// go line forever (its stdin a pipe kept open).
    fn lookalike(env: &[(&str, &str)]) -> std::process::Child {
        let mut cmd = std::process::Command::new("bash");
        cmd.args(["-c", SCRIPT, ARG0, "sleep 300"])
            .env_remove(TOKEN_VAR)
            .stdin(std::process::Stdio::piped())
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().unwrap();
        wait_cmdline(
            child.id(),
            &cmdline(&["bash", "-c", SCRIPT, ARG0, "sleep 300"]),
        );
        child
    }

    fn end(mut child: std::process::Child) {
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn tokens_are_fresh_hex_and_hashed() {
        let (a, b) = (Token::new().unwrap(), Token::new().unwrap());
        assert_eq!(a.value().len(), 32);
        assert!(a.value().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a.value(), b.value());
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(a.sha256(), sha256_hex(a.value().as_bytes()));
    }

    #[test]
    fn the_token_proves_the_supervisor_and_only_its_own_hash_matches() {
        let token = Token::new().unwrap();
        let child = lookalike(&[(TOKEN_VAR, token.value())]);
        let pid = child.id() as i32;
        // The script's `unset` ran long ago (it waits on its stdin): the proof still reads.
        assert_eq!(check(pid, Some("sleep 300"), &token.sha256()), Ok(()));
        assert_eq!(check(pid, None, &token.sha256()), Ok(()));
        assert_eq!(
            check(pid, Some("sleep 301"), &token.sha256()),
            Err(NotSupervisor::OtherCommandLine)
        );
        let other = Token::new().unwrap();
        assert_eq!(
            check(pid, Some("sleep 300"), &other.sha256()),
            Err(NotSupervisor::OtherToken)
        );
        end(child);
    }

    #[test]
    fn the_right_shape_without_a_token_proves_nothing() {
        let child = lookalike(&[]);
        let hash = sha256_hex(b"");
        assert_eq!(
            check(child.id() as i32, None, &hash),
            Err(NotSupervisor::NoToken)
        );
        end(child);
    }

    #[test]
    fn another_program_carrying_a_token_is_not_a_supervisor() {
        let token = Token::new().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("300")
            .env(TOKEN_VAR, token.value())
            .spawn()
            .unwrap();
        wait_cmdline(child.id(), &cmdline(&["sleep", "300"]));
        assert_eq!(
            check(child.id() as i32, None, &token.sha256()),
            Err(NotSupervisor::OtherCommandLine)
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_process_that_is_gone_cannot_be_read() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        // Unless another test's process took the pid meanwhile, which is not a supervisor.
        assert!(matches!(
            check(pid, None, ""),
            Err(NotSupervisor::Unreadable {
                file: "cmdline",
                ..
            } | NotSupervisor::OtherCommandLine)
        ));
    }
}
