//! The log as the person at a command reads it: without `TURNSTILE_LOG` or the SDK server's
//! log settings, what reaches stderr is a warning or an error for the user (a stale in-use
//! marker removed, a setting ignored), so it is written as one: `warning: <what> <fields>`,
//! no timestamp, no level in capitals, no module path. `TURNSTILE_LOG` brings the full format
//! back, for those reading logs.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Formats an event as `warning: message field=value ...`.
pub struct Plain;

impl<S, N> FormatEvent<S, N> for Plain
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "error",
            Level::WARN => "warning",
            _ => "note",
        };
        write!(writer, "{level}: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
