//! `web_fetch`: an HTTP(S) GET of a URL, the page as simplified markdown (or raw), in pages.
//!
//! - Parameters as the runtime's: `url`, `max_length` (characters, default 5000, at most
//!   20000), `start_index` (where the page starts, for the next part), `raw`.
//! - The `url` permission kind: the request names the URL; `--allow-url` / `--deny-url` rules
//!   decide it by host (`hosts`), deny winning.
//! - Loopback, private and link-local targets are refused with the runtime's words unless an
//!   allow rule names the host (`address`). A redirect target is a `url` permission request
//!   of its own (with `redirectedFrom`), decided like the first URL's (an allow rule naming
//!   its host, else the client), then checked again; at most [`MAX_REDIRECTS`] are followed
//!   (`fetch`).
//! - Bounded: [`MAX_BODY_BYTES`] of body are read (incrementally; the rest is never
//!   received), the whole fetch takes at most [`TIME_CAP`], and an abort stops it.

mod address;
mod fetch;
mod markdown;
mod page;

use std::time::Duration;

use reqwest::Url;
use serde_json::{Value, json};

use super::{
    AsyncTool, PermissionAsk, PermissionKind, ToolContext, ToolFailure, ToolOutput, ToolSpec, args,
    blocking,
};

/// The `web_fetch` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WebFetchTool;

/// Characters returned when `max_length` is not given (the runtime's default).
pub const DEFAULT_MAX_LENGTH: usize = 5000;
/// The largest `max_length` honoured (the runtime's maximum).
pub const MAX_LENGTH: usize = 20000;
/// Body bytes read at most.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 5;
/// How long one fetch (all hops and the body) may take.
pub const TIME_CAP: Duration = Duration::from_secs(30);

/// The permission request's intention (the runtime's).
const INTENTION: &str = "Fetch web content";

/// The checked arguments of a call.
#[derive(Debug, Clone)]
pub struct FetchArgs {
    url: Url,
    max_length: usize,
    start_index: usize,
    raw: bool,
}

fn check(args: &Value) -> Result<FetchArgs, ToolFailure> {
    let text = args::required_str(args, "url")?;
    // The runtime's short answers to a URL it will not fetch (before any permission).
    let refuse = |message: &str| ToolFailure::new(message, "failure");
    let url = Url::parse(text.trim()).map_err(|_| refuse("Invalid URL"))?;
    match url.scheme() {
        "http" | "https" => {}
        "file" => return Err(refuse("file protocol not supported")),
        _ => return Err(refuse("unsupported protocol")),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(refuse("Invalid URL"));
    }
    Ok(FetchArgs {
        url,
        max_length: args::optional_usize(args, "max_length")?
            .unwrap_or(DEFAULT_MAX_LENGTH)
            .clamp(1, MAX_LENGTH),
        start_index: args::optional_usize(args, "start_index")?.unwrap_or(0),
        raw: args::optional_bool(args, "raw")?.unwrap_or(false),
    })
}

impl AsyncTool for WebFetchTool {
    const NAME: &'static str = "web_fetch";
    type Args = FetchArgs;

    fn offer(&self) -> ToolSpec {
        ToolSpec {
            name: "web_fetch".into(),
            description: "Fetches a URL over HTTP(S) and returns the page as simplified markdown \
                (or the raw HTML), a part at a time: when the page is longer than max_length, \
                call again with the start_index the answer gives. Local and private network \
                addresses are refused."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string", "description": "The URL to fetch (http or https)."},
                    "max_length": {"type": "number", "description": "Characters to return at most (default 5000, at most 20000)."},
                    "start_index": {"type": "number", "description": "Character to start from, to read the next part of a long page (default 0)."},
                    "raw": {"type": "boolean", "description": "Return the HTML as it is instead of markdown (default false)."}
                },
                "required": ["url"]
            }),
            ..ToolSpec::default()
        }
    }

    fn check(&self, args: &Value, _ctx: &ToolContext) -> Result<FetchArgs, ToolFailure> {
        check(args)
    }

    fn needs(
        &self,
        a: &FetchArgs,
        _ctx: &ToolContext,
    ) -> Result<Option<PermissionAsk>, ToolFailure> {
        Ok(Some(url_ask(&a.url, None)))
    }

    async fn act(&self, a: FetchArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolFailure> {
        let limits = fetch::Limits {
            max_body_bytes: MAX_BODY_BYTES,
            max_redirects: MAX_REDIRECTS,
            block_local: true,
        };
        let mut ask = AskFor(ctx);
        let fetching = fetch::fetch(a.url.clone(), &ctx.urls, limits, &mut ask);
        let fetched = tokio::select! {
            _ = ctx.cancel.cancelled() => return Err(ToolFailure::cancelled()),
            done = tokio::time::timeout(TIME_CAP, fetching) => match done {
                Err(_) => {
                    return Err(ToolFailure::new(
                        format!(
                            "Failed to fetch URL: {} did not answer within {} seconds.",
                            a.url,
                            TIME_CAP.as_secs()
                        ),
                        "timeout",
                    ))
                }
                Ok(Err(fetch::FetchError::NotApproved(denial))) => return Err(denial),
                Ok(result) => result.map_err(|e| ToolFailure::new(e.to_string(), "failure"))?,
            },
        };
        // Turning a large page into markdown is CPU work: off the async workers.
        let text = blocking(move || Ok(page::answer(&fetched, a.raw, a.start_index, a.max_length)))
            .await?;
        Ok(ToolOutput::text(text))
    }

    fn summary(&self, args: &Value, _ctx: &ToolContext) -> Option<String> {
        args::optional_str(args, "url")
            .ok()
            .flatten()
            .map(fetching_summary)
    }
}

/// The `url` permission request for `url` (the runtime's: a redirect target names the URL
/// the fetch started from).
fn url_ask(url: &Url, redirected_from: Option<&Url>) -> PermissionAsk {
    let mut request = json!({"kind": "url", "intention": INTENTION, "url": url.as_str()});
    if let Some(from) = redirected_from {
        request["redirectedFrom"] = json!(from.as_str());
    }
    PermissionAsk {
        kind: PermissionKind::Url,
        request,
        intention: INTENTION.into(),
        subject: url.to_string(),
        shell: None,
    }
}

/// Redirect targets are asked for through the call's context, as the runtime asks for each.
struct AskFor<'a>(&'a ToolContext);

impl fetch::Approve for AskFor<'_> {
    async fn approve(&mut self, target: &Url, from: &Url) -> Result<(), ToolFailure> {
        let host = target.host_str().unwrap_or_default();
        let port = target.port_or_known_default().unwrap_or(80);
        let by_rule = self.0.urls.allowed(host, port);
        self.0.permit(url_ask(target, Some(from)), by_rule).await
    }
}

/// The runtime's title of a fetch: `Fetching URL`, a long URL shortened to about 50
/// characters around its host.
fn fetching_summary(url: &str) -> String {
    const WIDTH: usize = 50;
    let chars = |s: &str| s.chars().count();
    if chars(url) <= WIDTH {
        return format!("Fetching {url}");
    }
    let Some(host) = Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
    else {
        return format!(
            "Fetching {}...",
            url.chars().take(WIDTH - 3).collect::<String>()
        );
    };
    // A host this long leaves no room for the path after it (and `WIDTH - host - 3` would
    // not exist).
    if chars(&host) + 3 >= WIDTH {
        return format!(
            "Fetching {}...",
            host.chars().take(WIDTH - 3).collect::<String>()
        );
    }
    let keep = WIDTH - chars(&host) - 3;
    let after = url.find(&host).map_or("", |i| &url[i + host.len()..]);
    let tail: String = after
        .chars()
        .skip(chars(after).saturating_sub(keep))
        .collect();
    format!("Fetching {host}...{tail}")
}

#[cfg(test)]
mod tests;
