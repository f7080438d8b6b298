//! Connecting to a server that drops connections mid-handshake, through a loopback TCP relay
//! in front of a real `nats-server`: the relay resets the first connections it takes (RST,
//! as a server restarting or overloaded does) and relays the others. A store opens when
//! fewer connections are reset than it tries, and fails naming the store and the step when
//! every one is.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use turnstile_store_nats::local_server::LocalNats;
use turnstile_store_nats::{NatsConfig, NatsStore};

/// A relay on a free loopback port to `upstream`; the first `resets` connections are reset
/// as soon as they are taken. Returns its URL and how many connections it took.
async fn relay(upstream: u16, resets: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let taken = Arc::new(AtomicUsize::new(0));
    let counter = taken.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            if counter.fetch_add(1, Ordering::SeqCst) < resets {
                // Linger 0: closing sends RST, not FIN.
                let _ = client.set_zero_linger();
                drop(client);
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
        }
    });
    (format!("nats://127.0.0.1:{port}"), taken)
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_reset_mid_handshake_is_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let nats = LocalNats::start(dir.path()).unwrap();
    let (url, taken) = relay(port_of(&nats.url()), 2).await;
    let store = NatsStore::open(NatsConfig::new(url)).await;
    assert!(store.is_ok(), "{:?}", store.err());
    assert_eq!(
        taken.load(Ordering::SeqCst),
        3,
        "two resets, then one relayed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_resets_every_connection_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let nats = LocalNats::start(dir.path()).unwrap();
    let (url, taken) = relay(port_of(&nats.url()), usize::MAX).await;
    let err = tokio::time::timeout(
        Duration::from_secs(30),
        NatsStore::open(NatsConfig::new(url.clone())),
    )
    .await
    .expect("gives up")
    .expect_err("no connection is ever relayed");
    let text = err.to_string();
    assert!(text.contains(&url) && text.contains("connecting"), "{text}");
    assert_eq!(taken.load(Ordering::SeqCst), 3, "three tries, no more");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_fails_naming_the_store() {
    // A port nothing listens on: taken, then freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nats://127.0.0.1:{port}");
    let err = NatsStore::open(NatsConfig::new(url.clone()))
        .await
        .expect_err("nothing listens");
    let text = err.to_string();
    assert!(text.contains(&url) && text.contains("connecting"), "{text}");
}
