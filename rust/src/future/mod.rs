//! Futures shared by every face: a [`Promise`] settles once, from any
//! thread, and any number of [`Future`]s of it read the result.
//!
//! The result ([`Outcome`]) is a value (a [`Payload`]: for C, an opaque
//! pointer and its destructor), an error (a code and a message), or
//! [`Outcome::Dropped`] when the last promise handle goes away unsettled.
//! The first settlement wins; later ones are refused and change nothing.
//!
//! Waiting comes in three forms, all built on one list of callbacks:
//! - a callback ([`Future::on_ready`]), run by the thread that settles (or at
//!   once, by the caller, if the future is settled already), cancellable by
//!   its identifier until it runs;
//! - a blocking wait ([`Future::wait`]): a futex on the state word, so a
//!   settlement with no sleeper costs no system call;
//! - a request of a loop (`Loop::future_wait`), whose callback the loop
//!   runs on its own thread; loop tasks and stackful coroutines await futures
//!   through it.
//!
//! Cancelling a waiter removes only that waiter: the future, its result and
//! the other waiters are untouched.
//!
//! # Memory
//! Promise and future handles share one reference-counted state; the result
//! (and a value's destructor) is dropped with the last handle of either kind,
//! on whichever thread drops it.

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_void};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::error::{Error, Result};
use crate::sync::park;
use crate::time::monotonic_ns;

#[cfg(test)]
mod tests;

/// A value a promise carries: anything that can cross threads and show itself
/// as a pointer (what a C reader gets back). A face that made it finds its
/// own type again through `as_any` (the Lua module reads its values back).
pub trait Payload: Send + Sync + Any {
    /// The pointer readers get.
    fn as_ptr(&self) -> *mut c_void;
    /// Itself, to downcast.
    fn as_any(&self) -> &dyn Any;
}

/// The result of a settled future.
pub enum Outcome {
    /// A value.
    Value(Box<dyn Payload>),
    /// An error: a negative code and a message, and what the face that
    /// failed it attached (the Lua module: the error value itself).
    Error {
        /// The code (negative by convention, as the C ABI's).
        code: i32,
        /// What went wrong.
        message: CString,
        /// The failing face's own error value, if any.
        detail: Option<Box<dyn Payload>>,
    },
    /// Every promise handle was dropped before one settled it.
    Dropped,
}

/// What a future holds, as the C ABI's `COT_FUTURE_*` numbers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(i32)]
pub enum State {
    /// Not settled yet.
    Pending = 0,
    /// Settled with a value.
    Value = 1,
    /// Settled with an error.
    Error = 2,
    /// Its promise was dropped unsettled.
    Dropped = 3,
}

impl Outcome {
    /// The state this outcome puts a future in.
    pub fn state(&self) -> State {
        match self {
            Outcome::Value(_) => State::Value,
            Outcome::Error { .. } => State::Error,
            Outcome::Dropped => State::Dropped,
        }
    }
}

/// A waiter's callback: gets the outcome, runs once.
pub type Callback = Box<dyn FnOnce(&Outcome) + Send>;

/// The state word: `SETTLED` once settled, `SLEEPERS` while a blocking wait
/// may be parked on it.
const SETTLED: u32 = 1;
const SLEEPERS: u32 = 2;

struct Shared {
    outcome: OnceLock<Outcome>,
    word: AtomicU32,
    /// Live promise handles: the last one to go settles with `Dropped`.
    promises: AtomicUsize,
    waiters: Mutex<Waiters>,
}

#[derive(Default)]
struct Waiters {
    /// Identifiers are never 0 (the C ABI's "no waiter").
    last_id: u64,
    /// By identifier, so oldest first.
    list: BTreeMap<u64, Callback>,
}

impl Shared {
    fn waiters(&self) -> MutexGuard<'_, Waiters> {
        // A callback never runs under this lock, so a poisoned lock can only
        // come from a panic in our own short sections: the data is sound.
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Settles with the outcome `make` gives, unless settled already
    /// (`Error::Already`, and `make` is not called), wakes the blocking
    /// waiters and runs the callbacks, oldest first.
    fn settle(&self, make: impl FnOnce() -> Outcome) -> Result<()> {
        let taken = {
            let mut w = self.waiters();
            if self.outcome.get().is_some() {
                return Err(Error::Already);
            }
            let _ = self.outcome.set(make()); // only set here, under the lock
            std::mem::take(&mut w.list)
        };
        if self.word.swap(SETTLED, Ordering::AcqRel) & SLEEPERS != 0 {
            park::unpark_all(self.word.as_ptr());
        }
        let outcome = self.outcome.get().expect("set above");
        for cb in taken.into_values() {
            cb(outcome);
        }
        Ok(())
    }
}

/// The producing side: settles the future once. Cloneable (all clones settle
/// the same future, the first settlement wins) and sendable to any thread.
pub struct Promise(Arc<Shared>);

/// The consuming side: reads the result, waits for it. Cloneable and
/// sendable to any thread.
#[derive(Clone)]
pub struct Future(Arc<Shared>);

impl Promise {
    /// A new unsettled promise and its future.
    pub fn new() -> (Promise, Future) {
        let shared = Arc::new(Shared {
            outcome: OnceLock::new(),
            word: AtomicU32::new(0),
            promises: AtomicUsize::new(1),
            waiters: Mutex::new(Waiters::default()),
        });
        (Promise(shared.clone()), Future(shared))
    }

    /// Settles with a value. If a result came first, the value is handed back
    /// (it was not taken).
    pub fn set(&self, value: Box<dyn Payload>) -> std::result::Result<(), Box<dyn Payload>> {
        let mut slot = Some(value);
        match self.0.settle(|| Outcome::Value(slot.take().expect("called once"))) {
            Ok(()) => Ok(()),
            Err(_) => Err(slot.take().expect("not taken when refused")),
        }
    }

    /// Settles with the value `make` gives, made only if it will be taken
    /// (under the future's lock: `make` must be quick and must not unwind
    /// through foreign frames). `Error::Already` if a result came first.
    pub fn set_with(&self, make: impl FnOnce() -> Box<dyn Payload>) -> Result<()> {
        self.0.settle(|| Outcome::Value(make()))
    }

    /// Settles with an error. `Error::Already` if a result came first.
    pub fn fail(&self, code: i32, message: &CStr) -> Result<()> {
        self.fail_with(code, message, None)
    }

    /// Settles with an error and a detail for readers of the face that
    /// failed it (dropped if refused). `Error::Already` if a result came first.
    pub fn fail_with(&self, code: i32, message: &CStr, detail: Option<Box<dyn Payload>>) -> Result<()> {
        self.0.settle(|| Outcome::Error { code, message: message.to_owned(), detail })
    }

    /// Is the future settled?
    pub fn is_settled(&self) -> bool {
        self.0.outcome.get().is_some()
    }

    /// A future of this promise.
    pub fn future(&self) -> Future {
        Future(self.0.clone())
    }
}

impl Clone for Promise {
    fn clone(&self) -> Promise {
        self.0.promises.fetch_add(1, Ordering::Relaxed);
        Promise(self.0.clone())
    }
}

impl Drop for Promise {
    fn drop(&mut self) {
        if self.0.promises.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = self.0.settle(|| Outcome::Dropped);
        }
    }
}

impl Future {
    /// The result, once settled (never blocks).
    pub fn outcome(&self) -> Option<&Outcome> {
        self.0.outcome.get()
    }

    /// What the future holds now.
    pub fn state(&self) -> State {
        self.outcome().map_or(State::Pending, Outcome::state)
    }

    /// Runs `cb` when the future settles, on the settling thread; returns its
    /// identifier for [`cancel`](Future::cancel). If it is settled already,
    /// runs `cb` now, on this thread, and returns `None`.
    pub fn on_ready(&self, cb: Callback) -> Option<u64> {
        {
            let mut w = self.0.waiters();
            if self.0.outcome.get().is_none() {
                w.last_id += 1;
                let id = w.last_id;
                w.list.insert(id, cb);
                return Some(id);
            }
        }
        cb(self.outcome().expect("settled"));
        None
    }

    /// Removes the waiter `id`; `true` if it had not run (it never will),
    /// `false` if it ran, is running, or is unknown.
    pub fn cancel(&self, id: u64) -> bool {
        self.0.waiters().list.remove(&id).is_some()
    }

    /// How many callbacks wait (for tests and diagnostics).
    pub fn waiter_count(&self) -> usize {
        self.0.waiters().list.len()
    }

    /// Blocks the thread until the future settles, at most `timeout_ns`
    /// nanoseconds (`None`: no limit). `Error::TimedOut` if the time passed.
    pub fn wait(&self, timeout_ns: Option<u64>) -> Result<()> {
        let deadline = timeout_ns.map(|ns| monotonic_ns().saturating_add(ns));
        let word = &self.0.word;
        loop {
            let w = word.load(Ordering::Acquire);
            if w & SETTLED != 0 {
                return Ok(());
            }
            if w & SLEEPERS == 0 && word.compare_exchange(w, w | SLEEPERS, Ordering::AcqRel, Ordering::Acquire).is_err()
            {
                continue;
            }
            let left = match deadline {
                Some(d) => match d.checked_sub(monotonic_ns()) {
                    Some(left) if left > 0 => Some(left),
                    _ => return Err(Error::TimedOut),
                },
                None => None,
            };
            match park::park(word, w | SLEEPERS, left) {
                Err(Error::TimedOut) => continue, // re-checked above: settled wins over the deadline
                Err(e) => return Err(e),
                Ok(()) => {}
            }
        }
    }
}
