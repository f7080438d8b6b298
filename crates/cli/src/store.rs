//! `--store`: where journals live. The default is the state directory on this machine; a
//! `nats://HOST:PORT` store keeps them in JetStream, with the state directory as the local
//! working copy of the sessions this process runs (`docs/stores.md`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use turnstile_journal::{SessionPaths, StateRoot, Uuid};
use turnstile_store::{AttachMode, JournalStore};
use turnstile_store_nats::{NatsConfig, NatsStore, Synced, is_nats_url};

/// The store options every command takes.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Where journals live: a NATS JetStream server (`nats://HOST:PORT`, comma-separated for a
    /// cluster) [default: the state directory]
    #[arg(long, global = true, env = "TURNSTILE_STORE", value_name = "URL")]
    pub store: Option<String>,
    /// JetStream stream holding the journals (buckets are named after it).
    #[arg(
        long,
        global = true,
        env = "TURNSTILE_STORE_STREAM",
        default_value = "TURNSTILE"
    )]
    pub store_stream: String,
    /// Replicas of the stream and buckets when they are created (3 on a cluster).
    #[arg(
        long,
        global = true,
        env = "TURNSTILE_STORE_REPLICAS",
        default_value_t = 1
    )]
    pub store_replicas: usize,
    /// A NATS credentials file.
    #[arg(
        long,
        global = true,
        env = "TURNSTILE_STORE_CREDS",
        value_name = "FILE"
    )]
    pub store_creds: Option<PathBuf>,
    /// Seconds a writer's lease lasts without renewal (when the lease bucket is created).
    #[arg(
        long,
        global = true,
        env = "TURNSTILE_STORE_LEASE_TTL",
        default_value_t = turnstile_store_nats::DEFAULT_LEASE_SECS
    )]
    pub store_lease_ttl: u64,
}

impl StoreArgs {
    /// The JetStream settings, when `--store` names a NATS server.
    pub fn nats(&self) -> Result<Option<NatsConfig>> {
        match &self.store {
            None => Ok(None),
            Some(url) => Ok(Some(self.nats_config(url)?)),
        }
    }

    /// The settings of a NATS store at `url` with this command's options.
    pub fn nats_config(&self, url: &str) -> Result<NatsConfig> {
        if !is_nats_url(url) {
            bail!(
                "--store {url:?}: expected nats://HOST:PORT (leave --store out for the state directory)"
            );
        }
        if self.store_replicas == 0 || self.store_replicas > 5 {
            bail!("--store-replicas {}: expected 1 to 5", self.store_replicas);
        }
        if self.store_lease_ttl == 0 {
            bail!("--store-lease-ttl must be at least 1 second");
        }
        let mut config = NatsConfig::new(url);
        config.stream.clone_from(&self.store_stream);
        config.replicas = self.store_replicas;
        config.credentials.clone_from(&self.store_creds);
        config.lease_ttl = Duration::from_secs(self.store_lease_ttl);
        Ok(config)
    }
}

/// Connects to the JetStream store.
pub async fn open_nats(config: NatsConfig) -> Result<NatsStore> {
    let url = config.url.clone();
    NatsStore::open(config)
        .await
        .with_context(|| format!("cannot open the journal store {url}"))
}

/// A session id as given to a command on a remote store (no prefixes or paths there).
pub fn session_id(target: &str) -> Result<Uuid> {
    turnstile_journal::parse_session_id(target).with_context(|| {
        format!("{target:?}: with --store nats://… give the full session id (list them with `turnstile sessions`)")
    })
}

/// Runs a reading command (`events`, `fsck`, `audit`, `replay`, ...) on a stored session:
/// copies its journal into a scratch directory and hands the command that file, the local
/// state directory unchanged.
pub fn with_copy(
    config: NatsConfig,
    target: &str,
    run: impl FnOnce(&str) -> Result<std::process::ExitCode>,
) -> Result<std::process::ExitCode> {
    let copy = with_stored_copy(config, target, async |_: StoredCopy<'_>| Ok(()))?;
    // The command runs outside the copy's runtime: it may start one of its own.
    run(path_text(&copy.paths.events)?)
}

/// A stored session's journal copied into a scratch directory, lent with the open store to
/// a command that still needs the store (`checkpoint`).
pub struct StoredCopy<'a> {
    /// The store the copy was read from.
    pub store: &'a NatsStore,
    /// The session.
    pub id: Uuid,
    /// The copy's files.
    pub paths: &'a SessionPaths,
    /// What of the stored journal the copy holds.
    pub synced: Synced,
}

/// A scratch copy kept until the command that used it is done.
pub struct ScratchCopy<T> {
    /// The copy's files.
    pub paths: SessionPaths,
    /// What the async part of the command returned.
    pub value: T,
    _scratch: tempfile::TempDir,
}

/// Copies the stored session `target` into a scratch directory and runs `then` on it with the
/// store still open (on a current-thread runtime made for it).
pub fn with_stored_copy<T>(
    config: NatsConfig,
    target: &str,
    then: impl AsyncFnOnce(StoredCopy<'_>) -> Result<T>,
) -> Result<ScratchCopy<T>> {
    let id = session_id(target)?;
    let scratch = tempfile::tempdir().context("cannot make a scratch directory")?;
    let root = StateRoot::new(scratch.path());
    let paths = root.session(id);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let value = runtime.block_on(async {
        let store = open_nats(config).await?;
        let attachment = store
            .attach(id, &root, AttachMode::Read)
            .await
            .with_context(|| format!("cannot read session {id}"))?;
        let synced = attachment.synced();
        store.detach(attachment, &root).await?;
        then(StoredCopy {
            store: &store,
            id,
            paths: &paths,
            synced,
        })
        .await
    })?;
    Ok(ScratchCopy {
        paths,
        value,
        _scratch: scratch,
    })
}

/// The refusal of a command that writes to a session through the state directory only:
/// with `--store` it would change a working copy the store never sees.
pub fn not_on_the_store(command: &str, instead: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "`turnstile {command}` does not work with --store nats://…: it would write to a local copy, not to the store; {instead}, or leave --store out for a session of the state directory"
    )
}

fn path_text(path: &Path) -> Result<&str> {
    path.to_str()
        .with_context(|| format!("{} is not UTF-8", path.display()))
}
