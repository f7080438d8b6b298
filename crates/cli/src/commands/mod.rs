//! One file per subcommand, and the parts `run` and `resume` share: the session they start
//! (`session_start`), its store (`remote`), its terminal (`drive`).

pub mod audit;
pub mod checkpoint;
pub mod compact;
pub mod config;
pub mod diff;
mod drive;
pub mod events;
pub mod export;
pub mod export_otlp;
pub mod fsck;
pub mod history;
pub mod import;
mod one_operation;
mod remote;
pub mod repair;
pub mod replay;
pub mod report;
pub mod resume;
pub mod rewind;
pub mod run;
pub mod seal_key;
pub mod serve;
pub mod session_start;
pub mod sessions;
pub mod verify;
pub mod watch;
