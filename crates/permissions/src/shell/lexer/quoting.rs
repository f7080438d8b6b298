//! Quoting: double-quoted text and ANSI-C `$'..'` strings, decoded as bash decodes them.

use super::{Lexer, Word};

impl Lexer<'_> {
    pub(super) fn double_quoted(&mut self, w: &mut Word) {
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

    /// Decodes `$'...'` from `self.i` (just past the opening quote).
    pub(super) fn ansi_c(&mut self) -> String {
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
}
