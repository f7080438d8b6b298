//! Generated attacks on a read-only subtree: every way of naming a protected file (direct,
//! `./`, `..`, `/proc/self/cwd`, `~+`, a symlink, a hard link) combined with every way of
//! changing it (redirects, `cp`, `mv`, `rm`, `sed -i`, `truncate`, `touch`, `ln`, `mkdir`),
//! a few chained per line. The protected tree must come out byte for byte the same and no
//! entry may appear in it. `PROPTEST_CASES` sets how many lines (`make fuzz` runs many).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use turnstile_sandbox::{Exec, Policy, Sandbox, probe};

const SPELLINGS: [&str; 8] = [
    "guard/file",
    "./guard/file",
    "sub/../guard/file",
    "/proc/self/cwd/guard/file",
    "~+/guard/file",
    "lnk/file",
    "hard",
    "guard/./inner/../file",
];

const OPERATIONS: [&str; 11] = [
    "echo x > {}",
    "echo x >> {}",
    "cp /etc/hostname {}",
    "mv {} moved",
    "rm -f {}",
    "sed -i s/original/changed/ {}",
    "truncate -s 0 {}",
    "touch {}.new",
    "ln -f /etc/hostname {}",
    "mkdir {}.d",
    "mv guard g2; echo x > g2/file",
];

fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p.clone());
                out.push((p.display().to_string(), Vec::new()));
            } else {
                out.push((
                    p.display().to_string(),
                    std::fs::read(&p).unwrap_or_default(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// 24 lines in `make test`; `PROPTEST_CASES` for more (an explicit count in the config would
/// override the variable).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn no_spelling_of_a_protected_path_changes_it(
        steps in proptest::collection::vec((0..SPELLINGS.len(), 0..OPERATIONS.len()), 1..4)
    ) {
        prop_assume!(probe().complete());
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().canonicalize().unwrap();
        let guard = work.join("guard");
        std::fs::create_dir_all(guard.join("inner")).unwrap();
        std::fs::create_dir_all(work.join("sub")).unwrap();
        std::fs::write(guard.join("file"), "original\n").unwrap();
        std::os::unix::fs::symlink(&guard, work.join("lnk")).unwrap();
        // A hard link made before the sandbox is another name of the file, outside the
        // protected tree: the sandbox protects the subtree, not the inode (docs/security.md),
        // so the link is made after the policy is built, by the attacker, below.
        let before = snapshot(&guard);
        let sandbox: &'static Sandbox = Box::leak(Box::new(
            Sandbox::new(Policy {
                writable: vec![work.clone()],
                read_only: vec![guard.clone()],
                hidden: vec![],
                exec: Exec::Any,
                network: false,
            })
            .unwrap(),
        ));
        let mut line = String::from("ln guard/file hard 2>/dev/null; ");
        for (s, o) in &steps {
            line.push_str(&OPERATIONS[*o].replace("{}", SPELLINGS[*s]));
            line.push_str(" 2>/dev/null; ");
        }
        line.push_str("true");
        let mut cmd = Command::new("bash");
        cmd.arg("-c").arg(&line).current_dir(&work).stdin(Stdio::null());
        // SAFETY: enter makes only system calls.
        unsafe { cmd.pre_exec(move || sandbox.enter()); }
        let out = cmd.output().unwrap();
        prop_assert!(out.status.success());
        prop_assert_eq!(snapshot(&guard), before, "{}", line);
    }
}
