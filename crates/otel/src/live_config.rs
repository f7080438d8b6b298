//! Whether a running session sends its spans live, and how: the export's settings
//! ([`ExportConfig`]) plus the queue's.
//!
//! Live export is on when the user names a receiver: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set (no default receiver is assumed: a session does not post
//! to `localhost:4318` because nobody said not to). `OTEL_SDK_DISABLED=true` and
//! `OTEL_TRACES_EXPORTER=none` turn it off, as they turn off an OpenTelemetry SDK.
//! The queue: `OTEL_BSP_MAX_QUEUE_SIZE` spans at most (2048), sent every
//! `OTEL_BSP_SCHEDULE_DELAY` milliseconds (5000), at the end of each interaction, and when
//! 512 are waiting.

use std::time::Duration;

use crate::config::{ConfigError, ExportConfig};
use crate::live::DEFAULT_QUEUE_SPANS;

/// The default time between two sends of what is queued (the SDKs' `OTEL_BSP_SCHEDULE_DELAY`).
pub const DEFAULT_SCHEDULE_DELAY: Duration = Duration::from_millis(5000);

/// The settings of live export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveConfig {
    /// Where and how to send (the same settings as `export --otlp`).
    pub export: ExportConfig,
    /// The most finished spans waiting to be sent.
    pub queue_spans: usize,
    /// The longest a finished span waits before it is sent.
    pub schedule_delay: Duration,
}

impl LiveConfig {
    /// The settings from the variables `var` reads: `Ok(None)` when live export is off.
    pub fn resolve(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, ConfigError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let named = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim() == "true")
            || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim() == "none");
        if !named || disabled {
            return Ok(None);
        }
        let export = ExportConfig::resolve(None, var)?;
        let queue_spans = number(&var, "OTEL_BSP_MAX_QUEUE_SIZE")?
            .map_or(DEFAULT_QUEUE_SPANS, |n| {
                usize::try_from(n.max(1)).unwrap_or(usize::MAX)
            });
        let schedule_delay = number(&var, "OTEL_BSP_SCHEDULE_DELAY")?
            .map_or(DEFAULT_SCHEDULE_DELAY, Duration::from_millis);
        Ok(Some(LiveConfig {
            export,
            queue_spans,
            schedule_delay,
        }))
    }
}

fn number(var: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Option<u64>, ConfigError> {
    var(name)
        .map(|value| {
            value.trim().parse().map_err(|_| ConfigError::Number {
                source_name: name.to_owned(),
                value,
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_env as env;

    #[test]
    fn live_export_is_on_only_when_a_receiver_is_named_and_nothing_disables_it() {
        assert_eq!(LiveConfig::resolve(env(&[])).unwrap(), None);
        // Contents and headers alone name no receiver.
        let unnamed = env(&[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")]);
        assert_eq!(LiveConfig::resolve(unnamed).unwrap(), None);
        let on = LiveConfig::resolve(env(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:1",
        )]))
        .unwrap()
        .unwrap();
        assert_eq!(on.export.endpoint, "http://127.0.0.1:1/v1/traces");
        assert_eq!(on.queue_spans, DEFAULT_QUEUE_SPANS);
        assert_eq!(on.schedule_delay, DEFAULT_SCHEDULE_DELAY);
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            let pairs = [
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:1/t"),
                off,
            ];
            assert_eq!(LiveConfig::resolve(env(&pairs)).unwrap(), None, "{off:?}");
        }
    }

    #[test]
    fn the_queue_is_set_by_the_batch_processor_variables_and_bad_values_are_refused() {
        let pairs = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "10"),
            ("OTEL_BSP_SCHEDULE_DELAY", "250"),
        ];
        let on = LiveConfig::resolve(env(&pairs)).unwrap().unwrap();
        assert_eq!(on.queue_spans, 10);
        assert_eq!(on.schedule_delay, Duration::from_millis(250));
        let bad = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "many"),
        ];
        assert!(matches!(
            LiveConfig::resolve(env(&bad)),
            Err(ConfigError::Number { .. })
        ));
        let grpc = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ];
        assert!(matches!(
            LiveConfig::resolve(env(&grpc)),
            Err(ConfigError::Protocol { .. })
        ));
    }
}
