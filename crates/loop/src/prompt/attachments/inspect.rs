//! Looking at an attached path for its `<tagged_files>` line: lines of a file, entries of a
//! directory, or why neither could be counted. Reads are bounded whatever the path holds.

use std::fs;
use std::io::Read;
use std::path::Path;

use super::LineRange;

/// Files larger than this are listed by size, not read (the Copilot CLI's limit).
pub const LARGE_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Directory entries counted at most; a larger directory is listed as "N+ items".
pub const MAX_DIRECTORY_ENTRIES: u64 = 100_000;

/// The `<tagged_files>` line of `path` (already resolved and absolute): `* /abs (3 lines)`.
pub(crate) fn tagged_entry(path: &Path, range: Option<LineRange>) -> String {
    format!("* {} ({})", path.display(), describe(path, range))
}

fn describe(path: &Path, range: Option<LineRange>) -> String {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return format!("error: {}", io_reason(&e)),
    };
    if meta.is_dir() {
        return match count_entries(path) {
            Ok(n) if n >= MAX_DIRECTORY_ENTRIES => format!("{n}+ items"),
            Ok(n) => format!("{n} items"),
            Err(e) => format!("error: {}", io_reason(&e)),
        };
    }
    if meta.len() > LARGE_FILE_BYTES {
        return format!("large file: {:.1}MB", meta.len() as f64 / (1024.0 * 1024.0));
    }
    let lines = match count_lines(path) {
        Ok(n) => n,
        Err(e) => return format!("error: {}", io_reason(&e)),
    };
    match range {
        Some(r) if r.start == r.end => format!("line {} of {lines} lines", r.start),
        Some(r) => format!("lines {}-{} of {lines} lines", r.start, r.end),
        None => format!("{lines} lines"),
    }
}

/// Lines as the Copilot CLI counts them: pieces between newlines (`"a\nb\n"` is 3), 0 when
/// empty. Reads at most [`LARGE_FILE_BYTES`] (+1 to notice growth).
fn count_lines(path: &Path) -> std::io::Result<u64> {
    let file = fs::File::open(path)?;
    let mut reader = file.take(LARGE_FILE_BYTES + 1);
    let mut buf = vec![0u8; 64 * 1024];
    let (mut newlines, mut total) = (0u64, 0u64);
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        newlines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
    }
    Ok(if total == 0 { 0 } else { newlines + 1 })
}

fn count_entries(path: &Path) -> std::io::Result<u64> {
    let mut n = 0;
    for entry in fs::read_dir(path)? {
        entry?;
        n += 1;
        if n >= MAX_DIRECTORY_ENTRIES {
            break;
        }
    }
    Ok(n)
}

/// An I/O error in words a model (and a person) reads.
pub(crate) fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_as_the_runtime_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [("", 0), ("a", 1), ("a\nb", 2), ("line one\nline two\n", 3)];
        for (i, (text, lines)) in cases.iter().enumerate() {
            let p = dir.path().join(format!("f{i}"));
            fs::write(&p, text).unwrap();
            assert_eq!(
                tagged_entry(&p, None),
                format!("* {} ({lines} lines)", p.display())
            );
        }
        let p = dir.path().join("f3");
        assert!(
            tagged_entry(&p, Some(LineRange { start: 1, end: 1 })).ends_with("(line 1 of 3 lines)")
        );
        assert!(
            tagged_entry(&p, Some(LineRange { start: 1, end: 2 }))
                .ends_with("(lines 1-2 of 3 lines)")
        );
    }

    #[test]
    fn large_files_are_listed_by_size_without_reading_them() {
        let dir = tempfile::tempdir().unwrap();
        let at_limit = dir.path().join("at");
        let over = dir.path().join("over");
        fs::File::create(&at_limit)
            .unwrap()
            .set_len(LARGE_FILE_BYTES)
            .unwrap();
        fs::File::create(&over)
            .unwrap()
            .set_len(30_000_000)
            .unwrap();
        assert!(tagged_entry(&at_limit, None).ends_with("(1 lines)"));
        assert!(
            tagged_entry(&over, None).ends_with("(large file: 28.6MB)"),
            "{}",
            tagged_entry(&over, None)
        );
    }

    #[test]
    fn directories_missing_paths_and_unreadable_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a"), "x").unwrap();
        fs::create_dir(dir.path().join("b")).unwrap();
        assert!(tagged_entry(dir.path(), None).ends_with("(2 items)"));
        let missing = dir.path().join("nope");
        assert_eq!(
            tagged_entry(&missing, None),
            format!("* {} (error: no such file or directory)", missing.display())
        );
    }
}
