//! The GitHub accounts signed in through `account.login` while this server runs, as the
//! Copilot CLI keeps them: the current one (with what the Copilot endpoint said of it) and
//! every one signed in since start, in memory; the logins recorded in the home's
//! `config.json` by `turnstile_home::logins`.
//!
//! No token is kept here: sessions reach their model with their own credentials
//! (`gitHubToken`, a provider's key), so a signed-in account's token has no use after the
//! check at login; it is written nowhere unless the user asked for plaintext storage, and no
//! event carries it (these methods belong to no session).

use std::sync::Mutex;

use turnstile_providers::CopilotUser;

/// A signed-in account.
#[derive(Debug, Clone)]
pub(crate) struct Account {
    /// The GitHub host (`https://github.com`).
    pub host: String,
    /// The login.
    pub login: String,
    /// What the Copilot endpoint said of the token when it signed in.
    pub user: CopilotUser,
}

/// The accounts signed in since start.
#[derive(Debug, Default)]
pub(crate) struct SignedIn {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    current: Option<Account>,
    /// `(host, login)` of each account signed in since start and not signed out, in order.
    users: Vec<(String, String)>,
}

impl SignedIn {
    /// `account` becomes the current account.
    pub(crate) fn sign_in(&self, account: Account) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let who = (account.host.clone(), account.login.clone());
        if !state.users.contains(&who) {
            state.users.push(who);
        }
        state.current = Some(account);
    }

    /// The current account.
    pub(crate) fn current(&self) -> Option<Account> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.current.clone()
    }

    /// Signs `login` at `host` out; whether other accounts remain signed in.
    pub(crate) fn sign_out(&self, host: &str, login: &str) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.users.retain(|(h, l)| !(h == host && l == login));
        if state
            .current
            .as_ref()
            .is_some_and(|a| a.host == host && a.login == login)
        {
            state.current = None;
        }
        !state.users.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(login: &str) -> Account {
        Account {
            host: "https://github.com".into(),
            login: login.into(),
            user: CopilotUser {
                login: login.into(),
                copilot_plan: None,
                quota_snapshots: None,
            },
        }
    }

    #[test]
    fn signing_out_the_current_account_leaves_none_current() {
        let signed_in = SignedIn::default();
        signed_in.sign_in(account("a"));
        signed_in.sign_in(account("b"));
        assert!(signed_in.sign_out("https://github.com", "b"));
        assert!(signed_in.current().is_none());
        assert!(!signed_in.sign_out("https://github.com", "a"));
    }
}
