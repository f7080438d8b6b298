//! `turnstile seal-key FILE`: a new ed25519 key to sign seals with (`TURNSTILE_SEAL_KEY=FILE`),
//! and its public half in `FILE.pub` for `turnstile verify --key`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use turnstile_seal::SealKey;

/// Arguments of `turnstile seal-key`.
#[derive(Debug, Clone, Args)]
pub struct SealKeyArgs {
    /// Where to write the key (mode 0600, never over an existing file); the public key goes to
    /// the same name with `.pub` added.
    pub file: PathBuf,
}

fn write_new(path: &Path, text: &str, mode: u32) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| {
            format!(
                "cannot create {} (an existing file is never replaced)",
                path.display()
            )
        })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes a new key and its public half; prints the public key.
pub fn run(args: &SealKeyArgs) -> Result<ExitCode> {
    let key = SealKey::generate()?;
    let mut public = args.file.clone().into_os_string();
    public.push(".pub");
    let public = PathBuf::from(public);
    write_new(&args.file, &format!("{}\n", key.to_base64()), 0o600)?;
    write_new(&public, &format!("{}\n", key.public().to_base64()), 0o644)?;
    println!(
        "key {} (keep it private; sign with TURNSTILE_SEAL_KEY={}), public key {} in {}",
        args.file.display(),
        args.file.display(),
        key.public().to_base64(),
        public.display()
    );
    Ok(ExitCode::SUCCESS)
}
