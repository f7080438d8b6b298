//! One fetch: a GET that follows at most a few redirects, the body read incrementally up to a
//! cap. Each redirect target is a URL of its own: it is approved (`Approve`, the permission
//! path a first URL takes) before it is requested, then checked again against the deny rules
//! and the address block (`address`). The caller bounds the whole fetch in time.

use std::net::SocketAddr;

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, USER_AGENT};

use super::address;
use crate::ToolFailure;
use turnstile_permissions::hosts::UrlRules;

/// The bounds of one fetch.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of body read at most; the rest is never received.
    pub max_body_bytes: usize,
    /// Redirects followed at most.
    pub max_redirects: usize,
    /// Whether loopback, private and link-local addresses are refused for hosts no allow rule
    /// names (always in a session; lifted to test the other checks alone, as the runtime's
    /// `COPILOT_WEB_FETCH_ALLOW_LOCALHOST` lifts its block).
    pub block_local: bool,
}

/// Decides a redirect `target` reached from the first URL `from`: `Ok` follows it.
pub trait Approve {
    /// Whether the fetch may go on to `target`.
    fn approve(
        &mut self,
        target: &Url,
        from: &Url,
    ) -> impl std::future::Future<Output = Result<(), ToolFailure>> + Send;
}

/// What a fetch brought back.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL the body came from (after redirects).
    pub url: Url,
    /// The URL asked for when redirects were followed.
    pub redirected_from: Option<Url>,
    /// The response's `Content-Type`.
    pub content_type: Option<String>,
    /// The body, at most [`Limits::max_body_bytes`].
    pub body: Vec<u8>,
    /// Whether the body went on past the cap.
    pub cut: bool,
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// A hop resolves to a loopback, private or link-local address nobody allowed.
    #[error(
        "WebFetchBlockedUrlError: web_fetch URL \"{url}\" resolves to blocked address {ip}. URLs must not target loopback, private, or link-local addresses."
    )]
    Blocked {
        /// The hop's URL.
        url: String,
        /// The first blocked address it resolved to.
        ip: std::net::IpAddr,
    },
    /// A hop's host is denied by a `--deny-url` rule.
    #[error("Failed to fetch URL: {url} is denied by the rule {rules}.")]
    Denied {
        /// The hop's URL.
        url: String,
        /// The matching deny patterns.
        rules: String,
    },
    /// A hop is not http or https.
    #[error(
        "Failed to fetch URL: redirect target uses unsupported scheme: {0}. Only http:// and https:// URLs are allowed."
    )]
    Scheme(String),
    /// A redirect without a usable `Location`.
    #[error("Failed to fetch URL: redirect target could not be resolved: {0}")]
    BadRedirect(String),
    /// More redirects than allowed.
    #[error("Failed to fetch URL: {url} redirected more than {max} times.")]
    TooManyRedirects {
        /// The URL asked for.
        url: String,
        /// The limit.
        max: usize,
    },
    /// The server answered with an error status.
    #[error("Error: Failed to fetch {url} - status code {status}")]
    Status {
        /// The hop's URL.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The host does not resolve.
    #[error("Failed to fetch URL: {host} could not be resolved: {message}")]
    Resolve {
        /// The host.
        host: String,
        /// What the resolver said.
        message: String,
    },
    /// The connection or the transfer failed.
    #[error("Failed to fetch URL: {0}")]
    Transport(String),
    /// A redirect target was not approved (the denial the model reads).
    #[error("{0}")]
    NotApproved(ToolFailure),
}

/// Fetches `url` under `rules` and `limits`.
pub async fn fetch(
    url: Url,
    rules: &UrlRules,
    limits: Limits,
    approve: &mut impl Approve,
) -> Result<Fetched, FetchError> {
    let first = url.clone();
    let mut url = url;
    for hop in 0..=limits.max_redirects {
        let response = get(&url, rules, limits.block_local).await?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(LOCATION)
        {
            let location = location
                .to_str()
                .map_err(|_| FetchError::BadRedirect(format!("{location:?}")))?;
            let next = url
                .join(location)
                .map_err(|e| FetchError::BadRedirect(format!("{location}: {e}")))?;
            if hop == limits.max_redirects {
                break;
            }
            if !matches!(next.scheme(), "http" | "https") {
                return Err(FetchError::Scheme(next.to_string()));
            }
            // An allowed host must not vouch for where it sends the fetch (an open redirect
            // would reach any host): the target is approved as a URL of its own.
            approve
                .approve(&next, &first)
                .await
                .map_err(FetchError::NotApproved)?;
            url = next;
            continue;
        }
        if !status.is_success() {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (body, cut) = read_capped(response, limits.max_body_bytes).await?;
        return Ok(Fetched {
            redirected_from: (url != first).then_some(first),
            url,
            content_type,
            body,
            cut,
        });
    }
    Err(FetchError::TooManyRedirects {
        url: first.to_string(),
        max: limits.max_redirects,
    })
}

/// One request, to addresses checked first (a hop's own check; redirects are not followed).
async fn get(
    url: &Url,
    rules: &UrlRules,
    block_local: bool,
) -> Result<reqwest::Response, FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::Scheme(url.to_string()));
    }
    let host = url
        .host_str()
        .ok_or_else(|| FetchError::BadRedirect(url.to_string()))?
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let denied = rules.denied(&host, port);
    if !denied.is_empty() {
        return Err(FetchError::Denied {
            url: url.to_string(),
            rules: denied.join(", "),
        });
    }
    let literal = address::literal(&host);
    let addrs: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| FetchError::Resolve {
                host: host.clone(),
                message: e.to_string(),
            })?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(FetchError::Resolve {
            host,
            message: "no addresses".into(),
        });
    }
    // A deny rule naming an address holds for every name and form that leads to it: the
    // addresses the host resolved to, and the IPv4 address an IPv6 form carries.
    let denied: Vec<String> = addrs
        .iter()
        .flat_map(|a| address::rule_forms(a.ip()))
        .flat_map(|form| rules.denied(&form, port))
        .collect();
    if !denied.is_empty() {
        return Err(FetchError::Denied {
            url: url.to_string(),
            rules: denied.join(", "),
        });
    }
    if block_local
        && !rules.allowed(&host, port)
        && let Some(ip) = address::first_blocked(&addrs)
    {
        return Err(FetchError::Blocked {
            url: url.to_string(),
            ip,
        });
    }
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        // A proxy would make its own lookup of the host: the checked addresses must be used.
        .no_proxy();
    if literal.is_none() {
        builder = builder.resolve_to_addrs(&host, &addrs);
    }
    let client = builder
        .build()
        .map_err(|e| FetchError::Transport(e.to_string()))?;
    client
        .get(url.clone())
        .header(USER_AGENT, concat!("turnstile/", env!("CARGO_PKG_VERSION")))
        .header(ACCEPT, "text/html, text/markdown;q=0.9, */*;q=0.8")
        .send()
        .await
        .map_err(|e| FetchError::Transport(error_chain(&e)))
}

/// Reads at most `cap` bytes of the body, chunk by chunk; says whether more was coming.
async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), FetchError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| FetchError::Transport(error_chain(&e)))?
    {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// An error with its causes, which say what actually failed (refused, reset, TLS).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
