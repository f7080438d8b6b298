//! `--allow-url` / `--deny-url`: host patterns for `web_fetch`'s `url` permission kind.
//!
//! A pattern is a host (`example.com`, `127.0.0.1`, `[::1]`), a host's subdomains
//! (`*.example.com`), either with a port (`127.0.0.1:8080`); a URL may be given, its scheme
//! and path are ignored. Deny wins. A host an allow pattern names is also exempt from the
//! block on loopback, private and link-local addresses (`address`): that block is against
//! fetches the user did not ask for, and naming the host is asking.

/// One host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    text: String,
    /// The host, lower case, without `*.` and without IPv6 brackets.
    host: String,
    /// `*.host`: the host's subdomains (not the host itself).
    subdomains: bool,
    port: Option<u16>,
}

/// A host pattern that could not be parsed.
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid URL pattern {pattern:?}: {reason} (expected a host such as example.com, *.example.com or 127.0.0.1:8080)"
)]
pub struct UrlPatternError {
    /// The pattern as given.
    pub pattern: String,
    /// What is wrong.
    pub reason: String,
}

impl HostPattern {
    /// Parses `example.com`, `*.example.com`, `host:port`, `[::1]:8080` or a URL's host part.
    pub fn parse(text: &str) -> Result<Self, UrlPatternError> {
        let err = |reason: &str| UrlPatternError {
            pattern: text.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = text.trim();
        let rest = trimmed.split_once("://").map_or(trimmed, |(_, r)| r);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
            let (host, after) = inner
                .split_once(']')
                .ok_or_else(|| err("missing ']' after an IPv6 address"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(err("unexpected text after ']'")),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .map_err(|_| err("the port is not a number"))
            })
            .transpose()?;
        let (subdomains, host) = match host.strip_prefix("*.") {
            Some(h) => (true, h),
            None => (false, host),
        };
        if host.is_empty() {
            return Err(err("no host"));
        }
        if host.contains(['*', ' ', '/', '\\']) {
            return Err(err("a host may only start with '*.'"));
        }
        Ok(HostPattern {
            text: trimmed.to_owned(),
            host: host.to_ascii_lowercase().trim_end_matches('.').to_owned(),
            subdomains,
            port,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern covers `host` (as a URL spells it: IPv6 without brackets) on `port`.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = host.to_ascii_lowercase();
        let host = host.trim_end_matches('.');
        if self.subdomains {
            host.strip_suffix(self.host.as_str())
                .is_some_and(|head| head.ends_with('.') && head.len() > 1)
        } else {
            host == self.host
        }
    }
}

/// The `--allow-url` and `--deny-url` patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlRules {
    /// `--allow-url`: fetches of these hosts are approved without asking.
    pub allow: Vec<HostPattern>,
    /// `--deny-url`: fetches of these hosts are refused, also after a redirect.
    pub deny: Vec<HostPattern>,
}

impl UrlRules {
    /// Parses the flags' patterns.
    pub fn from_flags(allow: &[String], deny: &[String]) -> Result<Self, UrlPatternError> {
        let parse = |v: &[String]| {
            v.iter()
                .map(|p| HostPattern::parse(p))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(UrlRules {
            allow: parse(allow)?,
            deny: parse(deny)?,
        })
    }

    /// The deny patterns covering `host:port` (empty: none).
    pub fn denied(&self, host: &str, port: u16) -> Vec<String> {
        self.deny
            .iter()
            .filter(|p| p.matches(host, port))
            .map(|p| p.as_str().to_owned())
            .collect()
    }

    /// Whether an allow pattern names `host:port` (and no deny pattern does).
    pub fn allowed(&self, host: &str, port: u16) -> bool {
        self.denied(host, port).is_empty() && self.allow.iter().any(|p| p.matches(host, port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> HostPattern {
        HostPattern::parse(text).unwrap()
    }

    #[test]
    fn hosts_subdomains_and_ports() {
        assert!(p("example.com").matches("example.com", 443));
        assert!(p("Example.COM").matches("example.com.", 80));
        assert!(!p("example.com").matches("www.example.com", 443));
        assert!(p("*.example.com").matches("www.example.com", 443));
        assert!(p("*.example.com").matches("a.b.example.com", 443));
        assert!(!p("*.example.com").matches("example.com", 443));
        assert!(!p("*.example.com").matches("badexample.com", 443));
        assert!(p("127.0.0.1:8080").matches("127.0.0.1", 8080));
        assert!(!p("127.0.0.1:8080").matches("127.0.0.1", 8081));
        assert!(p("[::1]").matches("[::1]", 80));
        assert!(p("[::1]:9").matches("::1", 9));
        assert!(p("https://docs.example.com/path?q").matches("docs.example.com", 1));
        for bad in ["", "*", "a*b.com", "host:port", "[::1", "*."] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn deny_wins() {
        let rules = UrlRules::from_flags(
            &["*.example.com".into(), "127.0.0.1".into()],
            &["secret.example.com".into()],
        )
        .unwrap();
        assert!(rules.allowed("www.example.com", 443));
        assert!(!rules.allowed("secret.example.com", 443));
        assert_eq!(
            rules.denied("secret.example.com", 443),
            ["secret.example.com"]
        );
        assert!(rules.allowed("127.0.0.1", 5000));
        assert!(!rules.allowed("localhost", 5000));
    }
}
