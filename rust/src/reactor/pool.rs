//! The thread pool for blocking work, and work requests of a loop.
//!
//! A loop submits a job; a pool thread runs it, then queues its completion in
//! the loop's inbox (waking the loop), and the loop runs the request's `after`
//! callback. A job not yet started can be cancelled: its `after` callback
//! still runs, once, with `Error::Canceled`, from the loop (never inside
//! `work_cancel`). The pool starts its threads lazily, at the first job.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::{Loop, async_::Inbox};
use crate::error::{Error, Result};
use crate::util::slab::Key;

/// Work to run on a pool thread.
pub type Work = Box<dyn FnOnce() + Send>;
/// What runs on the loop once the work ran (`Ok`) or was cancelled.
pub type After = Box<dyn FnOnce(&mut Loop, Request, Result<()>)>;

/// A work request of a loop: a plain value, invalid once its `after` ran.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Request(pub(crate) Key);

impl Request {
    /// The request as the C ABI's `cot_req` (never 0).
    pub fn to_raw(self) -> u64 {
        self.0.to_raw()
    }

    /// A request from a `cot_req`; `None` for 0.
    pub fn from_raw(raw: u64) -> Option<Request> {
        Key::from_raw(raw).map(Request)
    }
}

struct Job {
    inbox: Arc<Inbox>,
    id: u64,
    work: Work,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    threads: usize,
    idle: usize,
    closed: bool,
}

/// What the pool's threads share.
struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    size: usize,
}

/// A pool of threads running jobs in submission order. Its threads end, once
/// the queue is empty, when the last `Arc<Pool>` (a loop, or its creator) is
/// dropped.
pub struct Pool {
    shared: Arc<Shared>,
}

impl Pool {
    /// A pool of `size` threads (at least 1), started lazily.
    pub fn new(size: usize) -> Arc<Pool> {
        let shared = Shared { queue: Mutex::new(Queue::default()), ready: Condvar::new(), size: size.max(1) };
        Arc::new(Pool { shared: Arc::new(shared) })
    }

    /// The number of threads it runs at most.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    fn submit(&self, job: Job) {
        let sh = &self.shared;
        let mut q = sh.lock();
        q.jobs.push_back(job);
        if q.idle == 0 && q.threads < sh.size {
            q.threads += 1;
            let sh = sh.clone();
            std::thread::Builder::new()
                .name("cothread-pool".into())
                .spawn(move || sh.work())
                .expect("spawn a pool thread");
        } else {
            sh.ready.notify_one();
        }
    }

    /// Takes the queued job `id` of `inbox` out, if it has not started.
    fn cancel(&self, inbox: &Arc<Inbox>, id: u64) -> bool {
        let mut q = self.shared.lock();
        let at = q.jobs.iter().position(|j| j.id == id && Arc::ptr_eq(&j.inbox, inbox));
        at.and_then(|i| q.jobs.remove(i)).is_some()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.ready.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves plain data behind: keep going.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pool thread: runs jobs until the pool is dropped and the queue empty.
    fn work(self: Arc<Shared>) {
        let mut q = self.lock();
        loop {
            if let Some(job) = q.jobs.pop_front() {
                drop(q);
                (job.work)();
                job.inbox.complete(job.id, Ok(()));
                q = self.lock();
            } else if q.closed {
                q.threads -= 1;
                return;
            } else {
                q.idle += 1;
                q = self.ready.wait(q).unwrap_or_else(|e| e.into_inner());
                q.idle -= 1;
            }
        }
    }
}

pub(crate) struct Pending {
    after: Option<After>,
}

impl Loop {
    /// Uses `pool` for this loop's work (several loops may share one). Only
    /// before the first `work_submit`; `Error::Busy` after.
    pub fn set_pool(&mut self, pool: Arc<Pool>) -> Result<()> {
        if self.pool.is_some() {
            return Err(Error::Busy);
        }
        self.pool = Some(pool);
        Ok(())
    }

    fn pool(&mut self) -> &Arc<Pool> {
        self.pool.get_or_insert_with(|| Pool::new(std::thread::available_parallelism().map_or(4, |n| n.get())))
    }

    /// Runs `work` on the pool, then `after` on the loop. The request keeps
    /// the loop alive until `after` ran.
    pub fn work_submit(&mut self, work: Work, after: After) -> Request {
        let r = Request(self.requests.insert(Pending { after: Some(after) }));
        self.active += 1;
        let job = Job { inbox: self.inbox.clone(), id: r.to_raw(), work };
        self.pool().submit(job);
        r
    }

    /// Cancels a request whose work has not started: its `after` runs later
    /// with `Error::Canceled`. `Error::Busy` once the work started,
    /// `Error::Inval` for an unknown request.
    pub fn work_cancel(&mut self, r: Request) -> Result<()> {
        self.requests.get(r.0).ok_or(Error::Inval)?;
        let pool = self.pool.clone().ok_or(Error::Inval)?;
        if !pool.cancel(&self.inbox, r.to_raw()) {
            return Err(Error::Busy);
        }
        self.inbox.complete(r.to_raw(), Err(Error::Canceled));
        Ok(())
    }

    /// Runs the `after` callback of a finished or cancelled request.
    pub(super) fn finish_request(&mut self, raw: u64, status: Result<()>) {
        let Some(r) = Request::from_raw(raw) else { return };
        let Some(mut p) = self.requests.remove(r.0) else { return };
        self.active -= 1;
        if let Some(after) = p.after.take() {
            after(self, r, status);
        }
    }
}
