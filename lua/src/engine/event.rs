//! What the loop's callbacks report ([`Event`]: they never call Lua), the
//! handle an outside event ends its operation's wait with ([`Fire`]), the
//! cleanup of that event ([`OnEnd`]), and the identifiers events name
//! operations and sources by.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use cothread::reactor::Loop;

use super::frame::Payload;

thread_local! {
    /// Source of operation and source identifiers (never reused, never 0).
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// A new identifier for an operation or a source: events name them by it.
pub(super) fn new_id() -> u64 {
    NEXT_ID.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    })
}

/// What the loop's callbacks report (they never call Lua).
pub(super) enum Event {
    Poll(u64, u32),
    Timer(u64),
    /// An operation's job or outside event is done, maybe with a payload.
    Done(u64, Option<Payload>),
}

/// The queue the loop's callbacks push onto; the engine drains it after
/// each turn of the loop.
pub(super) type Events = Rc<RefCell<Vec<Event>>>;

/// Ends an operation's wait for an outside event, from a loop callback.
#[derive(Clone)]
pub struct Fire {
    pub(super) events: Events,
    pub(super) id: u64,
}

impl Fire {
    /// The event came (the operation steps at the next `poll`).
    pub fn fire(&self) {
        self.events.borrow_mut().push(Event::Done(self.id, None));
    }

    /// The event came with `p`.
    pub fn fire_with(&self, p: Payload) {
        self.events.borrow_mut().push(Event::Done(self.id, Some(p)));
    }
}

/// A loop cleanup run when an operation ends, however it ends.
pub type OnEnd = Box<dyn FnOnce(&mut Loop)>;
