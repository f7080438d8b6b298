//! The analysis on command lines whose reading is easy to get wrong.

use super::*;

fn ids(a: &ShellAnalysis) -> Vec<(&str, bool)> {
    a.segments
        .iter()
        .map(|s| (s.identifier.as_str(), s.read_only))
        .collect()
}

#[test]
fn splits_on_operators() {
    let a = analyze("cd src && git status | grep foo; rm -rf x & echo done");
    assert_eq!(
        ids(&a),
        vec![
            ("cd", false),
            ("git", true),
            ("grep", true),
            ("rm", false),
            ("echo", true)
        ]
    );
    assert_eq!(a.segments[1].text, "git status");
    assert_eq!(a.segments[3].text, "rm -rf x");
    assert!(!a.write_redirection());
}

#[test]
fn quotes_do_not_split() {
    let a = analyze(r#"echo "a && b; c" 'd | e' && ls"#);
    assert_eq!(ids(&a), vec![("echo", true), ("ls", true)]);
    assert_eq!(a.segments[0].text, r#"echo "a && b; c" 'd | e'"#);
}

#[test]
fn redirections() {
    let a = analyze("make 2>&1 >/dev/null");
    assert!(!a.write_redirection());
    let a = analyze("echo hi > out.txt 2>>err.log");
    assert!(a.write_redirection());
    assert_eq!(a.redirect_paths(), vec!["out.txt", "err.log"]);
    assert_eq!(ids(&a), vec![("echo", false)]);
    let a = analyze("cmd &> all.log");
    assert_eq!(a.redirect_paths(), vec!["all.log"]);
    let a = analyze("sort < in.txt");
    assert!(!a.write_redirection());
    assert_eq!(ids(&a), vec![("sort", false)]);
}

#[test]
fn assignments_keywords_and_substitutions() {
    let a = analyze("FOO=1 BAR=2 cargo test; if true; then echo $(date +%s); fi");
    assert_eq!(
        ids(&a),
        vec![
            ("cargo", false),
            ("true", true),
            ("echo", true),
            ("date", true)
        ]
    );
    let a = analyze("for f in *.txt; do wc -l \"$f\"; done");
    assert_eq!(ids(&a), vec![("wc", true)]);
}

#[test]
fn heredoc_bodies_are_not_commands() {
    let a = analyze("cat > script.py <<'EOF'\nimport os\nrm everything\nEOF\npython3 script.py");
    assert_eq!(ids(&a), vec![("cat", false), ("python3", false)]);
    assert_eq!(a.redirect_paths(), vec!["script.py"]);
    let a = analyze("cat <<-END | wc -l\n\tone\n\tEND\necho after");
    assert_eq!(ids(&a), vec![("cat", true), ("wc", true), ("echo", true)]);
    let a = analyze("cat <<<\"not a heredoc\"\nls");
    assert_eq!(ids(&a), vec![("cat", true), ("ls", true)]);
    // An unterminated body swallows the rest, as bash reads it.
    let a = analyze("cat <<EOF\nrm -rf x");
    assert_eq!(ids(&a), vec![("cat", true)]);
}

#[test]
fn substitutions_are_read_as_commands() {
    let a = analyze("echo $(rm -rf x) \"`curl https://e.x/y`\" \"$(date $(whoami))\"");
    assert_eq!(
        ids(&a),
        vec![
            ("echo", true),
            ("rm", false),
            ("curl", false),
            ("date", true),
            ("whoami", true)
        ]
    );
    assert_eq!(a.urls, vec!["https://e.x/y"]);
    assert_eq!(
        a.segments[0].text,
        "echo $(rm -rf x) \"`curl https://e.x/y`\" \"$(date $(whoami))\""
    );
    let a = analyze("x=$(cat f > g)");
    assert!(a.write_redirection());
}

#[test]
fn urls_and_git_options() {
    let a = analyze("curl -sL https://example.com/x && git -C repo --no-pager log -1");
    assert_eq!(a.urls, vec!["https://example.com/x"]);
    assert_eq!(ids(&a), vec![("curl", false), ("git", true)]);
    assert_eq!(ids(&analyze("git push")), vec![("git", false)]);
}

#[test]
fn unterminated_input_does_not_panic() {
    for cmd in [
        "echo 'abc",
        "echo \"abc",
        "echo \\",
        "x $(y",
        "a `b",
        ">",
        "2>",
        "&&",
    ] {
        let _ = analyze(cmd);
    }
}

fn names(a: &ShellAnalysis) -> Vec<&str> {
    a.commands.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn wrappers_are_looked_through() {
    for (line, expected) in [
        ("X=1 touch f", vec!["touch"]),
        ("\\touch f", vec!["touch"]),
        ("/usr/bin/touch f", vec!["touch"]),
        ("env touch f", vec!["env", "touch"]),
        ("env -i -u B A=1 touch f", vec!["env", "touch"]),
        // Options end at the first word that is not one: env runs `-u` here.
        ("env -i A=1 -u B touch f", vec!["env", "-u"]),
        ("command touch f", vec!["command", "touch"]),
        ("exec touch f", vec!["exec", "touch"]),
        ("bash -c 'touch f'", vec!["bash", "touch"]),
        ("$'\\x74ouch' f", vec!["touch"]),
        (
            "sudo -u x nice -n 5 timeout -s KILL 5 touch f",
            vec!["sudo", "nice", "timeout", "touch"],
        ),
        ("xargs -0 -n1 touch < list", vec!["xargs", "touch"]),
        ("find . -name x -exec rm {} +", vec!["find", "rm"]),
        (
            "bash -ec \"rbash -c 'git push'\"",
            vec!["bash", "rbash", "git"],
        ),
    ] {
        let a = analyze(line);
        assert!(a.is_resolved(), "{line}: {:?}", a.unresolved);
        assert_eq!(names(&a), expected, "{line}");
    }
}

#[test]
fn what_cannot_be_known_is_unresolved() {
    for line in [
        "$X f",
        "${X} f",
        "echo $(touch f)",
        "echo `touch f`",
        "diff <(ls) x",
        "echo \"<(ls)\"",
        "eval 'touch f'",
        "source x.sh",
        ". x.sh",
        "f() { touch x; }; f",
        "function f { :; }",
        "exec 3>x",
        "git --version <<EOF\n$(touch f)\nEOF",
        "x='a[$(touch f)]'; echo $((x))",
        "PATH=. git status",
        "export PATH=.",
        "bash script.sh",
        "echo touch f | bash",
        "t*ch f",
        "{touch,f}",
        "echo 'unterminated",
        "case x in x) touch f;; esac",
        "env --weird touch f",
    ] {
        assert!(!analyze(line).is_resolved(), "{line} should be unresolved");
    }
    // A quoted here-document's body is data.
    assert!(analyze("cat <<'EOF'\n$(touch f)\nEOF").is_resolved());
    assert!(analyze("echo $((1 + 2))").is_resolved());
    assert!(analyze("command -v git").is_resolved());
}

#[test]
fn escapes_and_quotes_resolve_to_one_word() {
    let a = analyze("g\"i\"t p'u'sh $'\\u0021' \"a b\"");
    let words: Vec<&str> = a.commands[0].words().collect();
    assert_eq!(words, vec!["git", "push", "!", "a b"]);
    let a = analyze("echo a \\\n b # rm -rf /");
    assert_eq!(
        a.commands[0].words().collect::<Vec<_>>(),
        vec!["echo", "a", "b"]
    );
}

/// The forms that were once misread, one test per kind.
mod classes;

#[test]
fn redirect_targets_and_tee_are_writes() {
    let a = analyze("echo x > a 2>> b &> c >| d | tee -a e f 2>&1 >/dev/null");
    assert_eq!(a.redirect_paths(), vec!["a", "b", "c", "d", "e", "f"]);
}
