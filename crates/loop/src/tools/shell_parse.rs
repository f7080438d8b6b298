//! A shallow reading of a shell command for its permission request: which
//! commands it runs, whether it redirects output into files, which URLs it
//! names. It is a description for policies and people, not a security
//! boundary (the policy still sees the full command text), so it errs
//! towards reporting more rather than less.

/// What the permission request says about a command line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ShellAnalysis {
    /// One entry per simple command, in order.
    pub segments: Vec<Segment>,
    /// Whether any output goes into a file (`>`, `>>`, `&>`, ...), `/dev/null` aside.
    pub write_redirection: bool,
    /// The files output is redirected into.
    pub redirect_paths: Vec<String>,
    /// `http(s)://` words.
    pub urls: Vec<String>,
}

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The executable as written, e.g. `git`.
    pub identifier: String,
    /// The segment's text, including its arguments.
    pub text: String,
    /// Whether the command is known to have no side effects.
    pub read_only: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A word with quotes removed, and where it sits in the command text.
    Word {
        text: String,
        start: usize,
        end: usize,
    },
    /// A command separator: `;`, `&&`, `||`, `|`, `|&`, `&`, newline, `(`, `)`.
    Separator,
    /// A redirection operator, e.g. `>`, `2>>`, `&>`, `<`, `>&`.
    Redirect { op: String },
}

/// Reads `command` into segments, redirections and URLs.
pub(crate) fn analyze(command: &str) -> ShellAnalysis {
    analyze_nested(command, 0)
}

/// Command substitutions nested deeper than this are not looked into.
const MAX_NESTING: usize = 8;

fn analyze_nested(command: &str, depth: usize) -> ShellAnalysis {
    let (tokens, substitutions) = tokenize(command);
    let mut analysis = ShellAnalysis::default();
    let mut current = Pending::default();
    let mut i = 0;
    let flush = |pending: &mut Pending, analysis: &mut ShellAnalysis| {
        if let Some(segment) = segment_of(command, pending) {
            analysis.segments.push(segment);
        }
        *pending = Pending::default();
    };
    while i < tokens.len() {
        match &tokens[i] {
            Token::Word { text, start, end } => {
                if text.starts_with("http://") || text.starts_with("https://") {
                    analysis.urls.push(text.clone());
                }
                current.words.push((text.clone(), *start));
                current.end = current.end.max(*end);
            }
            Token::Separator => flush(&mut current, &mut analysis),
            Token::Redirect { op } => {
                // The operator's target is the next word, never a command argument.
                let target = match tokens.get(i + 1) {
                    Some(Token::Word { text, end, .. }) => {
                        i += 1;
                        current.end = current.end.max(*end);
                        Some(text.clone())
                    }
                    _ => None,
                };
                if let Some(target) = target
                    && is_file_write(op, &target)
                {
                    current.writes = true;
                    analysis.write_redirection = true;
                    if !analysis.redirect_paths.contains(&target) {
                        analysis.redirect_paths.push(target);
                    }
                }
            }
        }
        i += 1;
    }
    flush(&mut current, &mut analysis);
    // `$(...)` and backticks run commands too: a deny rule for `rm` must see
    // `echo $(rm -rf x)`.
    if depth < MAX_NESTING {
        for inner in substitutions.iter().map(|s| analyze_nested(s, depth + 1)) {
            analysis.segments.extend(inner.segments);
            analysis.write_redirection |= inner.write_redirection;
            for path in inner.redirect_paths {
                if !analysis.redirect_paths.contains(&path) {
                    analysis.redirect_paths.push(path);
                }
            }
            analysis.urls.extend(inner.urls);
        }
    }
    analysis
}

/// The simple command being read: its words (with where each starts), where
/// it ends (redirections included) and whether it writes a file.
#[derive(Default)]
struct Pending {
    words: Vec<(String, usize)>,
    end: usize,
    writes: bool,
}

/// Whether a redirection writes into a file (rather than reading, duplicating a descriptor or discarding).
fn is_file_write(op: &str, target: &str) -> bool {
    let op = op.trim_start_matches(|c: char| c.is_ascii_digit());
    if op.starts_with('<') || target == "/dev/null" {
        return false;
    }
    if op.ends_with('&') {
        // `2>&1`, `>&-`: descriptor plumbing; `>&file` is both streams into a file.
        return !(target == "-" || target.chars().all(|c| c.is_ascii_digit()));
    }
    true
}

/// Words that open or close compound commands rather than name one.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
    "esac", "in",
];

fn segment_of(command: &str, pending: &Pending) -> Option<Segment> {
    let mut rest = pending.words.as_slice();
    loop {
        let (first, _) = rest.first()?;
        // `for x in ...`, `case x in`, `function f`: the next word is not a command.
        if matches!(first.as_str(), "for" | "case" | "select" | "function") {
            return None;
        }
        let is_assignment = first
            .split_once('=')
            .is_some_and(|(name, _)| !name.is_empty() && is_name(name));
        if KEYWORDS.contains(&first.as_str()) || is_assignment {
            rest = &rest[1..];
            continue;
        }
        break;
    }
    let (identifier, start) = rest.first()?;
    let text = command
        .get(*start..pending.end.max(*start))
        .unwrap_or(identifier)
        .trim_end()
        .to_owned();
    let args: Vec<&str> = rest[1..].iter().map(|(w, _)| w.as_str()).collect();
    Some(Segment {
        identifier: identifier.clone(),
        read_only: !pending.writes && is_read_only(identifier, &args),
        text,
    })
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Commands with no side effects whatever their arguments. Kept short on
/// purpose: `find` (-delete), `sed` (-i), `sort` (-o), `env`/`xargs` (run
/// other commands) are not here.
const READ_ONLY: &[&str] = &[
    "cat", "ls", "pwd", "echo", "printf", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg",
    "which", "whoami", "date", "stat", "file", "du", "df", "uname", "true", "false", "test", "[",
    "tree", "basename", "dirname", "realpath", "readlink", "diff", "cmp", "id", "hostname",
];

/// Git subcommands that only read.
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "blame",
    "grep",
    "describe",
    "shortlog",
];

fn is_read_only(identifier: &str, args: &[&str]) -> bool {
    if identifier == "git" {
        // Skip global options (`-C dir`, `--no-pager`) to find the subcommand.
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            if *arg == "-C" || *arg == "-c" {
                iter.next();
                continue;
            }
            if arg.starts_with('-') {
                continue;
            }
            return GIT_READ_ONLY.contains(arg);
        }
        return false;
    }
    READ_ONLY.contains(&identifier)
}

/// Splits a command line into words, separators and redirections, honouring
/// quotes, backslashes, `$(...)` and backticks (whose insides stay in the
/// word, and are also returned, to be read as commands of their own).
fn tokenize(command: &str) -> (Vec<Token>, Vec<String>) {
    let chars: Vec<(usize, char)> = command.char_indices().collect();
    let mut tokens = Vec::new();
    let mut substitutions = Vec::new();
    let mut word = String::new();
    let mut word_start: Option<usize> = None;
    let mut i = 0;
    let end_of = |i: usize| chars.get(i).map_or(command.len(), |(pos, _)| *pos);
    // Here-documents: after `<<` the next word is a delimiter (with `<<-`,
    // leading tabs of the body are ignored); the body starts at the next
    // newline and is data, not commands.
    let mut heredoc_next: Option<bool> = None;
    let mut heredocs: Vec<(String, bool)> = Vec::new();

    macro_rules! finish_word {
        ($end:expr) => {
            if let Some(start) = word_start.take() {
                let text = std::mem::take(&mut word);
                if let Some(strip_tabs) = heredoc_next.take() {
                    heredocs.push((text.clone(), strip_tabs));
                }
                tokens.push(Token::Word {
                    text,
                    start,
                    end: $end,
                });
            }
        };
    }

    while i < chars.len() {
        let (pos, c) = chars[i];
        let next = chars.get(i + 1).map(|(_, c)| *c);
        match c {
            ' ' | '\t' => {
                finish_word!(pos);
                i += 1;
            }
            '#' if word_start.is_none() => {
                // A comment runs to the end of the line.
                while i < chars.len() && chars[i].1 != '\n' {
                    i += 1;
                }
            }
            '\n' | ';' | '(' | ')' => {
                finish_word!(pos);
                tokens.push(Token::Separator);
                i += 1;
                if c == '\n' {
                    i = skip_heredoc_bodies(&chars, i, &mut heredocs);
                }
            }
            '&' | '|' => {
                if c == '&' && next == Some('>') {
                    // `&>` / `&>>`: both streams into a file.
                    finish_word!(pos);
                    let op = if chars.get(i + 2).map(|(_, c)| *c) == Some('>') {
                        i += 3;
                        "&>>"
                    } else {
                        i += 2;
                        "&>"
                    };
                    tokens.push(Token::Redirect { op: op.to_owned() });
                    continue;
                }
                finish_word!(pos);
                tokens.push(Token::Separator);
                // `&&`, `||`, `|&` are one separator.
                i += if matches!(
                    (c, next),
                    ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&'))
                ) {
                    2
                } else {
                    1
                };
            }
            '>' | '<' => {
                // A word made only of digits right before is the descriptor (`2>`).
                let fd = if word_start.is_some()
                    && !word.is_empty()
                    && word.chars().all(|c| c.is_ascii_digit())
                {
                    word_start = None;
                    std::mem::take(&mut word)
                } else {
                    finish_word!(pos);
                    String::new()
                };
                let mut op = format!("{fd}{c}");
                i += 1;
                while let Some((_, n)) = chars.get(i) {
                    if matches!(n, '>' | '<' | '&' | '|') && op.len() < fd.len() + 3 {
                        op.push(*n);
                        i += 1;
                    } else {
                        break;
                    }
                }
                if op[fd.len()..] == *"<<" {
                    let strip_tabs = chars.get(i).is_some_and(|(_, n)| *n == '-');
                    if strip_tabs {
                        op.push('-');
                        i += 1;
                    }
                    heredoc_next = Some(strip_tabs);
                }
                tokens.push(Token::Redirect { op });
            }
            '\'' => {
                word_start.get_or_insert(pos);
                i += 1;
                while i < chars.len() && chars[i].1 != '\'' {
                    word.push(chars[i].1);
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                word_start.get_or_insert(pos);
                i += 1;
                while i < chars.len() && chars[i].1 != '"' {
                    let starts_substitution = chars[i].1 == '`'
                        || (chars[i].1 == '$' && chars.get(i + 1).is_some_and(|(_, n)| *n == '('));
                    if starts_substitution {
                        i = take_nested(&chars, i, &mut word, &mut word_start, &mut substitutions);
                        continue;
                    }
                    if chars[i].1 == '\\' && i + 1 < chars.len() {
                        i += 1;
                    }
                    word.push(chars[i].1);
                    i += 1;
                }
                i += 1;
            }
            '\\' => {
                word_start.get_or_insert(pos);
                if let Some(n) = next {
                    // A backslash-newline joins lines; anything else is taken literally.
                    if n != '\n' {
                        word.push(n);
                    }
                }
                i += 2;
            }
            '$' if next == Some('(') => {
                i = take_nested(&chars, i, &mut word, &mut word_start, &mut substitutions);
            }
            '`' => {
                i = take_nested(&chars, i, &mut word, &mut word_start, &mut substitutions);
            }
            _ => {
                word_start.get_or_insert(pos);
                word.push(c);
                i += 1;
            }
        }
    }
    finish_word!(end_of(chars.len()));
    (tokens, substitutions)
}

/// Skips the bodies of the here-documents opened on the line that just
/// ended, returning the index after the last delimiter line.
fn skip_heredoc_bodies(
    chars: &[(usize, char)],
    mut i: usize,
    heredocs: &mut Vec<(String, bool)>,
) -> usize {
    for (delimiter, strip_tabs) in heredocs.drain(..) {
        while i < chars.len() {
            let line_end = chars[i..]
                .iter()
                .position(|(_, c)| *c == '\n')
                .map_or(chars.len(), |n| i + n);
            let line: String = chars[i..line_end].iter().map(|(_, c)| *c).collect();
            i = (line_end + 1).min(chars.len());
            let line = if strip_tabs {
                line.trim_start_matches('\t')
            } else {
                &line
            };
            if line == delimiter {
                break;
            }
        }
    }
    i
}

/// Copies a `$(...)` or backtick substitution into the current word
/// verbatim, records its inside in `substitutions` and returns the index
/// after it.
fn take_nested(
    chars: &[(usize, char)],
    mut i: usize,
    word: &mut String,
    word_start: &mut Option<usize>,
    substitutions: &mut Vec<String>,
) -> usize {
    word_start.get_or_insert(chars[i].0);
    let mut inner = String::new();
    if chars[i].1 == '`' {
        word.push('`');
        i += 1;
        while i < chars.len() && chars[i].1 != '`' {
            word.push(chars[i].1);
            inner.push(chars[i].1);
            i += 1;
        }
        if i < chars.len() {
            word.push('`');
            i += 1;
        }
        substitutions.push(inner);
        return i;
    }
    // `$(`: count parentheses to find the matching `)`.
    word.push_str("$(");
    i += 2;
    let mut depth = 1usize;
    while i < chars.len() {
        let c = chars[i].1;
        word.push(c);
        i += 1;
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        inner.push(c);
    }
    substitutions.push(inner);
    i
}

#[cfg(test)]
mod tests {
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
        assert!(!a.write_redirection);
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
        assert!(!a.write_redirection);
        let a = analyze("echo hi > out.txt 2>>err.log");
        assert!(a.write_redirection);
        assert_eq!(a.redirect_paths, vec!["out.txt", "err.log"]);
        assert_eq!(ids(&a), vec![("echo", false)]);
        let a = analyze("cmd &> all.log");
        assert_eq!(a.redirect_paths, vec!["all.log"]);
        let a = analyze("sort < in.txt");
        assert!(!a.write_redirection);
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
        let a =
            analyze("cat > script.py <<'EOF'\nimport os\nrm everything\nEOF\npython3 script.py");
        assert_eq!(ids(&a), vec![("cat", false), ("python3", false)]);
        assert_eq!(a.redirect_paths, vec!["script.py"]);
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
        assert!(a.write_redirection);
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
}
