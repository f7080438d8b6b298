//! Against a real HTTP server on 127.0.0.1 (a thread on a std listener), reached because the
//! tests' rules name that host, as `--allow-url 127.0.0.1` does.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::Tool;
use turnstile_permissions::hosts::UrlRules;
use turnstile_permissions::{Decision, PermissionPolicy, ToolPattern};

/// A local server; counts the requests per path.
struct Server {
    port: u16,
    page_hits: Arc<AtomicUsize>,
}

fn respond(stream: &mut std::net::TcpStream, status: &str, headers: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

fn serve() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let page_hits = Arc::new(AtomicUsize::new(0));
    let hits = Arc::clone(&page_hits);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let hits = Arc::clone(&hits);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                }
                match path.as_str() {
                    "/page" => {
                        hits.fetch_add(1, Ordering::SeqCst);
                        respond(
                            &mut stream,
                            "200 OK",
                            "Content-Type: text/html; charset=utf-8\r\n",
                            b"<html><head><title>T</title><script>x()</script></head><body><h1>Title</h1><p>Hello <b>web</b>.</p></body></html>",
                        );
                    }
                    "/text" => respond(
                        &mut stream,
                        "200 OK",
                        "Content-Type: text/plain\r\n",
                        b"0123456789abcdefghij",
                    ),
                    "/redirect" => respond(&mut stream, "302 Found", "Location: /page\r\n", b""),
                    "/to-localhost" => {
                        let to = format!("Location: http://localhost:{port}/page\r\n");
                        respond(&mut stream, "302 Found", &to, b"");
                    }
                    "/loop" => respond(&mut stream, "302 Found", "Location: /loop\r\n", b""),
                    // An open redirect: wherever the query says.
                    open if open.starts_with("/open?to=") => {
                        let to = format!("Location: {}\r\n", &open["/open?to=".len()..]);
                        respond(&mut stream, "302 Found", &to, b"");
                    }
                    "/big" => {
                        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000000\r\n\r\n";
                        let _ = stream.write_all(head.as_bytes());
                        let chunk = vec![b'x'; 64 * 1024];
                        // Stops when the client hangs up: a fetch reads its cap and goes.
                        for _ in 0..1600 {
                            if stream.write_all(&chunk).is_err() {
                                break;
                            }
                        }
                    }
                    "/slow" => std::thread::sleep(std::time::Duration::from_secs(30)),
                    _ => respond(&mut stream, "404 Not Found", "", b"missing"),
                }
            });
        }
    });
    Server { port, page_hits }
}

fn ctx_allowing(hosts: &[&str], denied: &[&str]) -> ToolContext {
    let s = |v: &[&str]| v.iter().map(|h| h.to_string()).collect::<Vec<_>>();
    let mut ctx = ToolContext::new(std::env::temp_dir());
    ctx.urls = Arc::new(UrlRules::from_flags(&s(hosts), &s(denied)).unwrap());
    ctx
}

async fn fetch_text(ctx: &ToolContext, args: Value) -> Result<String, ToolFailure> {
    WebFetchTool.run(args, ctx).await.map(|o| o.content)
}

#[tokio::test]
async fn local_addresses_are_refused_in_the_runtime_words() {
    let server = serve();
    let ctx = ToolContext::new(std::env::temp_dir());
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("http://{host}:{}/page", server.port);
        let err = fetch_text(&ctx, json!({"url": url})).await.unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "WebFetchBlockedUrlError: web_fetch URL \"{url}\" resolves to blocked address 127.0.0.1. URLs must not target loopback, private, or link-local addresses."
            )
        );
    }
    assert_eq!(server.page_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_allowed_host_is_fetched_as_markdown_or_raw() {
    let server = serve();
    let ctx = ctx_allowing(&["127.0.0.1"], &[]);
    let url = format!("http://127.0.0.1:{}/page", server.port);
    let text = fetch_text(&ctx, json!({"url": url})).await.unwrap();
    assert_eq!(
        text,
        format!("Contents of {url}:\nT\n\n# Title\n\nHello **web**.")
    );
    let raw = fetch_text(&ctx, json!({"url": url, "raw": true}))
        .await
        .unwrap();
    assert!(
        raw.starts_with(&format!(
            "Here is the raw content:\nContents of {url}:\n<html>"
        )),
        "{raw}"
    );
    let redirected = format!("http://127.0.0.1:{}/redirect", server.port);
    let text = fetch_text(&ctx, json!({"url": redirected})).await.unwrap();
    assert!(
        text.starts_with(&format!(
            "Contents of {url} (redirected from {redirected}):\nT\n"
        )),
        "{text}"
    );
}

#[tokio::test]
async fn long_pages_come_in_parts() {
    let server = serve();
    let ctx = ctx_allowing(&["127.0.0.1"], &[]);
    let url = format!("http://127.0.0.1:{}/text", server.port);
    let lead =
        "Content type text/plain cannot be simplified to markdown. Here is the raw content:\n";
    let first = fetch_text(&ctx, json!({"url": url, "max_length": 8}))
        .await
        .unwrap();
    assert_eq!(
        first,
        format!(
            "{lead}Contents of {url}:\n01234567\n\n<note>Content truncated. Call the fetch tool with a start_index of 8 to get more content.</note>"
        )
    );
    let last = fetch_text(
        &ctx,
        json!({"url": url, "max_length": "8", "start_index": 16}),
    )
    .await
    .unwrap();
    assert_eq!(last, format!("{lead}Contents of {url}:\nghij"));
    let past = fetch_text(&ctx, json!({"url": url, "start_index": 20}))
        .await
        .unwrap();
    assert_eq!(
        past,
        format!("{lead}Contents of {url}:\n<error>No more content available.</error>")
    );
}

/// Approves a redirect target as a context's own rules would, and keeps each request.
struct ByRules {
    rules: UrlRules,
    asked: Vec<(String, String)>,
}

impl fetch::Approve for ByRules {
    async fn approve(&mut self, target: &Url, from: &Url) -> Result<(), ToolFailure> {
        self.asked.push((target.to_string(), from.to_string()));
        let port = target.port_or_known_default().unwrap_or(80);
        if self
            .rules
            .allowed(target.host_str().unwrap_or_default(), port)
        {
            Ok(())
        } else {
            Err(ToolFailure::new("not approved", "denied"))
        }
    }
}

#[tokio::test]
async fn an_allowed_host_does_not_vouch_for_its_redirects() {
    // Two servers; the rule names the first one's port only. The address block is lifted (as
    // the runtime's COPILOT_WEB_FETCH_ALLOW_LOCALHOST lifts it) so that the approval of the
    // redirect target is all that stands between the open redirect and the second server.
    let (open, secret) = (serve(), serve());
    let mut approve = ByRules {
        rules: UrlRules::from_flags(&[format!("127.0.0.1:{}", open.port)], &[]).unwrap(),
        asked: Vec::new(),
    };
    let limits = fetch::Limits {
        max_body_bytes: 1000,
        max_redirects: MAX_REDIRECTS,
        block_local: false,
    };
    let target = format!("http://127.0.0.1:{}/page", secret.port);
    let first = Url::parse(&format!("http://127.0.0.1:{}/open?to={target}", open.port)).unwrap();
    let err = fetch::fetch(first.clone(), &approve.rules.clone(), limits, &mut approve)
        .await
        .unwrap_err();
    assert!(matches!(err, fetch::FetchError::NotApproved(_)), "{err}");
    assert_eq!(secret.page_hits.load(Ordering::SeqCst), 0);
    assert_eq!(approve.asked, [(target, first.to_string())]);

    // A redirect within the named host is asked for too, and approved.
    approve.asked.clear();
    let same = format!("http://127.0.0.1:{}/page", open.port);
    let first = Url::parse(&format!("http://127.0.0.1:{}/open?to={same}", open.port)).unwrap();
    let rules = approve.rules.clone();
    let fetched = fetch::fetch(first.clone(), &rules, limits, &mut approve)
        .await
        .unwrap();
    assert_eq!(fetched.url.as_str(), same);
    assert_eq!(approve.asked, [(same, first.to_string())]);
    assert_eq!(open.page_hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn every_redirect_hop_is_checked_again() {
    let server = serve();
    // 127.0.0.1 is allowed, localhost is not: outside a session nobody can approve the
    // redirect there.
    let ctx = ctx_allowing(&["127.0.0.1"], &[]);
    let url = format!("http://127.0.0.1:{}/to-localhost", server.port);
    let err = fetch_text(&ctx, json!({"url": url})).await.unwrap_err();
    assert_eq!(err.message, crate::asks::NOBODY_TO_ASK);
    assert_eq!(err.code.as_deref(), Some("denied"));
    assert_eq!(server.page_hits.load(Ordering::SeqCst), 0);
    // A deny rule wins over the allow rule, on the hop as on the first URL.
    let ctx = ctx_allowing(&["127.0.0.1", "localhost"], &["localhost"]);
    let err = fetch_text(&ctx, json!({"url": url})).await.unwrap_err();
    assert_eq!(err.code.as_deref(), Some("denied"), "{err}");
    assert_eq!(server.page_hits.load(Ordering::SeqCst), 0);
    // Approved but local: the block still holds for a host no allow rule names.
    let rules = UrlRules::from_flags(&["127.0.0.1".into()], &[]).unwrap();
    let mut approve_all = ByRules {
        rules: UrlRules::from_flags(&["localhost".into()], &[]).unwrap(),
        asked: Vec::new(),
    };
    let limits = fetch::Limits {
        max_body_bytes: 1000,
        max_redirects: MAX_REDIRECTS,
        block_local: true,
    };
    let err = fetch::fetch(Url::parse(&url).unwrap(), &rules, limits, &mut approve_all)
        .await
        .unwrap_err();
    assert!(matches!(err, fetch::FetchError::Blocked { .. }), "{err}");
    assert_eq!(server.page_hits.load(Ordering::SeqCst), 0);

    let ctx = ctx_allowing(&["127.0.0.1"], &[]);
    let looping = format!("http://127.0.0.1:{}/loop", server.port);
    let err = fetch_text(&ctx, json!({"url": looping})).await.unwrap_err();
    assert_eq!(
        err.message,
        format!("Failed to fetch URL: {looping} redirected more than {MAX_REDIRECTS} times.")
    );
    let missing = format!("http://127.0.0.1:{}/nothing", server.port);
    let err = fetch_text(&ctx, json!({"url": missing})).await.unwrap_err();
    assert_eq!(
        err.message,
        format!("Error: Failed to fetch {missing} - status code 404")
    );
}

#[tokio::test]
async fn the_body_is_read_up_to_its_cap() {
    let server = serve();
    let rules = UrlRules::from_flags(&["127.0.0.1".into()], &[]).unwrap();
    let url = Url::parse(&format!("http://127.0.0.1:{}/big", server.port)).unwrap();
    let limits = fetch::Limits {
        max_body_bytes: 100_000,
        max_redirects: 0,
        block_local: true,
    };
    let mut approve = ByRules {
        rules: rules.clone(),
        asked: Vec::new(),
    };
    let fetched = fetch::fetch(url, &rules, limits, &mut approve)
        .await
        .unwrap();
    assert_eq!(fetched.body.len(), 100_000);
    assert!(fetched.cut);
}

#[tokio::test]
async fn an_abort_stops_a_fetch() {
    let server = serve();
    let ctx = ctx_allowing(&["127.0.0.1"], &[]);
    let cancel = ctx.cancel.clone();
    let url = format!("http://127.0.0.1:{}/slow", server.port);
    let running = tokio::spawn(async move { fetch_text(&ctx, json!({"url": url})).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel.cancel();
    let err = running.await.unwrap().unwrap_err();
    assert_eq!(err.code.as_deref(), Some("cancelled"));
}

#[tokio::test]
async fn bad_urls_and_the_permission_request() {
    let ctx = ToolContext::new(std::env::temp_dir());
    for (url, message) in [
        ("not a url", "Invalid URL"),
        ("file:///etc/passwd", "file protocol not supported"),
        ("ftp://example.com/x", "unsupported protocol"),
    ] {
        let err = WebFetchTool
            .permission(&json!({"url": url}), &ctx)
            .unwrap_err();
        assert_eq!(err.message, message);
    }
    let ask = WebFetchTool
        .permission(&json!({"url": "https://example.com/a"}), &ctx)
        .unwrap()
        .unwrap();
    assert_eq!(ask.kind, PermissionKind::Url);
    assert_eq!(
        ask.request,
        json!({"kind": "url", "intention": "Fetch web content", "url": "https://example.com/a"})
    );
    assert_eq!(
        fetching_summary("https://example.com/a"),
        "Fetching https://example.com/a"
    );
    let long = format!("https://docs.example.com/{}", "segment/".repeat(10));
    let short = fetching_summary(&long);
    assert!(short.starts_with("Fetching docs.example.com..."), "{short}");
    assert_eq!(short.chars().count(), "Fetching ".len() + 50);
    // Hosts of every length around the width, from the model: a title, never a panic.
    for len in 40..=60 {
        let host = format!("{}.org", "h".repeat(len - 4));
        let title = fetching_summary(&format!("https://{host}/{}", "p".repeat(80)));
        assert!(title.starts_with("Fetching "), "{title}");
        assert!(title.chars().count() <= "Fetching ".len() + 50, "{title}");
    }
}

/// The working directory of the policy checks below.
const POLICY_CWD: &str = "/work/repo";

fn policy(allow_all: bool, allow: &[&str], deny: &[&str]) -> PermissionPolicy {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    PermissionPolicy::from_flags(allow_all, &s(allow), &s(deny)).unwrap()
}

fn decide(p: &PermissionPolicy, tool: &str, ask: &PermissionAsk) -> Decision {
    p.decide(tool, ask, std::path::Path::new(POLICY_CWD), false)
}

fn fetch(url: &str) -> PermissionAsk {
    WebFetchTool
        .permission(&json!({"url": url}), &ToolContext::new(POLICY_CWD))
        .unwrap()
        .unwrap()
}

#[test]
fn url_rules_by_host_deny_wins() {
    let p = policy(
        false,
        &["url(*.example.com)", "url(127.0.0.1:8080)"],
        &["url(secret.example.com)"],
    );
    let d = |url: &str| decide(&p, "web_fetch", &fetch(url));
    assert_eq!(d("https://docs.example.com/a"), Decision::Approved);
    assert_eq!(d("http://127.0.0.1:8080/"), Decision::Approved);
    assert!(matches!(
        d("http://127.0.0.1:9090/"),
        Decision::NoApprovalRule { .. }
    ));
    assert_eq!(
        d("https://secret.example.com/"),
        Decision::DeniedByRules(vec!["url(secret.example.com)".into()])
    );
    assert_eq!(
        d("https://other.org/").hint(),
        " (allow with --allow-tool 'url(other.org)')"
    );
    let rules = p.url_rules();
    assert!(rules.allowed("127.0.0.1", 8080));
    assert!(!rules.allowed("secret.example.com", 443));
    // The kind alone and the tool name cover every fetch.
    assert_eq!(
        decide(
            &policy(false, &["url"], &[]),
            "web_fetch",
            &fetch("https://a.org")
        ),
        Decision::Approved
    );
    assert!(matches!(
        decide(
            &policy(true, &[], &["web_fetch"]),
            "web_fetch",
            &fetch("https://a.org")
        ),
        Decision::DeniedByRules(_)
    ));
    assert!(ToolPattern::parse("url(a*b)").is_err());
}

#[tokio::test]
async fn a_denied_address_is_denied_by_every_name_and_form() {
    let server = serve();
    // Every host is allowed (the local block lifted), one address denied: another name of it
    // (`localhost`) or an IPv6 form carrying it must not reach it.
    let ctx = ctx_allowing(
        &[
            "localhost",
            "[::ffff:127.0.0.1]",
            "[::ffff:7f00:1]",
            "[64:ff9b::7f00:1]",
        ],
        &["127.0.0.1"],
    );
    for host in ["localhost", "[::ffff:127.0.0.1]", "[64:ff9b::7f00:1]"] {
        let url = format!("http://{host}:{}/page", server.port);
        let err = fetch_text(&ctx, json!({"url": url})).await.unwrap_err();
        assert!(
            err.message.contains("is denied by the rule 127.0.0.1"),
            "{host}: {err}"
        );
    }
    assert_eq!(server.page_hits.load(Ordering::SeqCst), 0);
}
