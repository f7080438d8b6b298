//! The policy's rules on real permission requests of the built-in tools (those of `web_fetch`
//! and the registry's names are checked where the tools live, in `turnstile-tools`).

use std::path::Path;

use serde_json::json;

use super::*;

const CWD: &str = "/work/repo";

/// The request of a `bash` call of `cmd` described "d".
fn shell(cmd: &str) -> PermissionAsk {
    PermissionAsk::shell(cmd, "d".to_owned())
}

fn write(path: &str) -> PermissionAsk {
    PermissionAsk {
        kind: PermissionKind::Write,
        request: json!({"kind":"write","fileName":path}),
        intention: String::new(),
        subject: path.to_owned(),
        shell: None,
    }
}

fn policy(allow_all: bool, allow: &[&str], deny: &[&str]) -> PermissionPolicy {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    PermissionPolicy::from_flags(allow_all, &s(allow), &s(deny)).unwrap()
}

fn decide(p: &PermissionPolicy, tool: &str, ask: &PermissionAsk) -> Decision {
    p.decide(tool, ask, Path::new(CWD), false)
}

fn approved(p: &PermissionPolicy, cmd: &str) -> bool {
    decide(p, "bash", &shell(cmd)) == Decision::Approved
}

#[test]
fn programs_prefixes_and_globs() {
    let p = policy(false, &["shell(git)"], &[]);
    assert!(approved(&p, "git status"));
    assert!(!approved(&p, "rm -rf x"));
    assert_eq!(
        p.decide("bash", &shell("rm -rf x"), Path::new(CWD), true),
        Decision::Ask
    );
    let p = policy(false, &["shell(git push:*)"], &[]);
    assert!(approved(&p, "git push origin main"));
    assert!(!approved(&p, "git pull"));
    let p = policy(false, &["write(src/**)"], &[]);
    assert_eq!(
        decide(&p, "edit", &write("/work/repo/src/a/b.rs")),
        Decision::Approved
    );
    assert!(matches!(
        decide(&p, "edit", &write("/work/repo/Cargo.toml")),
        Decision::NoApprovalRule { .. }
    ));
    let p = policy(false, &["edit"], &[]);
    assert_eq!(
        decide(&p, "edit", &write("/work/repo/x")),
        Decision::Approved
    );
    assert!(matches!(
        decide(&p, "create", &write("/work/repo/x")),
        Decision::NoApprovalRule { .. }
    ));
}

#[test]
fn deny_wins_and_every_command_of_a_line_must_be_allowed() {
    let p = policy(true, &[], &["shell(rm)"]);
    assert_eq!(
        decide(&p, "bash", &shell("ls && rm -rf /")),
        Decision::DeniedByRules(vec!["shell(rm)".into()])
    );
    let p = policy(false, &["shell(ls)"], &[]);
    assert!(!approved(&p, "ls && rm x"));
    let p = policy(false, &["shell"], &["write"]);
    assert!(approved(&p, "ls"));
    assert!(matches!(
        decide(&p, "create", &write("/work/repo/a")),
        Decision::DeniedByRules(_)
    ));
    assert!(matches!(
        decide(&p, "bash", &shell("echo > a")),
        Decision::DeniedByRules(_)
    ));
}

#[test]
fn deny_rules_see_through_everything_listed() {
    let p = policy(true, &[], &["shell(touch)"]);
    for cmd in [
        "X=1 touch f",
        "\\touch f",
        "/usr/bin/touch f",
        "env touch f",
        "command touch f",
        "exec touch f",
        "bash -c 'touch f'",
        "$'\\x74ouch' f",
    ] {
        assert!(
            matches!(decide(&p, "bash", &shell(cmd)), Decision::DeniedByRules(_)),
            "{cmd}"
        );
    }
    let p = policy(true, &[], &["shell(git push:*)"]);
    assert!(!approved(&p, "true && git push"));
    assert!(!approved(&p, "git -C . push"));
    assert!(approved(&p, "git log --grep push"));
}

#[test]
fn paths_are_relative_to_the_working_directory() {
    let p = policy(true, &[], &["write(src/**)"]);
    assert!(matches!(
        decide(&p, "create", &write("/work/repo/src/a.rs")),
        Decision::DeniedByRules(_)
    ));
    assert!(matches!(
        decide(&p, "bash", &shell("echo x > src/a.rs")),
        Decision::DeniedByRules(_)
    ));
    assert!(approved(&p, "echo x > docs/a.md"));
    let p = policy(true, &[], &["write(*.txt)"]);
    assert_eq!(
        decide(&p, "create", &write("/work/repo/src/x.txt")),
        Decision::Approved
    );
    assert!(matches!(
        decide(&p, "create", &write("/work/repo/x.txt")),
        Decision::DeniedByRules(_)
    ));
}

#[test]
fn read_tools_and_client_tools_can_be_denied() {
    let cwd = Path::new(CWD);
    let file = [std::path::PathBuf::from("secret/key")];
    for deny in ["view", "read", "read(secret/**)", "view(secret/*)"] {
        let p = policy(true, &[], &[deny]);
        assert_eq!(
            p.denied_unasked("view", Unasked::Builtin(&file), cwd),
            vec![deny],
            "{deny}"
        );
    }
    let p = policy(true, &[], &["read(secret/**)"]);
    assert!(
        !p.denied_unasked("grep", Unasked::Builtin(&[]), cwd)
            .is_empty()
    );
    assert!(
        p.denied_unasked("grep", Unasked::Builtin(&["src".into()]), cwd)
            .is_empty()
    );
    assert!(
        p.denied_unasked("task_complete", Unasked::Builtin(&[]), cwd)
            .is_empty()
    );
    let p = policy(true, &[], &["custom-tool(deploy)"]);
    assert!(!p.denied_unasked("deploy", Unasked::Client, cwd).is_empty());
    assert!(p.denied_unasked("other", Unasked::Client, cwd).is_empty());
    let p = policy(true, &[], &["bash"]);
    assert!(!p.denied_unasked("bash", Unasked::Client, cwd).is_empty());
}

#[test]
fn denials_say_which_pattern_allows() {
    let p = policy(false, &["shell(git)"], &[]);
    let d = decide(&p, "bash", &shell("git add . && touch f > out.txt"));
    assert_eq!(
        d.hint(),
        " (allow with --allow-tool 'shell(touch)' --allow-tool 'write(out.txt)')"
    );
    let d = decide(&p, "bash", &shell("git $(touch f)"));
    assert!(d.hint().contains("command substitution"), "{}", d.hint());
}

#[test]
fn bad_and_unknown_patterns_are_clear() {
    for bad in [
        "",
        "shell(",
        "shell()",
        "sh ell",
        "write([)",
        "viwe",
        "url(a*b)",
        "task_complete(x)",
    ] {
        let err = ToolPattern::parse(bad).unwrap_err().to_string();
        assert!(
            err.contains("invalid tool pattern") && err.contains("valid tools: bash"),
            "{bad}: {err}"
        );
    }
    for good in [
        "view",
        "read",
        "grep(src/**)",
        "custom-tool(deploy)",
        "bash(git:*)",
        "write(/tmp/**)",
    ] {
        ToolPattern::parse(good).unwrap();
    }
}

/// The request an MCP tool of `server` called `tool` asks (the adapter's shape).
fn mcp(server: &str, tool: &str) -> PermissionAsk {
    PermissionAsk {
        kind: PermissionKind::Other("mcp".into()),
        request: json!({"kind": "mcp", "serverName": server, "toolName": format!("{server}-{tool}"),
                        "toolTitle": tool, "args": {}, "readOnly": false}),
        intention: String::new(),
        subject: tool.to_owned(),
        shell: None,
    }
}

fn mcp_policy(
    allow_all: bool,
    allow: &[&str],
    deny: &[&str],
    servers: &[&str],
) -> PermissionPolicy {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    PermissionPolicy::from_flags_with_mcp(allow_all, &s(allow), &s(deny), &s(servers)).unwrap()
}

#[test]
fn mcp_patterns_name_a_server_or_one_of_its_tools() {
    let servers = ["demo", "demo2", "a-b", "a"];
    let p = mcp_policy(false, &["demo"], &[], &servers);
    assert_eq!(
        decide(&p, "demo-echo", &mcp("demo", "echo")),
        Decision::Approved
    );
    // Not a prefix of the server's name, nor another server.
    assert!(matches!(
        decide(&p, "demo2-echo", &mcp("demo2", "echo")),
        Decision::NoApprovalRule { .. }
    ));
    let p = mcp_policy(false, &["demo(echo)"], &[], &servers);
    assert_eq!(
        decide(&p, "demo-echo", &mcp("demo", "echo")),
        Decision::Approved
    );
    for (server, tool) in [
        ("demo", "echo2"),
        ("demo", "ech"),
        ("demo", "Echo"),
        ("demo2", "echo"),
        ("demo", "*"),
    ] {
        assert!(
            matches!(
                decide(&p, &format!("{server}-{tool}"), &mcp(server, tool)),
                Decision::NoApprovalRule { .. }
            ),
            "{server}({tool})"
        );
    }
    // `a(b-c)` and `a-b(c)` both flatten to `a-b-c`: the pattern matches the pair, not the name.
    let p = mcp_policy(false, &["a(b-c)"], &[], &servers);
    assert_eq!(decide(&p, "a-b-c", &mcp("a", "b-c")), Decision::Approved);
    assert!(matches!(
        decide(&p, "a-b-c", &mcp("a-b", "c")),
        Decision::NoApprovalRule { .. }
    ));
    // A glob is a name, not a wildcard.
    let p = mcp_policy(false, &["demo(*)"], &[], &servers);
    assert!(matches!(
        decide(&p, "demo-echo", &mcp("demo", "echo")),
        Decision::NoApprovalRule { .. }
    ));
}

#[test]
fn mcp_deny_wins_over_allow_all_and_the_server_allow() {
    let servers = ["demo"];
    let p = mcp_policy(true, &["demo"], &["demo(pid)"], &servers);
    assert_eq!(
        decide(&p, "demo-pid", &mcp("demo", "pid")),
        Decision::DeniedByRules(vec!["demo(pid)".into()])
    );
    assert_eq!(
        decide(&p, "demo-echo", &mcp("demo", "echo")),
        Decision::Approved
    );
    let p = mcp_policy(true, &[], &["demo"], &servers);
    assert!(matches!(
        decide(&p, "demo-echo", &mcp("demo", "echo")),
        Decision::DeniedByRules(_)
    ));
    // Another kind's rules do not reach MCP calls, nor MCP rules other calls.
    let p = mcp_policy(false, &["shell", "write", "custom-tool"], &[], &servers);
    assert!(matches!(
        decide(&p, "demo-echo", &mcp("demo", "echo")),
        Decision::NoApprovalRule { .. }
    ));
    let p = mcp_policy(false, &["demo"], &[], &servers);
    assert!(matches!(
        decide(&p, "bash", &shell("ls")),
        Decision::NoApprovalRule { .. }
    ));
    // A request without a server name (a forged one) matches no server rule.
    let mut forged = mcp("demo", "echo");
    forged.request["serverName"] = json!("");
    assert!(matches!(
        decide(&p, "demo-echo", &forged),
        Decision::NoApprovalRule { .. }
    ));
}

#[test]
fn mcp_patterns_need_a_configured_server_and_say_how_to_allow() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let err = PermissionPolicy::from_flags_with_mcp(false, &s(&["dmeo(echo)"]), &[], &s(&["demo"]))
        .unwrap_err();
    assert!(err.to_string().contains("MCP server"), "{err}");
    assert!(PermissionPolicy::from_flags(false, &s(&["demo"]), &[]).is_err());
    // A built-in name stays the built-in even when a server has that name.
    let p = mcp_policy(false, &["bash"], &[], &["bash"]);
    assert!(matches!(
        decide(&p, "bash-x", &mcp("bash", "x")),
        Decision::NoApprovalRule { .. }
    ));
    let p = mcp_policy(false, &[], &[], &["demo"]);
    let d = decide(&p, "demo-echo", &mcp("demo", "echo"));
    assert_eq!(d.hint(), " (allow with --allow-tool 'demo(echo)')");
}
