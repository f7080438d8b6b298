//! Counting a text's tokens with a BPE vocabulary (`tiktoken-rs`): `cl100k_base` for GPT-4
//! and GPT-3.5, `o200k_base` for every other model, as the Copilot CLI counts (its
//! `session.usage_info` for a model it does not know, `scripted-model`, is the `o200k_base`
//! count to the token; `docs/decisions.md`). The server's own count corrects the rate of a
//! model whose tokenizer differs ([`super::tokens::Calibration`]).
//!
//! A request is measured before every call, and most of it (the system prompt, the tool
//! definitions, the history) is the same text as the turn before, and in an SDK server the
//! same as in the other sessions, so counts are cached process-wide by the text's hash. A long
//! text is counted in pieces of at most [`PIECE_BYTES`], cut before a space where there is
//! one, so one count never holds more than a piece's tokens in memory; a cut may differ from
//! the whole text's count by a token, and a cut before a space, where the BPE's own
//! pre-tokenizer starts a word, usually by none.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

/// Which vocabularies are loaded, by [`Encoding`] (`as usize`).
static LOADED: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];

/// Longest piece of text counted at once.
pub const PIECE_BYTES: usize = 64 * 1024;

/// Counts kept at most; the cache is emptied when it is full (a session's texts come back
/// turn after turn, so it fills again with the ones still in use).
const CACHE_ENTRIES: usize = 65_536;

/// How a model's text is turned into tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `o200k_base`: GPT-4o, GPT-4.1, GPT-5 and the `o` series.
    O200k,
    /// `cl100k_base`: GPT-4 and GPT-3.5.
    Cl100k,
}

impl Encoding {
    /// The encoding of `model` (a provider prefix such as `openai/` is ignored; case too).
    pub fn for_model(model: &str) -> Encoding {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        match get_tokenizer(&name) {
            Some(Tokenizer::Cl100kBase) => Encoding::Cl100k,
            _ => Encoding::O200k,
        }
    }

    /// The encoding's name, as `tiktoken` calls it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::O200k => "o200k_base",
            Encoding::Cl100k => "cl100k_base",
        }
    }

    /// The vocabulary, loaded on first use (0.13 s for `o200k_base`, once per process).
    fn bpe(self) -> &'static CoreBPE {
        let bpe = match self {
            Encoding::O200k => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton(),
        };
        LOADED[self as usize].store(true, Ordering::Release);
        bpe
    }

    /// Whether the vocabulary is loaded: a count now does not wait for it.
    pub fn ready(self) -> bool {
        LOADED[self as usize].load(Ordering::Acquire)
    }

    /// Returns once the vocabulary is loaded. The load (or the wait for the preload thread's,
    /// which runs at the lowest priority) happens on tokio's blocking pool, so the task that
    /// awaits this never holds its runtime thread meanwhile: a session's background agents and
    /// other sessions go on while one turn waits for an exact count.
    pub async fn loaded(self) {
        if self.ready() {
            return;
        }
        // A panic in the load is the blocking task's: the next count then loads the vocabulary
        // itself (and meets the same panic there, where it is reported).
        let _ = tokio::task::spawn_blocking(move || {
            self.bpe();
        })
        .await;
    }

    /// Loads the vocabulary on a thread of its own, once per process, so that a session's
    /// first measure does not wait for the whole load; a count made before it ends waits for
    /// the rest of it.
    pub fn preload(self) {
        static STARTED: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];
        let started = &STARTED[self as usize];
        if !started.swap(true, Ordering::Relaxed) {
            // Without the thread, the first count loads it instead.
            let _ = std::thread::Builder::new()
                .name("tokenizer-load".into())
                .spawn(move || {
                    // At the lowest priority: on a busy machine the session's own first turns
                    // (which do not wait for it) go first.
                    // SAFETY: setpriority only reads its integer arguments; on Linux `who` 0
                    // with PRIO_PROCESS is the calling thread alone (elsewhere it would be the
                    // whole process, hence Linux only).
                    #[cfg(target_os = "linux")]
                    unsafe {
                        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
                    }
                    self.bpe()
                });
        }
    }

    /// Tokens of `text`, uncached.
    pub fn count(self, text: &str) -> u64 {
        let bpe = self.bpe();
        pieces(text)
            .map(|piece| bpe.encode_ordinary(piece).len() as u64)
            .sum()
    }
}

/// `text` cut into pieces of at most [`PIECE_BYTES`] (a char longer than what is left of a
/// piece goes whole into the next), each cut before the last space of its piece when the
/// piece has one in its second half.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= PIECE_BYTES {
            return Some(std::mem::take(&mut rest));
        }
        let mut end = PIECE_BYTES;
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let bytes = &rest.as_bytes()[PIECE_BYTES / 2..end];
        if let Some(space) = memchr::memrchr(b' ', bytes) {
            end = PIECE_BYTES / 2 + space;
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

/// Token counts of the texts sent, by encoding.
#[derive(Debug, Default)]
pub struct TokenCounter {
    /// Counts by the 64-bit hash of (encoding, text): a text is not kept, only its hash.
    cache: Mutex<HashMap<u64, u64>>,
    /// Keyed afresh in each process, so no text can be crafted to take another's count.
    hasher: RandomState,
}

impl TokenCounter {
    /// The process's counter, which every session shares.
    pub fn shared() -> &'static TokenCounter {
        static SHARED: std::sync::LazyLock<TokenCounter> =
            std::sync::LazyLock::new(Default::default);
        &SHARED
    }

    /// Tokens of `text` in `encoding`.
    pub fn count(&self, encoding: Encoding, text: &str) -> u64 {
        // Short texts are cached too: a role, a call id or a tool name comes back in every
        // request of a session, and the BPE's regular expression costs more than the lookup
        // even for them (a 2,002-turn session spent most of its measures recounting them).
        if text.is_empty() {
            return 0;
        }
        let key = self.hasher.hash_one((encoding, text));
        if let Some(&n) = self.lock().get(&key) {
            return n;
        }
        // Counted outside the lock: a long text takes milliseconds.
        let n = encoding.count(text);
        let mut cache = self.lock();
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(key, n);
        n
    }

    /// Counts cached now.
    pub fn cached(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, u64>> {
        // A count is a plain number: a panic elsewhere cannot leave one half-written.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt_4_and_3_5_count_in_cl100k_and_every_other_model_in_o200k() {
        for (model, encoding) in [
            ("gpt-4.1", Encoding::O200k),
            ("GPT-4o-mini", Encoding::O200k),
            ("gpt-5", Encoding::O200k),
            ("gpt-5-mini", Encoding::O200k),
            ("openai/gpt-4.1", Encoding::O200k),
            ("o3", Encoding::O200k),
            ("o4-mini", Encoding::O200k),
            ("gpt-4", Encoding::Cl100k),
            ("gpt-3.5-turbo", Encoding::Cl100k),
            ("claude-sonnet-4.5", Encoding::O200k),
            ("gemini-2.5-pro", Encoding::O200k),
            ("scripted-model", Encoding::O200k),
            ("", Encoding::O200k),
        ] {
            assert_eq!(Encoding::for_model(model), encoding, "{model}");
        }
    }

    #[test]
    fn counts_are_the_vocabularys() {
        // Known counts of tiktoken's own vocabularies.
        assert_eq!(Encoding::O200k.count("hello world"), 2);
        assert_eq!(Encoding::Cl100k.count("hello world"), 2);
        assert_eq!(Encoding::O200k.count(""), 0);
        // Code costs more tokens per byte than the byte rule guesses for prose.
        let code = "fn main() { let x: Vec<u8> = (0..10).map(|i| i * 2).collect(); }";
        let n = Encoding::O200k.count(code);
        assert!(n > 15 && n < 40, "{n}");
    }

    #[test]
    fn a_long_text_is_counted_in_pieces_that_cover_it_exactly() {
        let word = "ünïcödé words, and more words ";
        let text = word.repeat(3 * PIECE_BYTES / word.len() + 7);
        let parts: Vec<&str> = pieces(&text).collect();
        assert!(parts.len() >= 3);
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.len() <= PIECE_BYTES));
        assert!(
            parts[1..].iter().all(|p| p.starts_with(' ')),
            "cut before a space"
        );
        // A text without spaces is cut at a char boundary.
        let dense = "aé".repeat(PIECE_BYTES / 2);
        let parts: Vec<&str> = pieces(&dense).collect();
        assert_eq!(parts.concat(), dense);
        // Cutting before spaces costs (almost) nothing against counting the whole text.
        let whole = Encoding::O200k.bpe().encode_ordinary(&text).len() as u64;
        let cut = Encoding::O200k.count(&text);
        assert!(
            cut.abs_diff(whole) <= parts.len() as u64,
            "{cut} vs {whole}"
        );
    }

    #[test]
    fn the_cache_returns_the_count_and_stays_bounded() {
        let counter = TokenCounter::default();
        let text = "The quick brown fox jumps over the lazy dog. ".repeat(10);
        let n = Encoding::O200k.count(&text);
        assert_eq!(counter.count(Encoding::O200k, &text), n);
        assert_eq!(counter.count(Encoding::O200k, &text), n);
        assert_eq!(counter.cached(), 1);
        assert_eq!(
            counter.count(Encoding::Cl100k, &text),
            Encoding::Cl100k.count(&text),
            "the encoding is part of the key"
        );
        assert_eq!(counter.cached(), 2);
        assert_eq!(counter.count(Encoding::O200k, "short"), 1);
        assert_eq!(counter.cached(), 3, "short texts are cached too");
        assert_eq!(counter.count(Encoding::O200k, ""), 0);
        assert_eq!(counter.cached(), 3, "the empty text is not");
        for i in 0..CACHE_ENTRIES + 10 {
            counter.count(Encoding::O200k, &format!("{i:064}"));
        }
        assert!(counter.cached() <= CACHE_ENTRIES);
    }
}
