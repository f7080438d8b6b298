use std::io::Read;
use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let mode = std::env::args().nth(2).unwrap();
    let t = Instant::now();
    let mut f = std::fs::File::open(&path).unwrap();
    let mut buf = vec![0u8; 8 << 20];
    let mut carry: Vec<u8> = Vec::new();
    let (mut lines, mut ok, mut bytes) = (0u64, 0u64, 0u64);
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 { break; }
        bytes += n as u64;
        let chunk = &buf[..n];
        let mut start = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            let line: &[u8] = if carry.is_empty() { &chunk[start..nl] } else { carry.extend_from_slice(&chunk[start..nl]); &carry };
            lines += 1;
            match mode.as_str() {
                "lines" => {}
                "utf8" => { if std::str::from_utf8(line).is_ok() { ok += 1; } }
                "serde" => { if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() { ok += 1; } }
                "utf8serde" => { if std::str::from_utf8(line).is_ok() && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() { ok += 1; } }
                "crc" => { ok = crc32c::crc32c_append(ok as u32, line) as u64; }
                _ => panic!(),
            }
            carry.clear();
            start = nl + 1;
        }
        carry.extend_from_slice(&chunk[start..]);
    }
    eprintln!("{mode}: {lines} lines {ok} ok {bytes} bytes in {:?}", t.elapsed());
}
