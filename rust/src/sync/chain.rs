//! Lock-free chains of awaiters: a word holding a LIFO stack of nodes, which
//! waiters push onto (`Release`) and a completer takes whole (`AcqRel`),
//! getting the nodes oldest first. A *closed* marker in the word makes pushes
//! fail, so an awaiter that comes after the completion knows to go on at once.

use std::ffi::c_void;
use std::sync::atomic::Ordering;

use crate::util::chain::{List, Node, Stack};

/// Pushes `node` unless the word holds `closed` (NULL: never refuse); gives
/// the node back, untouched, if refused. Lock-free.
#[inline]
pub(crate) fn push(chain: &Stack<'_>, mut node: Node, closed: *const c_void) -> Result<(), Node> {
    let mut head = chain.load();
    loop {
        if !closed.is_null() && head.cast_const() == closed {
            // `head` was read with `Acquire`: the closer's writes are visible.
            return Err(node);
        }
        match chain.try_push(head, node) {
            Ok(()) => return Ok(()),
            Err((found, back)) => (head, node) = (found, back),
        }
    }
}

/// Swaps `replacement` (NULL or a marker the stack knows) in and returns the
/// nodes the word held, oldest first (empty if it held NULL or a marker).
#[inline]
pub(crate) fn take(chain: &Stack<'_>, replacement: *const c_void) -> List {
    chain.take(replacement, Ordering::AcqRel).0
}
