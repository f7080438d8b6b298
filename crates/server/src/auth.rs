//! Who may use a connection: the connection token a TCP client presents in `connect`.
//!
//! Anyone on the machine can open a connection to 127.0.0.1, and a connection that may call
//! `session.create` may run commands (a provider's `apiKeyCommand`, `mcpServers`, tools) as
//! the user who started the server. So a TCP connection is served only after `connect` with
//! the token: the one the user gave (`COPILOT_CONNECTION_TOKEN`, which the SDK clients set to
//! a fresh UUID for a runtime they start), else one generated here and printed for the user.
//! stdio needs none: its only client is the process that started the server.
//!
//! The answers are the Copilot CLI's, code and message: `AUTHENTICATION_REQUIRED` before
//! `connect`, `AUTHENTICATION_FAILED` for a wrong or missing token,
//! `AUTHENTICATION_NOT_CONFIGURED` for a token where none is asked for (stdio).

use std::fmt;

use crate::rpc::{RpcError, codes};

/// Requests and frames a connection may have refused before it authenticates; the one that
/// reaches this number is answered, then the connection is closed. An SDK client's first
/// request is `connect` with the token, so a client that knows it is never refused; one that
/// does not gets a few answers, not an oracle to try tokens on (the Copilot CLI answers every
/// attempt and keeps the connection).
pub(crate) const MAX_REFUSALS_BEFORE_AUTHENTICATION: u32 = 3;

/// The secret a TCP client must present in `connect`. Its text is never logged: `Debug`
/// hides it, and only [`ConnectionToken::reveal`] gives it, for the user to read.
#[derive(Clone)]
pub struct ConnectionToken(String);

impl ConnectionToken {
    /// A fresh token: a random (version 4) UUID, 122 bits from the operating system's random
    /// source (`getrandom`), the form the SDK clients generate for a runtime they start.
    ///
    /// # Panics
    ///
    /// When the operating system gives no random bytes (no `getrandom(2)` and no
    /// `/dev/urandom`): a server must not listen with a guessable token.
    pub fn generate() -> Self {
        ConnectionToken(uuid::Uuid::new_v4().to_string())
    }

    /// The token the user gave; `None` for an empty one, which the Copilot CLI takes as none.
    pub fn given(text: String) -> Option<Self> {
        (!text.is_empty()).then_some(ConnectionToken(text))
    }

    /// The token's text, for the user to pass to clients.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Whether `given` is this token. Every byte of the token is compared whatever `given`
    /// holds, and the differences are folded together before one test at the end, so how long
    /// the comparison takes says nothing of how much of a guess was right (only the lengths
    /// matter, and the length of a generated token is no secret).
    pub(crate) fn matches(&self, given: &str) -> bool {
        let expected = self.0.as_bytes();
        let given = std::hint::black_box(given.as_bytes());
        let mut difference = u8::from(expected.len() != given.len());
        for (i, byte) in expected.iter().enumerate() {
            difference |= byte ^ given.get(i).copied().unwrap_or(0);
        }
        std::hint::black_box(difference) == 0
    }
}

impl fmt::Debug for ConnectionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ConnectionToken(hidden)")
    }
}

/// `-32001 AUTHENTICATION_REQUIRED`: a method other than `connect` before the connection
/// authenticated.
pub(crate) fn required() -> RpcError {
    RpcError::new(codes::AUTHENTICATION_REQUIRED, "AUTHENTICATION_REQUIRED")
}

/// `-32002 AUTHENTICATION_FAILED`: `connect` without the token, or with another one.
pub(crate) fn failed() -> RpcError {
    RpcError::new(codes::AUTHENTICATION_FAILED, "AUTHENTICATION_FAILED")
}

/// `-32003 AUTHENTICATION_NOT_CONFIGURED`: `connect` with a token on a connection that needs
/// none (stdio).
pub(crate) fn not_configured() -> RpcError {
    RpcError::new(
        codes::AUTHENTICATION_NOT_CONFIGURED,
        "AUTHENTICATION_NOT_CONFIGURED",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_matches() {
        let token = ConnectionToken::given("s3cret-token".into()).unwrap();
        assert!(token.matches("s3cret-token"));
        for wrong in [
            "",
            "s",
            "s3cret-toke",
            "s3cret-token ",
            " s3cret-token",
            "s3cret-tokeN",
            "S3CRET-TOKEN",
            "s3cret-token\0",
            "x3cret-token",
            "s3cret-token-and-more",
        ] {
            assert!(!token.matches(wrong), "{wrong:?} matched");
        }
    }

    #[test]
    fn an_empty_token_is_no_token() {
        assert!(ConnectionToken::given(String::new()).is_none());
    }

    #[test]
    fn generated_tokens_are_uuids_and_differ() {
        let tokens: Vec<_> = (0..64).map(|_| ConnectionToken::generate()).collect();
        for token in &tokens {
            let parsed = uuid::Uuid::parse_str(token.reveal()).unwrap();
            assert_eq!(parsed.get_version_num(), 4);
        }
        let mut texts: Vec<_> = tokens.iter().map(ConnectionToken::reveal).collect();
        texts.sort_unstable();
        texts.dedup();
        assert_eq!(texts.len(), tokens.len());
    }

    #[test]
    fn debug_output_hides_the_token() {
        let token = ConnectionToken::given("s3cret-token".into()).unwrap();
        let shown = format!("{token:?} {:?}", Some(token.clone()));
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
