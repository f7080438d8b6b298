//! Just enough HTTP/1.1: read one request, write one response (the connection then closes).

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Largest request body accepted.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    /// The path without its query string.
    pub path: String,
    /// The query string (after `?`), empty when none.
    pub query: String,
    /// Header names (lowercased) and values, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Reads one request; `Ok(None)` when the peer closed before sending anything.
pub(crate) async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
) -> io::Result<Option<Request>> {
    let mut buf = Vec::with_capacity(4096);
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Err(bad("request head too large"));
        }
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            if buf.is_empty() {
                return Ok(None);
            }
            return Err(bad("connection closed inside the request head"));
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| bad("request head not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().ok_or_else(|| bad("bad request line"))?;
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (path, query) = (path.to_string(), query.to_string());
    let mut headers = Vec::new();
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        headers.push((name.trim().to_ascii_lowercase(), value.to_string()));
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(value.parse().map_err(|_| bad("bad Content-Length"))?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        }
    }
    let mut rest = buf.split_off(head_end + 4);
    let body = if chunked {
        read_chunked(stream, rest).await?
    } else {
        let len = content_length.unwrap_or(0);
        if len > MAX_BODY {
            return Err(bad("request body too large"));
        }
        while rest.len() < len {
            let n = stream.read(&mut tmp).await?;
            if n == 0 {
                return Err(bad("connection closed inside the request body"));
            }
            rest.extend_from_slice(&tmp[..n]);
        }
        rest.truncate(len);
        rest
    };
    Ok(Some(Request {
        method,
        path,
        query,
        headers,
        body,
    }))
}

/// Decodes a chunked request body; `buf` holds the bytes already read past the head.
async fn read_chunked<S: AsyncRead + Unpin>(
    stream: &mut S,
    mut buf: Vec<u8>,
) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut tmp = [0u8; 8192];
    let mut pos = 0usize;
    loop {
        // Need a full size line.
        let line_end = loop {
            if let Some(p) = find(&buf[pos..], b"\r\n") {
                break pos + p;
            }
            let n = stream.read(&mut tmp).await?;
            if n == 0 {
                return Err(bad("connection closed inside a chunked body"));
            }
            buf.extend_from_slice(&tmp[..n]);
        };
        let size_text =
            std::str::from_utf8(&buf[pos..line_end]).map_err(|_| bad("bad chunk size"))?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad("bad chunk size"))?;
        pos = line_end + 2;
        if size == 0 {
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(bad("request body too large"));
        }
        while buf.len() < pos + size + 2 {
            let n = stream.read(&mut tmp).await?;
            if n == 0 {
                return Err(bad("connection closed inside a chunked body"));
            }
            buf.extend_from_slice(&tmp[..n]);
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        pos += size + 2;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The reason phrase of a status.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// The response head: status line, the given headers, `Connection: close`, blank line.
pub(crate) fn head(status: u16, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}

/// Writes a complete response with a `Content-Length` body, then closes the write side.
pub(crate) async fn write_full<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: u16,
    content_type: &str,
    extra: &[(String, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut headers = vec![
        ("Content-Type".to_string(), content_type.to_string()),
        ("Content-Length".to_string(), body.len().to_string()),
    ];
    headers.extend(extra.iter().cloned());
    let mut bytes = head(status, &headers);
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).await?;
    stream.flush().await?;
    stream.shutdown().await
}

/// Frames `data` as one chunk of a chunked body.
pub(crate) fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// The end of a chunked body.
pub(crate) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";
