use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::*;
use crate::util::rng::Rng;

/// A value that counts its drops, carrying a number.
struct Counted(usize, Arc<AtomicUsize>);

impl Payload for Counted {
    fn as_ptr(&self) -> *mut c_void {
        self.0 as *mut c_void
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

fn value(n: usize, drops: &Arc<AtomicUsize>) -> Box<dyn Payload> {
    Box::new(Counted(n, drops.clone()))
}

fn ptr_of(f: &Future) -> Option<usize> {
    match f.outcome() {
        Some(Outcome::Value(v)) => Some(v.as_ptr() as usize),
        _ => None,
    }
}

#[test]
fn the_first_result_wins_and_later_ones_change_nothing() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (p, f) = Promise::new();
    assert_eq!(f.state(), State::Pending);
    assert!(p.set(value(7, &drops)).is_ok());
    assert_eq!(f.state(), State::Value);
    assert_eq!(ptr_of(&f), Some(7));
    let back = p.set(value(8, &drops)).expect_err("refused");
    assert_eq!(back.as_ptr() as usize, 8, "the refused value is handed back");
    drop(back);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(p.fail(-5, c"late"), Err(Error::Already));
    assert_eq!(ptr_of(&f), Some(7));
    drop((p, f));
    assert_eq!(drops.load(Ordering::SeqCst), 2, "the value goes with the last handle");
}

#[test]
fn an_error_keeps_its_code_and_message() {
    let (p, f) = Promise::new();
    p.fail(-71, c"it broke").unwrap();
    match f.outcome() {
        Some(Outcome::Error { code, message, .. }) => {
            assert_eq!(*code, -71);
            assert_eq!(message.as_c_str(), c"it broke");
        }
        _ => panic!("not an error"),
    }
    assert_eq!(f.state(), State::Error);
}

#[test]
fn dropping_every_promise_handle_settles_with_dropped() {
    let (p, f) = Promise::new();
    let q = p.clone();
    drop(p);
    assert_eq!(f.state(), State::Pending, "a clone still lives");
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    f.on_ready(Box::new(move |o| {
        assert_eq!(o.state(), State::Dropped);
        r.fetch_add(1, Ordering::SeqCst);
    }));
    drop(q);
    assert_eq!(f.state(), State::Dropped);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    // A settled promise dropped later does not change the result.
    let (p, f) = Promise::new();
    p.fail(-1, c"x").unwrap();
    drop(p);
    assert_eq!(f.state(), State::Error);
}

#[test]
fn callbacks_run_once_oldest_first_and_cancelled_ones_never() {
    let (p, f) = Promise::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut ids = Vec::new();
    for i in 0..5 {
        let o = order.clone();
        ids.push(f.on_ready(Box::new(move |_| o.lock().unwrap().push(i))).unwrap());
    }
    assert!(ids.iter().all(|&id| id != 0));
    assert!(f.cancel(ids[1]));
    assert!(!f.cancel(ids[1]), "twice: gone already");
    assert!(!f.cancel(12345), "unknown");
    assert_eq!(f.waiter_count(), 4);
    p.fail(-1, c"done").unwrap();
    assert_eq!(*order.lock().unwrap(), vec![0, 2, 3, 4]);
    assert!(!f.cancel(ids[0]), "it ran");
    assert_eq!(f.waiter_count(), 0);
    // Settled already: runs at once, no identifier.
    let o = order.clone();
    assert_eq!(f.on_ready(Box::new(move |_| o.lock().unwrap().push(9))), None);
    assert_eq!(order.lock().unwrap().last(), Some(&9));
}

#[test]
fn a_callback_may_use_the_future_it_waited_for() {
    let (p, f) = Promise::new();
    let g = f.clone();
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    f.on_ready(Box::new(move |_| {
        // No lock is held while callbacks run: these do not deadlock.
        assert_eq!(g.state(), State::Error);
        let s2 = s.clone();
        assert_eq!(
            g.on_ready(Box::new(move |_| {
                s2.fetch_add(1, Ordering::SeqCst);
            })),
            None
        );
        s.fetch_add(1, Ordering::SeqCst);
    }));
    p.fail(-1, c"x").unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}

#[test]
fn a_blocking_wait_times_out_then_sees_a_settlement_from_another_thread() {
    let (p, f) = Promise::new();
    let t0 = Instant::now();
    assert_eq!(f.wait(Some(20_000_000)), Err(Error::TimedOut));
    assert!(t0.elapsed() >= Duration::from_millis(20));
    assert_eq!(f.wait(Some(0)), Err(Error::TimedOut));
    let setter = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        p.fail(-3, c"from a thread").unwrap();
    });
    f.wait(None).unwrap();
    assert_eq!(f.state(), State::Error);
    setter.join().unwrap();
    assert_eq!(f.wait(Some(0)), Ok(()), "settled: no wait");
}

#[test]
fn many_threads_race_to_settle_and_exactly_one_wins() {
    for _ in 0..50 {
        let drops = Arc::new(AtomicUsize::new(0));
        let (p, f) = Promise::new();
        let wins = Arc::new(AtomicUsize::new(0));
        let calls = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let f = f.clone();
                thread::spawn(move || f.wait(None).unwrap())
            })
            .collect();
        for _ in 0..3 {
            let c = calls.clone();
            f.on_ready(Box::new(move |_| {
                c.fetch_add(1, Ordering::SeqCst);
            }));
        }
        let setters: Vec<_> = (0..4)
            .map(|i| {
                let (p, wins, drops) = (p.clone(), wins.clone(), drops.clone());
                thread::spawn(move || {
                    if p.set(value(i + 1, &drops)).is_ok() {
                        wins.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        drop(p);
        setters.into_iter().for_each(|t| t.join().unwrap());
        waiters.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(wins.load(Ordering::SeqCst), 1);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(drops.load(Ordering::SeqCst), 3, "the three refused values");
        assert!(matches!(ptr_of(&f), Some(1..=4)));
        drop(f);
        assert_eq!(drops.load(Ordering::SeqCst), 4);
    }
}

#[test]
fn a_waiter_cancelled_while_another_thread_settles_runs_at_most_once() {
    for _ in 0..200 {
        let (p, f) = Promise::new();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let id = f.on_ready(Box::new(move |_| {
            r.fetch_add(1, Ordering::SeqCst);
        }));
        let (tx, rx) = mpsc::channel();
        let setter = thread::spawn(move || {
            rx.recv().unwrap();
            p.fail(-1, c"x").unwrap();
        });
        tx.send(()).unwrap();
        let cancelled = f.cancel(id.unwrap());
        setter.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), usize::from(!cancelled));
    }
}

/// Random sequences of promise/future operations against a plain model: the
/// state, the callbacks that ran, and the value's drop.
#[test]
fn randomized_against_a_model() {
    for seed in 0..200 {
        let mut r = Rng::new(seed);
        let drops = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(Mutex::new(Vec::<u64>::new()));
        let (p, f) = Promise::new();
        let mut promises = vec![p];
        let mut futures = vec![f];
        // The model.
        let mut state = State::Pending;
        let mut waiting: Vec<(u64, u64)> = Vec::new(); // (id, tag)
        let mut expected_ran: Vec<u64> = Vec::new();
        let mut values_made = 0;
        let mut tag = 0u64;
        for _ in 0..40 {
            match r.pick(&[2, 3, 1, 1, 4, 2, 1]) {
                0 if !promises.is_empty() => promises.push(promises[0].clone()),
                1 if !promises.is_empty() => {
                    let i = r.below(promises.len() as u64) as usize;
                    drop(promises.swap_remove(i));
                    if promises.is_empty() && state == State::Pending {
                        state = State::Dropped;
                        expected_ran.extend(waiting.drain(..).map(|(_, t)| t));
                    }
                }
                2 if !promises.is_empty() => {
                    values_made += 1;
                    let ok = promises[0].set(value(values_made, &drops)).is_ok();
                    assert_eq!(ok, state == State::Pending);
                    if ok {
                        state = State::Value;
                        expected_ran.extend(waiting.drain(..).map(|(_, t)| t));
                    }
                }
                3 if !promises.is_empty() => {
                    let ok = promises[0].fail(-1, c"e").is_ok();
                    assert_eq!(ok, state == State::Pending);
                    if ok {
                        state = State::Error;
                        expected_ran.extend(waiting.drain(..).map(|(_, t)| t));
                    }
                }
                4 => {
                    tag += 1;
                    let (t, log) = (tag, ran.clone());
                    let id = futures[0].on_ready(Box::new(move |_| log.lock().unwrap().push(t)));
                    match id {
                        Some(id) => {
                            assert_eq!(state, State::Pending);
                            waiting.push((id, t));
                        }
                        None => {
                            assert_ne!(state, State::Pending);
                            expected_ran.push(t);
                        }
                    }
                }
                5 if !waiting.is_empty() => {
                    let i = r.below(waiting.len() as u64) as usize;
                    assert!(futures[0].cancel(waiting.remove(i).0));
                }
                6 => futures.push(futures[0].clone()),
                _ => {}
            }
            assert_eq!(futures[0].state(), state);
            assert_eq!(futures.last().unwrap().state(), state);
            assert_eq!(futures[0].waiter_count(), waiting.len());
        }
        let mut got = ran.lock().unwrap().clone();
        let mut want = expected_ran.clone();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "seed {seed}");
        let settled_value = usize::from(state == State::Value);
        assert_eq!(drops.load(Ordering::SeqCst), values_made - settled_value, "refused values dropped at once");
        drop(promises);
        drop(futures);
        assert_eq!(drops.load(Ordering::SeqCst), values_made, "seed {seed}: the value dropped with the last handle");
    }
}
