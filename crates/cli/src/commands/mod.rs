//! One file per subcommand.

pub mod events;
pub mod fsck;
pub mod repair;
pub mod run;
pub mod sessions;
