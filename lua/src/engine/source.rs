//! Sources: what an operation waits on for readiness. A socket or a pipe has
//! a descriptor, watched by a poll handle of the loop; a channel's receiver
//! has none, and `fire` readies it.
//!
//! An object embeds a [`Source`] (in its userdata block, which never moves).
//! It is *attached* to the engine of the first scheduler whose cothread waits
//! on it, and moves to another engine only while nothing waits on it in the
//! first. The engine keeps the source's address to forget it when the engine
//! goes first (`watch`); the object detaches itself when it closes or is
//! collected. So neither keeps the other alive, and neither outlives the
//! other's knowledge of it.
//!
//! This file is the object's side. A source reaches its engine through the
//! [`Owner`] trait, which the engine implements: the engine's files name
//! sources, so sources do not name the engine.

use std::cell::Cell;
use std::ffi::{CStr, c_int, c_void};
use std::ptr::NonNull;

use cothread::reactor::{READABLE, WRITABLE};

use crate::raw::{L, ffi};

/// Directions of a wait on a source.
pub const READ: u32 = READABLE;
pub const WRITE: u32 = WRITABLE;

/// What kind of object a source is (for the message of a busy one).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SourceKind {
    Socket,
    Pipe,
    Channel,
}

impl SourceKind {
    pub(super) fn busy(self) -> &'static CStr {
        match self {
            SourceKind::Socket => c"socket in use by another scheduler",
            SourceKind::Pipe => c"pipe in use by another scheduler",
            SourceKind::Channel => c"channel in use by another scheduler",
        }
    }
}

/// What a source needs of the engine it is attached to.
pub(super) trait Owner {
    /// Does an operation wait on source `id`?
    fn busy(&self, id: u64) -> bool;
    /// Forgets source `id`, which nothing waits on.
    fn forget_source(&mut self, id: u64);
    /// Source `id` was closed or collected: every operation waiting on it
    /// is due (`Why::Closed`), and the source is forgotten.
    fn closed(&mut self, id: u64);
    /// Source `id` (a channel's receiver) got a value or closed: the
    /// operations reading it are due.
    fn fired(&mut self, id: u64);
}

/// The engine side of an object that cothreads wait on.
pub struct Source {
    /// Identifier in `owner` (0: never attached).
    pub(super) id: Cell<u64>,
    /// The engine it is attached to.
    pub(super) owner: Cell<Option<NonNull<dyn Owner>>>,
    pub(super) kind: SourceKind,
    /// Directions `select` found ready (`READ`, `WRITE`), between its poll and
    /// its answer.
    pub sel: Cell<u32>,
}

impl Source {
    pub const fn new(kind: SourceKind) -> Source {
        Source { id: Cell::new(0), owner: Cell::new(None), kind, sel: Cell::new(0) }
    }
}

/// What `select` needs of an object that is not a socket (a channel's
/// receiver), found through its metatable: `mt[SELECTABLE]` is a light
/// userdata pointing to a static `Selectable`. So `select` waits on objects
/// of other modules without knowing them.
pub struct Selectable {
    /// The object's source (its userdata block is the argument).
    pub source: unsafe fn(*mut c_void) -> *mut Source,
    /// Would a read take something without waiting (a value queued, or
    /// the end)?
    pub pending: unsafe fn(*mut c_void) -> bool,
}

/// The key (its address, as a light userdata) of `Selectable` in metatables.
pub static SELECTABLE: u8 = 0;

/// `[-0, +0, -]` The `Selectable` of the value at `idx` and its userdata
/// block, if its metatable has one.
///
/// # Safety
/// `l` is a valid state with two free slots.
pub unsafe fn selectable_at(l: L, idx: c_int) -> Option<(&'static Selectable, *mut c_void)> {
    // SAFETY: raw reads of a metatable (no metamethod, no allocation); only
    // modules of this crate store a light userdata under `SELECTABLE`, and
    // always the address of a static `Selectable`.
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        if ffi::lua_type(l, idx) != ffi::LUA_TUSERDATA || ffi::lua_getmetatable(l, idx) == 0 {
            return None;
        }
        ffi::lua_rawgetp(l, -1, (&raw const SELECTABLE).cast());
        let s = ffi::lua_touserdata(l, -1) as *const Selectable;
        ffi::lua_pop(l, 2);
        (!s.is_null()).then(|| (&*s, ffi::lua_touserdata(l, idx)))
    }
}

/// Detaches `src` from its engine, if any, before its object closes (or
/// goes): the operations waiting on it become due with `Closed`.
///
/// # Safety
/// `src` is a live object's source.
pub unsafe fn detach(src: *mut Source) {
    // SAFETY: a source's owner is live while set (the engine clears it when
    // it goes); only Rust runs, and no other borrow of the engine is live.
    unsafe {
        if let Some(mut e) = (*src).owner.get() {
            e.as_mut().closed((*src).id.get());
        }
    }
}

/// A channel's receiver got a value or closed: the operations reading `src`
/// become due with `Ready`.
///
/// # Safety
/// `src` is a live object's source.
pub unsafe fn fire(src: *mut Source) {
    // SAFETY: as `detach`.
    unsafe {
        if let Some(mut e) = (*src).owner.get() {
            e.as_mut().fired((*src).id.get());
        }
    }
}
