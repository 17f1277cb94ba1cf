//! A thread-safe timer service: entries (a deadline, an identifier, a user
//! value) added and cancelled from any thread, and threads waiting for the
//! next one to fall due. The C++ `scheduler` sleeps coroutines on it.
//!
//! State under one mutex: the timer heap of `time` (min-heap of (deadline,
//! sequence), lazy cancellation), the entries in a generational slab (a heap
//! entry is live while its slab key is), and an index by identifier, ordered
//! by (identifier, deadline, sequence), so `cancel` finds the earliest entry
//! of an identifier in O(log n) without scanning. A condvar wakes the waiting
//! threads when an entry becomes the earliest or on `interrupt`.
//!
//! Deadlines are `CLOCK_MONOTONIC` nanoseconds (`time::monotonic_ns`); entries
//! due at the same time come out in the order they were added.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::time::heap::{Entry, TimerHeap};
use crate::time::monotonic_ns;
use crate::util::slab::{Key, Slab};

struct Timer {
    when: u64,
    seq: u64,
    /// 0: not cancellable by identifier.
    ident: usize,
    value: usize,
}

#[derive(Default)]
struct State {
    heap: TimerHeap,
    timers: Slab<Timer>,
    /// (identifier, deadline, sequence) of entries with an identifier.
    by_ident: BTreeMap<(usize, u64, u64), Key>,
    seq: u64,
    interrupted: bool,
    waiters: usize,
}

/// A thread-safe timer service. See the [module documentation](self).
#[derive(Default)]
pub struct Timers {
    state: Mutex<State>,
    wake: Condvar,
}

fn key_of(e: &Entry) -> Key {
    Key::from_parts(e.id, e.generation)
}

impl State {
    /// Removes the entry `key`, alive, from the slab and the index (not from
    /// the heap); returns its value.
    fn remove(&mut self, key: Key) -> Option<usize> {
        let t = self.timers.remove(key)?;
        if t.ident != 0 {
            self.by_ident.remove(&(t.ident, t.when, t.seq));
        }
        Some(t.value)
    }

    /// Takes the earliest entry out if it is due at `now`.
    fn pop_due(&mut self, now: u64) -> Option<usize> {
        let State { heap, timers, .. } = self;
        let e = heap.pop_due(now, |e| timers.get(key_of(e)).is_some())?;
        self.remove(key_of(&e))
    }

    fn next(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.when)
    }
}

impl Timers {
    /// An empty service.
    pub fn new() -> Timers {
        Timers::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind: keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds an entry due at `when` (ns), cancellable by `ident` unless it is
    /// 0, carrying `value`. Wakes a waiting thread if it is now the earliest.
    /// O(log n).
    pub fn add(&self, when: u64, ident: usize, value: usize) {
        let mut s = self.lock();
        let earliest = s.next().is_none_or(|next| when < next);
        s.seq += 1;
        let seq = s.seq;
        let key = s.timers.insert(Timer { when, seq, ident, value });
        if ident != 0 {
            s.by_ident.insert((ident, when, seq), key);
        }
        let (id, generation) = key.parts();
        s.heap.push(Entry { when, seq, id, generation });
        let wake = earliest && s.waiters > 0;
        drop(s);
        if wake {
            self.wake.notify_one();
        }
    }

    /// Removes the earliest entry of `ident` (not 0) and returns its value.
    /// O(log n).
    pub fn cancel(&self, ident: usize) -> Option<usize> {
        if ident == 0 {
            return None;
        }
        let mut s = self.lock();
        let (_, &key) = s.by_ident.range((ident, 0, 0)..=(ident, u64::MAX, u64::MAX)).next()?;
        let value = s.remove(key);
        let State { heap, timers, .. } = &mut *s;
        heap.cancelled(|e| timers.get(key_of(e)).is_some());
        value
    }

    /// Waits for an entry to fall due and takes it out; `None` if
    /// [`Timers::interrupt`] was called (consuming it) or once the clock
    /// reaches `until` (ns; 0: never block, `u64::MAX`: no limit). A pending
    /// interrupt is served before due entries.
    pub fn wait(&self, until: u64) -> Option<usize> {
        let mut s = self.lock();
        s.waiters += 1;
        let got = loop {
            if s.interrupted {
                s.interrupted = false;
                break None;
            }
            let now = monotonic_ns();
            if let Some(v) = s.pop_due(now) {
                break Some(v);
            }
            if now >= until {
                break None;
            }
            // Both are in the future: the earliest entry is not due.
            let deadline = s.next().map_or(until, |next| next.min(until));
            s = if deadline == u64::MAX {
                self.wake.wait(s).unwrap_or_else(|e| e.into_inner())
            } else {
                let timeout = Duration::from_nanos(deadline - now);
                self.wake.wait_timeout(s, timeout).unwrap_or_else(|e| e.into_inner()).0
            };
        };
        s.waiters -= 1;
        got
    }

    /// Makes the current or next [`Timers::wait`] return `None`, once
    /// (interrupts not yet consumed do not add up).
    pub fn interrupt(&self) {
        self.lock().interrupted = true;
        self.wake.notify_one();
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<u64> {
        self.lock().next()
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.lock().timers.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether no entry is held and no thread waits (it may be freed).
    pub fn is_idle(&self) -> bool {
        let s = self.lock();
        s.timers.len() == 0 && s.waiters == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn due_entries_come_out_by_deadline_then_add_order() {
        let t = Timers::new();
        let now = monotonic_ns();
        for (i, dt) in [30u64, 10, 20, 10, 0].into_iter().enumerate() {
            t.add(now - 100 + dt, 0, i);
        }
        t.add(now + 3_600_000_000_000, 0, 99); // an hour away
        assert_eq!(t.len(), 6);
        assert_eq!(t.next(), Some(now - 100));
        let got: Vec<_> = std::iter::from_fn(|| t.wait(0)).collect();
        assert_eq!(got, [4, 1, 3, 2, 0]);
        assert_eq!(t.wait(0), None, "the last one is not due");
        assert_eq!(t.len(), 1);
        assert!(!t.is_idle());
    }

    #[test]
    fn cancel_takes_the_earliest_of_an_ident() {
        let t = Timers::new();
        let far = monotonic_ns() + 3_600_000_000_000;
        t.add(far + 5, 7, 1);
        t.add(far + 1, 7, 2);
        t.add(far + 1, 8, 3);
        t.add(far + 1, 0, 4);
        t.add(far + 1, 7, 5);
        assert_eq!(t.cancel(7), Some(2));
        assert_eq!(t.cancel(7), Some(5), "same deadline: add order");
        assert_eq!(t.cancel(7), Some(1));
        assert_eq!(t.cancel(7), None);
        assert_eq!(t.cancel(0), None, "ident 0 is not cancellable");
        assert_eq!(t.next(), Some(far + 1));
        assert_eq!(t.cancel(8), Some(3));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn fired_entries_leave_the_ident_index() {
        let t = Timers::new();
        let past = monotonic_ns() - 1;
        for i in 0..1000 {
            t.add(past, 42, i);
            assert_eq!(t.wait(0), Some(i));
        }
        assert!(t.lock().by_ident.is_empty());
        assert!(t.is_idle());
    }

    #[test]
    fn many_cancelled_entries_do_not_pile_up() {
        let t = Timers::new();
        let far = monotonic_ns() + 3_600_000_000_000;
        for i in 0..10_000usize {
            t.add(far + i as u64, i + 1, i);
        }
        for i in 0..9_990usize {
            assert_eq!(t.cancel(i + 1), Some(i));
        }
        assert_eq!(t.len(), 10);
        assert!(t.lock().heap.stored() <= 10 + 64);
    }

    #[test]
    fn wait_times_out_and_interrupt_wakes_once() {
        let t = Timers::new();
        let start = monotonic_ns();
        assert_eq!(t.wait(start + 2_000_000), None);
        assert!(monotonic_ns() >= start + 2_000_000);
        t.interrupt();
        t.interrupt();
        assert_eq!(t.wait(u64::MAX), None, "a pending interrupt");
        assert_eq!(t.wait(0), None, "consumed once");
    }

    #[test]
    fn other_threads_add_cancel_and_interrupt_while_one_waits() {
        let t = Arc::new(Timers::new());
        let waiter = {
            let t = t.clone();
            std::thread::spawn(move || {
                let mut got = vec![];
                loop {
                    match t.wait(u64::MAX) {
                        Some(v) => got.push(v),
                        None => return got,
                    }
                }
            })
        };
        let far = monotonic_ns() + 3_600_000_000_000;
        let adders: Vec<_> = (0..4usize)
            .map(|k| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for i in 0..200usize {
                        let v = k * 1000 + i;
                        if i % 2 == 0 {
                            // Soon: the waiter gets it.
                            t.add(monotonic_ns() + 100_000, 0, v);
                        } else {
                            // Far away, cancelled again.
                            t.add(far, v, v);
                            assert_eq!(t.cancel(v), Some(v));
                        }
                    }
                })
            })
            .collect();
        for a in adders {
            a.join().unwrap();
        }
        while !t.is_empty() {
            std::thread::yield_now();
        }
        t.interrupt();
        let mut got = waiter.join().unwrap();
        got.sort_unstable();
        let want: Vec<_> = (0..4).flat_map(|k| (0..200).step_by(2).map(move |i| k * 1000 + i)).collect();
        assert_eq!(got, want);
    }
}
