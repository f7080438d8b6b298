//! The user's signing key and its public half, in files of one base64 line each.
//!
//! A key file holds the 32-byte ed25519 seed in base64 (`turnstile seal-key` writes one, mode
//! 0600); a public key file holds the 32-byte public key in base64. Both may end with a newline.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

use crate::error::SealError;

/// A private signing key.
#[derive(Clone)]
pub struct SealKey(SigningKey);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret, in a log or a panic.
        write!(f, "SealKey({})", self.public().to_base64())
    }
}

/// A public key that checks signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyKey(VerifyingKey);

fn decode32(text: &str, what: &str) -> Result<[u8; 32], SealError> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| SealError::Key(format!("{what} is not base64: {e}")))?;
    bytes
        .try_into()
        .map_err(|b: Vec<u8>| SealError::Key(format!("{what} holds {} bytes, not 32", b.len())))
}

fn read_key_file(path: &Path) -> Result<String, SealError> {
    let text = std::fs::read_to_string(path).map_err(|source| SealError::Io {
        what: "the key file",
        source,
    })?;
    Ok(text)
}

impl SealKey {
    /// The key of a 32-byte seed.
    pub fn from_seed(seed: [u8; 32]) -> Self {
        SealKey(SigningKey::from_bytes(&seed))
    }

    /// A new key from the operating system's random source.
    pub fn generate() -> Result<Self, SealError> {
        use std::io::Read;
        let mut seed = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut seed))
            .map_err(|source| SealError::Io {
                what: "/dev/urandom",
                source,
            })?;
        Ok(Self::from_seed(seed))
    }

    /// The key in a key file (base64 of the seed).
    pub fn from_file(path: &Path) -> Result<Self, SealError> {
        let seed = decode32(&read_key_file(path)?, &path.display().to_string())?;
        Ok(Self::from_seed(seed))
    }

    /// The seed in base64, as a key file holds it.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0.to_bytes())
    }

    /// The public half.
    pub fn public(&self) -> VerifyKey {
        VerifyKey(self.0.verifying_key())
    }

    /// The signature of `message`, base64.
    pub(crate) fn sign(&self, message: &[u8]) -> String {
        STANDARD.encode(self.0.sign(message).to_bytes())
    }
}

impl VerifyKey {
    /// A public key from its base64 spelling.
    pub fn from_base64(text: &str) -> Result<Self, SealError> {
        let bytes = decode32(text, "the public key")?;
        VerifyingKey::from_bytes(&bytes)
            .map(VerifyKey)
            .map_err(|e| SealError::Key(format!("not an ed25519 public key: {e}")))
    }

    /// The public key in a file: a public key file, or a key file (whose public half is taken).
    pub fn from_file(path: &Path) -> Result<Self, SealError> {
        let text = read_key_file(path)?;
        // Both files are 32 bytes in base64: only the name (`*.pub`, as `turnstile seal-key`
        // writes the public half) tells them apart.
        if path.extension().is_some_and(|e| e == "pub") {
            Self::from_base64(&text)
        } else {
            Ok(SealKey::from_seed(decode32(&text, &path.display().to_string())?).public())
        }
    }

    /// The key in base64.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0.to_bytes())
    }

    /// Whether `sig` (base64) signs `message`.
    pub(crate) fn verify(&self, message: &[u8], sig: &str) -> bool {
        let Ok(bytes) = STANDARD.decode(sig) else {
            return false;
        };
        let Ok(sig) = Signature::from_slice(&bytes) else {
            return false;
        };
        self.0.verify(message, &sig).is_ok()
    }
}
