//! Groups tokens into simple commands (words and redirections between control operators),
//! looking through the compound forms bash runs commands in: `( )`, `{ }`, `if`, `while`,
//! `until`, `for`, `select`, `!`, `time`. Forms whose effect depends on run-time values or
//! that define code for later (`case`, functions, `[[ ]]` arithmetic) are reported unresolved.

use super::lexer::{Tok, Word};

/// One simple command: its words (assignments included) and redirections.
#[derive(Debug, Clone, Default)]
pub(crate) struct Simple {
    pub words: Vec<Word>,
    /// (operator, target) for every redirection, in order.
    pub redirects: Vec<(String, Option<Word>)>,
    /// Byte offset just past its last word or redirection target.
    pub end: usize,
}

/// Words that open or close compound commands when they come first.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time",
];

/// The simple commands of a token list, plus why some part cannot be resolved.
pub(crate) fn simple_commands(toks: &[Tok], unresolved: &mut Vec<String>) -> Vec<Simple> {
    let mut out = Vec::new();
    let mut cur = Simple::default();
    let mut at_start = true;
    let mut i = 0;
    let note = |why: &str, unresolved: &mut Vec<String>| {
        if !unresolved.iter().any(|w| w == why) {
            unresolved.push(why.to_owned());
        }
    };
    while i < toks.len() {
        match &toks[i] {
            Tok::Op(op) => {
                if *op == "(" && !cur.words.is_empty() {
                    // `name ( )`: a function definition.
                    note("a function definition", unresolved);
                }
                if matches!(*op, ";;" | ";&" | ";;&") {
                    note("a `case` statement", unresolved);
                }
                if !cur.words.is_empty() || !cur.redirects.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                at_start = true;
            }
            Tok::Arith(inner) => {
                if inner
                    .chars()
                    .any(|c| !(c.is_ascii_digit() || " \t+-*/%<>=!&|^~?:".contains(c)))
                {
                    note("arithmetic on variables", unresolved);
                }
                at_start = false;
            }
            Tok::Redir(op) => {
                let target = match toks.get(i + 1) {
                    Some(Tok::Word(w)) => {
                        i += 1;
                        cur.end = cur.end.max(w.end);
                        Some(w.clone())
                    }
                    _ => None,
                };
                cur.redirects.push((op.clone(), target));
            }
            Tok::Word(w) => {
                let keyword = !w.quoted && at_start && cur.words.is_empty();
                if keyword && KEYWORDS.contains(&w.value.as_str()) {
                    // `time -p cmd`: the option belongs to the keyword.
                    if w.value == "time"
                        && let Some(Tok::Word(p)) = toks.get(i + 1)
                        && p.value == "-p"
                    {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                if keyword && matches!(w.value.as_str(), "for" | "select") {
                    // `for NAME [in WORDS];`: the words are data (checked by the lexer for
                    // substitutions), not a command.
                    i += 1;
                    while let Some(Tok::Word(_)) = toks.get(i) {
                        i += 1;
                    }
                    continue;
                }
                if keyword && w.value == "case" {
                    note("a `case` statement", unresolved);
                }
                if keyword && w.value == "function" {
                    note("a function definition", unresolved);
                }
                if keyword && w.value == "[[" {
                    let mut j = i + 1;
                    while let Some(Tok::Word(x)) = toks.get(j) {
                        if x.value == "]]" {
                            break;
                        }
                        if matches!(
                            x.value.as_str(),
                            "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" | "-v" | "-R"
                        ) {
                            note("arithmetic on variables", unresolved);
                        }
                        j += 1;
                    }
                    i = j + 1;
                    at_start = false;
                    continue;
                }
                cur.end = cur.end.max(w.end);
                cur.words.push(w.clone());
                at_start = false;
            }
        }
        i += 1;
    }
    if !cur.words.is_empty() || !cur.redirects.is_empty() {
        out.push(cur);
    }
    out
}
