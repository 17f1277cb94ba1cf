//! What the loop keeps per handle.

use super::CloseCallback;
use super::async_::Async;
use super::child::Child;
use super::poll::Poll;
use super::signal::Signal;
use super::task::LoopTask;
use super::timer::Timer;
use crate::util::slab::Key;

/// A handle of a loop: a plain value, invalid once its close callback ran.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Handle(pub(crate) Key);

impl Handle {
    /// The handle as the C ABI's `cot_handle` (never 0).
    pub fn to_raw(self) -> u64 {
        self.0.to_raw()
    }

    /// A handle from a `cot_handle`; `None` for 0.
    pub fn from_raw(raw: u64) -> Option<Handle> {
        Key::from_raw(raw).map(Handle)
    }
}

pub(crate) enum Kind {
    Timer(Timer),
    Poll(Poll),
    Async(Async),
    Signal(Signal),
    Child(Child),
    Task(LoopTask),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    Timer,
    Poll,
    Async,
    Signal,
    Child,
    Task,
}

impl Kind {
    pub fn tag(&self) -> Tag {
        match self {
            Kind::Timer(_) => Tag::Timer,
            Kind::Poll(_) => Tag::Poll,
            Kind::Async(_) => Tag::Async,
            Kind::Signal(_) => Tag::Signal,
            Kind::Child(_) => Tag::Child,
            Kind::Task(_) => Tag::Task,
        }
    }
}

pub(crate) struct Slot {
    pub kind: Kind,
    pub data: usize,
    pub active: bool,
    pub closing: bool,
    pub close_cb: Option<CloseCallback>,
}

impl Slot {
    pub fn new(kind: Kind, data: usize) -> Slot {
        Slot { kind, data, active: false, closing: false, close_cb: None }
    }
}
