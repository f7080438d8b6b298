//! A small unified diff for write permission requests and edit results.
//!
//! One hunk spanning the first through the last changed line is enough here:
//! `create` and `edit` change one contiguous region, and the text is for
//! people and policies to read, not for `patch`.

/// Lines of unchanged context around the change, as `diff -u` uses.
const CONTEXT: usize = 3;

/// A git-style unified diff of `old` -> `new` for the file at `path`
/// (`old` is `None` for a file that does not exist yet).
pub(crate) fn unified(path: &str, old: Option<&str>, new: &str) -> String {
    let display = path.trim_start_matches('/');
    let mut out = format!("\ndiff --git a/{display} b/{display}\n");
    match old {
        Some(_) => out.push_str(&format!(
            "index 0000000..0000000 100644\n--- a/{display}\n+++ b/{display}\n"
        )),
        None => out.push_str(&format!(
            "new file mode 100644\nindex 0000000..0000000\n--- /dev/null\n+++ b/{display}\n"
        )),
    }
    let old_lines: Vec<&str> = old.unwrap_or("").split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();

    let prefix = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let max_suffix = old_lines.len().min(new_lines.len()) - prefix;
    let suffix = old_lines
        .iter()
        .rev()
        .zip(new_lines.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    if prefix == old_lines.len() && prefix == new_lines.len() {
        return out; // identical: no hunk
    }

    let start = prefix.saturating_sub(CONTEXT);
    let old_end = (old_lines.len() - suffix + CONTEXT.min(suffix)).min(old_lines.len());
    let new_end = (new_lines.len() - suffix + CONTEXT.min(suffix)).min(new_lines.len());
    let old_count = old_end - start;
    let new_count = new_end - start;
    // diff -u names the line before an empty range.
    let old_start = if old_count == 0 { start } else { start + 1 };
    let new_start = if new_count == 0 { start } else { start + 1 };
    out.push_str(&format!(
        "@@ -{old_start},{old_count} +{new_start},{new_count} @@\n"
    ));

    let mut push = |mark: char, line: &str| {
        out.push(mark);
        out.push_str(line.strip_suffix('\n').unwrap_or(line));
        out.push('\n');
    };
    for line in &old_lines[start..prefix] {
        push(' ', line);
    }
    for line in &old_lines[prefix..old_lines.len() - suffix] {
        push('-', line);
    }
    for line in &new_lines[prefix..new_lines.len() - suffix] {
        push('+', line);
    }
    for line in &old_lines[old_lines.len() - suffix..old_end] {
        push(' ', line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_file() {
        let d = unified("/w/a.txt", None, "one\ntwo\n");
        assert!(d.contains("--- /dev/null\n+++ b/w/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"));
    }

    #[test]
    fn middle_change_has_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
        let d = unified("/w/n", Some(old), new);
        assert!(
            d.ends_with("@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n"),
            "{d}"
        );
    }

    #[test]
    fn identical_has_no_hunk() {
        assert!(!unified("/w/n", Some("a\n"), "a\n").contains("@@"));
    }

    #[test]
    fn deletion_at_end() {
        let d = unified("/w/n", Some("a\nb\n"), "a\n");
        assert!(d.ends_with("@@ -1,2 +1,1 @@\n a\n-b\n"), "{d}");
    }
}
