//! One file per subcommand.

pub mod audit;
pub mod checkpoint;
pub mod compact;
pub mod config;
pub mod diff;
pub mod events;
pub mod export;
pub mod export_otlp;
pub mod fsck;
pub mod history;
pub mod import;
mod one_operation;
pub mod repair;
pub mod replay;
pub mod report;
pub mod rewind;
pub mod run;
pub mod seal_key;
pub mod serve;
pub mod sessions;
pub mod verify;
pub mod watch;
