//! `env` read as GNU coreutils reads its arguments: options (getopt `+C:iS:u:v0`, clusters and
//! long options), then an optional `-`, then every word holding a `=` is an assignment, then
//! the command. `-S STRING` splits the string into words that are read again from the start,
//! options and assignments included (`env -S '-i A=1 touch' f`). Also the `NAME=value` words
//! `sudo` takes before its command.

use super::MAX_DEPTH;
use crate::shell::variables;
use crate::shell::{Analysis, Word};

/// The blanks `env -S` splits on (C's `isspace`).
const SPLIT_BLANKS: &[char] = &[' ', '\t', '\n', '\x0b', '\x0c', '\r'];

impl Analysis {
    pub(super) fn env(&mut self, args: &[Word], depth: usize) {
        if depth > MAX_DEPTH {
            self.note("wrappers nested too deeply");
            return;
        }
        let mut i = 0;
        'options: while let Some(a) = args.get(i) {
            let v = a.value.as_str();
            if v == "--" {
                i += 1;
                break;
            }
            if !v.starts_with('-') || v == "-" {
                break;
            }
            if !a.is_static() {
                self.note("a wrapper option computed at run time");
                return;
            }
            if let Some(long) = v.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                match (name, value) {
                    ("ignore-environment" | "null" | "debug" | "list-signal-handling", None)
                    | ("default-signal" | "ignore-signal" | "block-signal", _)
                    | ("unset" | "chdir", Some(_)) => i += 1,
                    ("unset" | "chdir", None) => i += 2,
                    ("split-string", Some(s)) => {
                        return self.split_string(&Word::literal(s), &args[i + 1..], depth);
                    }
                    ("split-string", None) => {
                        let Some(s) = args.get(i + 1) else { return };
                        return self.split_string(s, &args[i + 2..], depth);
                    }
                    // They print and exit.
                    ("help" | "version", None) => return,
                    // Abbreviations (`--split`) and anything newer.
                    _ => {
                        self.note("a wrapper option the analysis does not know");
                        return;
                    }
                }
                continue;
            }
            // A cluster of short options; one that takes a value takes the rest of the word,
            // or the next word.
            for (k, c) in v.char_indices().skip(1) {
                match c {
                    'i' | 'v' | '0' => {}
                    'u' | 'C' | 'S' => {
                        let attached = &v[k + c.len_utf8()..];
                        let (value, next) = if attached.is_empty() {
                            match args.get(i + 1) {
                                Some(w) => (w.clone(), i + 2),
                                // A missing value: env refuses to run.
                                None => return,
                            }
                        } else {
                            (Word::literal(attached), i + 1)
                        };
                        if c == 'S' {
                            return self.split_string(&value, &args[next..], depth);
                        }
                        i = next;
                        continue 'options;
                    }
                    _ => {
                        self.note("a wrapper option the analysis does not know");
                        return;
                    }
                }
            }
            i += 1;
        }
        // A lone `-` right after the options means `-i`.
        if args.get(i).is_some_and(|a| a.value == "-") {
            i += 1;
        }
        let rest = self.env_assignments(args.get(i..).unwrap_or(&[]));
        if !rest.is_empty() {
            self.resolve(rest, false, depth + 1);
        }
    }

    /// Skips the leading words that hold a `=` (env and sudo set them, whatever their quoting:
    /// `'PATH'=. touch` runs `touch` with PATH=.), noting dangerous ones; returns the rest.
    pub(super) fn env_assignments<'a>(&mut self, mut args: &'a [Word]) -> &'a [Word] {
        while let Some((a, rest)) = args.split_first() {
            let Some((name, _)) = a.value.split_once('=') else {
                break;
            };
            if !a.is_static() && !variables::is_name(name) {
                // `env "$N"=1 cmd`: the name is only known at run time (it may be PATH).
                self.note("an environment variable name computed at run time");
            }
            self.assignment(name);
            args = rest;
        }
        args
    }

    /// `env -S STRING rest...`: the string's words, then `rest`, read as env's arguments again.
    fn split_string(&mut self, s: &Word, rest: &[Word], depth: usize) {
        if !s.is_static() {
            self.note("an `env -S` string computed at run time");
        }
        // env gives quotes, backslashes and `${NAME}` meanings of its own.
        if s.value.contains(['\'', '"', '\\', '$']) {
            self.note("an `env -S` string with quoting");
        }
        // A word that starts with `#` ends the string (a comment).
        let mut words: Vec<Word> = s
            .value
            .split(SPLIT_BLANKS)
            .filter(|w| !w.is_empty())
            .take_while(|w| !w.starts_with('#'))
            .map(Word::literal)
            .collect();
        words.extend(rest.iter().cloned());
        self.env(&words, depth + 1);
    }
}
