//! Lines of each kind that was once read wrongly (a program missed or misnamed, or a line
//! resolved that bash runs differently): each is read exactly as bash runs it, or unresolved.
//! `crates/permissions/tests/shell_classes.rs` runs the same lines in bash and checks their
//! effects against the policy.

use super::super::*;

fn names(line: &str) -> Vec<String> {
    analyze(line)
        .commands
        .iter()
        .map(|c| c.name.clone())
        .collect()
}

#[track_caller]
fn resolved_as(line: &str, expected: &[&str]) {
    let a = analyze(line);
    assert!(a.is_resolved(), "{line:?}: {:?}", a.unresolved);
    assert_eq!(names(line), expected, "{line:?}");
}

#[track_caller]
fn unresolved(line: &str) {
    let a = analyze(line);
    assert!(
        !a.is_resolved(),
        "{line:?} should be unresolved: {:?}",
        names(line)
    );
}

/// Unresolved, and still lists `expected` among its commands (for deny rules and people).
#[track_caller]
fn unresolved_listing(line: &str, expected: &str) {
    unresolved(line);
    assert!(
        names(line).iter().any(|n| n == expected),
        "{line:?} should list {expected}: {:?}",
        names(line)
    );
}

#[test]
fn named_descriptor_redirects_are_redirects() {
    resolved_as("{fd}>/dev/null touch m", &["touch"]);
    resolved_as("touch m {fd}>&2", &["touch"]);
    resolved_as("{fd}<in cat", &["cat"]);
    let a = analyze("{fd}>out touch m");
    assert_eq!(a.redirect_paths(), vec!["out"]);
    // Quoted, or not a name: a word like any other (the command bash fails to find).
    resolved_as("'{fd}'>/dev/null touch m", &["{fd}"]);
    resolved_as("{1}>/dev/null touch m", &["{1}"]);
    // The descriptor's number goes into the variable.
    unresolved("{PATH}>/dev/null touch m");
    unresolved("{a[$(touch m)]}>/dev/null true");
}

#[test]
fn time_reads_p_and_double_dash_itself() {
    resolved_as("time -- touch m", &["touch"]);
    resolved_as("time -p touch m", &["touch"]);
    resolved_as("time -p -- touch m", &["touch"]);
    resolved_as("! time -p touch m", &["touch"]);
    // Quoted, `-p` is the command; after `--`, too.
    resolved_as("time '-p' touch m", &["-p"]);
    resolved_as("time -- -p touch m", &["-p"]);
    // In POSIX mode `time -f x cmd` runs the time program, and cmd.
    unresolved("time -f %e touch m");
}

#[test]
fn quotes_inside_parameter_expansions() {
    // bash's `${` ends after `'}'`: touch runs.
    unresolved_listing("echo ${X:-'}'} ; touch m ; # '", "touch");
    unresolved_listing("echo \"${X:-'}'}\" ; touch m ; # '", "touch");
    unresolved_listing("echo ${X:-$'\\''} ; touch m ; # '", "touch");
    // Double quotes inside were always followed; backticks inside are skipped over.
    resolved_as("echo ${X:-\"}\"} ; touch m", &["echo", "touch"]);
    unresolved_listing("echo ${X:-`echo }`} ; touch m", "touch");
    // `${ cmd; }` runs cmd in bash 5.3.
    unresolved("echo ${ touch m; }");
    unresolved("echo ${|touch m;}");
    resolved_as("echo ${HOME} ${#} ${1:-x} ${X:-a b}", &["echo"]);
}

#[test]
fn a_nul_ends_an_ansi_c_string() {
    for line in [
        "$'rm\\0dir' -rf d",
        "$'rm\\x00dir' -rf d",
        "$'rm\\000dir' -rf d",
        "$'rm\\u0000dir' -rf d",
        "$'rm\\c@dir' -rf d",
        "$'rm\\400dir' -rf d",
    ] {
        resolved_as(line, &["rm"]);
    }
    // The word goes on after the quotes.
    resolved_as("$'rm\\0dir'dir d", &["rmdir"]);
    // The closing quote is found before decoding: `\c'` does not swallow it.
    resolved_as("echo $'\\c' ; touch m\n#'", &["echo", "touch"]);
    assert_eq!(analyze("echo $'\\c'").commands[0].args[0].value, "\\c");
    // Escapes bash leaves as written, and one it reads differently from C.
    let a = analyze("echo $'\\x' $'\\xg' $'\\u' $'\\c?' $'\\c\\\\b' $'\\0101'");
    let args: Vec<&str> = a.commands[0]
        .args
        .iter()
        .map(|w| w.value.as_str())
        .collect();
    assert_eq!(args, ["\\x", "\\xg", "\\u", "\x7f", "\x1cb", "\x081"]);
    // Bytes that are not UTF-8 cannot be compared with a rule.
    unresolved("$'\\xff' x");
    resolved_as("$'\\xc3\\xa9' x", &["é"]);
}

#[test]
fn for_without_in_runs_its_body() {
    resolved_as("for x do touch m; done", &["touch"]);
    resolved_as("for x; do touch m; done", &["touch"]);
    resolved_as("for x\ndo touch m; done", &["touch"]);
    resolved_as("for x; { touch m; }", &["touch"]);
    resolved_as("for x\n{ touch m; }", &["touch"]);
    resolved_as("for x in a b; { touch m; }", &["touch"]);
    resolved_as("for x\nin a b\ndo touch m; done", &["touch"]);
    resolved_as("select x in a; do touch m; done", &["touch"]);
    // The loop variable is assigned.
    unresolved("for PATH in .; do ls; done");
}

#[test]
fn env_is_read_as_gnu_env_reads_it() {
    resolved_as("env -- A=1 touch m", &["env", "touch"]);
    resolved_as("env - A=1 touch m", &["env", "touch"]);
    resolved_as("env -iu HOME touch m", &["env", "touch"]);
    resolved_as("env -uHOME touch m", &["env", "touch"]);
    resolved_as("env --unset=HOME --chdir /tmp touch m", &["env", "touch"]);
    resolved_as("env -S 'touch m'", &["env", "touch"]);
    resolved_as("env -S'touch m'", &["env", "touch"]);
    resolved_as("env --split-string='touch m'", &["env", "touch"]);
    resolved_as("env --split-string 'touch m'", &["env", "touch"]);
    // The split words are read again: options and assignments included.
    resolved_as("env -S '-i A=1 touch' m", &["env", "touch"]);
    resolved_as("env -vS'-u X touch' m", &["env", "touch"]);
    unresolved("env -S 'PATH=. touch' m");
    // A word starting with `#` ends the string; `#` inside a word does not.
    resolved_as("env -S '# x' touch m", &["env", "touch"]);
    resolved_as("env -S 'touch a#b'", &["env", "touch"]);
    // env's own quoting and `${NAME}` in -S strings.
    unresolved_listing("env -S \"'touch' m\"", "env");
    unresolved("env -S 'touch ${X}'");
    // Assignments whatever their quoting; names only known at run time.
    unresolved("env 'PATH'=. touch m");
    unresolved("env \"$N\"=. touch m");
    unresolved("sudo 'PATH=.' touch m");
    // A value missing at the end: env refuses to run.
    resolved_as("env --unset", &["env"]);
    resolved_as("env -u", &["env"]);
    // Abbreviated or unknown long options.
    unresolved("env --split 'touch m'");
    unresolved("env --ignore touch m");
}

#[test]
fn name_references_are_unresolved() {
    for line in [
        "declare -n X=PATH",
        "typeset -n X=PS4",
        "f() { local -n X=BASH_ENV; }",
        "local -n X",
        "declare -rn X=PATH",
        "readonly -n X=PATH",
        "export -n PATH",
        "declare +n X",
    ] {
        unresolved(line);
    }
    resolved_as("declare -r X=1", &["declare"]);
}

#[test]
fn dangerous_assignments() {
    for line in [
        "HOME=evil bash -i",
        "HOME=dir git status",
        "XDG_CONFIG_HOME=x git status",
        "ZDOTDIR=x zsh -c true",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=sh git log",
        "PROMPT_COMMAND='touch m' bash -i",
        "PS0='$(touch m)' bash",
        "PS4='$(touch m)' bash -xc true",
        "ENV=x sh -i",
        "SHELLOPTS=xtrace git status",
        "BASHOPTS=extglob git status",
        "POSIXLY_CORRECT=1 git status",
        "GIT_EDITOR=x git commit",
        "export HOME=x",
        ": ${PATH:=.}",
        ": ${BASH_ENV=x}",
        "cat <<EOF\n${LD_PRELOAD:=x}\nEOF",
    ] {
        unresolved(line);
    }
    resolved_as(": ${X:=1}", &[":"]);
}

#[test]
fn git_options_that_run_commands() {
    for line in [
        "git -c alias.x='!touch m' x",
        "git -c core.fsmonitor='touch m' status",
        "git -c core.pager=less log",
        "git -c include.path=x status",
        "git --config-env=core.pager=X log",
        "git --config-env core.pager=X log",
        "git --exec-path=. status",
        "git -C . -c alias.x='!touch m' x",
        "git $OPTS status",
        "git {-c,alias.x=\\!touch\\ m} x",
        "git * status",
        "env git -c alias.x='!touch m' x",
    ] {
        unresolved(line);
    }
    resolved_as(
        "git -c user.name=x -c color.ui=always -C repo --no-pager log",
        &["git"],
    );
    resolved_as("git --exec-path", &["git"]);
    resolved_as("git {status,log}", &["git"]);
    // The subcommand's own options are its own.
    resolved_as("git log -c", &["git"]);
}

#[test]
fn shells_other_than_bash_are_listed_but_unresolved() {
    resolved_as("rbash -c 'touch m'", &["rbash", "touch"]);
    resolved_as("bash -eo pipefail -c 'touch m'", &["bash", "touch"]);
    resolved_as("bash --norc -c 'touch m'", &["bash", "touch"]);
    for shell in ["sh", "dash", "ksh", "mksh", "zsh", "ash", "yash", "fish"] {
        unresolved_listing(&format!("{shell} -c 'touch m'"), "touch");
    }
    unresolved_listing("busybox sh -c 'touch m'", "touch");
    // dash reads `&>` as `&` then `>`: the listing (bash's reading) misses touch, and the
    // line is unresolved.
    unresolved("sh -c 'echo x &>/dev/null touch m'");
    for line in [
        "rbash script.sh",
        "rbash",
        "bash -i",
        "bash",
        "bash -i -c 'touch m'",
        "bash -l -c 'touch m'",
        "bash --login -c 'touch m'",
        "bash --rcfile x -c true",
        "bash -s",
        "bash -O extglob -c 'touch m'",
        "bash -o posix -c 'touch m'",
        "bash -k -c 'touch m'",
        "bash --debugger -c true",
    ] {
        unresolved(line);
    }
}

#[test]
fn options_that_change_how_text_is_read() {
    for line in [
        "shopt -s extglob\n!(x) m",
        "set -k; git status GIT_DIR=x",
        "set -o posix",
        "set -ko pipefail",
        "exec -a rm busybox -rf d",
    ] {
        unresolved(line);
    }
    resolved_as(
        "set -euo pipefail; shopt -s nullglob globstar; shopt extglob; ls",
        &["set", "shopt", "shopt", "ls"],
    );
    resolved_as("set -- a b; set -x", &["set", "set"]);
}
