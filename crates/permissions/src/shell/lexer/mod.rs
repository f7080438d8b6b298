//! Splits a command line into words, operators and redirections the way bash does, resolving
//! quotes and escapes (`'..'`, `".."`, `\x`, `$'..'`) and noting every expansion whose value or
//! effect cannot be known before the command runs.

mod ansi_c;
mod expansions;
mod heredoc;
mod quoting;

use crate::shell::variables;

/// One word with its quoting resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    /// The word's text with quotes and escapes removed; expansions are kept as written.
    pub value: String,
    /// Byte offset of the word's first character in the command text.
    pub start: usize,
    /// Byte offset just past the word.
    pub end: usize,
    /// Contains a parameter or arithmetic expansion: its value is only known at run time.
    pub dynamic: bool,
    /// Contains an unquoted `*`, `?` or `[`: it may expand to file names.
    pub glob: bool,
    /// Contains an unquoted brace expansion (`{a,b}`, `{1..3}`): it may become several words.
    pub brace: bool,
    /// Any part of it was quoted or escaped.
    pub quoted: bool,
    /// For `NAME=value` / `NAME+=value` written unquoted: the length of `NAME`.
    pub assign: Option<usize>,
}

impl Word {
    /// A plain literal word (no quoting, nothing dynamic).
    pub fn literal(value: &str) -> Self {
        Word {
            value: value.to_owned(),
            ..Default::default()
        }
    }

    /// Whether the word's value is fully known before the command runs.
    pub fn is_static(&self) -> bool {
        !self.dynamic && !self.glob && !self.brace
    }
}

/// A token of the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A word.
    Word(Word),
    /// A control operator: `;` `&&` `||` `|` `|&` `&` newline `(` `)` `;;` `;&` `;;&`.
    Op(&'static str),
    /// A redirection operator such as `>`, `2>>`, `&>`, `<`, `>&`, `<<`, `<<<`.
    Redir(String),
    /// An arithmetic command `(( ... ))` with its inside.
    Arith(String),
}

/// What the lexer read.
#[derive(Debug, Default)]
pub(crate) struct Lexed {
    pub toks: Vec<Tok>,
    /// Why the line cannot be resolved statically (empty when it can).
    pub unresolved: Vec<String>,
    /// The insides of `$(..)`, backticks and `<(..)`, read for description only.
    pub substitutions: Vec<String>,
}

struct Lexer<'a> {
    chars: Vec<(usize, char)>,
    text: &'a str,
    i: usize,
    out: Lexed,
    /// Here-documents opened on the current line: (delimiter, strip tabs, expands).
    pending_heredocs: Vec<(String, bool, bool)>,
    /// The next word is a here-document delimiter (`<<` or `<<-`).
    heredoc_next: Option<bool>,
}

/// Reads `text` into tokens.
pub(crate) fn lex(text: &str) -> Lexed {
    let mut lx = Lexer {
        chars: text.char_indices().collect(),
        text,
        i: 0,
        out: Lexed::default(),
        pending_heredocs: Vec::new(),
        heredoc_next: None,
    };
    lx.run();
    lx.out
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).map(|(_, c)| *c)
    }

    fn pos(&self) -> usize {
        self.chars.get(self.i).map_or(self.text.len(), |(p, _)| *p)
    }

    fn unresolved(&mut self, why: &str) {
        if !self.out.unresolved.iter().any(|w| w == why) {
            self.out.unresolved.push(why.to_owned());
        }
    }

    fn push_op(&mut self, op: &'static str, len: usize) {
        self.out.toks.push(Tok::Op(op));
        self.i += len;
    }

    /// Whether the previous token ends a command (so `((` here starts an arithmetic command).
    fn at_command_start(&self) -> bool {
        match self.out.toks.last() {
            None => true,
            Some(Tok::Op(op)) => *op != ")",
            Some(Tok::Word(w)) => {
                // `for ((..))` too: its inside is arithmetic.
                !w.quoted && matches!(w.value.as_str(), "do" | "then" | "else" | "{" | "!" | "for")
            }
            _ => false,
        }
    }

    fn run(&mut self) {
        while self.i < self.chars.len() {
            let c = self.chars[self.i].1;
            let next = self.peek(1);
            match c {
                ' ' | '\t' => self.i += 1,
                '\\' if next == Some('\n') => self.i += 2,
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                '\n' => {
                    self.push_op("\n", 1);
                    self.heredoc_bodies();
                }
                ';' => match (next, self.peek(2)) {
                    (Some(';'), Some('&')) => self.push_op(";;&", 3),
                    (Some(';'), _) => self.push_op(";;", 2),
                    (Some('&'), _) => self.push_op(";&", 2),
                    _ => self.push_op(";", 1),
                },
                '(' if next == Some('(') && self.at_command_start() => self.arith_command(),
                '(' => self.push_op("(", 1),
                ')' => self.push_op(")", 1),
                '&' if next == Some('>') => {
                    let op = if self.peek(2) == Some('>') {
                        "&>>"
                    } else {
                        "&>"
                    };
                    self.i += op.len();
                    self.out.toks.push(Tok::Redir(op.to_owned()));
                }
                '&' if next == Some('&') => self.push_op("&&", 2),
                '&' => self.push_op("&", 1),
                '|' if next == Some('|') => self.push_op("||", 2),
                '|' if next == Some('&') => self.push_op("|&", 2),
                '|' => self.push_op("|", 1),
                '<' | '>' if next == Some('(') => {
                    // Process substitution as a word of its own.
                    self.word();
                }
                '<' | '>' => self.redirect(String::new()),
                _ => self.word(),
            }
        }
        if self.heredoc_next.is_some() || !self.pending_heredocs.is_empty() {
            // A here-document whose body never starts: bash reads nothing more either.
            self.pending_heredocs.clear();
        }
    }

    fn redirect(&mut self, fd: String) {
        let c = self.chars[self.i].1;
        let mut op = format!("{fd}{c}");
        self.i += 1;
        let rest: String = [self.peek(0), self.peek(1)].iter().flatten().collect();
        let tail = if c == '<' {
            ["<<", "<-", "<", ">", "&"]
                .into_iter()
                .find(|t| rest.starts_with(t))
        } else {
            [">", "|", "&"].into_iter().find(|t| rest.starts_with(t))
        };
        let mut tail = tail.unwrap_or("").to_owned();
        if c == '<' && tail == "<" && self.peek(1) == Some('-') {
            tail = "<-".to_owned();
        }
        // `<<-` is `<` + `<-`; `<<<` is `<` + `<<`.
        self.i += tail.chars().count();
        op.push_str(&tail);
        let bare = &op[fd.len()..];
        if bare == "<<" || bare == "<<-" {
            self.heredoc_next = Some(bare == "<<-");
        }
        // `>&2`: both forms name a descriptor, not a file, when followed by digits or `-`.
        self.out.toks.push(Tok::Redir(op));
    }

    /// Whether `value`, an unquoted word right before `<` or `>`, names a variable to store a
    /// new descriptor in (`{NAME}` or `{NAME[subscript]}`, as bash takes it); notes what the
    /// assignment makes unknowable.
    fn descriptor_variable(&mut self, value: &str) -> bool {
        let Some(inner) = value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) else {
            return false;
        };
        let (name, subscript) = match inner.split_once('[') {
            Some((name, rest)) if rest.ends_with(']') => (name, true),
            Some(_) => return false,
            None => (inner, false),
        };
        if !variables::is_name(name) {
            return false;
        }
        if subscript {
            self.unresolved("an array subscript in a descriptor variable");
        }
        if variables::is_dangerous(name) {
            self.unresolved(&format!("an assignment to {name}"));
        }
        true
    }

    fn arith_command(&mut self) {
        let start = self.i + 2;
        let mut depth = 0i32;
        let mut j = start;
        while j < self.chars.len() {
            match self.chars[j].1 {
                '(' => depth += 1,
                ')' if depth > 0 => depth -= 1,
                ')' if self.chars.get(j + 1).is_some_and(|(_, c)| *c == ')') => break,
                _ => {}
            }
            j += 1;
        }
        let inner: String = self.chars[start.min(j)..j]
            .iter()
            .map(|(_, c)| *c)
            .collect();
        self.i = (j + 2).min(self.chars.len());
        if j >= self.chars.len() {
            self.unresolved("an unterminated `((`");
        }
        self.out.toks.push(Tok::Arith(inner));
    }

    /// Reads one word (stops at blanks and operators outside quotes).
    fn word(&mut self) {
        let start = self.pos();
        let mut w = Word {
            start,
            ..Default::default()
        };
        // Unquoted `NAME` characters seen so far at the word's start (for assignments).
        let mut name_chars = 0usize;
        let mut name_open = true;
        let mut brace_open = false;
        let mut brace_list = false;
        let mut bracket_open = false;
        while self.i < self.chars.len() {
            let c = self.chars[self.i].1;
            let next = self.peek(1);
            if name_open {
                let is_name_char =
                    c == '_' || c.is_ascii_alphabetic() || (name_chars > 0 && c.is_ascii_digit());
                if is_name_char {
                    name_chars += 1;
                } else {
                    name_open = false;
                    if name_chars > 0 && w.value.len() == name_chars {
                        if c == '=' || (c == '+' && next == Some('=')) {
                            w.assign = Some(name_chars);
                        } else if c == '[' {
                            // `a[i]=v`: the subscript is arithmetic, evaluated at run time.
                            self.unresolved("an array subscript assignment");
                        }
                    }
                }
            }
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | ')' => break,
                '(' if w.assign.is_some() && w.value.ends_with('=') => {
                    self.unresolved("an array assignment");
                    let inner = self.balanced('(', ')');
                    w.value.push('(');
                    w.value.push_str(&inner);
                    w.value.push(')');
                    self.scan_expansions(&inner);
                }
                '(' => break,
                '<' | '>' if next == Some('(') => {
                    self.unresolved("a process substitution `<(..)`");
                    self.i += 1;
                    let inner = self.balanced('(', ')');
                    w.value.push_str(&format!("{c}({inner})"));
                    self.out.substitutions.push(inner);
                    w.dynamic = true;
                }
                '<' | '>' => {
                    // Digits right before a redirection are its descriptor (`2>`).
                    if !w.quoted
                        && !w.value.is_empty()
                        && w.value.chars().all(|d| d.is_ascii_digit())
                    {
                        let fd = std::mem::take(&mut w.value);
                        self.redirect(fd);
                        return;
                    }
                    // `{NAME}>file`: bash opens a new descriptor and stores its number in NAME;
                    // the word is part of the redirection, not a command word.
                    if !w.quoted && self.descriptor_variable(&w.value) {
                        let fd = std::mem::take(&mut w.value);
                        self.redirect(fd);
                        return;
                    }
                    break;
                }
                '\\' => {
                    w.quoted = true;
                    match next {
                        Some('\n') => self.i += 2,
                        Some(n) => {
                            w.value.push(n);
                            self.i += 2;
                        }
                        None => {
                            // A trailing backslash stays literal.
                            w.value.push('\\');
                            self.i += 1;
                        }
                    }
                }
                '\'' => {
                    w.quoted = true;
                    self.i += 1;
                    let begin = self.i;
                    while self.peek(0).is_some_and(|c| c != '\'') {
                        self.i += 1;
                    }
                    if self.i >= self.chars.len() {
                        self.unresolved("an unterminated quote");
                    }
                    w.value
                        .extend(self.chars[begin..self.i].iter().map(|(_, c)| *c));
                    self.i += 1;
                }
                '"' => {
                    w.quoted = true;
                    self.i += 1;
                    self.double_quoted(&mut w);
                }
                '$' if next == Some('\'') => {
                    w.quoted = true;
                    self.i += 2;
                    let decoded = self.ansi_c();
                    w.value.push_str(&decoded);
                }
                '$' if next == Some('"') => {
                    w.quoted = true;
                    self.i += 2;
                    self.double_quoted(&mut w);
                }
                '$' => self.dollar(&mut w),
                '`' => self.backtick(&mut w),
                '*' | '?' => {
                    w.glob = true;
                    w.value.push(c);
                    self.i += 1;
                }
                // `[` is a pattern only with a closing `]` (`[` alone is the test command).
                '[' => {
                    bracket_open = true;
                    w.value.push(c);
                    self.i += 1;
                }
                ']' if bracket_open => {
                    w.glob = true;
                    w.value.push(c);
                    self.i += 1;
                }
                '{' => {
                    brace_open = true;
                    w.value.push(c);
                    self.i += 1;
                }
                ',' if brace_open => {
                    brace_list = true;
                    w.value.push(c);
                    self.i += 1;
                }
                '.' if brace_open && next == Some('.') => {
                    brace_list = true;
                    w.value.push_str("..");
                    self.i += 2;
                }
                '}' if brace_open && brace_list => {
                    w.brace = true;
                    w.value.push(c);
                    self.i += 1;
                }
                _ => {
                    w.value.push(c);
                    self.i += 1;
                }
            }
        }
        w.end = self.pos();
        if let Some(strip_tabs) = self.heredoc_next.take() {
            self.pending_heredocs
                .push((w.value.clone(), strip_tabs, !w.quoted));
        }
        self.out.toks.push(Tok::Word(w));
    }
}
