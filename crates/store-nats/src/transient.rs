//! Which client errors mean "the cluster cannot answer right now" (a stream or meta leader
//! being elected, a node just killed or restarted, a reconnect): those are worth asking again
//! for a few seconds; every other error (a bad name, refused credentials, a stream with other
//! settings) is final and reported at once.
//!
//! Decided on the typed error kinds of `async-nats` only. A client error wraps the one that
//! caused it (a bucket read wraps its request error, which wraps the core request error), so
//! the whole source chain is looked at.

use std::error::Error as StdError;
use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::context::{
    CreateStreamError, CreateStreamErrorKind, GetStreamError, GetStreamErrorKind, PublishError,
    PublishErrorKind, RequestError, RequestErrorKind,
};
use async_nats::jetstream::object_store::{PutError, PutErrorKind};
use async_nats::jetstream::stream::{
    ConsumerError, ConsumerErrorKind, DirectGetError, DirectGetErrorKind, LastRawMessageError,
    LastRawMessageErrorKind,
};

/// How long a request the cluster could not answer is asked again: a leader election on a
/// loopback cluster takes a few seconds, on a loaded host more than ten (a bucket whose leader
/// was killed answered "no responders" for over 10 s in `tests/cluster.rs`).
pub(crate) const ELECTION_WAIT: Duration = Duration::from_secs(20);

/// The pause between two tries.
pub(crate) const RETRY_PAUSE: Duration = Duration::from_millis(250);

/// `op` until it succeeds or fails with an error that is not transient, for at most
/// [`ELECTION_WAIT`]; what it last returned.
pub(crate) async fn retry<T, E, F, Fut>(what: &str, mut op: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: StdError + 'static,
{
    let deadline = tokio::time::Instant::now() + ELECTION_WAIT;
    loop {
        match op().await {
            Err(e) if is_transient(&e) && tokio::time::Instant::now() < deadline => {
                tracing::warn!(error = %e, "{what} failed; asking again");
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            done => return done,
        }
    }
}

/// JetStream API error codes a cluster answers while it has no leader for the asset or a peer
/// is away.
const ELECTION_CODES: [ErrorCode; 6] = [
    ErrorCode::CLUSTER_NOT_AVAILABLE,
    ErrorCode::CLUSTER_NOT_ACTIVE,
    ErrorCode::CLUSTER_NOT_LEADER,
    ErrorCode::CLUSTER_INCOMPLETE,
    ErrorCode::CLUSTER_NO_PEERS,
    ErrorCode::CLUSTER_NOT_ASSIGNED,
];

fn api(error: &async_nats::jetstream::Error) -> bool {
    ELECTION_CODES.contains(&error.error_code())
}

/// Whether `error`, or an error it wraps, is one the cluster may not give again in a moment.
pub(crate) fn is_transient(error: &(dyn StdError + 'static)) -> bool {
    chain(error).any(one)
}

fn one(e: &(dyn StdError + 'static)) -> bool {
    if let Some(e) = e.downcast_ref::<async_nats::RequestError>() {
        return matches!(
            e.kind(),
            async_nats::RequestErrorKind::TimedOut | async_nats::RequestErrorKind::NoResponders
        );
    }
    if let Some(e) = e.downcast_ref::<RequestError>() {
        return matches!(
            e.kind(),
            RequestErrorKind::TimedOut | RequestErrorKind::NoResponders
        );
    }
    if let Some(e) = e.downcast_ref::<PublishError>() {
        // No stream answering a publish is a 503 "no responders": its leader is being elected.
        return matches!(
            e.kind(),
            PublishErrorKind::TimedOut
                | PublishErrorKind::StreamNotFound
                | PublishErrorKind::BrokenPipe
        );
    }
    if let Some(e) = e.downcast_ref::<async_nats::jetstream::Error>() {
        return api(e);
    }
    if let Some(e) = e.downcast_ref::<CreateStreamError>() {
        return match e.kind() {
            CreateStreamErrorKind::TimedOut | CreateStreamErrorKind::JetStreamUnavailable => true,
            CreateStreamErrorKind::JetStream(e) => api(&e),
            _ => false,
        };
    }
    if let Some(e) = e.downcast_ref::<GetStreamError>() {
        return matches!(e.kind(), GetStreamErrorKind::JetStream(e) if api(&e));
    }
    if let Some(e) = e.downcast_ref::<LastRawMessageError>() {
        return matches!(e.kind(), LastRawMessageErrorKind::JetStream(e) if api(&e));
    }
    if let Some(e) = e.downcast_ref::<ConsumerError>() {
        return match e.kind() {
            ConsumerErrorKind::TimedOut => true,
            ConsumerErrorKind::JetStream(e) => api(&e),
            _ => false,
        };
    }
    if let Some(e) = e.downcast_ref::<DirectGetError>() {
        return matches!(e.kind(), DirectGetErrorKind::TimedOut);
    }
    if let Some(e) = e.downcast_ref::<PutError>() {
        // The object store's chunk publish and its acknowledgement: the client keeps only
        // the text of the publish error beneath, so the kind is all there is to go by. Right
        // after a replica is killed the chunks' stream answers "no stream found" or nothing
        // for a moment; a chunk publish that cannot succeed (refused permission) costs the
        // retry window, then fails with the client's reason.
        return matches!(e.kind(), PutErrorKind::PublishChunks);
    }
    false
}

/// Whether `error` says the stream does not exist (as opposed to: could not be asked).
pub(crate) fn is_missing_stream(error: &GetStreamError) -> bool {
    matches!(error.kind(), GetStreamErrorKind::JetStream(e)
        if e.error_code() == ErrorCode::STREAM_NOT_FOUND)
}

/// Whether a stream creation failed because the name is taken (made by another process a
/// moment ago, or with other settings): reading it again is the answer.
pub(crate) fn is_name_taken(error: &CreateStreamError) -> bool {
    matches!(error.kind(), CreateStreamErrorKind::JetStream(e)
        if e.error_code() == ErrorCode::STREAM_NAME_EXIST)
}

/// How many times a connection the server drops during the handshake is made again.
pub(crate) const CONNECT_TRIES: usize = 3;

/// Whether a connection was made and then dropped by the server before the handshake ended
/// (reset, aborted, closed): a server restarting or overloaded, worth one more try. A refused
/// connection (nothing listens), a timeout or refused credentials are reported at once.
pub(crate) fn is_dropped_handshake(error: &async_nats::ConnectError) -> bool {
    if !matches!(error.kind(), async_nats::ConnectErrorKind::Io) {
        return false;
    }
    let io = chain(error).find_map(|e| e.downcast_ref::<std::io::Error>());
    io.is_some_and(|io| {
        matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::ConnectionAborted
                | std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof
        )
    })
}

/// `error` and every error it wraps, outermost first.
fn chain<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(error), |&e| e.source())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_connection_dropped_mid_handshake_is_made_again() {
        use async_nats::{ConnectError, ConnectErrorKind};
        use std::io::{Error, ErrorKind};
        let io = |kind| ConnectError::with_source(ConnectErrorKind::Io, Error::from(kind));
        assert!(is_dropped_handshake(&io(ErrorKind::ConnectionReset)));
        assert!(is_dropped_handshake(&io(ErrorKind::UnexpectedEof)));
        assert!(!is_dropped_handshake(&io(ErrorKind::ConnectionRefused)));
        assert!(!is_dropped_handshake(&ConnectError::new(
            ConnectErrorKind::AuthorizationViolation
        )));
        assert!(!is_dropped_handshake(&ConnectError::with_source(
            ConnectErrorKind::TimedOut,
            Error::from(ErrorKind::ConnectionReset)
        )));
    }

    #[test]
    fn election_answers_and_timeouts_are_transient_through_wrapping() {
        let timed_out = async_nats::RequestError::new(async_nats::RequestErrorKind::TimedOut);
        let wrapped = LastRawMessageError::with_source(LastRawMessageErrorKind::Other, timed_out);
        assert!(is_transient(&wrapped));
        let no_leader = GetStreamError::with_source(
            GetStreamErrorKind::Request,
            RequestError::new(RequestErrorKind::NoResponders),
        );
        assert!(is_transient(&no_leader));
        assert!(is_transient(&CreateStreamError::new(
            CreateStreamErrorKind::JetStreamUnavailable
        )));
        assert!(is_transient(&PublishError::new(
            PublishErrorKind::StreamNotFound
        )));
        assert!(is_transient(&PutError::with_source(
            PutErrorKind::PublishChunks,
            "failed getting chunk ack: no stream found for given subject"
        )));
    }

    #[test]
    fn final_answers_are_not_transient() {
        assert!(!is_transient(&CreateStreamError::new(
            CreateStreamErrorKind::InvalidStreamName
        )));
        assert!(!is_transient(&GetStreamError::new(
            GetStreamErrorKind::InvalidStreamName
        )));
        assert!(!is_transient(&PublishError::new(
            PublishErrorKind::WrongLastSequence
        )));
        let other = async_nats::RequestError::new(async_nats::RequestErrorKind::Other);
        assert!(!is_transient(&LastRawMessageError::with_source(
            LastRawMessageErrorKind::Other,
            other
        )));
    }
}
