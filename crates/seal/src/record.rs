//! The seal's records: one JSON object a line, in the order they were written.

use serde::{Deserialize, Serialize};

use crate::chain::Chain;
use crate::format::Format;
use crate::key::{SealKey, VerifyKey};

/// One line of a seal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// The first line: the format (and with it the hash and the genesis).
    Begin {
        /// [`Format::name`].
        format: String,
    },
    /// The chain after a number of lines.
    Checkpoint(Checkpoint),
    /// Lines a repair removed from the journal.
    Repair(Repair),
}

/// The chain after `sealed` lines, and where they end in the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Lines sealed since the genesis, those a repair removed since included.
    pub sealed: u64,
    /// Lines of the journal file the seal covers (`sealed` less those removed): written in
    /// [`Format::V1`] only, where the reader takes it from the record; a reader of a later
    /// format counts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
    /// Bytes of the journal file the seal covers (a line boundary).
    pub bytes: u64,
    /// The chain value after line `sealed`, spelled as the format does ([`Format`]).
    pub chain: String,
    /// Base64 of the first 8 bytes of each line's digest since the previous checkpoint.
    pub digests: String,
    /// The lines were in the journal when a writer opened it, not appended by a sealing writer
    /// (a journal from before seals, the Copilot CLI's, or lines after the last checkpoint of a
    /// writer that stopped without closing).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
    /// The signer's public key (base64), when signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The ed25519 signature (base64) of the record without this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// What a repair did to the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairAction {
    /// A torn tail cut to a side file.
    CutTail,
    /// Bad lines moved to a side file.
    Salvage,
}

/// A sealed line a repair removed: its place in the chain and its full digest, so the chain
/// can still be computed without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removed {
    /// Its 1-based position among all sealed lines.
    pub sealed: u64,
    /// Its sha256, hex.
    pub sha256: String,
}

/// A repair's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repair {
    /// What kind of repair.
    pub action: RepairAction,
    /// When (the journal's timestamp spelling).
    pub at: String,
    /// Sealed lines removed.
    pub removed: Vec<Removed>,
    /// Lines after the sealed ones that were removed (never sealed).
    pub unsealed_lines: u64,
    /// Bytes removed that no seal covered (those lines, a torn tail).
    pub unsealed_bytes: u64,
    /// Lines of the journal file the seal covers after the repair.
    pub lines: u64,
    /// Bytes of the journal file the seal covers after the repair.
    pub bytes: u64,
    /// The side file holding what was removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_file: Option<String>,
    /// The signer's public key (base64), when signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The ed25519 signature (base64) of the record without this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sig: Option<String>,
}

/// How a record's signature checks out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Signed {
    /// No signature.
    No,
    /// Signed by this key (base64), and the signature is right.
    By(String),
    /// A signature that does not match the record and its key.
    Bad,
}

impl Record {
    /// The record as a seal line, `\n` included.
    pub fn to_line(&self) -> Vec<u8> {
        // A record of strings and integers always serializes.
        let mut line = serde_json::to_vec(self).unwrap_or_default();
        line.push(b'\n');
        line
    }

    /// A checkpoint record of a seal in `format` for the chain value `chain`.
    pub(crate) fn checkpoint(
        mut cp: Checkpoint,
        chain: &Chain,
        format: Format,
        key: Option<&SealKey>,
    ) -> Self {
        cp.chain = format.chain_text(chain);
        let mut record = Record::Checkpoint(cp);
        record.sign(format, key);
        record
    }

    /// Signs the record of a seal in `format` in place with `key` (the key's public half
    /// first, so it is signed too).
    pub(crate) fn sign(&mut self, format: Format, key: Option<&SealKey>) {
        let Some(key) = key else { return };
        if let Some((k, _)) = self.signature_fields() {
            *k = Some(key.public().to_base64());
        }
        let message = self.signed_bytes(format);
        let sig = key.sign(&message);
        if let Some((_, s)) = self.signature_fields() {
            *s = Some(sig);
        }
    }

    /// Whether the record, of a seal in `format`, is signed, and rightly.
    pub(crate) fn signed(&self, format: Format) -> Signed {
        let (key, sig) = match self {
            Record::Checkpoint(c) => (&c.key, &c.sig),
            Record::Repair(r) => (&r.key, &r.sig),
            Record::Begin { .. } => return Signed::No,
        };
        let (Some(key), Some(sig)) = (key, sig) else {
            return if key.is_some() || sig.is_some() {
                Signed::Bad
            } else {
                Signed::No
            };
        };
        let Ok(public) = VerifyKey::from_base64(key) else {
            return Signed::Bad;
        };
        if public.verify(&self.signed_bytes(format), sig) {
            Signed::By(key.clone())
        } else {
            Signed::Bad
        }
    }

    /// The bytes a signature covers: the format's name and the record serialized without its
    /// signature.
    fn signed_bytes(&self, format: Format) -> Vec<u8> {
        let mut unsigned = self.clone();
        if let Some((_, sig)) = unsigned.signature_fields() {
            *sig = None;
        }
        let mut message = format.name().as_bytes().to_vec();
        message.push(0);
        message.extend(unsigned.to_line());
        message
    }

    fn signature_fields(&mut self) -> Option<(&mut Option<String>, &mut Option<String>)> {
        match self {
            Record::Checkpoint(c) => Some((&mut c.key, &mut c.sig)),
            Record::Repair(r) => Some((&mut r.key, &mut r.sig)),
            Record::Begin { .. } => None,
        }
    }
}
