//! The model server is checked before anything is recorded: a base URL that is no http(s)
//! URL with a host is a bad argument (exit 2), and a server that is not running fails the
//! command once, with what to do (exit 1), before a session is created or a resumed one
//! records the prompt. The real binary, real sockets on 127.0.0.1.

use crate::common;

use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;

use common::Env;
use turnstile_scripted_model::Script;

/// A loopback port nothing listens on (bound, then released).
fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// `turnstile ARGS --base-url URL` on `env`'s directories.
fn at(env: &Env, url: &str, args: &[&str]) -> Output {
    Command::cargo_bin("turnstile")
        .unwrap()
        .arg("--state-dir")
        .arg(env.state.path())
        .args(args)
        .args(["--model", "test-model", "--base-url", url, "--cwd"])
        .arg(env.work.path())
        .env_remove("HTTPS_PROXY")
        .env_remove("HTTP_PROXY")
        .env_remove("ALL_PROXY")
        .output()
        .unwrap()
}

fn sessions(env: &Env) -> usize {
    std::fs::read_dir(env.state.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().is_dir())
        .count()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_base_url_that_is_not_http_with_a_host_is_a_bad_argument() {
    let env = Env::new();
    let server = env.server(Script::new().text("unused"));
    for (url, said) in [
        ("not a url", "has no scheme"),
        (
            "127.0.0.1:18015/v1",
            "give one like http://127.0.0.1:18015/v1",
        ),
        ("htp://127.0.0.1:18015/v1", "\"htp\" is not http or https"),
        ("http://:8000/v1", "empty host"),
    ] {
        let out = at(&env, url, &["run", "hello"]);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{url}: {text}");
        assert!(
            text.contains("flag --base-url: base URL") && text.contains(said),
            "{url}: {text}"
        );
        assert_eq!(text.lines().count(), 1, "one line: {text}");
    }
    assert_eq!(sessions(&env), 0, "no session was created");
    assert!(server.requests().is_empty());
}

#[test]
fn no_server_fails_once_with_a_hint_and_records_nothing() {
    let env = Env::new();
    let server = env.server(Script::new().text("first answer"));
    let dead = format!("http://127.0.0.1:{}/v1", dead_port());

    let out = at(&env, &dead, &["run", "hello"]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(text.matches("error").count(), 1, "said once: {text}");
    assert!(
        text.contains(&format!("no model server answers at {dead}"))
            && text.contains("start a server there or pass --base-url"),
        "{text}"
    );
    assert_eq!(sessions(&env), 0, "no session was created");

    // A resume toward a dead server leaves the journal as it was: the prompt is not in it.
    env.run_ok(&server, &["run", "hello"]);
    let (id, journal) = env.only_session();
    let before = std::fs::read(&journal).unwrap();
    let out = at(&env, &dead, &["resume", &id, "the same prompt"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was sent"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&journal).unwrap(), before);
}

#[test]
fn https_to_a_plain_http_server_is_refused_before_the_session() {
    let env = Env::new();
    let server = env.server(Script::new().text("unused"));
    let https = server.url().replace("http://", "https://");
    let out = at(&env, &https, &["run", "hello"]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("does not answer TLS") && text.contains("http://"),
        "{text}"
    );
    assert_eq!(sessions(&env), 0, "no session was created");
}
