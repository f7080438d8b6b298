//! `$'..'` bodies decoded as bash decodes them (its `ansicstr`): escapes give bytes (`\xff`
//! is one byte, `\400` wraps to 0), and a NUL ends the string: the rest of the quotes is
//! dropped and the word goes on after them (`$'rm\0dir'x` is `rmx`), whichever escape made it
//! (`\0`, `\x00`, `\000`, `\u0000`, `\c@`).

/// A decoded `$'..'` body.
pub(super) struct Decoded {
    pub text: String,
    /// Why the text may not be what bash gets (bytes that are not UTF-8, a control
    /// character of a non-ASCII character), or `None`.
    pub doubt: Option<&'static str>,
}

/// Decodes the characters between `$'` and its closing quote.
pub(super) fn decode(raw: &[char]) -> Decoded {
    let mut bytes = Vec::new();
    let mut doubt = None;
    let mut k = 0;
    while let Some(&c) = raw.get(k) {
        k += 1;
        if c != '\\' {
            push_char(&mut bytes, c);
            continue;
        }
        let Some(&e) = raw.get(k) else {
            bytes.push(b'\\');
            break;
        };
        k += 1;
        let byte = match e {
            'a' => 0x07,
            'b' => 0x08,
            'e' | 'E' => 0x1b,
            'f' => 0x0c,
            'n' => b'\n',
            'r' => b'\r',
            't' => b'\t',
            'v' => 0x0b,
            '\\' | '\'' | '"' | '?' => e as u8,
            '0'..='7' => {
                // One to three octal digits, the first one included; the value wraps to a
                // byte.
                let (value, used) = digits(&raw[k - 1..], 8, 3);
                k += used - 1;
                (value & 0xff) as u8
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let (value, used) = digits(&raw[k..], 16, max);
                k += used;
                if used == 0 {
                    // No digits: the escape stays as written.
                    bytes.push(b'\\');
                    push_char(&mut bytes, e);
                    continue;
                }
                if e == 'x' || value < 0x80 {
                    value as u8
                } else {
                    match char::from_u32(value) {
                        Some(ch) => push_char(&mut bytes, ch),
                        None => doubt = Some("an invalid character in `$'..'`"),
                    }
                    continue;
                }
            }
            'c' => match raw.get(k) {
                None => {
                    bytes.extend_from_slice(b"\\c");
                    continue;
                }
                Some('\\') => {
                    // `\c\` is control-backslash; `\c\\` too, the pair read as one.
                    k += 1;
                    if raw.get(k) == Some(&'\\') {
                        k += 1;
                    }
                    0x1c
                }
                Some('?') => {
                    k += 1;
                    0x7f
                }
                Some(&x) if x.is_ascii() => {
                    k += 1;
                    x.to_ascii_uppercase() as u8 & 0x1f
                }
                Some(_) => {
                    // bash works on the first byte of the character.
                    k += 1;
                    doubt = Some("a control character of a non-ASCII character in `$'..'`");
                    continue;
                }
            },
            other => {
                bytes.push(b'\\');
                push_char(&mut bytes, other);
                continue;
            }
        };
        if byte == 0 {
            break;
        }
        bytes.push(byte);
    }
    match String::from_utf8(bytes) {
        Ok(text) => Decoded { text, doubt },
        Err(e) => Decoded {
            text: String::from_utf8_lossy(e.as_bytes()).into_owned(),
            doubt: Some("bytes that are not UTF-8 in `$'..'`"),
        },
    }
}

fn push_char(bytes: &mut Vec<u8>, c: char) {
    let mut buf = [0; 4];
    bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// The value of up to `max` leading digits of `radix` in `chars`, and how many there were.
fn digits(chars: &[char], radix: u32, max: usize) -> (u32, usize) {
    let mut value = 0u32;
    let mut used = 0;
    while used < max {
        let Some(d) = chars.get(used).and_then(|c| c.to_digit(radix)) else {
            break;
        };
        value = value.wrapping_mul(radix).wrapping_add(d);
        used += 1;
    }
    (value, used)
}
