use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use turnstile_sandbox::{Exec, Policy, Sandbox, probe};

/// Whether this kernel offers every layer; tests that need them say so and pass vacuously
/// only where the kernel lacks them (never on the machines CI runs on: `complete_here`).
fn layers() -> bool {
    probe().complete()
}

#[test]
fn complete_here() {
    // CI runs on kernels with Landlock ABI 6+ and user namespaces; if this fails, every other
    // test here would prove nothing.
    assert!(probe().complete(), "{}", probe().describe());
}

fn policy(work: &Path) -> Policy {
    Policy {
        writable: vec![work.to_owned()],
        read_only: vec![],
        hidden: vec![],
        exec: Exec::Any,
        network: true,
    }
}

fn run(sandbox: &Sandbox, cwd: &Path, script: &str) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null());
    let sandbox: &'static Sandbox = Box::leak(Box::new(clone_of(sandbox)));
    // SAFETY: enter makes only system calls (its contract).
    unsafe {
        cmd.pre_exec(move || sandbox.enter());
    }
    cmd.output().expect("spawn")
}

/// Tests build a sandbox per run; `Sandbox` is not `Clone`, so this rebuilds from the policy.
fn clone_of(sandbox: &Sandbox) -> Sandbox {
    Sandbox::new(sandbox.policy().clone()).expect("sandbox")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout {}\nstderr {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

struct Dirs {
    _tmp: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    Dirs {
        work: work.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        _tmp: tmp,
    }
}

#[test]
fn writes_land_only_beneath_the_writable_roots() {
    if !layers() {
        return;
    }
    let d = dirs();
    let sandbox = Sandbox::new(policy(&d.work)).unwrap();
    let out = run(
        &sandbox,
        &d.work,
        &format!(
            "echo in > inside; echo out > {o}/a; ln -s {o} lnk; echo out > lnk/b; \
             echo out > /proc/self/cwd/../outside/c; cd {o} && touch d; mkdir {o}/e; true",
            o = d.outside.display()
        ),
    );
    assert_eq!(
        std::fs::read_to_string(d.work.join("inside")).unwrap(),
        "in\n",
        "{}",
        text(&out)
    );
    let leaked: Vec<_> = std::fs::read_dir(&d.outside)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(
        leaked.is_empty(),
        "written outside: {leaked:?}\n{}",
        text(&out)
    );
}

#[test]
fn a_read_only_subtree_stays_unwritten_whatever_the_spelling() {
    if !layers() {
        return;
    }
    let d = dirs();
    let state = d.work.join("state");
    std::fs::create_dir_all(state.join("inner")).unwrap();
    std::fs::write(state.join("inner/events.jsonl"), "original\n").unwrap();
    let mut p = policy(&d.work);
    p.read_only = vec![state.clone()];
    let sandbox = Sandbox::new(p).unwrap();
    let out = run(
        &sandbox,
        &d.work,
        "echo x > state/inner/events.jsonl; echo x >> ./state/../state/inner/events.jsonl; \
         echo x > /proc/self/cwd/state/inner/events.jsonl; ln -s state s; echo x > s/inner/events.jsonl; \
         ln state/inner/events.jsonl hard; echo x > hard; rm -f state/inner/events.jsonl; \
         mv state moved; mv state/inner elsewhere; touch state/new; echo ok > free; true",
    );
    assert_eq!(
        std::fs::read_to_string(state.join("inner/events.jsonl")).unwrap(),
        "original\n",
        "{}",
        text(&out)
    );
    assert!(!state.join("new").exists(), "{}", text(&out));
    assert!(!d.work.join("moved").exists(), "{}", text(&out));
    // The rest of the working directory stays writable.
    assert_eq!(
        std::fs::read_to_string(d.work.join("free")).unwrap(),
        "ok\n"
    );
}

#[test]
fn the_parent_of_a_protected_subtree_cannot_be_moved_away() {
    if !layers() {
        return;
    }
    let d = dirs();
    std::fs::create_dir_all(d.work.join("src/secret")).unwrap();
    std::fs::write(d.work.join("src/secret/k"), "k\n").unwrap();
    let mut p = policy(&d.work);
    p.read_only = vec![d.work.join("src/secret")];
    let sandbox = Sandbox::new(p).unwrap();
    let out = run(
        &sandbox,
        &d.work,
        "mv src src2; mkdir -p src/secret; echo x > src2/secret/k; echo x > src/new; true",
    );
    assert!(!d.work.join("src2").exists(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(d.work.join("src/secret/k")).unwrap(),
        "k\n"
    );
    // New files beside the protected subtree are still allowed.
    assert_eq!(
        std::fs::read_to_string(d.work.join("src/new")).unwrap(),
        "x\n",
        "{}",
        text(&out)
    );
}

#[test]
fn hidden_paths_read_as_nothing() {
    if !layers() {
        return;
    }
    let d = dirs();
    std::fs::create_dir_all(d.work.join("secret")).unwrap();
    std::fs::write(d.work.join("secret/key"), "TOPSECRET\n").unwrap();
    std::fs::write(d.work.join("token.txt"), "TOPSECRET\n").unwrap();
    let mut p = policy(&d.work);
    p.hidden = vec![d.work.join("secret"), d.work.join("token.txt")];
    let sandbox = Sandbox::new(p).unwrap();
    let out = run(
        &sandbox,
        &d.work,
        "cat secret/key; cat token.txt; cat /proc/self/cwd/secret/key; ln -s secret s; cat s/key; \
         cp -r secret copy; cat copy/key; ln token.txt t2; cat t2; umount secret; cat secret/key; true",
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("TOPSECRET"),
        "{}",
        text(&out)
    );
}

#[test]
fn only_the_listed_programs_execute() {
    if !layers() {
        return;
    }
    let d = dirs();
    let mut p = policy(&d.work);
    let echo_bin = std::fs::canonicalize("/usr/bin/env").unwrap();
    p.exec = Exec::Only(vec![std::fs::canonicalize("/bin/bash").unwrap(), echo_bin]);
    let sandbox = Sandbox::new(p).unwrap();
    std::fs::copy("/usr/bin/touch", d.work.join("t")).unwrap();
    let out = run(
        &sandbox,
        &d.work,
        "touch viatouch; ./t viacopy; env touch viaenv; /usr/bin/env >/dev/null && echo ENV-RAN",
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ENV-RAN"),
        "{}",
        text(&out)
    );
    for f in ["viatouch", "viacopy", "viaenv"] {
        assert!(!d.work.join(f).exists(), "{f} was made\n{}", text(&out));
    }
}

#[test]
fn a_denied_program_cannot_run_by_any_name() {
    if !layers() {
        return;
    }
    let d = dirs();
    let mut p = policy(&d.work);
    p.exec = Exec::AllBut(vec![PathBuf::from("/usr/bin/touch")]);
    let sandbox = Sandbox::new(p).unwrap();
    let out = run(
        &sandbox,
        &d.work,
        "touch a; /usr/bin/touch b; /bin/touch c; ln -s /usr/bin/touch t; ./t d; \
         ln /usr/bin/touch h; ./h e; env touch f; echo made > g; true",
    );
    for f in ["a", "b", "c", "d", "e", "f"] {
        assert!(!d.work.join(f).exists(), "{f} was made\n{}", text(&out));
    }
    // Everything else still runs.
    assert_eq!(
        std::fs::read_to_string(d.work.join("g")).unwrap(),
        "made\n",
        "{}",
        text(&out)
    );
}

#[test]
fn no_network_means_no_connection_is_made() {
    if !layers() {
        return;
    }
    let d = dirs();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut p = policy(&d.work);
    p.network = false;
    let sandbox = Sandbox::new(p).unwrap();
    let out = run(
        &sandbox,
        &d.work,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED; true"),
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("CONNECTED"),
        "{}",
        text(&out)
    );
    assert!(
        listener.accept().is_err(),
        "a connection reached the listener"
    );
    // With the network on, the same line connects: the test can fail.
    let sandbox = Sandbox::new(policy(&d.work)).unwrap();
    let out = run(
        &sandbox,
        &d.work,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED; true"),
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("CONNECTED"),
        "{}",
        text(&out)
    );
}

#[test]
fn processes_outside_the_sandbox_cannot_be_signalled_or_read() {
    if !layers() {
        return;
    }
    let d = dirs();
    let mut victim = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = victim.id();
    // The engine makes itself non-dumpable (its environment holds the provider's key); so
    // does this test process, standing in for it.
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    let engine = std::process::id();
    // The sandbox always enters a user namespace of its own when it hides or protects a path.
    let mut p = policy(&d.work);
    p.network = false;
    let sandbox = Sandbox::new(p).unwrap();
    let out = run(
        &sandbox,
        &d.work,
        &format!(
            "kill -9 {pid}; kill -9 -1; kill -STOP {engine}; cat /proc/{engine}/environ && echo READ; \
             cat /proc/{pid}/environ && echo READ; ls /proc/{pid}/root/ && echo ROOT; ls /proc/{engine}/cwd/ && echo CWD; true"
        ),
    );
    assert!(
        victim.try_wait().unwrap().is_none(),
        "the victim died\n{}",
        text(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("READ") && !stdout.contains("ROOT") && !stdout.contains("CWD"),
        "{}",
        text(&out)
    );
    victim.kill().unwrap();
    let _ = victim.wait();
}
