//! Timer handles: a callback after a timeout, then every `repeat` (ns).

use super::handle::Kind;
use super::{Callback, Handle, Loop};
use crate::error::{Error, Result};
use crate::sched::{Task, When};

pub(crate) struct Timer {
    /// The core task postponed to the due time.
    pub task: Task,
    pub cb: Option<Callback>,
    /// Identifies `cb` for `timer_start_with` (0: none).
    pub tag: usize,
    pub repeat: u64,
    /// Started at least once (`timer_again` needs a callback).
    pub started: bool,
}

impl Loop {
    /// A new, stopped timer carrying `data`.
    pub fn timer_init(&mut self, data: usize) -> Handle {
        let task = self.sched.task_new(0);
        let h = self.insert(Kind::Timer(Timer { task, cb: None, tag: 0, repeat: 0, started: false }), data);
        let _ = self.sched.set_data(task, h.to_raw() as usize);
        h
    }

    fn timer(&mut self, h: Handle) -> Result<&mut Timer> {
        match &mut self.slot_mut(h)?.kind {
            Kind::Timer(t) => Ok(t),
            _ => Err(Error::Inval),
        }
    }

    /// Starts (or restarts) a timer: `cb` runs `timeout` ns from the loop's
    /// cached time, then every `repeat` ns if `repeat` > 0.
    pub fn timer_start(&mut self, h: Handle, timeout: u64, repeat: u64, cb: Callback) -> Result<()> {
        self.timer_start_with(h, timeout, repeat, 0, || cb)
    }

    /// [`Loop::timer_start`] with a callback made by `make` only if the timer
    /// does not hold one with the same nonzero `tag` already: restarting a
    /// timer from its callback then allocates nothing (the C ABI tags with the
    /// C function's address).
    pub fn timer_start_with(
        &mut self,
        h: Handle,
        timeout: u64,
        repeat: u64,
        tag: usize,
        make: impl FnOnce() -> Callback,
    ) -> Result<()> {
        let due = self.now_fresh().saturating_add(timeout);
        let t = self.timer(h)?;
        if tag == 0 || t.tag != tag {
            t.cb = Some(make());
            t.tag = tag;
        } else if t.cb.is_none() {
            // Restarted from its own callback: the callback is out, being run,
            // and is put back after it (see `run_timers`).
            t.tag = tag;
        }
        t.repeat = repeat;
        t.started = true;
        let task = t.task;
        self.sched.reschedule(task, When::Postpone(due))?;
        self.set_active(h, true);
        Ok(())
    }

    /// Stops a timer (stopping a stopped one is fine).
    pub fn timer_stop(&mut self, h: Handle) -> Result<()> {
        let task = self.timer(h)?.task;
        self.sched.unschedule(task)?;
        self.set_active(h, false);
        Ok(())
    }

    /// Restarts a repeating timer with its repeat as timeout; `Error::Inval` if
    /// it was never started.
    pub fn timer_again(&mut self, h: Handle) -> Result<()> {
        let t = self.timer(h)?;
        let (task, repeat) = (t.task, t.repeat);
        if !t.started {
            return Err(Error::Inval);
        }
        if repeat > 0 {
            self.sched.reschedule(task, When::Postpone(self.now.saturating_add(repeat)))?;
            self.set_active(h, true);
        }
        Ok(())
    }

    /// Sets the repeat (ns) used from the next expiry on.
    pub fn timer_set_repeat(&mut self, h: Handle, repeat: u64) -> Result<()> {
        self.timer(h)?.repeat = repeat;
        Ok(())
    }

    /// Fires timer `h` (its task `task` was due).
    pub(super) fn fire_timer(&mut self, h: Handle, task: Task) {
        let Ok(t) = self.timer(h) else { return };
        let repeat = t.repeat;
        if repeat > 0 {
            let _ = self.sched.reschedule(task, When::Postpone(self.now.saturating_add(repeat)));
        } else {
            self.set_active(h, false);
        }
        fn field(k: &mut Kind) -> Option<&mut Option<Callback>> {
            match k {
                Kind::Timer(t) => Some(&mut t.cb),
                _ => None,
            }
        }
        self.call_back(h, field, |l, f| f(l, h));
    }
}
