//! Reading a journal's lines into a [`Folder`]: large reads, no copy of a line that fits the
//! read buffer, and the audit's one-pass SIMD check for lines in the standard layout (the
//! journal reader's full parse only for the others).
//!
//! Validity is the journal reader's: a line the fast check does not accept goes through
//! [`check_line`], which accepts or names the damage, so the fold accepts exactly the lines it
//! accepted before (the audit's property tests prove the fast check agrees with it).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use turnstile_journal::ReadError;
use turnstile_journal::reader::{ReadMode, check_line};

use crate::error::ReplayError;
use crate::fold::Folder;

/// Bytes asked of the kernel per read.
const READ_BYTES: usize = 1 << 20;

/// Folds the lines of `file` from byte `offset` (line number `line` before it) that start
/// before byte `end` into `folder`, extending `crc` (CRC32C) over every complete line; returns
/// the offset of a torn tail (a last line without `\n`, left out).
pub(crate) fn fold_tail(
    path: &Path,
    mut file: File,
    folder: &mut Folder,
    mut line: u64,
    offset: u64,
    end: u64,
    mut crc: Option<&mut u32>,
) -> Result<Option<u64>, ReplayError> {
    let io_error = |e: io::Error| ReplayError::io(path, e);
    file.seek(SeekFrom::Start(offset)).map_err(io_error)?;
    // `buf[..filled]` holds read bytes; `buf[start..filled]` is not folded yet, and its first
    // `scanned` bytes hold no `\n`. Zeroed once: reads reuse it.
    let mut buf = vec![0u8; READ_BYTES];
    let mut filled = 0;
    let mut start = 0;
    let mut scanned = 0;
    let mut at = offset;
    loop {
        while let Some(rel) = memchr::memchr(b'\n', &buf[start + scanned..filled]) {
            if at >= end {
                return Ok(None);
            }
            let len = scanned + rel + 1;
            let bytes = &buf[start..start + len];
            line += 1;
            if let Some(crc) = crc.as_deref_mut() {
                *crc = crc32c::crc32c_append(*crc, bytes);
            }
            let body = &bytes[..len - 1];
            if !folder.apply_standard_line(body, len as u64) {
                let event =
                    check_line(body, ReadMode::Lenient).map_err(|message| ReadError::BadLine {
                        path: path.to_path_buf(),
                        line,
                        offset: at,
                        message,
                    })?;
                folder.apply_persisted(&event, len as u64);
            }
            start += len;
            scanned = 0;
            at += len as u64;
        }
        scanned = filled - start;
        if at >= end {
            return Ok(None);
        }
        // Keep the unfinished line, then read more after it. A line longer than the buffer
        // grows it: the fold needs a whole line to read its payload.
        buf.copy_within(start..filled, 0);
        filled -= start;
        start = 0;
        if buf.len() - filled < READ_BYTES / 2 {
            buf.resize(buf.len() * 2, 0);
        }
        let n = loop {
            match file.read(&mut buf[filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_error(e)),
            }
        };
        if n == 0 {
            return Ok((filled > 0).then_some(at));
        }
        filled += n;
    }
}
