//! Here-document bodies: read as data, and scanned for expansions when unquoted.

use super::Lexer;

impl Lexer<'_> {
    /// Reads the bodies of the here-documents opened on the line that just ended.
    pub(super) fn heredoc_bodies(&mut self) {
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
