//! What the scripted server's tests share: a raw HTTP client and the replies it reads.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Failure guard only: no test depends on timing to pass.
pub const GUARD: Duration = Duration::from_secs(20);

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Chunked body ended with its last chunk (false when the connection was cut).
    pub complete: bool,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    /// The `data:` payloads of an SSE body.
    pub fn events(&self) -> Vec<String> {
        let text = String::from_utf8(self.body.clone()).unwrap();
        assert!(
            text.is_empty() || text.ends_with("\n\n"),
            "SSE events end with a blank line: {text:?}"
        );
        text.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                e.strip_prefix("data: ")
                    .unwrap_or_else(|| panic!("not a data line: {e:?}"))
                    .to_string()
            })
            .collect()
    }
}

pub async fn raw(addr: SocketAddr, request: Vec<u8>) -> Reply {
    tokio::time::timeout(GUARD, async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(&request).await.unwrap();
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).await.unwrap();
        parse_reply(&bytes)
    })
    .await
    .expect("reply within the guard")
}

pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> Reply {
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    raw(addr, request.into_bytes()).await
}

pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes(),
    )
    .await
}

pub fn parse_reply(bytes: &[u8]) -> Reply {
    let end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = std::str::from_utf8(&bytes[..end]).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let rest = &bytes[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v == "chunked");
    if !chunked {
        return Reply {
            status,
            headers,
            body: rest.to_vec(),
            complete: true,
        };
    }
    let mut body = Vec::new();
    let mut pos = 0;
    let mut complete = false;
    while let Some(p) = rest[pos..].windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&rest[pos..pos + p]).unwrap(), 16).unwrap();
        pos += p + 2;
        if size == 0 {
            complete = true;
            break;
        }
        body.extend_from_slice(&rest[pos..pos + size]);
        pos += size + 2;
    }
    Reply {
        status,
        headers,
        body,
        complete,
    }
}

pub fn chat(stream: bool) -> Value {
    json!({
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": stream,
        "stream_options": {"include_usage": true},
    })
}

pub fn chunks(events: &[String]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap())
        .collect()
}
