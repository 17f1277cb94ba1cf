//! Sources: what an operation waits on for readiness. A socket or a pipe has
//! a descriptor, watched by a poll handle of the loop; a channel's receiver
//! has none, and `fire` readies it.
//!
//! An object embeds a [`Source`] (in its userdata block, which never moves).
//! It is *attached* to the engine of the first scheduler whose cothread waits
//! on it, and moves to another engine only while nothing waits on it in the
//! first. The engine keeps the source's address to forget it when the engine
//! goes first; the object detaches itself when it closes or is collected.
//! So neither keeps the other alive, and neither outlives the other's
//! knowledge of it.
//!
//! Poll handles stay registered after their waiter left (a re-wait for the
//! same direction then costs no system call); a direction that fires with
//! nobody waiting is no longer watched.

use std::cell::Cell;
use std::ffi::CStr;
use std::os::fd::RawFd;

use cothread::reactor::{DISCONNECT, Handle, Loop, READABLE, WRITABLE};

use super::{Engine, Event, new_id};

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
    fn busy(self) -> &'static CStr {
        match self {
            SourceKind::Socket => c"socket in use by another scheduler",
            SourceKind::Pipe => c"pipe in use by another scheduler",
            SourceKind::Channel => c"channel in use by another scheduler",
        }
    }
}

/// The engine side of an object that cothreads wait on.
pub struct Source {
    /// Identifier in `owner` (0: never attached).
    pub(super) id: Cell<u64>,
    /// The engine it is attached to, or null.
    pub(super) owner: Cell<*mut Engine>,
    kind: SourceKind,
    /// Directions `select` found ready (`READ`, `WRITE`), between its poll and
    /// its answer.
    pub sel: Cell<u32>,
}

impl Source {
    pub const fn new(kind: SourceKind) -> Source {
        Source { id: Cell::new(0), owner: Cell::new(std::ptr::null_mut()), kind, sel: Cell::new(0) }
    }
}

/// What `select` needs of an object that is not a socket (a channel's
/// receiver), found through its metatable: `mt[SELECTABLE]` is a light
/// userdata pointing to a static `Selectable`. So `select` waits on objects
/// of other modules without knowing them.
pub struct Selectable {
    /// The object's source (its userdata block is the argument).
    pub source: unsafe fn(*mut std::ffi::c_void) -> *mut Source,
    /// Would a read take something without waiting (a value queued, or
    /// the end)?
    pub pending: unsafe fn(*mut std::ffi::c_void) -> bool,
}

/// The key (its address, as a light userdata) of `Selectable` in metatables.
pub static SELECTABLE: u8 = 0;

/// `[-0, +0, -]` The `Selectable` of the value at `idx` and its userdata
/// block, if its metatable has one.
///
/// # Safety
/// `l` is a valid state with two free slots.
pub unsafe fn selectable_at(
    l: crate::raw::L,
    idx: std::ffi::c_int,
) -> Option<(&'static Selectable, *mut std::ffi::c_void)> {
    use crate::raw::ffi;
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

/// An attached source, in its engine.
pub(super) struct SourceRec {
    /// The object's `Source` (nulled by the engine's drop).
    pub src: *mut Source,
    pub fd: RawFd,
    pub poll: Option<Handle>,
    /// Operations waiting to read, and to write.
    pub readers: Vec<u64>,
    pub writers: Vec<u64>,
    /// The events the poll handle is started for (0: stopped).
    pub watching: u32,
}

impl Engine {
    /// Attaches `src` (descriptor `fd`; -1: none) to this engine, moving it
    /// from another engine (or re-making its poll handle for a new
    /// descriptor) if nothing waits on it there. Returns its identifier.
    ///
    /// # Safety
    /// `src` is a live object's `Source`; its owner, if any, is a live engine.
    pub(super) unsafe fn attach(&mut self, src: *mut Source, fd: RawFd) -> Result<u64, &'static CStr> {
        // SAFETY: `src` and its owner are live (contract); only Rust runs.
        unsafe {
            let me: *mut Engine = self;
            let (id, owner) = ((*src).id.get(), (*src).owner.get());
            if owner == me && self.sources.get(&id).is_some_and(|s| s.fd == fd) {
                return Ok(id);
            }
            if owner == me {
                self.forget_source(id); // a new descriptor: a new poll handle
            } else if !owner.is_null() {
                if (*owner).busy(id) {
                    return Err((*src).kind.busy());
                }
                (*owner).forget_source(id);
            }
            let id = new_id();
            let poll =
                if fd >= 0 { Some(self.lp.poll_init(fd, id as usize).map_err(|e| e.c_message())?) } else { None };
            self.sources.insert(id, SourceRec { src, fd, poll, readers: Vec::new(), writers: Vec::new(), watching: 0 });
            (*src).id.set(id);
            (*src).owner.set(me);
            Ok(id)
        }
    }

    /// Does an operation wait on source `id`?
    pub(super) fn busy(&self, id: u64) -> bool {
        self.sources.get(&id).is_some_and(|s| !s.readers.is_empty() || !s.writers.is_empty())
    }

    /// Removes source `id`, which nothing waits on, and closes its poll
    /// handle.
    pub(super) fn forget_source(&mut self, id: u64) {
        if let Some(s) = self.sources.remove(&id) {
            // SAFETY: the record's object is live while attached (it detaches
            // itself before it goes).
            unsafe { (*s.src).owner.set(std::ptr::null_mut()) };
            if let Some(p) = s.poll {
                let _ = self.lp.close(p, None);
            }
        }
    }

    /// Lists operation `op` as waiting on source `s` in direction `dir`, and
    /// makes the poll handle watch it. Whether the source has a descriptor.
    pub(super) fn listen(&mut self, s: u64, dir: u32, op: u64) -> cothread::error::Result<bool> {
        let rec = self.sources.get_mut(&s).ok_or(cothread::Error::Inval)?;
        if dir == READ {
            rec.readers.push(op)
        } else {
            rec.writers.push(op)
        }
        let real = rec.poll.is_some();
        let wanted = rec.watching | dir;
        if real && wanted != rec.watching {
            if let Err(e) = self.start_poll(s, wanted) {
                self.unlisten(s, op);
                return Err(e);
            }
        }
        Ok(real)
    }

    /// Takes operation `op` off source `s`.
    pub(super) fn unlisten(&mut self, s: u64, op: u64) {
        if let Some(rec) = self.sources.get_mut(&s) {
            rec.readers.retain(|&w| w != op);
            rec.writers.retain(|&w| w != op);
        }
    }

    /// Readiness `bits` of source `s`: the operations waiting in those
    /// directions are due. A direction that fired with nobody waiting is no
    /// longer watched.
    pub(super) fn ready(&mut self, s: u64, bits: u32) {
        let Some(rec) = self.sources.get(&s) else { return };
        let mut woken = std::mem::take(&mut self.woken);
        woken.clear();
        let mut stale = 0;
        if bits & (READABLE | DISCONNECT) != 0 {
            if rec.readers.is_empty() {
                stale |= READ;
            }
            woken.extend_from_slice(&rec.readers);
        }
        if bits & WRITABLE != 0 {
            if rec.writers.is_empty() {
                stale |= WRITE;
            }
            woken.extend_from_slice(&rec.writers);
        }
        for &op in &woken {
            self.mark(op, super::Why::Ready);
        }
        self.woken = woken;
        let Some(rec) = self.sources.get_mut(&s) else { return };
        if let (true, Some(poll)) = (stale & rec.watching != 0, rec.poll) {
            let wanted = rec.watching & !stale;
            rec.watching = 0;
            if wanted == 0 {
                let _ = self.lp.poll_stop(poll);
            } else {
                let _ = self.start_poll(s, wanted);
            }
        }
    }

    /// The operations waiting on source `s` (readers when `readers_only`).
    pub(super) fn waiters(&self, s: u64, readers_only: bool) -> Vec<u64> {
        match self.sources.get(&s) {
            Some(r) if readers_only => r.readers.clone(),
            Some(r) => r.readers.iter().chain(&r.writers).copied().collect(),
            None => Vec::new(),
        }
    }

    fn start_poll(&mut self, s: u64, events: u32) -> cothread::error::Result<()> {
        let rec = self.sources.get_mut(&s).ok_or(cothread::Error::Inval)?;
        let poll = rec.poll.ok_or(cothread::Error::Inval)?;
        let q = self.events.clone();
        let cb = Box::new(move |_: &mut Loop, _, bits| q.borrow_mut().push(Event::Poll(s, bits)));
        self.lp.poll_start(poll, events, cb)?;
        if let Some(rec) = self.sources.get_mut(&s) {
            rec.watching = events;
        }
        Ok(())
    }
}
