//! Quoting: double-quoted text and ANSI-C `$'..'` strings, decoded as bash decodes them.

use super::ansi_c;
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

    /// Reads `$'...'` from `self.i` (just past the opening quote): as bash does, the closing
    /// quote is found first (a backslash escapes any character), then the body is decoded.
    pub(super) fn ansi_c(&mut self) -> String {
        let begin = self.i;
        while let Some(c) = self.peek(0) {
            if c == '\'' {
                break;
            }
            self.i += if c == '\\' { 2 } else { 1 };
        }
        let end = self.i.min(self.chars.len());
        if self.i >= self.chars.len() {
            self.unresolved("an unterminated quote");
        }
        let raw: Vec<char> = self.chars[begin..end].iter().map(|(_, c)| *c).collect();
        self.i = (end + 1).min(self.chars.len());
        let decoded = ansi_c::decode(&raw);
        if let Some(why) = decoded.doubt {
            self.unresolved(why);
        }
        decoded.text
    }
}
