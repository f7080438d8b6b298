//! Journal text into HTML: every byte of it is hostile (tool output, prompts, model text), so
//! it only ever reaches the page through [`text`], which leaves no character that can open a
//! tag, end an attribute or start an entity.

use std::fmt;

/// `s` as HTML text or attribute value (`&`, `<`, `>`, `"`, `'` escaped).
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(['&', '<', '>', '"', '\'', '\0']) {
            f.write_str(&rest[..i])?;
            f.write_str(match rest.as_bytes()[i] {
                b'&' => "&amp;",
                b'<' => "&lt;",
                b'>' => "&gt;",
                b'"' => "&quot;",
                b'\'' => "&#39;",
                // NUL is a parse error in HTML text; show it rather than let the parser decide.
                _ => "\u{fffd}",
            })?;
            rest = &rest[i + 1..];
        }
        f.write_str(rest)
    }
}

/// Shorthand for [`Escaped`].
pub fn text(s: &str) -> Escaped<'_> {
    Escaped(s)
}

/// The first `max` bytes of `s` (cut at a character boundary), and how many bytes were left
/// out; keeps the page's size bounded by the caps, not by the journal.
pub fn clip(s: &str, max: usize) -> (&str, usize) {
    if s.len() <= max {
        return (s, 0);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], s.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn markup_becomes_text() {
        assert_eq!(
            text("</script><img src=x onerror='alert(1)'>&amp;").to_string(),
            "&lt;/script&gt;&lt;img src=x onerror=&#39;alert(1)&#39;&gt;&amp;amp;"
        );
        assert_eq!(text("a\0b").to_string(), "a\u{fffd}b");
    }

    #[test]
    fn clipping_respects_characters() {
        assert_eq!(clip("héllo", 2), ("h", 5));
        assert_eq!(clip("héllo", 3), ("hé", 3));
        assert_eq!(clip("abc", 10), ("abc", 0));
    }

    proptest! {
        #[test]
        fn nothing_escaped_can_open_a_tag_or_close_an_attribute(s in "\\PC*|[<>&\"'a-z/ =]*") {
            let e = text(&s).to_string();
            prop_assert!(!e.contains(['<', '>', '"', '\'']));
            // Every `&` starts one of the entities written here.
            for (i, _) in e.match_indices('&') {
                let rest = &e[i..];
                prop_assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].iter().any(|p| rest.starts_with(p)));
            }
        }
    }
}
