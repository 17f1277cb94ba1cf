//! Work requests of a loop, on a thread pool ([`crate::sync::Pool`], its own
//! or one shared with other loops and plain jobs).
//!
//! A loop submits a job; a pool thread runs it, then queues its completion in
//! the loop's inbox (waking the loop), and the loop runs the request's `after`
//! callback. A job not yet started can be cancelled: its `after` callback
//! still runs, once, with `Error::Canceled`, from the loop (never inside
//! `request_cancel`). So does the `after` of a job the pool cancelled or refused
//! because it was stopped. The pool starts its threads lazily, at the first
//! job.

use std::sync::Arc;

use super::Loop;
use super::request::{After, Request, Source};
use crate::error::{Error, Result};
use crate::sync::{Job, Pool};

/// Work to run on a pool thread.
pub type Work = Box<dyn FnOnce() + Send>;

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
        let r = self.request_new(after, Source::Work { ticket: None });
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
                    p.source = Source::Work { ticket: Some(ticket) };
                }
            }
            Err(refused) => refused.job.run(Err(refused.error)),
        }
        r
    }

    /// Takes the job of work request `ticket` back from the pool, if it has
    /// not started; it runs with `Error::Canceled` (see `request_cancel`).
    pub(super) fn work_take_back(&mut self, ticket: Option<u64>) -> Result<()> {
        let pool = self.pool.clone().ok_or(Error::Inval)?;
        let job = ticket.and_then(|t| pool.cancel(t)).ok_or(Error::Busy)?;
        job.run(Err(Error::Canceled));
        Ok(())
    }
}
