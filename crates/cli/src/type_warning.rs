//! The warning `audit --count` and `events --type` give for a type the schema does not know:
//! a misspelled type would otherwise count 0 or print nothing, exactly like a real type that
//! is simply absent.

use turnstile_journal::{EventType, all_event_types};

/// Similar known names shown at most.
const SUGGESTIONS: usize = 5;

/// The warning for `name`, or `None` when the schema knows it.
pub fn unknown_type_warning(name: &str) -> Option<String> {
    if EventType::new(name).is_known() {
        return None;
    }
    // Near misses first (a typo), by edit distance; names longer than any type are not compared.
    let mut similar: Vec<(usize, &str)> = all_event_types()
        .filter_map(|(known, _)| {
            let d = distance(name, known)?;
            (d <= (known.len() / 3).max(2)).then_some((d, known))
        })
        .collect();
    similar.sort();
    let similar: Vec<&str> = similar
        .into_iter()
        .take(SUGGESTIONS)
        .map(|(_, k)| k)
        .collect();
    let hint = if similar.is_empty() {
        String::new()
    } else {
        format!("; similar known types: {}", similar.join(", "))
    };
    Some(format!(
        "warning: `{name}` is not an event type of the session-events schema (a newer runtime may write it, \
         but a misspelled type matches nothing){hint}"
    ))
}

/// Levenshtein distance of two short names; `None` for input too long to be a type name.
fn distance(a: &str, b: &str) -> Option<usize> {
    const LONGEST: usize = 64;
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len() > LONGEST || b.len() > LONGEST {
        return None;
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row.last().copied()
}

/// Prints the warning for each unknown name on stderr.
pub fn warn_unknown(names: impl IntoIterator<Item = impl AsRef<str>>) {
    for name in names {
        if let Some(warning) = unknown_type_warning(name.as_ref()) {
            eprintln!("{warning}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_types_pass_and_unknown_ones_get_neighbours() {
        assert_eq!(unknown_type_warning("assistant.turn_start"), None);
        let w = unknown_type_warning("assistant.turn_strat").unwrap();
        assert!(
            w.contains("`assistant.turn_strat` is not an event type"),
            "{w}"
        );
        assert!(
            w.contains("similar known types: assistant.turn_start"),
            "{w}"
        );
        let w = unknown_type_warning("bogus.type").unwrap();
        assert!(!w.contains("similar"), "{w}");
        assert!(unknown_type_warning(&"x".repeat(10_000)).is_some());
    }
}
