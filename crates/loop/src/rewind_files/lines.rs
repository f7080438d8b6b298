//! Lines added and removed between a file's two texts, as rewind points and previews count
//! them: the lines outside the longest common subsequence of the two texts' lines (a last
//! line without a newline counts). The common head and tail are set aside first; what is left
//! is compared line by line only while its table stays under [`MAX_CELLS`], past which every
//! line left counts as changed (a bound on the work, not on correctness of small edits).

/// Largest comparison table (lines left of one text times lines left of the other).
pub const MAX_CELLS: usize = 4_000_000;

/// `(added, removed)` from `old` to `new`.
pub fn changes(old: &str, new: &str) -> (u64, u64) {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let a = &a[head..a.len() - tail];
    let b = &b[head..b.len() - tail];
    let common = if a.len().saturating_mul(b.len()) > MAX_CELLS {
        0
    } else {
        common_len(a, b)
    };
    ((b.len() - common) as u64, (a.len() - common) as u64)
}

/// Length of the longest common subsequence, one table row kept.
fn common_len(a: &[&str], b: &[&str]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diagonal = 0;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if x == y {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_as_the_runtime_does() {
        assert_eq!(changes("", "one"), (1, 0));
        assert_eq!(changes("one", "uno"), (1, 1));
        assert_eq!(changes("pre\n", "pre\nx\n"), (1, 0));
        assert_eq!(changes("gone\n", ""), (0, 1));
        assert_eq!(changes("one\ntwo\nthree\n", "one\nTWO\nthree\n"), (1, 1));
        assert_eq!(changes("a\nb\nc\nd\n", "a\nc\nb\nd\n"), (1, 1));
    }
}
