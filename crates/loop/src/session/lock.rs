//! Locking a mutex whose holder panicked: the session's shared state stays usable (every
//! value under these locks is whole between statements).

use std::sync::Mutex;

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
