//! Whether the model server answers at all, asked once before a prompt is sent: a server that
//! is not running fails the command at once with what to do, before the session records the
//! prompt, instead of after a model call's retries with the prompt left in the conversation
//! for a resume to send again (`docs/decisions.md`).
//!
//! Only a TCP connection is tried, and only a clear "nobody is there" fails: the host does not
//! resolve, or every address refuses the connection. A slow or filtered network is left to
//! the model call's own timeouts, and nothing is tried when a proxy is configured (the
//! client then never connects to the server itself). For an `https://` URL the connection
//! also sends a TLS ClientHello: a server that answers it in plain text, or not at all within
//! [`TLS_TIMEOUT`], speaks plain HTTP (every TLS server answers a hello with a handshake
//! record or an alert), and the HTTP client would wait minutes on it.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// How long one connection attempt may take before the server is given the benefit of the doubt.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a server named by an `https://` URL may take to answer a TLS ClientHello.
pub const TLS_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the model server cannot be reached; the text says what to do.
#[derive(Debug)]
pub struct Unreachable {
    base_url: String,
    reason: String,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no model server answers at {} ({}): start a server there or pass --base-url; nothing was sent",
            self.base_url, self.reason
        )
    }
}

impl std::error::Error for Unreachable {}

/// Checks that something listens at `base_url`'s host and port (a URL `check_base_url`
/// accepted).
pub fn check(base_url: &str) -> Result<(), Unreachable> {
    if proxied() {
        return Ok(());
    }
    let Ok(url) = url::Url::parse(base_url) else {
        return Ok(());
    };
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return Ok(());
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let unreachable = |reason: String| Unreachable {
        base_url: base_url.to_owned(),
        reason,
    };
    let addrs: Vec<_> = match (host, port).to_socket_addrs() {
        Ok(addrs) => addrs.collect(),
        Err(e) => return Err(unreachable(format!("cannot resolve {host}: {e}"))),
    };
    let mut refused = 0;
    for addr in &addrs {
        match TcpStream::connect_timeout(addr, CONNECT_TIMEOUT) {
            Ok(stream) if url.scheme() == "https" => {
                return match speaks_tls(stream, host) {
                    Some(false) => Err(unreachable(format!(
                        "{host}:{port} does not answer TLS: a plain-HTTP server is reached with http://"
                    ))),
                    _ => Ok(()),
                };
            }
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => refused += 1,
            Err(_) => {}
        }
    }
    if refused > 0 && refused == addrs.len() {
        return Err(unreachable(format!("connection refused on {host}:{port}")));
    }
    Ok(())
}

/// Whether the server on `stream` answers a TLS ClientHello: `Some(true)` with a handshake
/// record or an alert, `Some(false)` with anything else or nothing in [`TLS_TIMEOUT`], `None`
/// when the connection failed or closed (no verdict: the model call will say).
fn speaks_tls(mut stream: TcpStream, host: &str) -> Option<bool> {
    stream.set_read_timeout(Some(TLS_TIMEOUT)).ok()?;
    stream.write_all(&client_hello(host)).ok()?;
    let mut first = [0u8; 1];
    match stream.read(&mut first) {
        Ok(0) => None,
        // 22: handshake (ServerHello, HelloRetryRequest), 21: alert.
        Ok(_) => Some(matches!(first[0], 22 | 21)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Some(false)
        }
        Err(_) => None,
    }
}

/// A TLS 1.2/1.3 ClientHello record: common cipher suites, groups and signature schemes, the
/// server name when `host` is a name. Its only job is to make a TLS server answer.
fn client_hello(host: &str) -> Vec<u8> {
    fn with_len16(body: &[u8]) -> Vec<u8> {
        let mut v = (body.len() as u16).to_be_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }
    fn extension(kind: u16, body: &[u8]) -> Vec<u8> {
        let mut v = kind.to_be_bytes().to_vec();
        v.extend(with_len16(body));
        v
    }
    let mut extensions = Vec::new();
    if host.parse::<std::net::IpAddr>().is_err() && host.len() < 256 {
        let mut name = vec![0u8];
        name.extend(with_len16(host.as_bytes()));
        extensions.extend(extension(0x0000, &with_len16(&name)));
    }
    // supported_groups: x25519, secp256r1, secp384r1.
    extensions.extend(extension(
        0x000a,
        &with_len16(&[0x00, 0x1d, 0x00, 0x17, 0x00, 0x18]),
    ));
    // ec_point_formats: uncompressed.
    extensions.extend(extension(0x000b, &[0x01, 0x00]));
    // signature_algorithms: ecdsa_secp256r1_sha256, rsa_pss_rsae_sha256, rsa_pkcs1_sha256.
    extensions.extend(extension(
        0x000d,
        &with_len16(&[0x04, 0x03, 0x08, 0x04, 0x04, 0x01]),
    ));
    // supported_versions: TLS 1.3, TLS 1.2.
    extensions.extend(extension(0x002b, &[0x04, 0x03, 0x04, 0x03, 0x03]));
    let mut hello = vec![0x03, 0x03];
    hello.extend((0..32u8).map(|i| i.wrapping_mul(37).wrapping_add(11)));
    hello.push(0); // no session id
    // TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256, and the
    // ECDHE-ECDSA/RSA AES-GCM suites of TLS 1.2.
    hello.extend(with_len16(&[
        0x13, 0x01, 0x13, 0x02, 0x13, 0x03, 0xc0, 0x2b, 0xc0, 0x2f, 0xc0, 0x2c, 0xc0, 0x30,
    ]));
    hello.extend([0x01, 0x00]); // compression: none
    hello.extend(with_len16(&extensions));
    let mut handshake = vec![0x01];
    handshake.extend(&(hello.len() as u32).to_be_bytes()[1..]);
    handshake.extend(hello);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend(with_len16(&handshake));
    record
}

/// Whether the HTTP client would go through a proxy (the variables it reads).
fn proxied() -> bool {
    ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"]
        .iter()
        .any(|name| {
            [name.to_string(), name.to_ascii_lowercase()]
                .iter()
                .any(|n| std::env::var_os(n).is_some_and(|v| !v.is_empty()))
        })
}
