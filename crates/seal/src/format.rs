//! The seal formats: the name a seal's first record gives, and how its checkpoints spell what
//! they hold. Every format this crate ever wrote is read; new seals are written in
//! [`Format::CURRENT`], and a seal is continued in the format it began with.

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;

use crate::chain::{Chain, hex, unhex32};

/// The formats of a seal; the chain (genesis, links) is the same in all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `turnstile-seal/1`: a checkpoint names the journal lines it covers (`lines`) and gives
    /// the chain in hex.
    V1,
    /// `turnstile-seal/2`: a checkpoint leaves `lines` out (the sealed lines less those the
    /// repairs before it removed) and gives the chain in base64 without padding.
    V2,
}

impl Format {
    /// The format new seals are written in.
    pub const CURRENT: Format = Format::V2;

    /// The name the seal's begin record gives.
    pub fn name(self) -> &'static str {
        match self {
            Format::V1 => "turnstile-seal/1",
            Format::V2 => "turnstile-seal/2",
        }
    }

    /// The format named `name`, if this crate knows it.
    pub fn named(name: &str) -> Option<Format> {
        [Format::V1, Format::V2]
            .into_iter()
            .find(|f| f.name() == name)
    }

    /// A checkpoint's chain value as this format spells it.
    pub(crate) fn chain_text(self, chain: &Chain) -> String {
        match self {
            Format::V1 => hex(&chain.0),
            Format::V2 => STANDARD_NO_PAD.encode(chain.0),
        }
    }

    /// The chain value a checkpoint spells, if it is one in this format.
    pub(crate) fn chain_of(self, text: &str) -> Option<Chain> {
        match self {
            Format::V1 => unhex32(text).map(Chain),
            // The engine refuses padding and set bits past the 32nd byte: one spelling only.
            Format::V2 => STANDARD_NO_PAD
                .decode(text)
                .ok()
                .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
                .map(Chain),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::LineDigest;

    #[test]
    fn each_format_reads_the_chain_it_writes_and_no_other_spelling() {
        let chain = Chain::genesis().link(&LineDigest::of(b"x\n"));
        for format in [Format::V1, Format::V2] {
            assert_eq!(Format::named(format.name()), Some(format));
            let text = format.chain_text(&chain);
            assert_eq!(format.chain_of(&text), Some(chain));
        }
        assert_eq!(Format::V2.chain_text(&chain).len(), 43);
        assert_eq!(Format::V2.chain_of(&Format::V1.chain_text(&chain)), None);
        assert_eq!(Format::V1.chain_of(&Format::V2.chain_text(&chain)), None);
        assert_eq!(
            Format::V2.chain_of(&format!("{}=", Format::V2.chain_text(&chain))),
            None
        );
        assert_eq!(Format::named("turnstile-seal/3"), None);
    }
}
