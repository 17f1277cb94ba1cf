//! Sources: what an operation waits on for readiness. A socket or a pipe has
//! a descriptor, watched by a poll handle of the loop; a channel's receiver
//! has none, and `fire` readies it.
//!
//! An object embeds a [`Source`] (in its userdata block, which never moves).
//! It is *attached* to the engine of the first scheduler whose cothread waits
//! on it, and moves to another engine only while nothing waits on it in the
//! first. The source holds a weak link to its engine and its id there; the
//! engine keeps no address of the source (it forgets an id, and the
//! source's link then names an id the engine does not know). The object
//! detaches itself when it closes or is collected. So neither keeps the
//! other alive, and a link outliving its engine finds nothing. The engine
//! reaches a source only through its `Cell`s, so objects hold theirs
//! shared.
//!
//! This file is the object's side. A source reaches its engine through the
//! [`Owner`] trait, which the engine implements: the engine's files name
//! sources, so sources do not name the engine.

use std::cell::Cell;
use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;
use std::rc::{Rc, Weak};

use cothread::reactor::{READABLE, WRITABLE};

use crate::lua::{Lua, Udata};

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

/// What a source needs of the engine it is attached to. Calls come while
/// no method of that engine runs (a source is closed or fired by Lua code,
/// and the engine calls out to Lua only between its own borrows).
pub(super) trait Owner {
    /// Does an operation wait on source `id`?
    fn busy(&self, id: u64) -> bool;
    /// Forgets source `id`, which nothing waits on.
    fn forget_source(&self, id: u64);
    /// Source `id` was closed or collected: every operation waiting on it
    /// is due (`Why::Closed`), and the source is forgotten.
    fn closed(&self, id: u64);
    /// Source `id` (a channel's receiver) got a value or closed: the
    /// operations reading it are due.
    fn fired(&self, id: u64);
}

/// The engine side of an object that cothreads wait on.
pub struct Source {
    /// Identifier in `owner` (0: never attached).
    pub(super) id: Cell<u64>,
    /// The engine it is attached to, if that engine still is (a weak link:
    /// the engine may go first, and then it is attached nowhere).
    pub(super) owner: Cell<Option<Weak<dyn Owner>>>,
    pub(super) kind: SourceKind,
    /// Directions `select` found ready (`READ`, `WRITE`), between its poll and
    /// its answer.
    pub sel: Cell<u32>,
}

impl Source {
    pub const fn new(kind: SourceKind) -> Source {
        Source { id: Cell::new(0), owner: Cell::new(None), kind, sel: Cell::new(0) }
    }

    /// The engine it is attached to, if that engine is alive (and knows it
    /// still: the engine checks the id).
    pub(super) fn owner(&self) -> Option<Rc<dyn Owner>> {
        let w = self.owner.take();
        let owner = w.as_ref().and_then(Weak::upgrade);
        self.owner.set(w);
        owner
    }
}

/// What `select` needs of an object that is not a socket (a channel's
/// receiver, a TLS connection). Its metatable holds it (a `SelectableBox`
/// userdata under the key `SELECTABLE`), so `select` waits on objects of
/// other modules without knowing them. The functions check the object's
/// type themselves: a `Selectable` copied by Lua code into another
/// metatable finds nothing.
pub struct Selectable {
    /// The source of the object at `idx`, if it is one of this kind.
    pub source: for<'a> fn(&'a Lua, c_int) -> Option<&'a Source>,
    /// The descriptor `select` polls for the object at `idx` (-1: none, a
    /// channel, which only `fire` readies; or closed).
    pub fd: fn(&Lua, c_int) -> RawFd,
    /// Would a read of the object at `idx` take something without waiting
    /// (a value queued, data already decrypted, or the end)?
    pub pending: fn(&Lua, c_int) -> bool,
    /// May it stand in select's write list (it has a descriptor to write)?
    pub write: bool,
}

/// A `Selectable` kept in Lua.
struct SelectableBox(&'static Selectable);

// SAFETY: c"cothread.selectable" names only this type (no other `Udata`, no registry field).
unsafe impl Udata for SelectableBox {
    const NAME: &'static CStr = c"cothread.selectable";
}

/// The key (its address, as a light userdata) of a `Selectable` in
/// metatables.
static SELECTABLE: u8 = 0;

/// `[-0, +0, m]` Makes the objects under the metatable on the top
/// selectable through `s`.
pub fn make_selectable(lua: &mut Lua, s: &'static Selectable) {
    // Its filling never fails (a memory error raises): the table is pushed.
    if lua.udata_metatable::<SelectableBox>(|_| Ok(())).is_ok() {
        lua.pop(1);
    }
    lua.new_udata(SelectableBox(s), 0);
    lua.set_pointer_key(-2, (&raw const SELECTABLE).cast());
}

/// `[-0, +0, -]` The `Selectable` in the metatable of the value at `idx`,
/// if it has one.
pub fn selectable_at(lua: &Lua, idx: c_int) -> Option<&'static Selectable> {
    lua.with_metafield(idx, (&raw const SELECTABLE).cast(), |lua| lua.test_udata::<SelectableBox>(-1).map(|b| b.0))
        .flatten()
}

impl Source {
    /// Detaches the source from its engine, if any, before its object
    /// closes (or goes): the operations waiting on it become due with
    /// `Closed`.
    pub fn detach(&self) {
        if let Some(e) = self.owner() {
            e.closed(self.id.get());
        }
    }

    /// A channel's receiver got a value or closed: the operations reading
    /// the source become due with `Ready`.
    pub fn fire(&self) {
        if let Some(e) = self.owner() {
            e.fired(self.id.get());
        }
    }
}
