//! Requests of a loop: one-shot operations completed from another thread (a
//! job on the pool, a future's settlement). Each has an `after` callback
//! that the loop runs once, on its own thread: with `Ok` when the operation
//! completed, with `Error::Canceled` when it was cancelled (never inside
//! `request_cancel`). A request keeps the loop alive until its `after` ran.

use super::Loop;
use crate::error::{Error, Result};
use crate::future::Future;
use crate::util::slab::Key;

/// What runs on the loop once the request completed (`Ok`) or was cancelled.
pub type After = Box<dyn FnOnce(&mut Loop, Request, Result<()>)>;

/// A request of a loop: a plain value, invalid once its `after` ran.
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

/// What a request waits for, so that it can be cancelled.
pub(crate) enum Source {
    /// A job on the pool: its ticket there, once submitted.
    Work { ticket: Option<u64> },
    /// A future: the identifier of the loop's callback on it, unless it was
    /// settled when the request was made.
    Future { future: Future, waiter: Option<u64> },
}

pub(crate) struct Pending {
    after: Option<After>,
    pub(super) source: Source,
}

impl Loop {
    /// Records a request (it keeps the loop alive until its `after` ran).
    pub(super) fn request_new(&mut self, after: After, source: Source) -> Request {
        self.active += 1;
        Request(self.requests.insert(Pending { after: Some(after), source }))
    }

    /// Cancels a request whose operation has not completed: its `after` runs
    /// later, on the loop, with `Error::Canceled`. `Error::Busy` once it
    /// completed, started (work runs to its end) or was cancelled already;
    /// `Error::Inval` for an unknown request.
    pub fn request_cancel(&mut self, r: Request) -> Result<()> {
        match &self.requests.get(r.0).ok_or(Error::Inval)?.source {
            Source::Work { ticket } => {
                let ticket = *ticket;
                self.work_take_back(ticket)
            }
            Source::Future { future, waiter } => {
                if !waiter.is_some_and(|id| future.cancel(id)) {
                    return Err(Error::Busy);
                }
                self.inbox.complete(r.to_raw(), Err(Error::Canceled));
                Ok(())
            }
        }
    }

    /// Runs the `after` callback of a completed or cancelled request.
    pub(super) fn finish_request(&mut self, raw: u64, status: Result<()>) {
        let Some(r) = Request::from_raw(raw) else { return };
        let Some(mut p) = self.requests.remove(r.0) else { return };
        self.active -= 1;
        if let Some(after) = p.after.take() {
            after(self, r, status);
        }
    }

    /// Waits for `future` to settle, then runs `after` on the loop (at the
    /// earliest in the next iteration, also if it is settled already).
    pub fn future_wait(&mut self, future: &Future, after: After) -> Request {
        let source = Source::Future { future: future.clone(), waiter: None };
        let r = self.request_new(after, source);
        let (inbox, raw) = (self.inbox.clone(), r.to_raw());
        let waiter = future.on_ready(Box::new(move |_| inbox.complete(raw, Ok(()))));
        if let Some(Pending { source: Source::Future { waiter: w, .. }, .. }) = self.requests.get_mut(r.0) {
            *w = waiter;
        }
        r
    }
}
