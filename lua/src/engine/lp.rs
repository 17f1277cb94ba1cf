//! The loop an engine runs: its own reactor `Loop`, or one a host made and
//! handed over (`cothread.attach`); how long a turn of it may block; and
//! the timers of deadlines.

use cothread::reactor::{Handle, Loop, RunMode};

use super::event::{Event, Events};
use super::link::HostLoop;

/// The event loop of a scheduler: its own, or one a host made and handed
/// over (`cothread.attach`), which the host keeps alive while the scheduler
/// lives and uses on the same thread.
pub enum LoopRef {
    Own(Box<Loop>),
    Host(HostLoop),
}

impl std::ops::Deref for LoopRef {
    type Target = Loop;
    fn deref(&self) -> &Loop {
        match self {
            LoopRef::Own(l) => l,
            LoopRef::Host(h) => h.get(),
        }
    }
}

impl std::ops::DerefMut for LoopRef {
    fn deref_mut(&mut self) -> &mut Loop {
        match self {
            LoopRef::Own(l) => l,
            LoopRef::Host(h) => h.get_mut(),
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

/// The loop's timers of one engine: one per deadline (stopped ones kept for
/// reuse), and the one that bounds a blocking wait.
pub(super) struct Timers {
    spare: Vec<Handle>,
    idle: Handle,
    /// Where the deadline timers' callbacks report.
    events: Events,
}

impl Timers {
    pub(super) fn new(lp: &mut Loop, events: Events) -> Timers {
        Timers { spare: Vec::new(), idle: lp.timer_init(0), events }
    }

    /// A timer firing at `deadline` (monotonic ns) for operation `id`.
    pub(super) fn start(&mut self, lp: &mut Loop, id: u64, deadline: u64) -> Handle {
        let t = match self.spare.pop() {
            Some(t) => t,
            None => lp.timer_init(0),
        };
        let _ = lp.set_data(t, id as usize);
        lp.update_time();
        let after = deadline.saturating_sub(lp.now());
        let q = self.events.clone();
        let make = move || -> cothread::reactor::Callback {
            Box::new(move |lp: &mut Loop, h| {
                if let Ok(id) = lp.data(h) {
                    q.borrow_mut().push(Event::Timer(id as u64));
                }
            })
        };
        // Tag 2: a reused timer keeps its callback (it reads the operation from the data).
        let _ = lp.timer_start_with(t, after, 0, 2, make);
        t
    }

    pub(super) fn stop(&mut self, lp: &mut Loop, t: Handle) {
        let _ = lp.timer_stop(t);
        self.spare.push(t);
    }

    /// Runs the loop once, blocking as `block` says; its callbacks queue
    /// their events.
    pub(super) fn run(&mut self, lp: &mut Loop, block: Block) {
        let mode = match block {
            Block::No => RunMode::NoWait,
            Block::Forever => RunMode::Once,
            Block::Until(t) => {
                lp.update_time();
                let now = lp.now().max(cothread::time::monotonic_ns());
                if t <= now {
                    RunMode::NoWait
                } else {
                    let cb = || -> cothread::reactor::Callback { Box::new(|_, _| {}) };
                    let ns = t - lp.now();
                    let _ = lp.timer_start_with(self.idle, ns, 0, 1, cb);
                    RunMode::Once
                }
            }
        };
        let _ = lp.run(mode);
        let _ = lp.timer_stop(self.idle);
    }

    /// Closes every timer (on a host's loop, which lives on).
    pub(super) fn close_all(&mut self, lp: &mut Loop) {
        for h in std::mem::take(&mut self.spare).into_iter().chain([self.idle]) {
            let _ = lp.close(h, None);
        }
    }
}
