//! Combined signals (`onall` / `onany`), native to the scheduler.
//!
//! A combined signal `C` is a signal key allocated by the scheduler (the
//! address of its [`Combo`]), with a list of parts (any keys, other combined
//! signals included). The rules:
//!
//! - `C` is **armed** while it is *demanded*: it has waiters, or an armed
//!   combined signal has `C` as a part. Arming registers a [`Watch`] on every
//!   part; disarming removes them and forgets what fired. So notifications that
//!   arrive while nobody waits are not remembered.
//! - A `notify` of a part (with any `when`) *counts* for every watch on it.
//!   `Mode::Any`: `C` fires. `Mode::All`: the part is marked and its watch
//!   removed; `C` fires when no part is left.
//! - **Firing** disarms `C`, moves its waiters to the ready tail, then counts
//!   as a notification of `C` for the combined signals that have `C` as a part.
//!   So waiters of an inner signal become ready before those of an outer one.
//! - **Reset** (calling the signal, in Lua) puts the watches of the parts
//!   that fired back and forgets them, if `C` is armed.
//!
//! Parts must exist when `C` is made, so combined signals form no cycles.
//!
//! # No recursion
//! Arming, disarming and firing spread along chains of combined signals of
//! any depth (a million levels is a fine program). Each spreading step is a
//! [`Step`] on the scheduler's work stack, run by [`Sched::run_steps`]: the
//! steps run in the order the obvious recursive code would run them, but
//! the native stack stays flat. A step that has more to do after a nested
//! step pushes its own continuation first.

use super::{NIL, Sched, Signal};
use crate::error::{Error, Result};
use crate::sched::Mode;

/// A combined signal.
pub(super) struct Combo {
    mode: Mode,
    /// One allocation for the parts and what fired of them.
    parts: Box<[Part]>,
    unfired: usize,
    armed: bool,
    /// Live combined signals that have this one as a part (it may not be freed).
    parents: usize,
}

/// A part of a combined signal: its key, and whether it fired since arming.
struct Part {
    key: usize,
    fired: bool,
}

/// "Combined signal `combo` counts notifications of this key as part `part`."
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Watch {
    combo: usize,
    part: usize,
}

/// A pending piece of combined-signal work (see "No recursion" above).
#[derive(Clone, Copy, Debug)]
pub(super) enum Step {
    /// Bring the key's entry up to date (`Sched::settle`).
    Settle(usize),
    /// Watch part `part` of `combo` if it is still armed, then the parts
    /// after it up to `end` (arming: all of them; reset: one).
    Watch { combo: usize, part: u32, end: u32 },
    /// Remove `combo`'s watch from its part `part`, then from the parts after
    /// it up to `end` (disarming).
    Unwatch { combo: usize, part: u32, end: u32 },
    /// Fire the armed combined signal: disarm it, then `Fired`.
    Fire(usize),
    /// The rest of a fire, once the signal is disarmed: release its waiters,
    /// count it for its watchers, settle it.
    Fired(usize),
    /// Count a notification of `key` for the watches saved at
    /// `watch_buf[next..]` (saved from `start`).
    Count { key: usize, start: u32, next: u32 },
}

impl Sched {
    /// A new combined signal of `parts` (non-zero keys, possibly combined
    /// signals of this scheduler). Its key is unique while it lives.
    pub fn combine(&mut self, mode: Mode, parts: &[usize]) -> Result<usize> {
        if parts.contains(&0) {
            return Err(Error::Inval);
        }
        let make = || {
            let list = parts.iter().map(|&key| Part { key, fired: false }).collect();
            Box::new(Combo { mode, parts: list, unfired: parts.len(), armed: false, parents: 0 })
        };
        // The address is the key. A key the program already uses (a dangling
        // address of its own) would alias: take another allocation, keeping the
        // rejected ones alive until then so the allocator cannot hand them back.
        let mut combo = make();
        let mut rejected = Vec::new();
        let key = loop {
            let key = &*combo as *const Combo as usize;
            if !self.signals.contains_key(&key) && !parts.contains(&key) {
                break key;
            }
            rejected.push(std::mem::replace(&mut combo, make()));
        };
        for &p in parts {
            if let Some(c) = self.combo_mut(p) {
                c.parents += 1;
            }
        }
        self.signals.insert(key, Signal { combo: Some(combo), ..Signal::default() });
        Ok(key)
    }

    /// `combine(Mode::All, parts)`.
    pub fn onall(&mut self, parts: &[usize]) -> Result<usize> {
        self.combine(Mode::All, parts)
    }

    /// `combine(Mode::Any, parts)`.
    pub fn onany(&mut self, parts: &[usize]) -> Result<usize> {
        self.combine(Mode::Any, parts)
    }

    /// Forgets the notifications a combined signal received so far. Returns
    /// `true` if it was armed (otherwise there was nothing to forget).
    pub fn reset(&mut self, key: usize) -> Result<bool> {
        let c = self.combo_mut(key).ok_or(Error::Inval)?;
        if !c.armed {
            return Ok(false);
        }
        let refire: Vec<u32> = (0..c.parts.len() as u32).filter(|&i| c.parts[i as usize].fired).collect();
        c.parts.iter_mut().for_each(|p| p.fired = false);
        c.unfired = c.parts.len();
        for part in refire.into_iter().rev() {
            self.steps.push(Step::Watch { combo: key, part, end: part + 1 });
        }
        self.run_steps();
        Ok(true)
    }

    /// Frees a combined signal. `Error::Busy` while it has waiters or is a part
    /// of another live combined signal; `Error::Inval` if `key` is not one.
    pub fn free_combined(&mut self, key: usize) -> Result<()> {
        let sig = self.signals.get(&key).ok_or(Error::Inval)?;
        let c = sig.combo.as_ref().ok_or(Error::Inval)?;
        if sig.queue != NIL || !sig.watchers.is_empty() || c.parents > 0 {
            return Err(Error::Busy);
        }
        let sig = self.signals.remove(&key).expect("checked above");
        for p in sig.combo.expect("checked above").parts {
            if let Some(c) = self.combo_mut(p.key) {
                c.parents -= 1;
            }
        }
        Ok(())
    }

    /// Is `key` a combined signal of this scheduler?
    pub fn is_combined(&self, key: usize) -> bool {
        self.signals.get(&key).is_some_and(|s| s.combo.is_some())
    }

    fn combo_mut(&mut self, key: usize) -> Option<&mut Combo> {
        self.signals.get_mut(&key)?.combo.as_deref_mut()
    }

    fn combo(&self, key: usize) -> &Combo {
        self.signals[&key].combo.as_deref().expect("a combined signal")
    }

    /// Runs the pending steps, the last pushed first, until none is left.
    pub(super) fn run_steps(&mut self) {
        while let Some(step) = self.steps.pop() {
            match step {
                Step::Settle(key) => self.settle_step(key),
                Step::Watch { combo, part, end } => self.parts_step(combo, part, end, true),
                Step::Unwatch { combo, part, end } => self.parts_step(combo, part, end, false),
                Step::Fire(key) => {
                    self.steps.push(Step::Fired(key));
                    self.disarm(key);
                }
                Step::Fired(key) => {
                    if let Some(s) = self.take_queue(key) {
                        self.release_into_ready(s, false);
                    }
                    self.steps.push(Step::Settle(key));
                    self.count(key);
                }
                Step::Count { key, start, next } => self.count_step(key, start, next),
            }
        }
    }

    /// `settle`: arms or disarms a combined signal to match its demand,
    /// forgets a plain key nobody needs.
    pub(super) fn settle_step(&mut self, key: usize) {
        let Some(sig) = self.signals.get(&key) else {
            return;
        };
        let demanded = sig.queue != NIL || !sig.watchers.is_empty();
        match &sig.combo {
            Some(c) if demanded && !c.armed => self.arm(key),
            Some(c) if !demanded && c.armed => self.disarm(key),
            Some(_) => {}
            None if !demanded => {
                self.signals.remove(&key);
            }
            None => {}
        }
    }

    fn arm(&mut self, key: usize) {
        let c = self.combo_mut(key).expect("a combined signal");
        c.armed = true;
        c.parts.iter_mut().for_each(|p| p.fired = false);
        c.unfired = c.parts.len();
        match (c.parts.len() as u32, c.mode) {
            (0, Mode::All) => self.steps.push(Step::Fire(key)),
            (0, Mode::Any) => {}
            (end, _) => self.steps.push(Step::Watch { combo: key, part: 0, end }),
        }
    }

    fn disarm(&mut self, key: usize) {
        let c = self.combo_mut(key).expect("a combined signal");
        c.armed = false;
        let end = c.parts.len() as u32;
        if end > 0 {
            self.steps.push(Step::Unwatch { combo: key, part: 0, end });
        }
    }

    /// Watches (or unwatches) parts `part..end` of `combo` in turn. Plain
    /// parts are done in place; after a combined one, whose settling may
    /// spread, the rest waits on the stack below that settling.
    fn parts_step(&mut self, combo: usize, part: u32, end: u32, watch: bool) {
        for i in part..end {
            let spread = if watch { self.watch_part(combo, i as usize) } else { self.unwatch_part(combo, i as usize) };
            if let Some(p) = spread {
                if i + 1 < end {
                    let (combo, part) = (combo, i + 1);
                    self.steps.push(if watch {
                        Step::Watch { combo, part, end }
                    } else {
                        Step::Unwatch { combo, part, end }
                    });
                }
                self.steps.push(Step::Settle(p));
                return;
            }
        }
    }

    /// Registers combined signal `key`'s watch on its part `i`, if `key` is
    /// still armed (arming a part may fire it, and so `key`, on the spot).
    /// Returns the part if it is a combined signal, to settle.
    fn watch_part(&mut self, key: usize, i: usize) -> Option<usize> {
        let c = self.combo_mut(key).filter(|c| c.armed)?;
        let p = c.parts[i].key;
        let sig = self.signals.entry(p).or_default();
        sig.watchers.push(Watch { combo: key, part: i });
        // A plain key with a watch needs no settling.
        sig.combo.is_some().then_some(p)
    }

    /// Removes combined signal `key`'s watch from its part `i`, if there.
    /// Returns the part if it is a combined signal, to settle.
    fn unwatch_part(&mut self, key: usize, i: usize) -> Option<usize> {
        let p = self.combo(key).parts[i].key;
        let w = Watch { combo: key, part: i };
        let sig = self.signals.get_mut(&p)?;
        let at = sig.watchers.iter().position(|&x| x == w)?;
        sig.watchers.swap_remove(at);
        match &sig.combo {
            Some(_) => Some(p),
            // A plain key's settling spreads nowhere: done here.
            None if sig.queue == NIL && sig.watchers.is_empty() => {
                self.signals.remove(&p);
                None
            }
            None => None,
        }
    }

    /// Queues the counting of a notification of `key` for every watch on it
    /// (`run_steps` does it). Returns whether there was one. The caller
    /// settles `key`.
    pub(super) fn count(&mut self, key: usize) -> bool {
        let watchers = match self.signals.get(&key) {
            Some(sig) if !sig.watchers.is_empty() => &sig.watchers,
            _ => return false,
        };
        // The watches as they are now: firing one may change the list.
        let start = self.watch_buf.len() as u32;
        self.watch_buf.extend_from_slice(watchers);
        self.steps.push(Step::Count { key, start, next: start });
        true
    }

    /// Counts the notification of `key` for the saved watch `next`, after
    /// queueing the next one. Saved watches are dropped once all are done.
    fn count_step(&mut self, key: usize, start: u32, next: u32) {
        let w = self.watch_buf[next as usize];
        let more = next as usize + 1 < self.watch_buf.len();
        // Firing an earlier watcher may have dropped the key or this watch.
        let at = self.signals.get(&key).map(|sig| sig.watchers.iter().position(|&x| x == w));
        if more && at.is_some() {
            self.steps.push(Step::Count { key, start, next: next + 1 });
        } else {
            self.watch_buf.truncate(start as usize);
        }
        let Some(Some(at)) = at else {
            return;
        };
        let c =
            self.signals.get_mut(&w.combo).and_then(|s| s.combo.as_deref_mut()).expect("a watching combined signal");
        match c.mode {
            Mode::Any => self.steps.push(Step::Fire(w.combo)),
            Mode::All => {
                c.parts[w.part].fired = true;
                c.unfired -= 1;
                let done = c.unfired == 0;
                self.signals.get_mut(&key).expect("still here").watchers.swap_remove(at);
                if done {
                    self.steps.push(Step::Fire(w.combo));
                }
            }
        }
    }
}

#[cfg(test)]
impl Sched {
    /// Panics unless every combined signal is armed exactly while demanded and
    /// its watches match what it has counted.
    pub(super) fn check_combined(&self) {
        assert!(self.steps.is_empty() && self.watch_buf.is_empty(), "work left over");
        for (&key, sig) in &self.signals {
            for w in &sig.watchers {
                let c = self.signals[&w.combo].combo.as_ref().expect("a watch of a combined signal");
                assert!(c.armed && c.parts[w.part].key == key, "stray watch {w:?} on {key:x}");
            }
            let Some(c) = &sig.combo else { continue };
            assert_eq!(c.armed, sig.queue != NIL || !sig.watchers.is_empty(), "armed iff demanded: {key:x}");
            for (i, p) in c.parts.iter().enumerate() {
                let watched =
                    self.signals.get(&p.key).is_some_and(|s| s.watchers.contains(&Watch { combo: key, part: i }));
                assert_eq!(watched, c.armed && !p.fired, "watch of part {i} of {key:x}");
            }
            assert_eq!(c.unfired, c.parts.iter().filter(|p| !p.fired).count());
        }
    }
}
