//! Live rules on real permission requests of the built-in tools, adversarial ones first.

use serde_json::json;

use super::*;
use crate::PermissionKind;

/// The request of a `bash` call of `cmd` described "d".
fn shell(cmd: &str) -> PermissionAsk {
    PermissionAsk::shell(cmd, "d".to_owned())
}

fn ask(request: Value) -> PermissionAsk {
    PermissionAsk {
        kind: PermissionKind::Other(request["kind"].as_str().unwrap().to_owned()),
        request,
        intention: String::new(),
        subject: String::new(),
        shell: None,
    }
}

fn approved_for_session(approval: Value) -> LiveRules {
    let live = LiveRules::default();
    live.remember(&json!({"kind": "approved-for-session", "approval": approval}));
    live
}

fn approves(live: &LiveRules, ask: &PermissionAsk) -> bool {
    live.decide(ask) == Some(LiveDecision::Approved)
}

#[test]
fn a_command_approval_covers_that_command_only() {
    let live = approved_for_session(json!({"kind": "commands", "commandIdentifiers": ["echo"]}));
    assert!(approves(&live, &shell("echo one")));
    assert!(approves(&live, &shell("echo two; echo three")));
    for other in [
        "ls",
        "echo hi && rm -rf x",
        "echo hi | sh",
        "echoo hi",
        "rm -rf ~",
        "echo $(rm -rf ~)",
        "echo `id`",
        "$CMD hi",
        "echo hi > ~/.bashrc",
        "eval echo hi",
    ] {
        assert_eq!(live.decide(&shell(other)), None, "{other} must be asked");
    }
}

#[test]
fn approving_a_wrapper_does_not_approve_what_it_runs() {
    for wrapper in ["env", "sudo", "xargs", "timeout", "sh"] {
        let live =
            approved_for_session(json!({"kind": "commands", "commandIdentifiers": [wrapper]}));
        for line in [
            "env rm -rf x",
            "sudo rm -rf x",
            "xargs rm",
            "timeout 5 rm -rf x",
            "sh -c 'rm -rf x'",
        ] {
            assert_eq!(live.decide(&shell(line)), None, "{wrapper}: {line}");
        }
    }
}

#[test]
fn a_write_approval_covers_writes_and_redirections_of_approved_commands() {
    let live = approved_for_session(json!({"kind": "write"}));
    let file = ask(json!({"kind": "write", "fileName": "/work/repo/a.txt"}));
    assert!(approves(&live, &file));
    assert_eq!(
        live.decide(&shell("echo hi > a.txt")),
        None,
        "echo is not approved"
    );
    live.add(
        RuleScope::Session,
        &[PermissionRule::new("shell", Some("echo"))],
    );
    assert!(approves(&live, &shell("echo hi > a.txt")));
    assert_eq!(
        live.decide(&ask(json!({"kind": "read", "path": "x"}))),
        None
    );
}

#[test]
fn a_custom_tool_approval_names_the_tool() {
    let live = approved_for_session(json!({"kind": "custom-tool", "toolName": "lookup"}));
    assert!(approves(
        &live,
        &ask(json!({"kind": "custom-tool", "toolName": "lookup"}))
    ));
    assert_eq!(
        live.decide(&ask(json!({"kind": "custom-tool", "toolName": "deploy"}))),
        None
    );
    assert_eq!(
        live.decide(&ask(json!({"kind": "custom-tool"}))),
        None,
        "a request without a name is never covered"
    );
}

#[test]
fn answers_that_are_not_scoped_remember_nothing() {
    let live = LiveRules::default();
    for result in [
        json!({"kind": "approved"}),
        json!({"kind": "denied-interactively-by-user", "approval": {"kind": "write"}}),
        json!({"kind": "approved-for-session"}),
        json!({"kind": "approved-for-session", "approval": {"kind": "galaxy"}}),
        json!({"kind": "approved-for-session", "approval": {"kind": "commands", "commandIdentifiers": ["", "  "]}}),
        json!({"kind": "approved-for-session", "approval": {"kind": "commands", "commandIdentifiers": "echo"}}),
        json!("approved-for-session"),
    ] {
        live.remember(&result);
    }
    assert!(live.rules(RuleScope::Session).is_empty());
    assert!(live.rules(RuleScope::Location).is_empty());
}

#[test]
fn location_answers_go_to_the_location_scope() {
    let live = LiveRules::default();
    live.remember(&json!({
        "kind": "approved-for-location",
        "approval": {"kind": "commands", "commandIdentifiers": ["git push", "ls"]},
        "locationKey": "/work/repo",
    }));
    assert_eq!(
        live.rules(RuleScope::Location),
        vec![
            PermissionRule::new("shell", Some("git push")),
            PermissionRule::new("shell", Some("ls"))
        ]
    );
    assert!(approves(&live, &shell("ls -la")));
    assert_eq!(
        live.decide(&shell("git push")),
        None,
        "the identifier of `git push` is `git`"
    );
    live.clear(RuleScope::Location);
    assert_eq!(live.decide(&shell("ls")), None);
}

#[test]
fn denied_rules_win_and_see_through_wrappers_and_unresolved_lines() {
    let live = LiveRules::default();
    live.set_approve_all(true);
    live.set_rules(vec![], vec![PermissionRule::new("shell", Some("rm"))]);
    for line in [
        "rm -rf x",
        "sudo rm x",
        "echo hi; /bin/rm x",
        "$(echo rm) x",
    ] {
        assert_eq!(
            live.decide(&shell(line)),
            Some(LiveDecision::Denied(vec!["shell(rm)".into()])),
            "{line}"
        );
    }
    assert_eq!(live.decide(&shell("ls")), Some(LiveDecision::Approved));
    live.set_approve_all(false);
    assert_eq!(live.decide(&shell("ls")), None);
}

#[test]
fn modify_rules_adds_once_and_removes() {
    let live = LiveRules::default();
    let echo = PermissionRule::new("shell", Some("echo"));
    live.add(RuleScope::Session, &[echo.clone(), echo.clone()]);
    assert_eq!(live.rules(RuleScope::Session), vec![echo.clone()]);
    assert!(approves(&live, &shell("echo x")));
    live.remove(RuleScope::Session, &[echo]);
    assert_eq!(live.decide(&shell("echo x")), None);
}

#[test]
fn url_rules_match_the_domain() {
    let live = LiveRules::default();
    live.add(
        RuleScope::Session,
        &[PermissionRule::new("url", Some("example.com"))],
    );
    let url = |u: &str| ask(json!({"kind": "url", "url": u}));
    assert!(approves(&live, &url("https://example.com/a?b")));
    assert!(approves(&live, &url("http://user@example.com:8080/")));
    assert_eq!(live.decide(&url("https://example.com.evil.net/")), None);
    assert_eq!(live.decide(&url("https://evil.net/example.com")), None);
}

#[test]
fn unrestricted_urls_approve_fetches_only_and_deny_rules_still_win() {
    let live = LiveRules::default();
    let url = |u: &str| ask(json!({"kind": "url", "url": u}));
    assert_eq!(live.decide(&url("https://example.com/")), None);
    live.set_approve_urls(true);
    assert!(approves(&live, &url("https://example.com/")));
    assert!(approves(&live, &url("http://10.255.255.1/x")));
    assert_eq!(
        live.decide(&shell("rm -rf /")),
        None,
        "a fetch mode approves no command"
    );
    assert_eq!(
        live.decide(&ask(json!({"kind": "write", "fileName": "/etc/passwd"}))),
        None
    );
    live.set_rules(
        Vec::new(),
        vec![PermissionRule::new("url", Some("evil.net"))],
    );
    assert_eq!(
        live.decide(&url("https://evil.net/")),
        Some(LiveDecision::Denied(vec!["url(evil.net)".into()]))
    );
    live.set_approve_urls(false);
    assert_eq!(live.decide(&url("https://example.com/")), None);
}
