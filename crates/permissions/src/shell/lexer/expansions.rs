//! Expansions: `$name`, `${..}`, `$(..)`, `$((..))`, `$[..]` and backticks, and the checks
//! that decide whether their effect can be known before the command runs.

use super::{Lexer, Word};
use crate::shell::variables;

impl Lexer<'_> {
    /// `$...` at `self.i`: an expansion, or a literal `$`.
    pub(super) fn dollar(&mut self, w: &mut Word) {
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

    pub(super) fn backtick(&mut self, w: &mut Word) {
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
    pub(super) fn balanced(&mut self, open: char, close: char) -> String {
        self.i += 1;
        let begin = self.i;
        let mut depth = 1usize;
        while let Some(c) = self.peek(0) {
            match c {
                '\\' => self.i += 1,
                // Single quotes hide a close inside `${..}` too (`${X:-'}'}` is one
                // expansion); in `$'..'` a backslash escapes the next character.
                '\'' if open != '[' => {
                    let ansi_c = self.i > begin && self.chars[self.i - 1].1 == '$';
                    self.i += 1;
                    while let Some(c) = self.peek(0) {
                        if c == '\'' {
                            break;
                        }
                        if ansi_c && c == '\\' {
                            self.i += 1;
                        }
                        self.i += 1;
                    }
                }
                '`' => {
                    self.i += 1;
                    while let Some(c) = self.peek(0) {
                        if c == '`' {
                            break;
                        }
                        if c == '\\' {
                            self.i += 1;
                        }
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
        self.parameter_inside(inner);
    }

    /// What makes a `${..}` unknowable: not a parameter at all, quotes, subscripts,
    /// transformations, indirection, arithmetic, assignments to dangerous variables.
    fn parameter_inside(&mut self, inner: &str) {
        if !inner.starts_with(|c: char| c.is_ascii_alphanumeric() || "_@*#?$!-".contains(c)) {
            // `${ cmd; }` and `${|cmd;}` run commands in bash 5.3; older ones refuse them.
            self.unresolved("a `${..}` that does not start with a parameter");
        }
        if inner.contains('\'') {
            // `${X:-'}'}`: bash's quoting inside is its own (and differs in double quotes).
            self.unresolved("quotes inside `${..}`");
        }
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
        // `${PATH:=dir}` and `${PATH=dir}` assign when the variable is unset (or empty).
        if rest.starts_with('=') || rest.starts_with(":=") {
            let name = &inner[..name_len];
            if variables::is_dangerous(name) {
                self.unresolved(&format!("an assignment to {name}"));
            }
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
    pub(super) fn scan_expansions(&mut self, text: &str) {
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
                    self.parameter_inside(&inner);
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
