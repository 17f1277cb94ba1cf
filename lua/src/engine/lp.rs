//! The loop an engine runs: its own reactor `Loop`, or one a host made and
//! handed over (`cothread.attach`); one turn of it (`Engine::run_loop`),
//! whose events make operations due; and the timers of deadlines.

use cothread::reactor::{Handle, Loop, RunMode};

use super::{Engine, Event, Why};

/// The event loop of a scheduler: its own, or one a host made and handed
/// over (`cothread.attach`), which the host keeps alive while the scheduler
/// lives and uses on the same thread.
pub enum LoopRef {
    Own(Box<Loop>),
    Host(*mut cothread::ffi::cot_loop),
}

impl std::ops::Deref for LoopRef {
    type Target = Loop;
    fn deref(&self) -> &Loop {
        match self {
            LoopRef::Own(l) => l,
            // SAFETY: `cothread.attach`'s contract: the host's loop outlives the
            // scheduler and is used on this thread only, so no other reference
            // to it is live while the engine holds this one.
            LoopRef::Host(p) => unsafe { cothread::ffi::cot_loop::loop_mut(*p) },
        }
    }
}

impl std::ops::DerefMut for LoopRef {
    fn deref_mut(&mut self) -> &mut Loop {
        match self {
            LoopRef::Own(l) => l,
            // SAFETY: as in `deref`; `&mut self` makes this the only borrow.
            LoopRef::Host(p) => unsafe { cothread::ffi::cot_loop::loop_mut(*p) },
        }
    }
}

/// How long `poll` may block.
#[derive(Clone, Copy, Debug)]
pub enum Block {
    /// Not at all.
    No,
    /// Until this monotonic time (ns), or an event.
    Until(u64),
    /// Until an event.
    Forever,
}

impl Engine {
    /// A timer firing at `deadline` (monotonic ns) for operation `id`.
    pub(super) fn start_timer(&mut self, id: u64, deadline: u64) -> Handle {
        let t = match self.spare_timers.pop() {
            Some(t) => t,
            None => self.lp.timer_init(0),
        };
        let _ = self.lp.set_data(t, id as usize);
        self.lp.update_time();
        let after = deadline.saturating_sub(self.lp.now());
        let q = self.events.clone();
        let make = move || -> cothread::reactor::Callback {
            Box::new(move |lp: &mut Loop, h| {
                if let Ok(id) = lp.data(h) {
                    q.borrow_mut().push(Event::Timer(id as u64));
                }
            })
        };
        // Tag 2: a reused timer keeps its callback (it reads the operation from the data).
        let _ = self.lp.timer_start_with(t, after, 0, 2, make);
        t
    }

    pub(super) fn stop_timer(&mut self, t: Handle) {
        let _ = self.lp.timer_stop(t);
        self.spare_timers.push(t);
    }

    /// Runs the loop once, blocking as `block` says, and makes due the
    /// operations its events concern.
    pub(super) fn run_loop(&mut self, block: Block) {
        let mode = match block {
            Block::No => RunMode::NoWait,
            Block::Forever => RunMode::Once,
            Block::Until(t) => {
                self.lp.update_time();
                let now = self.lp.now().max(cothread::time::monotonic_ns());
                if t <= now {
                    RunMode::NoWait
                } else {
                    let cb = || -> cothread::reactor::Callback { Box::new(|_, _| {}) };
                    let ns = t - self.lp.now();
                    let _ = self.lp.timer_start_with(self.idle_timer, ns, 0, 1, cb);
                    RunMode::Once
                }
            }
        };
        let _ = self.lp.run(mode);
        let _ = self.lp.timer_stop(self.idle_timer);
        let spare = std::mem::take(&mut self.spare_events);
        let mut events = std::mem::replace(&mut *self.events.borrow_mut(), spare);
        if !events.is_empty() {
            // SAFETY: `time` with a null argument only returns the time.
            self.wall = unsafe { libc::time(std::ptr::null_mut()) };
        }
        for e in events.drain(..) {
            match e {
                Event::Poll(s, bits) => self.ready(s, bits),
                Event::Timer(id) => self.mark(id, Why::Timeout),
                Event::Done(id, p) => {
                    if let Some(&r) = self.ops.get(&id) {
                        // SAFETY: a live record; its job or event is over.
                        unsafe {
                            (*r).payload = p;
                            (*r).outside = false;
                        }
                        self.mark(id, Why::Done);
                    }
                }
            }
        }
        self.spare_events = events;
    }
}
