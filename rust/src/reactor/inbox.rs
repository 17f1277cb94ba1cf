//! The inbox: how other threads reach a loop. Async sends, finished work
//! requests (and settled futures a request waits for) and posted functions
//! go into one mailbox (`sync::mailbox`, whose first comment is the
//! protocol). Its bell is the loop's eventfd, in the epoll set under
//! `INBOX_TOKEN`. A sender rings it only while the loop sleeps in
//! `epoll_wait` with a timeout, is about to, or is away (outside `run`, where
//! a host may block on `backend_fd`): a busy loop takes its mail with no
//! system call.
//!
//! Each iteration, after the poll, a loop with mail pending takes it whole
//! and runs it (`run_inbox`): the `after` callbacks of finished work, the
//! callbacks of the async handles sent to (one call for any number of sends
//! before it), then the posts, each once, in the order they were put. What is
//! put meanwhile waits for the next iteration. Pending mail keeps the loop
//! alive and its poll from blocking.
//!
//! A dropped loop closes its inbox: the queued posts are dropped unrun
//! (`Loop::close_posts` runs them instead, as a group's loop does last); a
//! later post fails with `Error::Pipe` and drops its function unrun, an async
//! send fails with `Error::Inval` (its handle is gone), and a late work
//! completion is ignored.

use std::io;
use std::os::fd::RawFd;

use rustc_hash::FxHashMap;

use super::remote::Post;
use super::{Loop, sys};
use crate::error::{Error, Result};
use crate::sync::mailbox::{Bell, Items, Mailbox};

/// What other threads have put for the loop.
#[derive(Default)]
pub(super) struct Queue {
    /// Live async handles (raw ids), and whether a wakeup is queued for each.
    /// The ids are the loop's own, so FxHash: every `send` looks one up under
    /// the lock.
    pub(super) live: FxHashMap<u64, bool>,
    queued: Vec<u64>,
    /// Finished or cancelled work requests (raw ids) and their status.
    completed: Vec<(u64, Result<()>)>,
    pub(super) posts: Vec<Post>,
}

impl Queue {
    /// Forgets async handle `raw` and its queued wakeup.
    pub(super) fn forget(&mut self, raw: u64) {
        self.live.remove(&raw);
        self.queued.retain(|&r| r != raw);
    }
}

impl Items for Queue {
    fn is_empty(&self) -> bool {
        self.queued.is_empty() && self.completed.is_empty() && self.posts.is_empty()
    }
}

/// A batch taken from the queue. The loop keeps it between iterations, so
/// that its vectors' memory serves the next batch.
#[derive(Default)]
pub(super) struct Batch {
    queued: Vec<u64>,
    completed: Vec<(u64, Result<()>)>,
    posts: Vec<Post>,
}

/// The loop's eventfd, as the mailbox's bell.
struct EventFd {
    fd: sys::Fd,
    /// Rings so far, for the tests that count system calls.
    #[cfg(test)]
    rings: std::sync::atomic::AtomicU64,
}

impl Bell for EventFd {
    fn ring(&self) {
        #[cfg(test)]
        self.rings.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        sys::eventfd_signal(self.fd.raw());
    }
}

/// The thread-safe part of a loop (see the module documentation).
pub(crate) struct Inbox {
    mail: Mailbox<Queue, EventFd>,
}

impl Inbox {
    pub fn new() -> io::Result<Inbox> {
        let bell = EventFd {
            fd: sys::eventfd()?,
            #[cfg(test)]
            rings: Default::default(),
        };
        Ok(Inbox { mail: Mailbox::new(Queue::default(), bell) })
    }

    pub fn fd(&self) -> RawFd {
        self.mail.bell().fd.raw()
    }

    /// Queues a wakeup of async handle `raw`. `Error::Inval` if it is not a
    /// live async handle of this loop.
    pub fn send(&self, raw: u64) -> Result<()> {
        let r = self.mail.put(|q| {
            let queued = q.live.get_mut(&raw).ok_or(Error::Inval)?;
            if !*queued {
                *queued = true;
                q.queued.push(raw);
            }
            Ok(())
        });
        r.map_err(|_| Error::Inval)
    }

    /// Queues the completion of work request `raw`. Ignored once the loop is
    /// gone.
    pub(crate) fn complete(&self, raw: u64, status: Result<()>) {
        let _ = self.mail.put(|q| {
            q.completed.push((raw, status));
            Ok(())
        });
    }

    /// Queues a post. `Error::Pipe` once the loop is gone: `p` is dropped.
    pub(super) fn post(&self, p: Post) -> Result<()> {
        self.mail.put(|q| {
            q.posts.push(p);
            Ok(())
        })
    }

    /// The owner's access to the queue (async handles come and go).
    pub(super) fn own<R>(&self, f: impl FnOnce(&mut Queue) -> R) -> R {
        self.mail.own(f)
    }

    /// Is mail pending (a snapshot, exact after `sleep`)?
    pub(super) fn pending(&self) -> bool {
        self.mail.pending()
    }

    /// Refuses further mail and returns what is queued (the caller drops
    /// it, or runs its posts, outside the mutex).
    pub(super) fn close(&self) -> Queue {
        self.mail.close(std::mem::take)
    }

    #[cfg(test)]
    pub(super) fn asleep(&self) -> bool {
        self.mail.asleep()
    }

    #[cfg(test)]
    pub(super) fn rings(&self) -> u64 {
        self.mail.bell().rings.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Loop {
    /// Before a wait of `timeout_ms`: the timeout to use. A wait that may
    /// block announces the sleep first, and does not block if mail is
    /// pending. Follow it with `inbox_woke` if `timeout_ms` is not 0.
    pub(super) fn inbox_sleep(&self, timeout_ms: i32) -> i32 {
        if timeout_ms != 0 && !self.inbox.mail.sleep() { 0 } else { timeout_ms }
    }

    /// After a wait, or entering `run`: the loop is awake. A ring a sender
    /// claimed meanwhile is owed to the eventfd: polls do not stop until it
    /// has been read.
    pub(super) fn inbox_woke(&mut self) {
        if self.inbox.mail.wake() {
            self.owed_rings += 1;
        }
    }

    /// Out of `run`: the loop counts as asleep. A ring still owed is read
    /// first, if it landed (a run that did not poll, as one with nothing
    /// alive): a host waiting on `backend_fd` must not find a stale count.
    pub(super) fn inbox_leave(&mut self) {
        if self.owed_rings > 0 {
            self.inbox_read();
        }
        self.inbox.mail.leave();
    }

    /// The eventfd is readable: reads its count, the rings that landed.
    pub(super) fn inbox_read(&mut self) {
        let n = sys::eventfd_drain(&self.inbox.mail.bell().fd);
        self.owed_rings = self.owed_rings.saturating_sub(n);
    }

    /// Runs the mail pending: the `after` callbacks of finished work, the
    /// callbacks of the queued wakeups, then the posts.
    pub(super) fn run_inbox(&mut self) {
        let mut b = std::mem::take(&mut self.batch);
        self.inbox.own(|q| {
            std::mem::swap(&mut b.queued, &mut q.queued);
            std::mem::swap(&mut b.completed, &mut q.completed);
            std::mem::swap(&mut b.posts, &mut q.posts);
            for raw in &b.queued {
                if let Some(flag) = q.live.get_mut(raw) {
                    *flag = false;
                }
            }
        });
        for (raw, status) in b.completed.drain(..) {
            self.finish_request(raw, status);
        }
        for raw in b.queued.drain(..) {
            self.async_fire(raw);
        }
        for post in b.posts.drain(..) {
            post.run(self);
        }
        self.batch = b;
    }
}
