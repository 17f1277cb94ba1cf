//! Work requests of a loop, on a thread pool ([`crate::sync::Pool`], its own
//! or one shared with other loops and plain jobs).
//!
//! A loop submits a job; a pool thread runs it, then queues its completion in
//! the loop's inbox (waking the loop), and the loop runs the request's `after`
//! callback. A job not yet started can be cancelled: its `after` callback
//! still runs, once, with `Error::Canceled`, from the loop (never inside
//! `work_cancel`). So does the `after` of a job the pool cancelled or refused
//! because it was stopped. The pool starts its threads lazily, at the first
//! job.

use std::sync::Arc;

use super::Loop;
use crate::error::{Error, Result};
use crate::sync::{Job, Pool};
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

pub(crate) struct Pending {
    after: Option<After>,
    /// The job's ticket in the pool, for `work_cancel`.
    ticket: Option<u64>,
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
        self.pool.get_or_insert_with(|| Pool::new(Pool::default_size()))
    }

    /// Runs `work` on the pool, then `after` on the loop. The request keeps
    /// the loop alive until `after` ran. If the pool is stopped (a shared
    /// pool, see [`Pool::stop`]), `after` runs with `Error::Canceled`.
    pub fn work_submit(&mut self, work: Work, after: After) -> Request {
        let r = Request(self.requests.insert(Pending { after: Some(after), ticket: None }));
        self.active += 1;
        let (inbox, id) = (self.inbox.clone(), r.to_raw());
        let job = Job::new(move |status| {
            if status.is_ok() {
                work();
            }
            inbox.complete(id, status);
        });
        match self.pool().submit(job) {
            Ok(ticket) => {
                if let Some(p) = self.requests.get_mut(r.0) {
                    p.ticket = Some(ticket);
                }
            }
            Err(refused) => refused.job.run(Err(refused.error)),
        }
        r
    }

    /// Cancels a request whose work has not started: its `after` runs later
    /// with `Error::Canceled`. `Error::Busy` once the work started (or the
    /// request was cancelled already), `Error::Inval` for an unknown request.
    pub fn work_cancel(&mut self, r: Request) -> Result<()> {
        let ticket = self.requests.get(r.0).ok_or(Error::Inval)?.ticket;
        let pool = self.pool.clone().ok_or(Error::Inval)?;
        let job = ticket.and_then(|t| pool.cancel(t)).ok_or(Error::Busy)?;
        job.run(Err(Error::Canceled));
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
