//! The sandbox's cost per tool call: spawn to exit of `true`, unconfined and in sandboxes of
//! the policies a session builds, and what building each sandbox costs (once per session).
//! `make bench-sandbox`; figures in `docs/performance.md`.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use turnstile_sandbox::{Exec, Policy, Sandbox};

const RUNS: u32 = 300;

fn spawn_true(sandbox: Option<&'static Sandbox>) -> Duration {
    let started = Instant::now();
    for _ in 0..RUNS {
        let mut cmd = Command::new("/usr/bin/true");
        cmd.stdin(Stdio::null()).stdout(Stdio::null());
        if let Some(sandbox) = sandbox {
            // SAFETY: enter makes only system calls.
            unsafe {
                cmd.pre_exec(move || sandbox.enter());
            }
        }
        let status = cmd.status().expect("spawn");
        assert!(status.success());
    }
    started.elapsed() / RUNS
}

fn main() {
    let work = tempfile::tempdir().expect("tempdir");
    let state = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(work.path().join("secret")).expect("mkdir");
    let base = Policy {
        writable: vec![work.path().to_owned(), PathBuf::from("/tmp")],
        read_only: vec![state.path().to_owned()],
        hidden: vec![],
        exec: Exec::Any,
        network: true,
    };
    let policies = [
        ("broad rules (writes, state dir read-only)", base.clone()),
        (
            "+ deny shell(touch) (walks /usr/bin)",
            Policy {
                exec: Exec::AllBut(vec![PathBuf::from("/usr/bin/touch")]),
                ..base.clone()
            },
        ),
        (
            "narrow shell(git), no network, a read deny",
            Policy {
                exec: Exec::Only(vec![
                    PathBuf::from("/usr/bin/bash"),
                    PathBuf::from("/usr/bin/git"),
                    PathBuf::from("/usr/bin/true"),
                ]),
                network: false,
                hidden: vec![work.path().join("secret")],
                ..base.clone()
            },
        ),
    ];
    println!("spawn to exit of `true`, mean of {RUNS}");
    let bare = spawn_true(None);
    println!("{:<48} {:>9.3} ms", "unconfined", bare.as_secs_f64() * 1e3);
    for (name, policy) in policies {
        let started = Instant::now();
        let sandbox: &'static Sandbox = Box::leak(Box::new(Sandbox::new(policy).expect("sandbox")));
        let built = started.elapsed();
        let confined = spawn_true(Some(sandbox));
        println!(
            "{name:<48} {:>9.3} ms  (+{:.3} ms a call; built once in {:.2} ms)",
            confined.as_secs_f64() * 1e3,
            confined.saturating_sub(bare).as_secs_f64() * 1e3,
            built.as_secs_f64() * 1e3
        );
    }
}
