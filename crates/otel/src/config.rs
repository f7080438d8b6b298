//! Where and how to send: the standard `OTEL_*` variables, and the command line over them.
//!
//! - The endpoint: the command line's URL (with `/v1/traces` added when it has no path), else
//!   `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is, else `OTEL_EXPORTER_OTLP_ENDPOINT` with
//!   `/v1/traces` added, else `http://localhost:4318/v1/traces` (the specification's rules).
//! - Headers: `OTEL_EXPORTER_OTLP_HEADERS`, then `OTEL_EXPORTER_OTLP_TRACES_HEADERS` over them
//!   (`key=value` pairs separated by commas, values percent-decoded).
//! - The time one request may take: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
//!   `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else 10 s.
//! - Contents: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` set to `true` (or
//!   `SPAN_ONLY`, `SPAN_AND_EVENT`), the variable the Copilot CLI and the OpenTelemetry GenAI
//!   instrumentations read; anything else, or nothing, leaves them out.
//! - `service.name`: `OTEL_SERVICE_NAME`, else `turnstile`.
//! - The protocol: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`,
//!   may only be `http/protobuf` (the one this crate encodes); `grpc` or `http/json` is
//!   refused rather than sent in a form the receiver does not expect.

use std::time::Duration;

/// The export's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportConfig {
    /// The URL the requests are posted to.
    pub endpoint: String,
    /// Extra request headers (an authorization, a tenant).
    pub headers: Vec<(String, String)>,
    /// The longest one request may take, connection included.
    pub timeout: Duration,
    /// Whether message contents, tool arguments and results are exported.
    pub capture_content: bool,
    /// The resource's `service.name`.
    pub service_name: String,
}

/// The default time one request may take (the specification's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// An endpoint that is not an `http://` or `https://` URL.
    #[error("{source_name}: `{value}` is not an http:// or https:// URL")]
    Endpoint {
        /// The flag or variable it came from.
        source_name: String,
        /// What it said.
        value: String,
    },
    /// A header entry without `=`, or with an empty name.
    #[error("{source_name}: `{entry}` is not a key=value header")]
    Header {
        /// The variable it came from.
        source_name: String,
        /// The entry.
        entry: String,
    },
    /// An OTLP protocol other than `http/protobuf`.
    #[error(
        "{source_name}: `{value}` is not supported; turnstile sends OTLP as http/protobuf only (set it to http/protobuf, or unset it)"
    )]
    Protocol {
        /// The variable it came from.
        source_name: String,
        /// What it said.
        value: String,
    },
    /// A count or a delay that is not a whole number.
    #[error("{source_name}: `{value}` is not a whole number")]
    Number {
        /// The variable it came from.
        source_name: String,
        /// What it said.
        value: String,
    },
    /// A timeout that is not a number of milliseconds.
    #[error("{source_name}: `{value}` is not a number of milliseconds")]
    Timeout {
        /// The variable it came from.
        source_name: String,
        /// What it said.
        value: String,
    },
}

impl ExportConfig {
    /// The settings from the command line's `url` (if any) and the variables `var` reads.
    pub fn resolve(
        url: Option<&str>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if let Some((name, value)) = [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ]
        .iter()
        .find_map(|name| var(name).map(|v| (*name, v)))
            && value.trim() != "http/protobuf"
        {
            return Err(ConfigError::Protocol {
                source_name: name.to_owned(),
                value,
            });
        }
        let endpoint = match url.filter(|u| !u.is_empty()) {
            Some(url) => with_traces_path_if_bare(checked("--otlp", url)?),
            None => match var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
                Some(url) => checked("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &url)?.to_owned(),
                None => match var("OTEL_EXPORTER_OTLP_ENDPOINT") {
                    Some(url) => {
                        let base = checked("OTEL_EXPORTER_OTLP_ENDPOINT", &url)?;
                        format!("{}/v1/traces", base.trim_end_matches('/'))
                    }
                    None => "http://localhost:4318/v1/traces".to_owned(),
                },
            },
        };
        let mut headers = Vec::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some(list) = var(name) {
                for (key, value) in parse_headers(name, &list)? {
                    headers.retain(|(k, _): &(String, String)| !k.eq_ignore_ascii_case(&key));
                    headers.push((key, value));
                }
            }
        }
        let timeout = match [
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ]
        .iter()
        .find_map(|name| var(name).map(|v| (*name, v)))
        {
            Some((name, value)) => {
                let ms: u64 = value.trim().parse().map_err(|_| ConfigError::Timeout {
                    source_name: name.to_owned(),
                    value: value.clone(),
                })?;
                Duration::from_millis(ms.max(1))
            }
            None => DEFAULT_TIMEOUT,
        };
        let capture_content = var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
            .is_some_and(|v| {
                let v = v.trim();
                v.eq_ignore_ascii_case("true")
                    || v.eq_ignore_ascii_case("span_only")
                    || v.eq_ignore_ascii_case("span_and_event")
            });
        let service_name = var("OTEL_SERVICE_NAME").unwrap_or_else(|| "turnstile".to_owned());
        Ok(ExportConfig {
            endpoint,
            headers,
            timeout,
            capture_content,
            service_name,
        })
    }
}

fn checked<'a>(source_name: &str, url: &'a str) -> Result<&'a str, ConfigError> {
    let url = url.trim();
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => Ok(url),
        _ => Err(ConfigError::Endpoint {
            source_name: source_name.to_owned(),
            value: url.to_owned(),
        }),
    }
}

/// `http://host:4318` and `http://host:4318/` get `/v1/traces`; a URL with a path is kept.
fn with_traces_path_if_bare(url: &str) -> String {
    let after_scheme = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    match after_scheme.find('/') {
        Some(i) if after_scheme[i..].len() > 1 => url.to_owned(),
        _ => format!("{}/v1/traces", url.trim_end_matches('/')),
    }
}

fn parse_headers(source_name: &str, list: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = || ConfigError::Header {
            source_name: source_name.to_owned(),
            // The value may be a secret: only the key is repeated.
            entry: entry.split('=').next().unwrap_or("").to_owned() + "=…",
        };
        let (key, value) = entry.split_once('=').ok_or_else(bad)?;
        let key = percent_decode(key.trim());
        if key.is_empty() {
            return Err(bad());
        }
        out.push((key, percent_decode(value.trim())));
    }
    Ok(out)
}

/// `%XX` sequences decoded (the W3C baggage encoding the specification names); a malformed
/// one is kept as it is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// An environment of `pairs` for the resolvers' tests (theirs and `live_config`'s).
#[cfg(test)]
pub(crate) fn test_env<'a>(
    pairs: &'a [(&'a str, &'a str)],
) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::test_env as env;
    use super::*;

    #[test]
    fn the_endpoint_follows_the_specification_and_the_flag_wins() {
        let none = env(&[]);
        let base = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")]);
        let both = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://traces.example/custom",
            ),
        ]);
        let at = |url: Option<&str>, var: &dyn Fn(&str) -> Option<String>| {
            ExportConfig::resolve(url, var).unwrap().endpoint
        };
        assert_eq!(at(None, &none), "http://localhost:4318/v1/traces");
        assert_eq!(at(None, &base), "http://collector:4318/v1/traces");
        assert_eq!(at(None, &both), "https://traces.example/custom");
        assert_eq!(
            at(Some("http://127.0.0.1:6006"), &both),
            "http://127.0.0.1:6006/v1/traces"
        );
        assert_eq!(at(Some("http://h:1/x/y"), &both), "http://h:1/x/y");
        assert!(ExportConfig::resolve(Some("ftp://h"), &none).is_err());
        assert!(ExportConfig::resolve(Some("http://"), &none).is_err());
    }

    #[test]
    fn headers_are_decoded_and_the_traces_ones_win() {
        let var = env(&[
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20a, x-tenant = one",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-tenant=two"),
        ]);
        let config = ExportConfig::resolve(None, var).unwrap();
        assert_eq!(
            config.headers,
            vec![
                ("Authorization".to_owned(), "Bearer a".to_owned()),
                ("x-tenant".to_owned(), "two".to_owned()),
            ]
        );
        let bad = ExportConfig::resolve(None, env(&[("OTEL_EXPORTER_OTLP_HEADERS", "secret")]));
        assert!(matches!(bad, Err(ConfigError::Header { .. })));
    }

    #[test]
    fn contents_only_when_opted_in_and_timeouts_in_milliseconds() {
        let off = ExportConfig::resolve(None, env(&[])).unwrap();
        assert!(!off.capture_content);
        assert_eq!(off.timeout, DEFAULT_TIMEOUT);
        let on = ExportConfig::resolve(
            None,
            env(&[
                ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRUE"),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "250"),
            ]),
        )
        .unwrap();
        assert!(on.capture_content);
        assert_eq!(on.timeout, Duration::from_millis(250));
        let no = ExportConfig::resolve(
            None,
            env(&[(
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                "false",
            )]),
        )
        .unwrap();
        assert!(!no.capture_content);
        assert!(
            ExportConfig::resolve(None, env(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")])).is_err()
        );
    }

    #[test]
    fn only_http_protobuf_is_spoken_and_the_traces_protocol_wins() {
        let grpc = env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert!(matches!(
            ExportConfig::resolve(None, grpc),
            Err(ConfigError::Protocol { .. })
        ));
        let json = env(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ]);
        assert!(matches!(
            ExportConfig::resolve(None, json),
            Err(ConfigError::Protocol { .. })
        ));
        let fine = env(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
        ]);
        assert!(ExportConfig::resolve(None, fine).is_ok());
    }
}
