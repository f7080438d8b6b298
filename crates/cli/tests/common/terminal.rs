//! A pseudo-terminal for the commands that behave differently at one (approvals, the session
//! picker): the child gets the slave side as stdin and stderr, the test reads what it shows
//! from the master side and types lines into it.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A child running with stdin and stderr on a pseudo-terminal.
pub struct AtTerminal {
    child: Child,
    master: std::fs::File,
    screen: Arc<Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl AtTerminal {
    /// Starts `command` with stdin and stderr on a new pseudo-terminal (stdout discarded).
    pub fn spawn(mut command: Command) -> Self {
        let (master, slave) = pty();
        let child = command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        // Dropped here, the parent's copy of the slave: the master's reads fail (EIO) once the
        // child, its last holder, exits.
        drop(command);
        let screen = Arc::new(Mutex::new(String::new()));
        let reader = {
            let screen = Arc::clone(&screen);
            let mut master = master.try_clone().unwrap();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = master.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    screen
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            })
        };
        AtTerminal {
            child,
            master,
            screen,
            reader,
        }
    }

    /// What the terminal showed so far.
    pub fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Waits until the screen shows `needle` `n` times (bounded so that a binary that never
    /// shows it fails the test instead of hanging it).
    pub fn wait_for(&self, needle: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.screen().matches(needle).count() < n {
            assert!(
                Instant::now() < deadline,
                "{needle:?} not shown {n} times: {}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Types `line` and Enter.
    pub fn type_line(&mut self, line: &str) {
        self.master
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
    }

    /// Waits for the child; its exit status and everything the terminal showed.
    pub fn finish(mut self) -> (ExitStatus, String) {
        let status = self.child.wait().unwrap();
        drop(self.master);
        self.reader.join().unwrap();
        let screen = self.screen.lock().unwrap().clone();
        (status, screen)
    }
}

/// A pseudo-terminal: (master, slave).
fn pty() -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors it opened; null name, termios and size are allowed.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}
