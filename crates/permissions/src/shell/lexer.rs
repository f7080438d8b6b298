//! Splits a command line into words, operators and redirections the way bash does, resolving
//! quotes and escapes (`'..'`, `".."`, `\x`, `$'..'`) and noting every expansion whose value or
//! effect cannot be known before the command runs.

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

    fn double_quoted(&mut self, w: &mut Word) {
        while self.i < self.chars.len() {
            let c = self.chars[self.i].1;
            match c {
                '"' => {
                    self.i += 1;
                    return;
                }
                '\\' => {
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(n @ ('$' | '`' | '"' | '\\')) => w.value.push(n),
                        Some(n) => {
                            w.value.push('\\');
                            w.value.push(n);
                        }
                        None => w.value.push('\\'),
                    }
                    self.i += 2;
                }
                '$' => self.dollar(w),
                '`' => self.backtick(w),
                '<' | '>' if self.peek(1) == Some('(') => {
                    // Literal inside double quotes for bash, but never worth the doubt.
                    self.unresolved("a process substitution `<(..)`");
                    w.value.push(c);
                    self.i += 1;
                }
                _ => {
                    w.value.push(c);
                    self.i += 1;
                }
            }
        }
        self.unresolved("an unterminated quote");
    }

    /// `$...` at `self.i`: an expansion, or a literal `$`.
    fn dollar(&mut self, w: &mut Word) {
        match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => {
                self.i += 1;
                let inner = self.balanced('(', ')');
                // `inner` is `(expr)`; an arithmetic expansion.
                self.arith_value(&inner);
                w.value.push_str(&format!("$({inner})"));
                w.dynamic = true;
            }
            Some('(') => {
                self.i += 1;
                let inner = self.balanced('(', ')');
                self.unresolved("a command substitution `$(..)`");
                w.value.push_str(&format!("$({inner})"));
                self.out.substitutions.push(inner);
                w.dynamic = true;
            }
            Some('[') => {
                // `$[expr]`: the old arithmetic expansion.
                self.i += 1;
                let inner = self.balanced('[', ']');
                self.arith_value(&inner);
                w.value.push_str(&format!("$[{inner}]"));
                w.dynamic = true;
            }
            Some('{') => {
                self.i += 1;
                let inner = self.balanced('{', '}');
                self.parameter(&inner);
                w.value.push_str(&format!("${{{inner}}}"));
                w.dynamic = true;
            }
            Some(n) if n == '_' || n.is_ascii_alphanumeric() => {
                self.i += 1;
                let begin = self.i;
                if n.is_ascii_digit() {
                    self.i += 1;
                } else {
                    while self
                        .peek(0)
                        .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                    {
                        self.i += 1;
                    }
                }
                let name: String = self.chars[begin..self.i].iter().map(|(_, c)| *c).collect();
                w.value.push('$');
                w.value.push_str(&name);
                w.dynamic = true;
            }
            Some(n @ ('@' | '*' | '#' | '?' | '-' | '$' | '!')) => {
                self.i += 2;
                w.value.push('$');
                w.value.push(n);
                w.dynamic = true;
            }
            _ => {
                w.value.push('$');
                self.i += 1;
            }
        }
    }

    fn backtick(&mut self, w: &mut Word) {
        self.i += 1;
        let mut inner = String::new();
        loop {
            match self.peek(0) {
                None => {
                    self.unresolved("an unterminated quote");
                    break;
                }
                Some('`') => {
                    self.i += 1;
                    break;
                }
                Some('\\') if self.peek(1).is_some() => {
                    inner.push('\\');
                    inner.extend(self.peek(1));
                    self.i += 2;
                }
                Some(c) => {
                    inner.push(c);
                    self.i += 1;
                }
            }
        }
        self.unresolved("a command substitution in backticks");
        w.value.push_str(&format!("`{inner}`"));
        self.out.substitutions.push(inner);
        w.dynamic = true;
    }

    /// Reads from an `open` at `self.i` to its matching `close` (quotes and escapes skipped
    /// over), returning the inside; `self.i` ends past the close.
    fn balanced(&mut self, open: char, close: char) -> String {
        self.i += 1;
        let begin = self.i;
        let mut depth = 1usize;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => self.i += 1,
                '\'' if open == '(' => {
                    self.i += 1;
                    while self.peek(0).is_some_and(|c| c != '\'') {
                        self.i += 1;
                    }
                }
                '"' => {
                    self.i += 1;
                    while let Some(c) = self.peek(0) {
                        if c == '\\' {
                            self.i += 1;
                        } else if c == '"' {
                            break;
                        }
                        self.i += 1;
                    }
                }
                c if c == open => depth += 1,
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        let end = self.i.min(self.chars.len());
        let inner: String = self.chars[begin.min(end)..end]
            .iter()
            .map(|(_, c)| *c)
            .collect();
        if self.i >= self.chars.len() {
            self.unresolved("an unterminated expansion");
        }
        self.i += 1;
        inner
    }

    /// Checks the inside of `${...}`.
    fn parameter(&mut self, inner: &str) {
        self.scan_expansions(inner);
        if inner.contains('[') {
            // Subscripts are arithmetic: a variable's value there can run commands.
            self.unresolved("an array subscript in a parameter expansion");
        }
        if inner.contains('@') && !matches!(inner, "@" | "#@" | "!@") {
            self.unresolved("a parameter transformation `${X@..}`");
        }
        if inner.len() > 1 && inner.starts_with('!') && !inner.ends_with(['*', '@']) {
            // `${!X}` expands the variable X names, subscripts included.
            self.unresolved("an indirect expansion `${!X}`");
        }
        // `${X:offset:length}`: both are arithmetic (`${X:-default}` and friends are not).
        let name_len = inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '#'))
            .unwrap_or(inner.len());
        let rest = &inner[name_len..];
        if let Some(offset) = rest.strip_prefix(':')
            && !offset.starts_with(['-', '=', '?', '+'])
            && offset.chars().any(|c| c.is_ascii_alphabetic() || c == '_')
        {
            self.unresolved("arithmetic on variables");
        }
    }

    /// Checks the inside of `$(( ))` or `(( ))`.
    fn arith_value(&mut self, inner: &str) {
        self.scan_expansions(inner);
        if inner
            .chars()
            .any(|c| c.is_ascii_alphabetic() || c == '_' || c == '[')
        {
            // `x='a[$(cmd)]'; echo $((x))` runs `cmd`: variables in arithmetic are code.
            self.unresolved("arithmetic on variables");
        }
    }

    /// Notes the expansions found in text that bash will expand (an unquoted here-document's
    /// body, the inside of `${..}` or `$((..))`).
    fn scan_expansions(&mut self, text: &str) {
        let chars: Vec<char> = text.chars().collect();
        let mut k = 0;
        while k < chars.len() {
            match chars[k] {
                '\\' => k += 1,
                '`' => self.unresolved("a command substitution in backticks"),
                '$' if chars.get(k + 1) == Some(&'(') => {
                    if chars.get(k + 2) == Some(&'(') {
                        let inner = until(&chars[k + 3..], "))");
                        if inner
                            .iter()
                            .any(|c| c.is_ascii_alphabetic() || *c == '_' || *c == '[')
                        {
                            self.unresolved("arithmetic on variables");
                        }
                    } else {
                        self.unresolved("a command substitution `$(..)`");
                    }
                }
                '$' if chars.get(k + 1) == Some(&'{') => {
                    let inner: String = until(&chars[k + 2..], "}").iter().collect();
                    if inner.contains('[') {
                        self.unresolved("an array subscript in a parameter expansion");
                    }
                    if inner.contains('@') && !matches!(inner.as_str(), "@" | "#@" | "!@") {
                        self.unresolved("a parameter transformation `${X@..}`");
                    }
                }
                '<' | '>' if chars.get(k + 1) == Some(&'(') => {
                    self.unresolved("a process substitution `<(..)`")
                }
                '$' if chars.get(k + 1) == Some(&'[') => {
                    let inner = until(&chars[k + 2..], "]");
                    if inner
                        .iter()
                        .any(|c| c.is_ascii_alphabetic() || *c == '_' || *c == '[')
                    {
                        self.unresolved("arithmetic on variables");
                    }
                }
                _ => {}
            }
            k += 1;
        }
    }

    /// Decodes `$'...'` from `self.i` (just past the opening quote).
    fn ansi_c(&mut self) -> String {
        let mut out = String::new();
        loop {
            let Some(c) = self.peek(0) else {
                self.unresolved("an unterminated quote");
                return out;
            };
            self.i += 1;
            match c {
                '\'' => return out,
                '\\' => {
                    let Some(e) = self.peek(0) else { continue };
                    self.i += 1;
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'a' => out.push('\x07'),
                        'b' => out.push('\x08'),
                        'e' | 'E' => out.push('\x1b'),
                        'f' => out.push('\x0c'),
                        'v' => out.push('\x0b'),
                        '\\' | '\'' | '"' | '?' => out.push(e),
                        'x' => self.push_code(&mut out, 16, 2),
                        'u' => self.push_code(&mut out, 16, 4),
                        'U' => self.push_code(&mut out, 16, 8),
                        '0'..='7' => {
                            self.i -= 1;
                            self.push_code(&mut out, 8, 3);
                        }
                        'c' => {
                            if let Some(x) = self.peek(0) {
                                self.i += 1;
                                out.push(char::from((x as u32 & 0x1f) as u8));
                            }
                        }
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
    }

    fn push_code(&mut self, out: &mut String, radix: u32, max: usize) {
        let mut value = 0u32;
        let mut n = 0;
        while n < max {
            match self.peek(0).and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = value * radix + d;
                    self.i += 1;
                    n += 1;
                }
                None => break,
            }
        }
        if n == 0 {
            out.push('\\');
            return;
        }
        match char::from_u32(value) {
            // A NUL ends the string in bash.
            Some('\0') => {}
            Some(ch) => out.push(ch),
            None => self.unresolved("an invalid escape in `$'..'`"),
        }
    }

    /// Reads the bodies of the here-documents opened on the line that just ended.
    fn heredoc_bodies(&mut self) {
        for (delimiter, strip_tabs, expands) in std::mem::take(&mut self.pending_heredocs) {
            let mut found = false;
            while self.i < self.chars.len() {
                let mut line = String::new();
                loop {
                    let begin = self.i;
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                    line.extend(self.chars[begin..self.i].iter().map(|(_, c)| *c));
                    let at_end = self.i >= self.chars.len();
                    self.i = (self.i + 1).min(self.chars.len());
                    // In an unquoted body a backslash-newline joins lines before bash compares
                    // the line with the delimiter (`E\` + `OF` ends an `EOF` body).
                    let trailing = line.chars().rev().take_while(|c| *c == '\\').count();
                    if expands && trailing % 2 == 1 && !at_end {
                        line.pop();
                        continue;
                    }
                    break;
                }
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == delimiter {
                    found = true;
                    break;
                }
                if expands {
                    self.scan_expansions(line);
                }
            }
            if !found {
                // bash would end the body somewhere, or at the end with a warning: which
                // lines are data is then not certain.
                self.unresolved("an unterminated here-document");
            }
        }
    }
}

/// How far a scan looks for the end of one expansion; past it, the expansion counts as
/// unresolved. Bounds the scan to linear time whatever the input.
const SCAN_WINDOW: usize = 256;

/// The characters of `chars` before `end`, or the whole window and a `[` when `end` is not in
/// it (so that the caller sees something it cannot resolve).
fn until(chars: &[char], end: &str) -> Vec<char> {
    let end: Vec<char> = end.chars().collect();
    let window = &chars[..chars.len().min(SCAN_WINDOW)];
    match window.windows(end.len()).position(|w| w == end.as_slice()) {
        Some(at) => window[..at].to_vec(),
        None => {
            let mut v = window.to_vec();
            v.push('[');
            v
        }
    }
}
