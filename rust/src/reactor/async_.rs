//! Async handles: wakeups sent from any thread. Sends made before the callback
//! runs are coalesced into one call (as libuv does); none is lost: a send after
//! the callback started causes another call.

use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use super::handle::Kind;
use super::{Callback, Handle, Loop, sys};
use crate::error::{Error, Result};

pub(crate) struct Async {
    cb: Option<Callback>,
}

#[derive(Default)]
struct Queue {
    /// Live async handles (raw ids), and whether a wakeup is queued for each.
    /// The ids are the loop's own, so FxHash: every `send` looks one up under
    /// the lock.
    live: FxHashMap<u64, bool>,
    queued: Vec<u64>,
    /// Finished or cancelled work requests (raw ids) and their status.
    completed: Vec<(u64, Result<()>)>,
}

/// The thread-safe part of a loop: queued wakeups and the eventfd that
/// interrupts the loop's poll.
pub(crate) struct Inbox {
    queue: Mutex<Queue>,
    fd: sys::Fd,
}

impl Inbox {
    pub fn new() -> io::Result<Inbox> {
        Ok(Inbox { queue: Mutex::new(Queue::default()), fd: sys::eventfd()? })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.raw()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves plain data behind: keep going.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a wakeup of async handle `raw`. `Error::Inval` if it is not a
    /// live async handle of this loop.
    pub fn send(&self, raw: u64) -> Result<()> {
        let mut q = self.lock();
        let queued = q.live.get_mut(&raw).ok_or(Error::Inval)?;
        if !*queued {
            *queued = true;
            q.queued.push(raw);
            if q.queued.len() == 1 {
                sys::eventfd_signal(self.fd.raw());
            }
        }
        Ok(())
    }
}

impl Inbox {
    /// Queues the completion of work request `raw` and wakes the loop.
    pub(crate) fn complete(&self, raw: u64, status: Result<()>) {
        let mut q = self.lock();
        q.completed.push((raw, status));
        if q.completed.len() == 1 {
            sys::eventfd_signal(self.fd.raw());
        }
    }
}

/// Sends wakeups to one async handle, from any thread.
#[derive(Clone)]
pub struct AsyncSender {
    inbox: Arc<Inbox>,
    raw: u64,
}

impl AsyncSender {
    /// Wakes the loop and runs the handle's callback there (once for any
    /// number of sends before it runs). `Error::Inval` once the handle is closed.
    pub fn send(&self) -> Result<()> {
        self.inbox.send(self.raw)
    }
}

impl Loop {
    /// A new async handle: `cb` runs on the loop after `send`s. It is active
    /// (keeps the loop alive) until closed.
    pub fn async_init(&mut self, data: usize, cb: Callback) -> Handle {
        let h = self.insert(Kind::Async(Async { cb: Some(cb) }), data);
        self.inbox.lock().live.insert(h.to_raw(), false);
        self.set_active(h, true);
        h
    }

    /// A sender for async handle `h`, usable from any thread.
    pub fn async_sender(&self, h: Handle) -> Result<AsyncSender> {
        match &self.slot(h)?.kind {
            Kind::Async(_) => Ok(AsyncSender { inbox: self.inbox.clone(), raw: h.to_raw() }),
            _ => Err(Error::Inval),
        }
    }

    /// The inbox, for the C ABI's `cot_async_send`.
    pub(crate) fn inbox(&self) -> &Arc<Inbox> {
        &self.inbox
    }

    /// Forgets an async handle's wakeups (it is closing).
    pub(super) fn async_stop(&mut self, h: Handle) {
        let mut q = self.inbox.lock();
        q.live.remove(&h.to_raw());
        q.queued.retain(|&r| r != h.to_raw());
    }

    /// Runs the `after` callbacks of finished work, then the callbacks of the
    /// queued wakeups.
    pub(super) fn run_inbox(&mut self) {
        sys::eventfd_drain(&self.inbox.fd);
        let (completed, queued) = {
            let mut q = self.inbox.lock();
            let queued = std::mem::take(&mut q.queued);
            for raw in &queued {
                if let Some(flag) = q.live.get_mut(raw) {
                    *flag = false;
                }
            }
            (std::mem::take(&mut q.completed), queued)
        };
        for (raw, status) in completed {
            self.finish_request(raw, status);
        }
        for raw in queued {
            let Some(h) = Handle::from_raw(raw) else { continue };
            fn field(k: &mut Kind) -> Option<&mut Option<Callback>> {
                match k {
                    Kind::Async(a) => Some(&mut a.cb),
                    _ => None,
                }
            }
            self.call_back(h, field, |l, f| f(l, h));
        }
    }
}
