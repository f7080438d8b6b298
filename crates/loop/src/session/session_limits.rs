//! A session's limits (`sessionLimits`: at most so many AI credits), as the Copilot CLI tells
//! the model of them: every main-agent call ends with a `<session_limits_status>` user message
//! naming what remains. The message is part of the request only, never of the history or the
//! journal (a later call sends its own), and the credits counted are those of the calls made
//! since the session was opened in this process (a resume starts the count again, as in the
//! runtime).

use turnstile_journal::payload::SessionLimits;

/// The status message of a call, or none when the session has no credit limit.
pub(crate) fn status_message(limits: Option<&SessionLimits>, used_credits: f64) -> Option<String> {
    let max = limits?.max_ai_credits.as_ref()?.as_f64()?;
    let remaining = (max - used_credits).max(0.0);
    Some(format!(
        "<session_limits_status>\nRemaining session limits: {}. Later session_limits_status \
         messages supersede earlier ones. Be frugal; avoid optional exploration and unnecessary \
         tool calls.\n</session_limits_status>",
        credits(remaining)
    ))
}

/// An amount of credits as the runtime writes it: `30 AI credits`, `1 AI credit`,
/// `2.5 AI credits` (at most two decimals, no trailing zeros).
pub(crate) fn credits(amount: f64) -> String {
    let text = format!("{amount:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    let unit = if text == "1" {
        "AI credit"
    } else {
        "AI credits"
    };
    format!("{text} {unit}")
}

/// Whether `limits` is a usable limit: a positive, finite number of credits, or none.
pub fn valid_limits(limits: &SessionLimits) -> bool {
    limits
        .max_ai_credits
        .as_ref()
        .is_none_or(|n| n.as_f64().is_some_and(|v| v.is_finite() && v > 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Number;

    #[test]
    fn credits_are_written_as_the_runtime_writes_them() {
        assert_eq!(credits(30.0), "30 AI credits");
        assert_eq!(credits(1.0), "1 AI credit");
        assert_eq!(credits(2.5), "2.5 AI credits");
        assert_eq!(credits(0.0), "0 AI credits");
    }

    #[test]
    fn the_status_names_what_remains() {
        let limits = SessionLimits {
            max_ai_credits: Some(Number::from(30)),
        };
        let text = status_message(Some(&limits), 12.0).unwrap();
        assert!(
            text.starts_with("<session_limits_status>\nRemaining session limits: 18 AI credits.")
        );
        assert!(text.ends_with("unnecessary tool calls.\n</session_limits_status>"));
        assert_eq!(status_message(None, 0.0), None);
        assert_eq!(status_message(Some(&SessionLimits::default()), 0.0), None);
        assert!(valid_limits(&limits) && valid_limits(&SessionLimits::default()));
        let zero = SessionLimits {
            max_ai_credits: Some(Number::from(0)),
        };
        assert!(!valid_limits(&zero));
    }
}
