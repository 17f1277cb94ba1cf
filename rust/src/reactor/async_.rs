//! Async handles: wakeups sent from any thread, through the loop's inbox
//! (`inbox.rs`). Sends made before the callback runs are coalesced into one
//! call (as libuv does); none is lost: a send after the callback started
//! causes another call.

use std::sync::Arc;

use super::handle::Kind;
use super::{Callback, Handle, Inbox, Loop};
use crate::error::{Error, Result};

pub(crate) struct Async {
    cb: Option<Callback>,
}

/// Sends wakeups to one async handle, from any thread.
#[derive(Clone)]
pub struct AsyncSender {
    inbox: Arc<Inbox>,
    raw: u64,
}

impl AsyncSender {
    /// Wakes the loop and runs the handle's callback there (once for any
    /// number of sends before it runs). `Error::Inval` once the handle is
    /// closed (or its loop dropped).
    pub fn send(&self) -> Result<()> {
        self.inbox.send(self.raw)
    }
}

impl Loop {
    /// A new async handle: `cb` runs on the loop after `send`s. It is active
    /// (keeps the loop alive) until closed.
    pub fn async_init(&mut self, data: usize, cb: Callback) -> Handle {
        let h = self.insert(Kind::Async(Async { cb: Some(cb) }), data);
        self.inbox.own(|q| q.live.insert(h.to_raw(), false));
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
        self.inbox.own(|q| q.forget(h.to_raw()));
    }

    /// Runs the callback of async handle `raw`, whose wakeup was queued.
    pub(super) fn async_fire(&mut self, raw: u64) {
        let Some(h) = Handle::from_raw(raw) else { return };
        fn field(k: &mut Kind) -> Option<&mut Option<Callback>> {
            match k {
                Kind::Async(a) => Some(&mut a.cb),
                _ => None,
            }
        }
        self.call_back(h, field, |l, f| f(l, h));
    }
}
