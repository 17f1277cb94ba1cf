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

use super::{NIL, Sched, Signal};
use crate::error::{Error, Result};
use crate::sched::Mode;

/// A combined signal.
pub(super) struct Combo {
    mode: Mode,
    parts: Vec<usize>,
    fired: Vec<bool>,
    unfired: usize,
    armed: bool,
    /// Live combined signals that have this one as a part (it may not be freed).
    parents: usize,
}

/// "Combined signal `combo` counts notifications of this key as part `part`."
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Watch {
    combo: usize,
    part: usize,
}

impl Sched {
    /// A new combined signal of `parts` (non-zero keys, possibly combined
    /// signals of this scheduler). Its key is unique while it lives.
    pub fn combine(&mut self, mode: Mode, parts: &[usize]) -> Result<usize> {
        if parts.contains(&0) {
            return Err(Error::Inval);
        }
        let n = parts.len();
        let make = || {
            Box::new(Combo { mode, parts: parts.to_vec(), fired: vec![false; n], unfired: n, armed: false, parents: 0 })
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
        let refire: Vec<usize> = (0..c.parts.len()).filter(|&i| c.fired[i]).collect();
        c.fired.iter_mut().for_each(|f| *f = false);
        c.unfired = c.parts.len();
        for i in refire {
            self.watch_part(key, i);
        }
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
            if let Some(c) = self.combo_mut(p) {
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

    /// Arms or disarms the combined signal `key` to match its demand.
    pub(super) fn update_demand(&mut self, key: usize) {
        let sig = &self.signals[&key];
        let demanded = sig.queue != NIL || !sig.watchers.is_empty();
        match (demanded, sig.combo.as_ref().expect("a combined signal").armed) {
            (true, false) => self.arm(key),
            (false, true) => self.disarm(key),
            _ => {}
        }
    }

    fn arm(&mut self, key: usize) {
        let c = self.combo_mut(key).expect("a combined signal");
        c.armed = true;
        c.fired.iter_mut().for_each(|f| *f = false);
        c.unfired = c.parts.len();
        let (n, all) = (c.parts.len(), c.mode == Mode::All);
        for i in 0..n {
            self.watch_part(key, i);
        }
        if all && n == 0 {
            self.fire(key);
        }
    }

    fn disarm(&mut self, key: usize) {
        let c = self.combo_mut(key).expect("a combined signal");
        c.armed = false;
        let parts = c.parts.clone();
        for (i, p) in parts.into_iter().enumerate() {
            let w = Watch { combo: key, part: i };
            if let Some(sig) = self.signals.get_mut(&p) {
                if let Some(at) = sig.watchers.iter().position(|&x| x == w) {
                    sig.watchers.swap_remove(at);
                    self.settle(p);
                }
            }
        }
    }

    /// Registers combined signal `key`'s watch on its part `i`, if `key` is
    /// still armed (arming a part may fire it, and so `key`, on the spot).
    fn watch_part(&mut self, key: usize, i: usize) {
        let Some(c) = self.combo_mut(key).filter(|c| c.armed) else {
            return;
        };
        let p = c.parts[i];
        let sig = self.signals.entry(p).or_default();
        sig.watchers.push(Watch { combo: key, part: i });
        self.settle(p);
    }

    /// Counts a notification of `key` for every watch on it. Returns whether
    /// there was one. The caller settles `key`.
    pub(super) fn count(&mut self, key: usize) -> bool {
        let watchers = match self.signals.get(&key) {
            Some(sig) if !sig.watchers.is_empty() => sig.watchers.clone(),
            _ => return false,
        };
        for w in watchers {
            // Firing an earlier watcher may have removed this one.
            let Some(sig) = self.signals.get_mut(&key) else {
                break;
            };
            let Some(at) = sig.watchers.iter().position(|&x| x == w) else {
                continue;
            };
            let c = self
                .signals
                .get_mut(&w.combo)
                .and_then(|s| s.combo.as_deref_mut())
                .expect("a watching combined signal");
            match c.mode {
                Mode::Any => self.fire(w.combo),
                Mode::All => {
                    c.fired[w.part] = true;
                    c.unfired -= 1;
                    let done = c.unfired == 0;
                    self.signals.get_mut(&key).expect("still here").watchers.swap_remove(at);
                    if done {
                        self.fire(w.combo);
                    }
                }
            }
        }
        true
    }

    /// Fires the armed combined signal `key`.
    fn fire(&mut self, key: usize) {
        self.disarm(key);
        if let Some(s) = self.take_queue(key) {
            self.release_into_ready(s, false);
        }
        self.count(key);
        self.settle(key);
    }
}

#[cfg(test)]
impl Sched {
    /// Panics unless every combined signal is armed exactly while demanded and
    /// its watches match what it has counted.
    pub(super) fn check_combined(&self) {
        for (&key, sig) in &self.signals {
            for w in &sig.watchers {
                let c = self.signals[&w.combo].combo.as_ref().expect("a watch of a combined signal");
                assert!(c.armed && c.parts[w.part] == key, "stray watch {w:?} on {key:x}");
            }
            let Some(c) = &sig.combo else { continue };
            assert_eq!(c.armed, sig.queue != NIL || !sig.watchers.is_empty(), "armed iff demanded: {key:x}");
            for (i, &p) in c.parts.iter().enumerate() {
                let watched = self.signals.get(&p).is_some_and(|s| s.watchers.contains(&Watch { combo: key, part: i }));
                assert_eq!(watched, c.armed && !c.fired[i], "watch of part {i} of {key:x}");
            }
            assert_eq!(c.unfired, c.fired.iter().filter(|f| !**f).count());
        }
    }
}
