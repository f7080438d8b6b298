//! Where a call's credential comes from when it is not a fixed value: a [`TokenSource`],
//! asked before every call and never cached, so a rotating credential is always fresh and
//! nothing secret outlives the call that used it. Each kind is one implementation:
//!
//! - [`EnvToken`]: an environment variable, read again for each call;
//! - [`KeyCommand`](crate::KeyCommand): a command printing the key (`apiKeyCommand`), run for
//!   each call (its implementation is beside the command's run, in `auth`);
//! - the SDK client's callback (`providerToken.getToken`), in the server crate, over the
//!   client's connection.
//!
//! A token is only ever put in the request's credential header (marked sensitive); it is in
//! no error message, no `Debug` output and no event.

use std::fmt;
use std::sync::Arc;

use crate::{BoxFuture, ModelError, ModelErrorKind};

/// A source of the credential of one call.
pub trait TokenSource: Send + Sync {
    /// The token for the call about to be made. Called once per call, retries included.
    fn token(&self) -> BoxFuture<'_, Result<String, ModelError>>;
}

/// A shared [`TokenSource`] in a configuration: equal only to itself (two sources are the
/// same only when they are one object), and shown by `Debug` without anything it holds.
#[derive(Clone)]
pub struct SharedTokenSource(pub Arc<dyn TokenSource>);

impl PartialEq for SharedTokenSource {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedTokenSource {}

impl fmt::Debug for SharedTokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenSource")
    }
}

/// The token in an environment variable, read when each call is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvToken {
    /// The variable's name.
    pub variable: String,
}

impl TokenSource for EnvToken {
    fn token(&self) -> BoxFuture<'_, Result<String, ModelError>> {
        Box::pin(async move {
            std::env::var(&self.variable)
                .ok()
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    ModelError::new(
                        ModelErrorKind::Config,
                        format!(
                            "the environment variable {} holding the token is not set",
                            self.variable
                        ),
                    )
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_environment_token_is_the_variables_value_or_a_config_error() {
        // The process's PATH stands in for a token (no test may set variables: other threads
        // read the environment).
        let set = EnvToken {
            variable: "PATH".into(),
        };
        assert_eq!(
            set.token().await.unwrap(),
            std::env::var("PATH").unwrap().trim()
        );
        let variable = "TURNSTILE_TEST_VARIABLE_NOBODY_SETS";
        let unset = EnvToken {
            variable: variable.into(),
        };
        let e = unset.token().await.unwrap_err();
        assert_eq!(e.kind, ModelErrorKind::Config);
        assert!(e.message.contains(variable), "{e}");
    }

    #[test]
    fn shared_sources_are_equal_only_to_themselves() {
        let a = SharedTokenSource(Arc::new(EnvToken {
            variable: "A".into(),
        }));
        let b = SharedTokenSource(Arc::new(EnvToken {
            variable: "A".into(),
        }));
        assert_eq!(a, a.clone());
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), "TokenSource");
    }
}
