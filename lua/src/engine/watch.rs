//! The engine's table of attached sources: each source's descriptor, its
//! poll handle and the operations waiting on it, by direction.
//!
//! Poll handles stay registered after their waiter left (a re-wait for the
//! same direction then costs no system call); a direction that fires with
//! nobody waiting is no longer watched.

use std::ffi::CStr;
use std::os::fd::RawFd;
use std::rc::Weak;

use cothread::reactor::{DISCONNECT, Handle, Loop, READABLE, WRITABLE};
use rustc_hash::FxHashMap;

use super::event::{Event, Events, new_id};
use super::lp::LoopRef;
use super::source::{Owner, READ, Source, WRITE};

/// An attached source, in its engine.
struct SourceRec {
    fd: RawFd,
    poll: Option<Handle>,
    /// Operations waiting to read, and to write.
    readers: Vec<u64>,
    writers: Vec<u64>,
    /// The events the poll handle is started for (0: stopped).
    watching: u32,
}

/// The sources attached to one engine, by identifier. Keyed by integers
/// the program makes: FxHash.
pub(super) struct Sources {
    recs: FxHashMap<u64, SourceRec>,
    /// Where the poll handles' callbacks report.
    events: Events,
}

impl Sources {
    pub(super) fn new(events: Events) -> Sources {
        Sources { recs: FxHashMap::default(), events }
    }

    /// Attaches `src` (descriptor `fd`; -1: none) to the engine `me`, whose
    /// loop is `lp`, moving it from another engine (or re-making its poll
    /// handle for a new descriptor) if nothing waits on it there. Returns
    /// its identifier.
    #[inline]
    pub(super) fn attach(
        &mut self,
        lp: &mut LoopRef,
        me: &Weak<dyn Owner>,
        src: &Source,
        fd: RawFd,
    ) -> Result<u64, &'static CStr> {
        let (id, owner) = (src.id.get(), src.owner.take());
        let mine = owner.as_ref().is_some_and(|o| Weak::ptr_eq(o, me));
        if mine && self.recs.get(&id).is_some_and(|s| s.fd == fd) {
            src.owner.set(owner);
            return Ok(id);
        }
        if mine {
            self.forget(lp, id); // a new descriptor: a new poll handle
        } else if let Some(other) = owner.as_ref().and_then(Weak::upgrade) {
            // Another engine, idle now: none of its methods runs.
            if other.busy(id) {
                src.owner.set(owner);
                return Err(src.kind.busy());
            }
            other.forget_source(id);
        }
        let new = new_id();
        let poll = match fd {
            0.. => match lp.poll_init(fd, new as usize) {
                Ok(p) => Some(p),
                Err(e) => {
                    src.owner.set(owner);
                    return Err(e.c_message());
                }
            },
            _ => None,
        };
        self.recs.insert(new, SourceRec { fd, poll, readers: Vec::new(), writers: Vec::new(), watching: 0 });
        src.id.set(new);
        src.owner.set(Some(me.clone()));
        Ok(new)
    }

    /// Does an operation wait on source `id`?
    #[inline]
    pub(super) fn busy(&self, id: u64) -> bool {
        self.recs.get(&id).is_some_and(|s| !s.readers.is_empty() || !s.writers.is_empty())
    }

    /// Does source `id` have a descriptor (a poll handle)?
    #[inline]
    pub(super) fn has_poll(&self, id: u64) -> bool {
        self.recs.get(&id).is_some_and(|s| s.poll.is_some())
    }

    /// Every attached source.
    pub(super) fn ids(&self) -> Vec<u64> {
        self.recs.keys().copied().collect()
    }

    /// Removes source `id`, which nothing waits on, and closes its poll
    /// handle.
    pub(super) fn forget(&mut self, lp: &mut LoopRef, id: u64) {
        if let Some(s) = self.recs.remove(&id) {
            // The object keeps its link: it names an id unknown here now.
            if let Some(p) = s.poll {
                let _ = lp.close(p, None);
            }
        }
    }

    /// Lists operation `op` as waiting on source `s` in direction `dir`, and
    /// makes the poll handle watch it. Whether the source has a descriptor.
    #[inline]
    pub(super) fn listen(&mut self, lp: &mut LoopRef, s: u64, dir: u32, op: u64) -> cothread::error::Result<bool> {
        let rec = self.recs.get_mut(&s).ok_or(cothread::Error::Inval)?;
        if dir == READ {
            rec.readers.push(op)
        } else {
            rec.writers.push(op)
        }
        let real = rec.poll.is_some();
        let wanted = rec.watching | dir;
        if real && wanted != rec.watching {
            if let Err(e) = self.start_poll(lp, s, wanted) {
                self.unlisten(s, op);
                return Err(e);
            }
        }
        Ok(real)
    }

    /// Takes operation `op` off source `s`.
    #[inline]
    pub(super) fn unlisten(&mut self, s: u64, op: u64) {
        if let Some(rec) = self.recs.get_mut(&s) {
            rec.readers.retain(|&w| w != op);
            rec.writers.retain(|&w| w != op);
        }
    }

    /// Readiness `bits` of source `s`: fills `woken` with the operations
    /// waiting in those directions (the engine makes them due). A direction
    /// that fired with nobody waiting is no longer watched.
    #[inline]
    pub(super) fn ready(&mut self, lp: &mut LoopRef, s: u64, bits: u32, woken: &mut Vec<u64>) {
        woken.clear();
        let Some(rec) = self.recs.get_mut(&s) else { return };
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
        if let (true, Some(poll)) = (stale & rec.watching != 0, rec.poll) {
            let wanted = rec.watching & !stale;
            rec.watching = 0;
            if wanted == 0 {
                let _ = lp.poll_stop(poll);
            } else {
                let _ = self.start_poll(lp, s, wanted);
            }
        }
    }

    /// The operations waiting on source `s` (readers when `readers_only`).
    pub(super) fn waiters(&self, s: u64, readers_only: bool) -> Vec<u64> {
        match self.recs.get(&s) {
            Some(r) if readers_only => r.readers.clone(),
            Some(r) => r.readers.iter().chain(&r.writers).copied().collect(),
            None => Vec::new(),
        }
    }

    fn start_poll(&mut self, lp: &mut LoopRef, s: u64, events: u32) -> cothread::error::Result<()> {
        let rec = self.recs.get_mut(&s).ok_or(cothread::Error::Inval)?;
        let poll = rec.poll.ok_or(cothread::Error::Inval)?;
        let q = self.events.clone();
        let cb = Box::new(move |_: &mut Loop, _, bits| q.borrow_mut().push(Event::Poll(s, bits)));
        lp.poll_start(poll, events, cb)?;
        if let Some(rec) = self.recs.get_mut(&s) {
            rec.watching = events;
        }
        Ok(())
    }
}
