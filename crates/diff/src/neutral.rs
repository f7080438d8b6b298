//! Tool results as two engines' tools word them alike: what is left of a result when the
//! differences in wording between the Copilot CLI's tools and turnstile's are removed. The
//! behaviour profile of `turnstile replay --check` and `turnstile diff` across runtimes
//! compare results through it.

/// A tool result with the engines' differences in wording removed: trailing whitespace; for
/// `view`, the `N. ` line numbers (removed while every line carries the next number, so a
/// file whose own lines are numbered compares the same on both sides); for `glob`, the order
/// of the matches; for `bash`, how the exit code is told (`<shellId: ID completed with exit
/// code N>`, or `<exited with exit code N>` in older recordings of either engine).
pub fn neutral_result(tool: &str, content: &str) -> String {
    let content = content.trim_end();
    match tool {
        "bash" => match bash_exit(content) {
            Some((output, code)) => format!("{}\n<exit code {code}>", output.trim_end()),
            None => content.to_owned(),
        },
        "view" => {
            let mut text = content.to_owned();
            while let Some(stripped) = strip_line_numbers(&text) {
                // The empty last line a final newline makes (`3. `) is trailing white space.
                text = stripped.trim_end().to_owned();
            }
            text
        }
        "glob" => {
            let mut lines: Vec<&str> = content.lines().collect();
            lines.sort_unstable();
            lines.join("\n")
        }
        _ => content.to_owned(),
    }
}

/// A sync `bash` result split into its output and its exit code, if it ends with one.
fn bash_exit(content: &str) -> Option<(&str, &str)> {
    let (output, last) = content.rsplit_once('<')?;
    let code = last
        .strip_prefix("exited with exit code ")
        .or_else(|| {
            last.strip_prefix("shellId: ")?
                .split_once(" completed with exit code ")
                .map(|(_, code)| code)
        })?
        .strip_suffix('>')?;
    code.parse::<i64>().ok()?;
    Some((output, code))
}

/// `text` without its `N. ` prefixes when every line has one and the numbers run on by one.
fn strip_line_numbers(text: &str) -> Option<String> {
    let mut expected: Option<u64> = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let (number, rest) = line
            .split_once(". ")
            .or_else(|| line.strip_suffix('.').map(|n| (n, "")))?;
        let number: u64 = number.parse().ok()?;
        if expected.is_some_and(|e| e != number) {
            return None;
        }
        expected = Some(number + 1);
        out.push(rest);
    }
    expected.map(|_| out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_numbers_and_glob_order_do_not_matter() {
        let runtime = "alpha: the first file\nIt mentions apples and TODO items.\n";
        let turnstile = "1. alpha: the first file\n2. It mentions apples and TODO items.\n3. ";
        assert_eq!(
            neutral_result("view", runtime),
            neutral_result("view", turnstile)
        );
        assert_eq!(
            neutral_result("view", turnstile),
            neutral_result(
                "view",
                "1. alpha: the first file\n2. It mentions apples and TODO items."
            )
        );
        assert_eq!(
            neutral_result("view", "1. 1. Buy milk\n2. 2. Eggs"),
            neutral_result("view", "1. Buy milk\n2. Eggs")
        );
        assert_ne!(
            neutral_result("view", "1. apples"),
            neutral_result("view", "1. pears")
        );
        assert_eq!(
            neutral_result("glob", "./alpha.txt\n./gamma.txt\n./beta.txt"),
            neutral_result("glob", "./alpha.txt\n./beta.txt\n./gamma.txt")
        );
        assert_ne!(
            neutral_result("bash", "b\na\n<exited with exit code 0>"),
            neutral_result("bash", "a\nb\n<exited with exit code 0>")
        );
        assert_eq!(
            neutral_result("bash", "a\nb\n<exited with exit code 0>"),
            neutral_result("bash", "a\nb\n<shellId: 0 completed with exit code 0>")
        );
        assert_eq!(
            neutral_result("bash", "<exited with exit code 2>"),
            neutral_result("bash", "\n<shellId: 3 completed with exit code 2>")
        );
        assert_ne!(
            neutral_result("bash", "a\n<exited with exit code 0>"),
            neutral_result("bash", "a\n<shellId: 0 completed with exit code 1>")
        );
    }
}
