//! Groups tokens into simple commands (words and redirections between control operators),
//! looking through the compound forms bash runs commands in: `( )`, `{ }`, `if`, `while`,
//! `until`, `for`, `select`, `!`, `time`. Forms whose effect depends on run-time values or
//! that define code for later (`case`, functions, `[[ ]]` arithmetic) are reported unresolved.

use super::lexer::{Tok, Word};
use super::variables;

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
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
];

/// The simple commands of a token list, plus why some part cannot be resolved.
pub(crate) fn simple_commands(toks: &[Tok], unresolved: &mut Vec<String>) -> Vec<Simple> {
    let mut out = Vec::new();
    let mut cur = Simple::default();
    let mut at_start = true;
    let mut i = 0;
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
                // `for ((..)) do` and `for ((..)); {`: a command word may follow.
                at_start = true;
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
                if keyword && w.value == "time" {
                    i = time_options(toks, i + 1, unresolved);
                    continue;
                }
                if keyword && KEYWORDS.contains(&w.value.as_str()) {
                    i += 1;
                    continue;
                }
                if keyword && matches!(w.value.as_str(), "for" | "select") {
                    i = for_header(toks, i + 1, unresolved);
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

fn note(why: &str, unresolved: &mut Vec<String>) {
    if !unresolved.iter().any(|w| w == why) {
        unresolved.push(why.to_owned());
    }
}

/// The unquoted word at `i`, if that is what the token there is.
fn plain_word(toks: &[Tok], i: usize) -> Option<&str> {
    match toks.get(i) {
        Some(Tok::Word(w)) if !w.quoted => Some(w.value.as_str()),
        _ => None,
    }
}

/// Skips what the `time` keyword reads itself (`-p`, then `--`, each unquoted) from `i`;
/// returns where the timed pipeline starts. Any other option word is unresolved: bash runs
/// it as the command, but in POSIX mode `time -f fmt cmd` is the `time` program, running cmd.
fn time_options(toks: &[Tok], mut i: usize, unresolved: &mut Vec<String>) -> usize {
    if plain_word(toks, i) == Some("-p") {
        i += 1;
    }
    if plain_word(toks, i) == Some("--") {
        i += 1;
    } else if plain_word(toks, i).is_some_and(|w| w.starts_with('-')) {
        note("an option of `time` bash does not read", unresolved);
    }
    i
}

/// Skips a `for`/`select` header from `i` (just past the keyword): `NAME`, then newlines and
/// `in WORDS` if present. NAME is assigned on every round; the WORDS are data (the lexer
/// checked them for substitutions). What follows (`;`, `do`, `{`) is read as usual, so the
/// body of `for x do ..; done` and `for x; do ..; done` is read as commands.
fn for_header(toks: &[Tok], mut i: usize, unresolved: &mut Vec<String>) -> usize {
    let Some(Tok::Word(name)) = toks.get(i) else {
        // `for ((..))`: the arithmetic token comes next.
        return i;
    };
    if variables::is_dangerous(&name.value) {
        note(&format!("an assignment to {}", name.value), unresolved);
    }
    i += 1;
    let mut j = i;
    while matches!(toks.get(j), Some(Tok::Op("\n"))) {
        j += 1;
    }
    if plain_word(toks, j) == Some("in") {
        j += 1;
        while let Some(Tok::Word(_)) = toks.get(j) {
            j += 1;
        }
        i = j;
    }
    i
}
