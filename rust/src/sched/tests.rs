//! Unit tests of every queue operation and `when`, and a randomized
//! comparison against a plain reference model.

use super::arena::Role;
use super::*;
use crate::util::rng::Rng;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

/// A scheduler on a manual clock.
fn sched() -> (Sched, Rc<Cell<u64>>) {
    let now = Rc::new(Cell::new(1_000));
    let n = now.clone();
    (Sched::with_clock(Clock::Custom(Box::new(move || n.get()))), now)
}

fn tasks(s: &mut Sched, n: usize) -> Vec<Task> {
    (0..n).map(|i| s.task_new(i)).collect()
}

fn ready(s: &Sched) -> Vec<usize> {
    s.ready().map(|t| s.data(t).unwrap()).collect()
}

fn waiters(s: &Sched, key: usize) -> Vec<usize> {
    s.waiters(key).map(|t| s.data(t).unwrap()).collect()
}

const A: usize = 0xa0;
const B: usize = 0xb0;
const C: usize = 0xc0;

#[test]
fn next_and_later_order_the_ready_queue() {
    let (mut s, _) = sched();
    let t = tasks(&mut s, 4);
    assert_eq!(s.ready_head(), None);
    assert_eq!(s.ready_head_data(), None);
    assert!(s.schedule(t[0], When::Later).unwrap());
    assert!(s.schedule(t[1], When::Later).unwrap());
    assert!(s.schedule(t[2], When::Next).unwrap());
    assert!(s.schedule(t[3], When::Later).unwrap());
    assert_eq!(ready(&s), [2, 0, 1, 3]);
    assert_eq!(s.ready_head(), Some(t[2]));
    assert_eq!(s.ready_head_data(), Some((t[2], 2)));
    assert_eq!(s.next(t[3]).unwrap(), None);
}

#[test]
fn schedule_refuses_a_registered_task_and_unschedule_reports() {
    let (mut s, _) = sched();
    let t = tasks(&mut s, 2);
    assert!(!s.is_scheduled(t[0]).unwrap());
    assert!(!s.unschedule(t[0]).unwrap());
    assert!(s.schedule(t[0], When::Wait(A)).unwrap());
    for when in [When::Next, When::Later, When::Wait(B), When::Postpone(0), When::Delay(5)] {
        assert!(!s.schedule(t[0], when).unwrap(), "{when:?}");
    }
    assert_eq!(waiters(&s, A), [0]);
    assert!(s.is_scheduled(t[0]).unwrap());
    assert!(s.unschedule(t[0]).unwrap());
    assert!(!s.is_scheduled(t[0]).unwrap());
    assert!(!s.waiting(A).unwrap());
    assert!(s.signals.is_empty(), "an empty signal queue is dropped");
    assert_eq!(s.next(t[0]).unwrap(), None);
}

#[test]
fn notify_moves_a_whole_queue_in_order_for_every_when() {
    let (mut s, now) = sched();
    let t = tasks(&mut s, 7);
    s.schedule(t[0], When::Later).unwrap();
    for &i in &[1, 2, 3] {
        s.schedule(t[i], When::Wait(A)).unwrap();
    }
    assert_eq!(waiters(&s, A), [1, 2, 3]);
    assert!(s.notify(A, When::Next).unwrap());
    assert_eq!(ready(&s), [1, 2, 3, 0]);
    assert!(!s.notify(A, When::Next).unwrap(), "nobody waits");

    for &i in &[4, 5] {
        s.schedule(t[i], When::Wait(A)).unwrap();
    }
    assert!(s.notify(A, When::Later).unwrap());
    assert_eq!(ready(&s), [1, 2, 3, 0, 4, 5]);

    // To another signal: appended after its waiters.
    for &i in &[1, 2] {
        s.unschedule(t[i]).unwrap();
        s.schedule(t[i], When::Wait(A)).unwrap();
    }
    s.unschedule(t[6]).unwrap();
    s.schedule(t[6], When::Wait(B)).unwrap();
    assert!(s.notify(A, When::Wait(B)).unwrap());
    assert_eq!(waiters(&s, B), [6, 1, 2]);
    assert!(!s.waiting(A).unwrap());
    // To itself: nothing changes but it counts as moved.
    assert!(s.notify(B, When::Wait(B)).unwrap());
    assert_eq!(waiters(&s, B), [6, 1, 2]);
    // To an empty signal: the queue is reused.
    assert!(s.notify(B, When::Wait(C)).unwrap());
    assert_eq!(waiters(&s, C), [6, 1, 2]);

    // To the postponed queue: one group, one wake time.
    assert!(s.notify(C, When::Delay(50)).unwrap());
    assert_eq!(s.postponed_groups(), 1);
    assert_eq!(s.next_wake(), Some(1_050));
    assert!(s.is_scheduled(t[6]).unwrap());
    now.set(1_049);
    assert!(!s.take_due());
    now.set(1_050);
    let before = ready(&s);
    assert!(s.take_due());
    assert_eq!(ready(&s)[before.len()..], [6, 1, 2]);

    for &i in &[6, 1] {
        s.unschedule(t[i]).unwrap();
        s.schedule(t[i], When::Wait(A)).unwrap();
    }
    assert!(s.notify(A, When::Postpone(2_000)).unwrap());
    assert_eq!(s.next_wake(), Some(2_000));
}

#[test]
fn postponed_tasks_become_ready_in_time_then_insertion_order() {
    let (mut s, now) = sched();
    let t = tasks(&mut s, 6);
    s.schedule(t[0], When::Postpone(1_300)).unwrap();
    s.schedule(t[1], When::Delay(100)).unwrap(); // 1_100
    s.schedule(t[2], When::Postpone(1_100)).unwrap();
    s.schedule(t[3], When::Postpone(1_200)).unwrap();
    s.schedule(t[4], When::Postpone(500)).unwrap(); // past: due at once
    s.schedule(t[5], When::Later).unwrap();
    assert_eq!(s.next_wake(), Some(500));
    assert!(s.take_due());
    assert_eq!(ready(&s), [5, 4], "due tasks go after the ready ones");
    now.set(1_250);
    assert!(s.take_due());
    assert_eq!(ready(&s), [5, 4, 1, 2, 3]);
    assert_eq!(s.next_wake(), Some(1_300));
    // Unscheduling the last task of a group drops the group.
    s.unschedule(t[0]).unwrap();
    assert_eq!(s.next_wake(), None);
    assert_eq!(s.postponed_groups(), 0);
    assert!(!s.take_due());
}

#[test]
fn cancelled_timers_do_not_pile_up() {
    let (mut s, now) = sched();
    let t = tasks(&mut s, 1_000);
    for (i, &task) in t.iter().enumerate() {
        s.schedule(task, When::Postpone(5_000 - i as u64)).unwrap();
    }
    // Cancel all but every 100th, the earliest first and the latest first.
    for (i, &task) in t.iter().enumerate().filter(|(i, _)| i % 100 != 0) {
        assert!(s.unschedule(task).unwrap(), "{i}");
    }
    assert_eq!(s.postponed_groups(), 10);
    assert!(s.timers.stored() <= 10 + 64, "{} entries kept", s.timers.stored());
    assert_eq!(s.next_wake(), Some(5_000 - 900));
    now.set(u64::MAX);
    assert!(s.take_due());
    assert_eq!(ready(&s), [900, 800, 700, 600, 500, 400, 300, 200, 100, 0]);
    assert_eq!(s.next_wake(), None);
}

#[test]
fn delay_saturates_instead_of_wrapping() {
    let (mut s, _) = sched();
    let t = s.task_new(0);
    s.schedule(t, When::Delay(u64::MAX)).unwrap();
    assert_eq!(s.next_wake(), Some(u64::MAX));
}

#[test]
fn reschedule_moves_a_task_from_any_queue() {
    let (mut s, _) = sched();
    let t = tasks(&mut s, 3);
    for &i in &t {
        s.schedule(i, When::Later).unwrap();
    }
    s.reschedule(t[0], When::Later).unwrap();
    assert_eq!(ready(&s), [1, 2, 0]);
    s.reschedule(t[0], When::Wait(A)).unwrap();
    assert_eq!(waiters(&s, A), [0]);
    s.reschedule(t[0], When::Delay(5)).unwrap();
    assert!(!s.waiting(A).unwrap() && s.postponed_groups() == 1);
    s.reschedule(t[0], When::Next).unwrap();
    assert_eq!(ready(&s), [0, 1, 2]);
    assert_eq!(s.postponed_groups(), 0);
    let unlinked = s.task_new(9);
    s.reschedule(unlinked, When::Later).unwrap();
    assert_eq!(ready(&s), [0, 1, 2, 9]);
    assert_eq!(s.reschedule(t[1], When::Wait(0)), Err(Error::Inval));
    assert_eq!(ready(&s), [0, 1, 2, 9], "a failed call changes nothing");
}

#[test]
fn freeing_a_task_unschedules_it_and_invalidates_its_handle() {
    let (mut s, _) = sched();
    let t = tasks(&mut s, 2);
    s.schedule(t[0], When::Wait(A)).unwrap();
    s.schedule(t[1], When::Delay(10)).unwrap();
    s.task_free(t[0]).unwrap();
    s.task_free(t[1]).unwrap();
    assert!(!s.waiting(A).unwrap());
    assert_eq!(s.postponed_groups(), 0);
    for r in [s.schedule(t[0], When::Later), s.unschedule(t[0]), s.is_scheduled(t[0])] {
        assert_eq!(r, Err(Error::Inval));
    }
    assert_eq!(s.data(t[0]), Err(Error::Inval));
    assert_eq!(s.task_free(t[0]), Err(Error::Inval));
    let again = s.task_new(9);
    assert_ne!(again, t[1], "a reused slot gets a new handle");
    assert_eq!(s.data(t[1]), Err(Error::Inval));
    assert_eq!(s.data(again), Ok(9));
    s.set_data(again, 10).unwrap();
    assert_eq!(s.data(again), Ok(10));
}

#[test]
fn bad_input_is_an_error() {
    let (mut s, _) = sched();
    let (mut other, _) = sched();
    let t = s.task_new(1);
    let foreign = other.task_new(2);
    assert_eq!(s.schedule(foreign, When::Later), Err(Error::Inval));
    assert_eq!(s.schedule(t, When::Wait(0)), Err(Error::Inval));
    assert_eq!(s.notify(0, When::Later), Err(Error::Inval));
    assert_eq!(s.notify(A, When::Wait(0)), Err(Error::Inval));
    assert_eq!(s.waiting(0), Err(Error::Inval));
    assert_eq!(s.signal_head(0), Err(Error::Inval));
    assert_eq!(s.onall(&[A, 0]), Err(Error::Inval));
    assert_eq!(s.reset(A), Err(Error::Inval));
    assert_eq!(s.free_combined(A), Err(Error::Inval));
    assert!(!s.is_scheduled(t).unwrap(), "failed calls change nothing");
    assert_eq!(Task::from_raw(0), None);
}

#[test]
fn the_hook_hears_when_queues_start_and_stop_having_waiters() {
    let (mut s, _) = sched();
    let log = Rc::new(RefCell::new(Vec::new()));
    let l = log.clone();
    s.set_signal_hook(Some(Box::new(move |k, on| l.borrow_mut().push((k, on)))));
    let t = tasks(&mut s, 3);
    s.schedule(t[0], When::Wait(A)).unwrap();
    s.schedule(t[1], When::Wait(A)).unwrap();
    s.schedule(t[2], When::Wait(B)).unwrap();
    s.notify(A, When::Wait(C)).unwrap();
    s.unschedule(t[2]).unwrap();
    s.notify(C, When::Later).unwrap();
    assert_eq!(*log.borrow(), [(A, true), (B, true), (A, false), (C, true), (B, false), (C, false)]);
}

#[test]
fn finished_tasks_leave_nothing_behind() {
    let (mut s, now) = sched();
    let all = s.onall(&[A, B]).unwrap();
    let mut high_water = 0;
    for round in 0..100_000u64 {
        let t = tasks(&mut s, 3);
        s.schedule(t[0], When::Wait(all)).unwrap();
        s.schedule(t[1], When::Wait(A)).unwrap();
        s.schedule(t[2], When::Delay(round % 7)).unwrap();
        s.notify(A, When::Wait(C)).unwrap();
        s.notify(B, When::Postpone(now.get() + 3)).unwrap();
        now.set(now.get() + 1);
        s.take_due();
        for t in t {
            s.task_free(t).unwrap();
        }
        high_water = high_water.max(s.arena.capacity());
    }
    assert!(high_water <= 16, "slots are reused: {high_water}");
    assert_eq!(s.ready_head(), None);
    assert_eq!(s.postponed_groups(), 0);
    assert_eq!(s.signals.len(), 1, "only the combined signal remains");
}

// ===== combined signals =====

#[test]
fn onall_fires_once_every_part_was_notified_while_waited_on() {
    let (mut s, _) = sched();
    let t = tasks(&mut s, 3);
    let all = s.onall(&[A, B]).unwrap();
    assert!(s.is_combined(all));
    // Not waited on: notifications are not remembered.
    assert!(!s.notify(A, When::Later).unwrap());
    s.schedule(t[0], When::Wait(all)).unwrap();
    s.schedule(t[1], When::Wait(all)).unwrap();
    s.schedule(t[2], When::Later).unwrap();
    assert!(s.notify(A, When::Next).unwrap(), "counted, though nobody waits on A");
    assert!(!s.notify(A, When::Later).unwrap(), "A already counted: nothing left to count");
    assert_eq!(ready(&s), [2]);
    assert!(s.notify(B, When::Postpone(0)).unwrap(), "any `when` counts");
    assert_eq!(ready(&s), [2, 0, 1]);
    assert!(!s.waiting(all).unwrap());
    // Disarmed: parts are free again.
    assert!(!s.notify(B, When::Later).unwrap());
    assert!(!s.signals.contains_key(&A) && !s.signals.contains_key(&B));
}

#[test]
fn onany_fires_on_the_first_part_and_moves_after_the_parts_waiters() {
    let (mut s, _) = sched();
    let t = tasks(&mut s, 3);
    let any = s.onany(&[A, B]).unwrap();
    s.schedule(t[0], When::Wait(any)).unwrap();
    s.schedule(t[1], When::Wait(B)).unwrap();
    s.schedule(t[2], When::Wait(any)).unwrap();
    assert!(s.notify(B, When::Later).unwrap());
    assert_eq!(ready(&s), [1, 0, 2]);
    assert!(!s.notify(A, When::Later).unwrap());
}

#[test]
fn unwaiting_a_combined_signal_forgets_its_notifications() {
    let (mut s, _) = sched();
    let t = s.task_new(0);
    let all = s.onall(&[A, B]).unwrap();
    s.schedule(t, When::Wait(all)).unwrap();
    s.notify(A, When::Later).unwrap();
    s.unschedule(t).unwrap();
    s.schedule(t, When::Wait(all)).unwrap();
    s.notify(B, When::Later).unwrap();
    assert_eq!(ready(&s), Vec::<usize>::new(), "A was forgotten");
    s.notify(A, When::Later).unwrap();
    assert_eq!(ready(&s), [0]);
}

#[test]
fn reset_discards_what_was_counted() {
    let (mut s, _) = sched();
    let t = s.task_new(0);
    let all = s.onall(&[A, B, C]).unwrap();
    assert!(!s.reset(all).unwrap(), "not armed");
    s.schedule(t, When::Wait(all)).unwrap();
    s.notify(A, When::Later).unwrap();
    s.notify(B, When::Later).unwrap();
    assert!(s.reset(all).unwrap());
    s.notify(C, When::Later).unwrap();
    assert!(ready(&s).is_empty());
    s.notify(A, When::Later).unwrap();
    s.notify(B, When::Later).unwrap();
    assert_eq!(ready(&s), [0]);
}

#[test]
fn nested_combined_signals() {
    let (mut s, _) = sched();
    let t = tasks(&mut s, 3);
    let inner = s.onany(&[A, B]).unwrap();
    let outer = s.onall(&[inner, C]).unwrap();
    s.schedule(t[0], When::Wait(outer)).unwrap();
    s.schedule(t[1], When::Wait(inner)).unwrap();
    assert!(!s.waiting(inner).unwrap() || s.signal_head(inner).unwrap() == Some(t[1]));
    s.notify(C, When::Later).unwrap();
    assert!(ready(&s).is_empty());
    s.notify(B, When::Later).unwrap();
    assert_eq!(ready(&s), [1, 0], "inner waiters first, then outer");

    // The inner one counts for the outer one even with no waiter of its own.
    s.unschedule(t[0]).unwrap();
    s.unschedule(t[1]).unwrap();
    s.schedule(t[2], When::Wait(outer)).unwrap();
    s.notify(A, When::Later).unwrap();
    s.notify(C, When::Later).unwrap();
    assert_eq!(ready(&s), [2]);

    // Notifying a combined signal directly counts too.
    s.unschedule(t[2]).unwrap();
    s.schedule(t[2], When::Wait(outer)).unwrap();
    assert!(s.notify(inner, When::Later).unwrap());
    assert!(s.notify(C, When::Later).unwrap());
    assert_eq!(ready(&s), [2]);

    assert_eq!(s.free_combined(inner), Err(Error::Busy), "part of outer");
    s.free_combined(outer).unwrap();
    s.free_combined(inner).unwrap();
    assert!(!s.is_combined(inner));
    assert!(s.signals.is_empty(), "nothing left behind");
}

#[test]
fn combined_signal_edge_cases() {
    let (mut s, _) = sched();
    let t = tasks(&mut s, 2);
    let none_all = s.onall(&[]).unwrap();
    let none_any = s.onany(&[]).unwrap();
    s.schedule(t[0], When::Wait(none_all)).unwrap();
    assert_eq!(ready(&s), [0], "an empty all-of fires at once");
    s.schedule(t[1], When::Wait(none_any)).unwrap();
    assert_eq!(s.free_combined(none_any), Err(Error::Busy));
    s.unschedule(t[1]).unwrap();
    s.free_combined(none_any).unwrap();
    // A part listed twice counts twice.
    let twice = s.onall(&[A, A]).unwrap();
    s.unschedule(t[0]).unwrap();
    s.schedule(t[0], When::Wait(twice)).unwrap();
    s.notify(A, When::Later).unwrap();
    assert_eq!(ready(&s), [0]);
    // Moving waiters into a combined signal arms it; the notification that
    // moved them does not count for it.
    let any = s.onany(&[A]).unwrap();
    s.unschedule(t[0]).unwrap();
    s.schedule(t[0], When::Wait(A)).unwrap();
    assert!(s.notify(A, When::Wait(any)).unwrap());
    assert_eq!(waiters(&s, any), [0]);
    s.notify(A, When::Later).unwrap();
    assert_eq!(ready(&s), [0]);
}

// ===== deep chains =====

/// Levels of the deep-chain tests. Recursing per level overflowed an 8 MiB
/// stack at about 65 000 levels; the tests run chains on a test thread's
/// 2 MiB stack, and `stack::tests` on a 64 KiB coroutine stack.
pub(crate) const DEEP: usize = 1_000_000;

/// `levels` combined signals over `bottom`, each the only part of the next
/// (`onany` and `onall` alternating); the last is the top.
fn chain(s: &mut Sched, bottom: usize, levels: usize) -> Vec<usize> {
    let mut chain = Vec::with_capacity(levels);
    let mut top = bottom;
    for i in 0..levels {
        top = if i % 2 == 0 { s.onany(&[top]) } else { s.onall(&[top]) }.unwrap();
        chain.push(top);
    }
    chain
}

/// Arms, disarms, fires and frees a chain of `levels` combined signals,
/// checking every answer. Nothing it calls may recurse per level.
pub(crate) fn deep_chain(levels: usize) {
    let mut s = Sched::new();
    let t = s.task_new(7);
    let c = chain(&mut s, A, levels);
    let top = *c.last().unwrap();

    // Waiting on the top arms every level down to A; leaving disarms them.
    s.schedule(t, When::Wait(top)).unwrap();
    assert_eq!(s.signals[&A].watchers.len(), 1, "the bottom level watches A");
    s.unschedule(t).unwrap();
    assert!(!s.signals.contains_key(&A), "disarmed down to A");
    assert!(!s.notify(A, When::Later).unwrap(), "nothing armed, nothing counted");

    // Armed again, then A fires every level: the waiter is ready.
    s.schedule(t, When::Wait(top)).unwrap();
    assert!(s.notify(A, When::Later).unwrap());
    assert_eq!(ready(&s), [7]);
    assert!(!s.signals.contains_key(&A), "disarmed down to A");

    // Freed top first (a part of a live one is busy); nothing left behind.
    assert_eq!(s.free_combined(c[0]), Err(Error::Busy));
    for &k in c.iter().rev() {
        s.free_combined(k).unwrap();
    }
    assert!(s.signals.is_empty());
}

/// The other ways work spreads along a chain of `levels`: from a middle
/// level, arming that fires at once, and dropping the scheduler armed.
pub(crate) fn deep_chain_paths(levels: usize) {
    let mut s = Sched::new();
    let t = s.task_new(7);
    let c = chain(&mut s, A, levels);
    let top = *c.last().unwrap();

    // A middle level notified fires the levels above it.
    s.schedule(t, When::Wait(top)).unwrap();
    assert!(s.notify(c[levels / 2], When::Later).unwrap());
    assert_eq!(ready(&s), [7]);
    s.check_combined();

    // Over an empty all-of, arming fires at once, up to the waiter.
    let empty = s.onall(&[]).unwrap();
    let e = chain(&mut s, empty, levels);
    s.reschedule(t, When::Wait(*e.last().unwrap())).unwrap();
    assert_eq!(ready(&s), [7], "fired while being armed");
    s.check_combined();

    // Dropped while armed: the chain goes with the scheduler.
    s.reschedule(t, When::Wait(top)).unwrap();
    drop(s);
}

#[test]
fn a_chain_of_a_million_combined_signals_needs_no_deep_stack() {
    deep_chain(DEEP);
}

#[test]
fn every_path_along_a_deep_chain_needs_no_deep_stack() {
    deep_chain_paths(DEEP / 10);
}

// ===== model test =====

/// The reference: plain vectors, with every operation done the obvious way.
#[derive(Default)]
struct Model {
    ready: VecDeque<usize>,
    signals: Vec<(usize, Vec<usize>)>,
    postponed: Vec<(u64, u64, Vec<usize>)>,
    seq: u64,
}

impl Model {
    fn signal(&mut self, key: usize) -> &mut Vec<usize> {
        if let Some(i) = self.signals.iter().position(|(k, _)| *k == key) {
            return &mut self.signals[i].1;
        }
        self.signals.push((key, Vec::new()));
        &mut self.signals.last_mut().unwrap().1
    }

    fn place(&mut self, ids: Vec<usize>, when: When, now: u64) {
        match when {
            When::Next => ids.into_iter().rev().for_each(|i| self.ready.push_front(i)),
            When::Later => self.ready.extend(ids),
            When::Wait(k) => self.signal(k).extend(ids),
            When::Postpone(t) | When::Delay(t) => {
                let at = if let When::Delay(_) = when { now + t } else { t };
                self.seq += 1;
                self.postponed.push((at, self.seq, ids));
            }
        }
    }

    fn remove(&mut self, id: usize) -> bool {
        if let Some(p) = self.ready.iter().position(|&x| x == id) {
            self.ready.remove(p);
            return true;
        }
        let queues = self.signals.iter_mut().map(|(_, q)| q).chain(self.postponed.iter_mut().map(|(_, _, q)| q));
        for q in queues {
            if let Some(p) = q.iter().position(|&x| x == id) {
                q.remove(p);
                return true;
            }
        }
        false
    }

    fn scheduled(&self, id: usize) -> bool {
        self.ready.contains(&id)
            || self.signals.iter().any(|(_, q)| q.contains(&id))
            || self.postponed.iter().any(|(_, _, q)| q.contains(&id))
    }

    fn take_due(&mut self, now: u64) {
        self.postponed.retain(|(_, _, q)| !q.is_empty());
        self.postponed.sort_by_key(|&(t, s, _)| (t, s));
        let n = self.postponed.iter().take_while(|(t, _, _)| *t <= now).count();
        for (_, _, q) in self.postponed.drain(..n) {
            self.ready.extend(q);
        }
    }
}

fn random_when(r: &mut Rng, keys: &[usize]) -> When {
    match r.below(5) {
        0 => When::Next,
        1 => When::Later,
        2 => When::Wait(keys[r.below(keys.len() as u64) as usize]),
        3 => When::Postpone(r.below(200)),
        _ => When::Delay(r.below(100)),
    }
}

#[test]
fn randomized_against_a_reference_model() {
    let keys = [A, B, C, 0xd0];
    for seed in 1..=20u64 {
        let (mut s, now) = sched();
        now.set(0);
        let mut m = Model::default();
        let mut r = Rng::new(seed);
        let t = tasks(&mut s, 24);
        for step in 0..5_000 {
            let id = r.below(t.len() as u64) as usize;
            match r.below(10) {
                0..=2 => {
                    let when = random_when(&mut r, &keys);
                    let expect = !m.scheduled(id);
                    assert_eq!(s.schedule(t[id], when).unwrap(), expect, "seed {seed} step {step}");
                    if expect {
                        m.place(vec![id], when, now.get());
                    }
                }
                3 => assert_eq!(s.unschedule(t[id]).unwrap(), m.remove(id)),
                4..=5 => {
                    let key = keys[r.below(keys.len() as u64) as usize];
                    let when = random_when(&mut r, &keys);
                    let ids = std::mem::take(m.signal(key));
                    assert_eq!(s.notify(key, when).unwrap(), !ids.is_empty());
                    if !ids.is_empty() {
                        m.place(ids, when, now.get());
                    }
                }
                6 => {
                    now.set(now.get() + r.below(40));
                    s.take_due();
                    m.take_due(now.get());
                }
                7 => {
                    // Run the head: take it out, put it back somewhere.
                    if let Some(h) = s.ready_head() {
                        let id = s.data(h).unwrap();
                        assert_eq!(m.ready.pop_front(), Some(id));
                        s.unschedule(h).unwrap();
                        let when = random_when(&mut r, &keys);
                        s.schedule(h, when).unwrap();
                        m.place(vec![id], when, now.get());
                    }
                }
                _ => assert_eq!(s.is_scheduled(t[id]).unwrap(), m.scheduled(id)),
            }
            assert_eq!(ready(&s), Vec::from(m.ready.clone()), "seed {seed} step {step}");
            for &k in &keys {
                let expect = m.signals.iter().find(|(key, _)| *key == k).map_or(vec![], |(_, q)| q.clone());
                assert_eq!(waiters(&s, k), expect, "seed {seed} step {step} key {k:x}");
            }
            m.postponed.retain(|(_, _, q)| !q.is_empty());
            assert_eq!(s.postponed_groups(), m.postponed.len());
            assert_eq!(s.next_wake(), m.postponed.iter().map(|&(t, _, _)| t).min());
        }
    }
}

/// Panics unless the queues are consistent: rings well linked, each linked
/// task in exactly one ring, no stale signal entry, one live timer per group.
fn check_invariants(s: &Sched) {
    let mut seen = std::collections::HashSet::new();
    let mut walk = |head: u32| {
        let mut i = s.arena.node(head).next;
        while i != head {
            let n = s.arena.node(i);
            assert_eq!(n.role, Role::Task);
            assert_eq!(s.arena.node(n.next).prev, i, "broken back link");
            assert!(seen.insert(i), "task {i} in two queues");
            i = n.next;
        }
    };
    walk(s.ready);
    for (&key, sig) in &s.signals {
        assert!(sig.queue != NIL || !sig.watchers.is_empty() || sig.combo.is_some(), "stale entry {key:x}");
        if sig.queue != NIL {
            let n = s.arena.node(sig.queue);
            assert!(n.role == Role::Signal && n.data == key && !s.arena.is_empty(sig.queue));
            walk(sig.queue);
        }
    }
    let mut groups = 0;
    for i in 0..s.arena.capacity() as u32 {
        if s.arena.node(i).role == Role::Timer {
            assert!(!s.arena.is_empty(i), "empty postponed group");
            groups += 1;
            walk(i);
        }
    }
    assert_eq!(groups, s.timers.len());
    let linked =
        (0..s.arena.capacity() as u32).filter(|&i| s.arena.node(i).role == Role::Task && s.arena.is_linked(i)).count();
    assert_eq!(linked, seen.len(), "a linked task outside every queue");
    s.check_combined();
}

#[test]
fn randomized_with_combined_signals_keeps_every_invariant() {
    let plain = [A, B, C];
    for seed in 1..=20u64 {
        let (mut s, now) = sched();
        let mut r = Rng::new(seed);
        let inner_any = s.onany(&[A, B]).unwrap();
        let inner_all = s.onall(&[B, C]).unwrap();
        let outer = s.onall(&[inner_any, inner_all, A]).unwrap();
        let keys = [A, B, C, inner_any, inner_all, outer];
        let t = tasks(&mut s, 16);
        for _ in 0..4_000 {
            let task = t[r.below(t.len() as u64) as usize];
            let key = keys[r.below(keys.len() as u64) as usize];
            match r.below(8) {
                0..=2 => {
                    let when = match r.below(3) {
                        0 => When::Wait(keys[r.below(keys.len() as u64) as usize]),
                        _ => random_when(&mut r, &keys),
                    };
                    s.schedule(task, when).unwrap();
                }
                3 => {
                    s.unschedule(task).unwrap();
                }
                4 => {
                    let key = if r.below(2) == 0 { plain[r.below(3) as usize] } else { key };
                    s.notify(key, random_when(&mut r, &keys)).unwrap();
                }
                5 => {
                    s.reset(keys[3 + r.below(3) as usize]).unwrap();
                }
                6 => {
                    now.set(now.get() + r.below(50));
                    s.take_due();
                }
                _ => {
                    if let Some(h) = s.ready_head() {
                        s.unschedule(h).unwrap();
                        s.schedule(h, random_when(&mut r, &keys)).unwrap();
                    }
                }
            }
            check_invariants(&s);
        }
        for &k in &[outer, inner_any, inner_all] {
            for w in s.waiters(k).collect::<Vec<_>>() {
                s.unschedule(w).unwrap();
            }
            s.free_combined(k).unwrap();
        }
        check_invariants(&s);
    }
}
