//! Splitting a query into its statements on `;`, outside quotes, identifiers, comments and
//! trigger bodies (a `CREATE TRIGGER ... BEGIN ...; ...; END` is one statement).

/// The statements of `query`, trimmed; empty ones (`;;`) left out.
pub(super) fn statements(query: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_trigger = false;
    for end in boundaries(query) {
        let piece = query[start..end].trim();
        if piece.is_empty() {
            start = end + 1;
            continue;
        }
        if !in_trigger && starts_trigger(piece) {
            in_trigger = true;
        }
        if in_trigger && !ends_with_end(piece) {
            continue; // the `;` is inside the trigger's body
        }
        in_trigger = false;
        out.push(piece);
        start = end + 1;
    }
    let rest = query[start.min(query.len())..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Byte offsets of the `;` that are outside strings, quoted names and comments.
fn boundaries(query: &str) -> Vec<usize> {
    let bytes = query.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b';' => out.push(i),
            quote @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == quote {
                        // A doubled quote is an escaped one.
                        if bytes.get(i + 1) == Some(&quote) {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    i += 1;
                }
            }
            b'[' => {
                while i < bytes.len() && bytes[i] != b']' {
                    i += 1;
                }
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn words(piece: &str) -> impl Iterator<Item = String> + '_ {
    piece.split_whitespace().map(|w| w.to_ascii_uppercase())
}

fn starts_trigger(piece: &str) -> bool {
    let mut w = words(piece);
    if w.next().as_deref() != Some("CREATE") {
        return false;
    }
    match w.next().as_deref() {
        Some("TRIGGER") => true,
        Some("TEMP" | "TEMPORARY") => w.next().as_deref() == Some("TRIGGER"),
        _ => false,
    }
}

fn ends_with_end(piece: &str) -> bool {
    piece
        .rsplit(|c: char| c.is_whitespace() || c == ';')
        .find(|w| !w.is_empty())
        .is_some_and(|w| w.eq_ignore_ascii_case("END"))
}

#[cfg(test)]
mod tests {
    use super::statements;

    #[test]
    fn splits_outside_quotes_comments_and_triggers() {
        assert_eq!(statements("SELECT 1; SELECT 2;"), ["SELECT 1", "SELECT 2"]);
        assert_eq!(
            statements("SELECT 'a;b'; SELECT \"c;d\""),
            ["SELECT 'a;b'", "SELECT \"c;d\""]
        );
        assert_eq!(statements("SELECT 'it''s;'; x"), ["SELECT 'it''s;'", "x"]);
        assert_eq!(
            statements("SELECT 1 -- a;b\n; SELECT [x;y]"),
            ["SELECT 1 -- a;b", "SELECT [x;y]"]
        );
        assert_eq!(statements("SELECT /* ; */ 1"), ["SELECT /* ; */ 1"]);
        assert_eq!(statements(" ; ;; "), Vec::<&str>::new());
        assert_eq!(
            statements(
                "CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE b SET x = 1; DELETE FROM c; END; SELECT 1"
            ),
            [
                "CREATE TRIGGER t AFTER INSERT ON a BEGIN UPDATE b SET x = 1; DELETE FROM c; END",
                "SELECT 1"
            ]
        );
        assert_eq!(
            statements("SELECT 'unterminated; x"),
            ["SELECT 'unterminated; x"]
        );
    }
}
