//! A mutex with strict FIFO handoff in two words, no heap.
//!
//! - `state` is NULL when unlocked, the mutex's own address (the marker) when
//!   locked with no new request, else a LIFO stack of requests (nodes) pushed
//!   on top of the marker. Locking is one CAS: NULL -> marker acquires, any
//!   other value gets the request pushed on top.
//! - `queue` belongs to the owner: the requests in lock order. When the owner
//!   unlocks with an empty queue, it either turns the marker back into NULL
//!   or swaps the marker in for the stack and reverses the stack into the
//!   queue. The first request of the queue becomes the owner: `unlock`
//!   returns it and the mutex stays locked (handoff).
//!
//! Requests taken from the stack are all older than any pushed later, and the
//! queue is drained before the stack is looked at again: owners follow the
//! order in which lock calls pushed their requests.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::Ordering;

use crate::util::chain::{ListSlot, Node, Stack};

/// The two words of a mutex, viewed by the core. The `state` stack's marker
/// is `marker`, the mutex's address.
pub(crate) struct Mutex<'a> {
    state: Stack<'a>,
    queue: ListSlot<'a>,
    marker: *const c_void,
}

impl<'a> Mutex<'a> {
    /// The mutex made of `state` (whose only marker is `marker`) and `queue`.
    #[inline]
    pub fn new(state: Stack<'a>, queue: ListSlot<'a>, marker: *const c_void) -> Mutex<'a> {
        Mutex { state, queue, marker }
    }

    /// Locks: `Ok(node)` (given back unused) if the mutex was free and is the
    /// caller's now, `Err(())` if `node` was queued: a later `unlock` returns
    /// it as the new owner. Lock-free.
    #[inline]
    pub fn lock(&self, mut node: Node) -> Result<Node, ()> {
        let mut head = self.state.load();
        loop {
            if head.is_null() {
                match self.state.try_set(head, self.marker, Ordering::Acquire) {
                    Ok(()) => return Ok(node),
                    Err(found) => head = found,
                }
            } else {
                match self.state.try_push(head, node) {
                    Ok(()) => return Err(()),
                    Err((found, back)) => (head, node) = (found, back),
                }
            }
        }
    }

    /// Locks if the mutex is free; never queues.
    #[inline]
    pub fn try_lock(&self) -> bool {
        self.state.try_set(ptr::null_mut(), self.marker, Ordering::Acquire).is_ok()
    }

    /// Unlocks (the owner calls it): returns the request that owns the mutex
    /// now, the oldest one, or `None` if the mutex became unlocked. An
    /// unlocked mutex stays unlocked (`None`).
    pub fn unlock(&self) -> Option<Node> {
        let mut queue = self.queue.take();
        if let Some(next) = queue.pop_front() {
            self.queue.put(queue);
            return Some(next);
        }
        let mut head = self.state.load();
        loop {
            if head.is_null() {
                return None;
            }
            if head.cast_const() == self.marker {
                match self.state.try_set(head, ptr::null(), Ordering::Release) {
                    Ok(()) => return None,
                    Err(found) => head = found,
                }
                continue;
            }
            // Requests: keep the mutex locked, take them in lock order.
            let (mut requests, bottom) = self.state.take(self.marker, Ordering::Acquire);
            if let Some(next) = requests.pop_front() {
                self.queue.put(requests);
                return Some(next);
            }
            head = bottom; // only if misused (two unlocks at once)
        }
    }

    /// Whether the mutex is locked (a snapshot).
    #[inline]
    pub fn is_locked(&self) -> bool {
        !self.state.load().is_null()
    }
}
