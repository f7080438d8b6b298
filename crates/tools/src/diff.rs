//! The git-style diffs of write permission requests and of the `create`, `edit` and `view`
//! results (`detailedContent`), laid out as the Copilot CLI lays them out.
//!
//! One hunk spanning the first through the last changed line is enough here: `create` and
//! `edit` change one contiguous region, and the text is for people and policies to read, not
//! for `patch`. The runtime's own quirks are kept, since clients show these texts as they
//! are: a file's lines are the pieces of its text split at each `\n` (a final newline makes
//! an empty last line), a created file starts from `a/dev/null` under `create file mode`
//! with the hunk `-1,0`, and a view shows the lines it read as a diff of the file with itself.

/// Lines of unchanged context around the change, as `diff -u` uses.
const CONTEXT: usize = 3;

/// The diff header of the file at `path`: an existing one, or one created from nothing.
fn header(path: &str, created: bool) -> String {
    let display = path.trim_start_matches('/');
    if created {
        format!(
            "\ndiff --git a/{display} b/{display}\ncreate file mode 100644\nindex 0000000..0000000\n--- a/dev/null\n+++ b/{display}\n"
        )
    } else {
        format!(
            "\ndiff --git a/{display} b/{display}\nindex 0000000..0000000 100644\n--- a/{display}\n+++ b/{display}\n"
        )
    }
}

/// Appends each line with its mark (` `, `-` or `+`).
fn push_lines<'a>(out: &mut String, mark: char, lines: impl IntoIterator<Item = &'a str>) {
    for line in lines {
        out.push(mark);
        out.push_str(line);
        out.push('\n');
    }
}

/// `view`'s detailed result for a file: the `lines` it showed, from line `first` (1-based), as
/// the unchanged lines of a diff of the file with itself.
pub(crate) fn shown(path: &str, first: usize, lines: &[&str]) -> String {
    let mut out = header(path, false);
    let n = lines.len();
    out.push_str(&format!("@@ -{first},{n} +{first},{n} @@\n"));
    push_lines(&mut out, ' ', lines.iter().copied());
    out
}

/// `view`'s detailed result for a directory: its listing (one entry a line) as the unchanged
/// lines of a created file's diff, as the runtime shows it.
pub(crate) fn listed(path: &str, listing: &str) -> String {
    let mut out = header(path, true);
    let lines: Vec<&str> = listing.split('\n').collect();
    out.push_str(&format!("@@ -1,0 +1,{} @@\n", lines.len()));
    push_lines(&mut out, ' ', lines);
    out
}

/// A git-style unified diff of `old` -> `new` for the file at `path`
/// (`old` is `None` for a file that does not exist yet).
pub(crate) fn unified(path: &str, old: Option<&str>, new: &str) -> String {
    let Some(old) = old else {
        // A created file's lines are the text's lines: a final newline adds none.
        let mut out = header(path, true);
        let mut lines: Vec<&str> = new.split('\n').collect();
        if new.is_empty() || new.ends_with('\n') {
            lines.pop();
        }
        out.push_str(&format!("@@ -1,0 +1,{} @@\n", lines.len()));
        push_lines(&mut out, '+', lines);
        return out;
    };
    let mut out = header(path, false);
    let old_lines: Vec<&str> = old.split('\n').collect();
    let new_lines: Vec<&str> = new.split('\n').collect();

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

    push_lines(&mut out, ' ', old_lines[start..prefix].iter().copied());
    push_lines(
        &mut out,
        '-',
        old_lines[prefix..old_lines.len() - suffix].iter().copied(),
    );
    push_lines(
        &mut out,
        '+',
        new_lines[prefix..new_lines.len() - suffix].iter().copied(),
    );
    push_lines(
        &mut out,
        ' ',
        old_lines[old_lines.len() - suffix..old_end].iter().copied(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_file() {
        let d = unified("/w/a.txt", None, "one\ntwo\n");
        assert_eq!(
            d,
            "\ndiff --git a/w/a.txt b/w/a.txt\ncreate file mode 100644\nindex 0000000..0000000\n--- a/dev/null\n+++ b/w/a.txt\n@@ -1,0 +1,2 @@\n+one\n+two\n"
        );
        assert!(unified("/w/a", None, "x\ny").ends_with("@@ -1,0 +1,2 @@\n+x\n+y\n"));
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
    fn a_final_newline_is_an_empty_last_line_of_context() {
        let d = unified(
            "/w/n",
            Some("one\ntwo\nthree\nfour\n"),
            "one\ntwo\nTHREE\nfour\n",
        );
        assert!(
            d.ends_with("@@ -1,5 +1,5 @@\n one\n two\n-three\n+THREE\n four\n \n"),
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
        assert!(d.ends_with("@@ -1,3 +1,2 @@\n a\n-b\n \n"), "{d}");
    }

    #[test]
    fn a_view_is_the_file_against_itself() {
        assert_eq!(
            shown("/p/f.txt", 2, &["two", "three"]),
            "\ndiff --git a/p/f.txt b/p/f.txt\nindex 0000000..0000000 100644\n--- a/p/f.txt\n+++ b/p/f.txt\n@@ -2,2 +2,2 @@\n two\n three\n"
        );
        assert_eq!(
            listed("/p/dir", "a.txt\nb.txt"),
            "\ndiff --git a/p/dir b/p/dir\ncreate file mode 100644\nindex 0000000..0000000\n--- a/dev/null\n+++ b/p/dir\n@@ -1,0 +1,2 @@\n a.txt\n b.txt\n"
        );
    }
}
