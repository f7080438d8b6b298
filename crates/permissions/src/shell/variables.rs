//! Variables whose value picks the program a name runs, injects code into a program, or moves
//! the configuration files a program reads (and with them the commands those files may run).
//! Assigning one (`NAME=v cmd`, `export NAME=v`, `env NAME=v`, `for NAME in`, `${NAME:=v}`,
//! `{NAME}>file`, ...) makes a line unresolved: what runs then depends on the value.

/// Exact names.
const NAMES: &[&str] = &[
    // bash itself: the program search, word splitting, prompts and traces that expand
    // (`PS4` under `set -x`, `PS0`/`PROMPT_COMMAND` in interactive shells), startup files and
    // options of shells it starts, the parser's mode, `$"..."` translations.
    "PATH",
    "ENV",
    "IFS",
    "SHELLOPTS",
    "BASHOPTS",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "EXECIGNORE",
    "POSIXLY_CORRECT",
    "TEXTDOMAIN",
    "TEXTDOMAINDIR",
    "INPUTRC",
    "SHELL",
    // Where configuration is read from: `~/.bashrc`, `~/.gitconfig` (`core.fsmonitor`,
    // aliases), `$XDG_CONFIG_HOME/git/config`, zsh's startup files, curl's and wget's.
    "HOME",
    "ZDOTDIR",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "CURL_HOME",
    "WGETRC",
    // Programs that other programs start, or code they load.
    "VISUAL",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "LESS",
    "LESSKEY",
    "LESSKEYIN",
    "MANOPT",
    "GCONV_PATH",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
];

/// Prefixes: the dynamic loader, bash's own (`BASH_ENV`, `BASH_XTRACEFD`, ...), git's
/// (`GIT_CONFIG_*`, `GIT_EXEC_PATH`, `GIT_SSH_COMMAND`, ...), and interpreters' start-up
/// options and module paths.
const PREFIXES: &[&str] = &[
    "LD_", "DYLD_", "BASH_", "GIT_", "PERL", "PYTHON", "RUBY", "NODE_", "LUA_",
];

/// Suffixes: `PAGER`, `GIT_EDITOR`, `SUDO_EDITOR`, `SSH_ASKPASS`, ...
const SUFFIXES: &[&str] = &["PAGER", "EDITOR", "ASKPASS"];

/// Whether assigning `name` changes which program runs or injects code into one.
pub(crate) fn is_dangerous(name: &str) -> bool {
    NAMES.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Whether `name` is a shell variable name (`[A-Za-z_][A-Za-z0-9_]*`).
pub(crate) fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}
