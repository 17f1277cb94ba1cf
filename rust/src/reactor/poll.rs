//! Poll handles: a callback when a descriptor is ready. Level-triggered: the
//! callback runs at every iteration while the descriptor stays ready.
//!
//! A handle may be *paused* (`poll_pause`): it stops calling back and no longer
//! keeps `run` going, but its descriptor stays in epoll, so starting it again
//! for the same events costs no system call. If the descriptor turns ready
//! while paused, the loop takes it out of epoll then (one system call), as
//! libuv does with a stream whose reading stopped.

use std::os::fd::RawFd;

use super::handle::Kind;
use super::{Handle, Loop, sys};
use crate::error::{Error, Result};

/// Readiness: readable.
pub const READABLE: u32 = 1;
/// Readiness: writable.
pub const WRITABLE: u32 = 2;
/// Readiness: the peer closed its end (reported with `READABLE`).
pub const DISCONNECT: u32 = 4;

/// A poll callback: the handle and the events that are ready.
pub type PollCallback = Box<dyn FnMut(&mut Loop, Handle, u32)>;

impl Poll {
    /// Is it watching at least `events`?
    pub(super) fn registered_for(&self, events: u32) -> bool {
        self.registered && !self.paused && self.events & events == events
    }
}

pub(crate) struct Poll {
    fd: RawFd,
    cb: Option<PollCallback>,
    events: u32,
    registered: bool,
    /// Stopped by `poll_pause`: still in epoll, calling nobody.
    paused: bool,
    /// Identifies `cb` for `poll_start_with` (0: none).
    tag: usize,
    /// Tasks awaiting readiness (see `task::task_poll`): one at a time.
    pub(super) obj: crate::op::Object,
    /// The loop task waiting (or resumed by the last readiness).
    pub(super) waiter: Option<Handle>,
}

fn to_epoll(events: u32) -> u32 {
    let mut e = 0;
    if events & READABLE != 0 {
        e |= libc::EPOLLIN as u32;
    }
    if events & WRITABLE != 0 {
        e |= libc::EPOLLOUT as u32;
    }
    if events & DISCONNECT != 0 {
        e |= libc::EPOLLRDHUP as u32;
    }
    e
}

/// What `wanted` sees of epoll's `bits`: errors and hang-ups make a
/// descriptor readable and writable, so the next read or write reports them.
fn from_epoll(bits: u32, wanted: u32) -> u32 {
    let failed = bits & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
    let mut e = 0;
    if bits & libc::EPOLLIN as u32 != 0 || failed {
        e |= READABLE;
    }
    if bits & libc::EPOLLOUT as u32 != 0 || failed {
        e |= WRITABLE;
    }
    if bits & (libc::EPOLLRDHUP | libc::EPOLLHUP) as u32 != 0 {
        e |= DISCONNECT;
    }
    e & wanted
}

impl Loop {
    /// A new, stopped poll handle for `fd` (which the caller keeps open until
    /// the handle is closed), carrying `data`.
    pub fn poll_init(&mut self, fd: RawFd, data: usize) -> Result<Handle> {
        if fd < 0 {
            return Err(Error::BadF);
        }
        Ok(self.insert(
            Kind::Poll(Poll {
                fd,
                cb: None,
                events: 0,
                registered: false,
                paused: false,
                tag: 0,
                obj: crate::op::Object::new(),
                waiter: None,
            }),
            data,
        ))
    }

    pub(super) fn poll(&mut self, h: Handle) -> Result<&mut Poll> {
        match &mut self.slot_mut(h)?.kind {
            Kind::Poll(p) => Ok(p),
            _ => Err(Error::Inval),
        }
    }

    /// Starts (or changes) watching for `events` (`READABLE | WRITABLE |
    /// DISCONNECT`); `cb` runs with the ready ones.
    pub fn poll_start(&mut self, h: Handle, events: u32, cb: PollCallback) -> Result<()> {
        self.poll_start_with(h, events, 0, || cb)
    }

    /// [`Loop::poll_start`] with a callback made by `make` only if the handle
    /// does not hold one with the same nonzero `tag` already, as
    /// [`Loop::timer_start_with`]: a handle started again and again (each
    /// wait of a socket) then allocates nothing. A handle already in epoll
    /// for exactly `events` (started, or paused) makes no system call.
    pub fn poll_start_with(
        &mut self,
        h: Handle,
        events: u32,
        tag: usize,
        make: impl FnOnce() -> PollCallback,
    ) -> Result<()> {
        if events & !(READABLE | WRITABLE | DISCONNECT) != 0 || events == 0 {
            return Err(Error::Inval);
        }
        let p = self.poll(h)?;
        let (fd, registered) = (p.fd, p.registered);
        if !registered || p.events != events {
            let op = if registered { libc::EPOLL_CTL_MOD } else { libc::EPOLL_CTL_ADD };
            sys::epoll_ctl(&self.epoll, op, fd, to_epoll(events), h.to_raw()).map_err(|e| Error::from_io(&e))?;
        }
        let p = self.poll(h)?;
        p.registered = true;
        p.paused = false;
        p.events = events;
        if tag == 0 || p.tag != tag {
            p.cb = Some(make());
            p.tag = tag;
        } else if p.cb.is_none() {
            // Started again from its own callback: the callback is out, being
            // run, and `call_back` puts it back after.
            p.tag = tag;
        }
        self.set_active(h, true);
        Ok(())
    }

    /// Pauses the handle: no callback, and it does not keep `run` going, but
    /// the descriptor stays in epoll (see the module documentation). Pausing a
    /// stopped or paused handle is fine.
    pub fn poll_pause(&mut self, h: Handle) -> Result<()> {
        let p = self.poll(h)?;
        p.paused = p.registered;
        self.set_active(h, false);
        Ok(())
    }

    /// Closing: a task waiting on the handle is resumed with `Closed`.
    pub(super) fn poll_close(&mut self, h: Handle) -> Result<()> {
        self.poll_stop(h)?;
        self.poll_event(h, |o| o.close());
        Ok(())
    }

    /// Stops watching (stopping a stopped handle is fine).
    pub fn poll_stop(&mut self, h: Handle) -> Result<()> {
        let p = self.poll(h)?;
        let (fd, registered) = (p.fd, p.registered);
        p.registered = false;
        p.paused = false;
        if registered {
            // The descriptor may be closed already: then epoll dropped it.
            let _ = sys::epoll_ctl(&self.epoll, libc::EPOLL_CTL_DEL, fd, 0, 0);
        }
        self.set_active(h, false);
        Ok(())
    }

    /// Runs the callback of poll handle `h` for epoll's `bits`.
    pub(super) fn dispatch_poll(&mut self, h: Handle, bits: u32) {
        let Ok(p) = self.poll(h) else { return };
        if !p.registered {
            return;
        }
        if p.paused {
            // Ready while nobody listens: out of epoll until started again.
            let _ = self.poll_stop(h);
            return;
        }
        let ready = from_epoll(bits, p.events);
        if ready != 0 {
            fn field(k: &mut Kind) -> Option<&mut Option<PollCallback>> {
                match k {
                    Kind::Poll(p) => Some(&mut p.cb),
                    _ => None,
                }
            }
            self.call_back(h, field, |l, f| f(l, h, ready));
        }
    }
}
