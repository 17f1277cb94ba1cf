//! Unit tests of every queue operation and `when`, combined signals and
//! deep chains of them. The randomized model test: `model_tests.rs`.

use super::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A scheduler on a manual clock.
pub(super) fn sched() -> (Sched, Rc<Cell<u64>>) {
    let now = Rc::new(Cell::new(1_000));
    let n = now.clone();
    (Sched::with_clock(Clock::Custom(Box::new(move || n.get()))), now)
}

pub(super) fn tasks(s: &mut Sched, n: usize) -> Vec<Task> {
    (0..n).map(|i| s.task_new(i)).collect()
}

pub(super) fn ready(s: &Sched) -> Vec<usize> {
    s.ready().map(|t| s.data(t).unwrap()).collect()
}

pub(super) fn waiters(s: &Sched, key: usize) -> Vec<usize> {
    s.waiters(key).map(|t| s.data(t).unwrap()).collect()
}

pub(super) const A: usize = 0xa0;
pub(super) const B: usize = 0xb0;
pub(super) const C: usize = 0xc0;

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
