//! Event type names as the line readers keep them: an index in the schema's table (or a name
//! stored with the chunk), its ephemeral flag and its [`Kind`], with a small cache per reader
//! ([`Scratch`]) so a journal's dozen types are told apart in one compare each.

use std::sync::OnceLock;

use turnstile_journal::all_event_types;

use super::fields::{Kind, Span, Store};

/// An event type: an index in the schema's table, or a name stored with the chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeRef {
    Known(u16),
    Unknown(Span),
}

/// The schema's type names (sorted) with their ephemeral flag.
pub(crate) fn known_types() -> &'static [(&'static str, bool)] {
    static TABLE: OnceLock<Vec<(&'static str, bool)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        // The effective policy: the rewind marker is the one schema-ephemeral type on disk.
        let mut table: Vec<(&'static str, bool)> = all_event_types()
            .map(|(name, _)| {
                let p = turnstile_journal::persistence_of(name);
                (name, p == turnstile_journal::Persistence::Ephemeral)
            })
            .collect();
        table.sort_by(|a, b| a.0.cmp(b.0));
        table
    })
}

fn lookup(name: &[u8]) -> Option<u16> {
    known_types()
        .binary_search_by(|(n, _)| n.as_bytes().cmp(name))
        .ok()
        .and_then(|i| u16::try_from(i).ok())
}

/// A type name as a [`TypeRef`] and whether it is ephemeral.
pub(crate) fn type_ref(name: &str, store: &mut Store) -> (TypeRef, bool) {
    match lookup(name.as_bytes()) {
        Some(i) => (TypeRef::Known(i), known_types()[usize::from(i)].1),
        None => (TypeRef::Unknown(store.push(name)), false),
    }
}

/// The name of a [`TypeRef`].
pub(crate) fn type_name(t: TypeRef, store: &Store) -> &str {
    match t {
        TypeRef::Known(i) => known_types().get(usize::from(i)).map_or("", |e| e.0),
        TypeRef::Unknown(span) => store.get(span),
    }
}

/// Scratch space reused across lines.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) stack: Vec<u8>,
    /// For values nested in `data` (tool requests), parsed while `stack` is in use.
    pub(crate) inner: Vec<u8>,
    /// Recently seen schema types with a fingerprint: a journal uses a dozen or two, so a short
    /// scan comparing one integer each beats a binary search over all 149 names.
    types: Vec<CachedType>,
}

/// A cached type: fingerprint, name, index in the schema table, ephemeral flag, kind.
type CachedType = (u64, Box<[u8]>, u16, bool, Kind);

/// Length and last eight bytes of a name: tells the schema's type names apart in one compare.
fn fingerprint(name: &[u8]) -> u64 {
    let mut last = [0u8; 8];
    let n = name.len().min(8);
    last[..n].copy_from_slice(&name[name.len() - n..]);
    u64::from_le_bytes(last) ^ ((name.len() as u64) << 56)
}

impl Scratch {
    /// Type, ephemeral flag and kind of a type name.
    pub(crate) fn classify(
        &mut self,
        name: &[u8],
        store: &mut Store,
    ) -> Option<(TypeRef, bool, Kind)> {
        let fp = fingerprint(name);
        if let Some((_, _, i, ephemeral, kind)) =
            self.types.iter().find(|t| t.0 == fp && *t.1 == *name)
        {
            // Only plain schema names enter the cache, so a hit needs no further check.
            return Some((TypeRef::Known(*i), *ephemeral, *kind));
        }
        // A name the fast path can take as is: plain ASCII, no character JSON would escape.
        if name.is_empty()
            || !name
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
        {
            return None;
        }
        let name = std::str::from_utf8(name).ok()?;
        let kind = Kind::of(name);
        let (type_ref, ephemeral) = type_ref(name, store);
        if let TypeRef::Known(i) = type_ref
            && self.types.len() < 64
        {
            self.types
                .push((fp, name.as_bytes().into(), i, ephemeral, kind));
        }
        Some((type_ref, ephemeral, kind))
    }
}
