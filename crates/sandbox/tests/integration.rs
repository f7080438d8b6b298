//! The sandbox's guarantees, proven by their effects on real files, sockets and processes: each
//! test builds a sandbox, runs `bash -c` in it, and looks at what happened outside.

mod effects;
mod spellings;
