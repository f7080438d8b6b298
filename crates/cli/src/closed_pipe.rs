//! A reader that goes away (`turnstile events … | head`) ends a command quietly, with the
//! status a shell reports for a command its reader left: killed by SIGPIPE (128 + 13).
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with `EPIPE` and `println!` panics.
//! The commands that only read and print get the default action back
//! ([`die_on_closed_pipe`]): the kernel ends them at the write, as it ends `cat`. The commands
//! that run a session (`run`, `resume`, `replay`, `compact`, `rewind`, the SDK server) keep
//! ignoring it, since a tool's or hook's pipe closing early must not kill the engine; they
//! write fallibly, and a closed stdout ends the session cleanly with [`EXIT_CLOSED_PIPE`]
//! ([`is_closed_pipe`] finds such an error in a chain).

/// The exit status of a command whose reader went away (128 + SIGPIPE, as shells report it).
pub const EXIT_CLOSED_PIPE: u8 = 141;

/// Gives SIGPIPE its default action back: a write to a closed pipe ends the process quietly.
pub fn die_on_closed_pipe() {
    // SAFETY: setting a signal's disposition to its default has no precondition; called in
    // `main` before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Whether `error` (or one of its causes) is a write to a pipe nobody reads.
pub fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
