//! A stdio server's `env` values as the Copilot CLI launches them: `$NAME` and `${NAME}` are
//! replaced by the engine's own variable of that name, anywhere in the value
//! (`pre-${HOME}-post`); a name the engine does not have is left as written, and so is a bare
//! name (`HOME` stays `HOME`). Observed on the Copilot CLI 1.0.81-0, the same in its `direct`
//! and `indirect` env-value modes.

use std::collections::BTreeMap;

/// Every value of `env` with its references replaced through `lookup`.
pub(crate) fn expand_all(
    env: &BTreeMap<String, String>,
    lookup: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    env.iter()
        .map(|(k, v)| (k.clone(), expand(v, &lookup)))
        .collect()
}

/// One value with its `$NAME` and `${NAME}` references replaced through `lookup`.
pub(crate) fn expand(value: &str, lookup: &impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, written_len) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) if is_name(&inner[..end]) => (&inner[..end], end + 2),
                _ => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        let reference = &rest[at..at + 1 + written_len];
        match (is_name(name), lookup(name)) {
            (true, Some(found)) => out.push_str(&found),
            // Unknown or not a name: left as written.
            _ => out.push_str(if written_len == 0 { "$" } else { reference }),
        }
        rest = &rest[at + 1 + written_len..];
    }
    out.push_str(rest);
    out
}

/// A variable name: a letter or `_`, then letters, digits and `_`.
fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(name: &str) -> Option<String> {
        (name == "PROBE_VAR").then(|| "probe-value".to_owned())
    }

    fn x(value: &str) -> String {
        expand(value, &probe)
    }

    #[test]
    fn references_are_replaced_anywhere_in_the_value() {
        assert_eq!(x("$PROBE_VAR"), "probe-value");
        assert_eq!(x("${PROBE_VAR}"), "probe-value");
        assert_eq!(x("pre-${PROBE_VAR}-post"), "pre-probe-value-post");
        assert_eq!(
            x("$PROBE_VAR/bin:$PROBE_VAR"),
            "probe-value/bin:probe-value"
        );
    }

    #[test]
    fn unknown_names_and_bare_names_are_left_as_written() {
        assert_eq!(x("PROBE_VAR"), "PROBE_VAR");
        assert_eq!(x("${NOSUCH_VAR}"), "${NOSUCH_VAR}");
        assert_eq!(x("$NOSUCH_VAR"), "$NOSUCH_VAR");
        assert_eq!(x("literal"), "literal");
    }

    #[test]
    fn broken_references_are_left_as_written() {
        assert_eq!(x("$"), "$");
        assert_eq!(x("a$"), "a$");
        assert_eq!(x("${PROBE_VAR"), "${PROBE_VAR");
        assert_eq!(x("${1X}"), "${1X}");
        assert_eq!(x("$1"), "$1");
        assert_eq!(x("$$PROBE_VAR"), "$probe-value");
        assert_eq!(x("${}"), "${}");
    }

    #[test]
    fn every_value_of_a_map_is_expanded() {
        let env = BTreeMap::from([("A".to_owned(), "${PROBE_VAR}".to_owned())]);
        assert_eq!(expand_all(&env, probe)["A"], "probe-value");
    }
}
