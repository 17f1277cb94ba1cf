//! Benchmark of the core scheduler, each figure next to a baseline measured in
//! the same run:
//! - schedule + take-next cycles against a `VecDeque` ring of ids;
//! - `notify` of a signal queue with 10 and 100 000 waiters (O(1): the two
//!   must be within 2x) against moving the waiters one by one;
//! - postponing and expiring n tasks against std's `BinaryHeap`;
//! - shallow combined signals (`onany`, `onall`, one nested in another):
//!   a wait and the notifies that fire it, against the same wait on a plain
//!   signal.
//!
//! Run: `cargo run --release -p cothread-bench-sched`

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::hint::black_box;
use std::rc::Rc;
use std::time::Instant;

use cothread::time::Clock;
use cothread::{Sched, When};

/// Best of `runs` timings of `f`, in nanoseconds per unit of work.
fn best(runs: usize, units: u64, mut f: impl FnMut()) -> f64 {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / units as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn row(what: &str, ours: f64, base: f64) {
    println!("{what:<44} {ours:>10.1} ns {base:>10.1} ns {:>8.2}x", ours / base);
}

fn schedule_cycle() {
    const TASKS: usize = 1_000;
    const CYCLES: u64 = 5_000_000;
    let mut s = Sched::new();
    for i in 0..TASKS {
        let t = s.task_new(i);
        s.schedule(t, When::Later).unwrap();
    }
    let ours = best(5, CYCLES, || {
        for _ in 0..CYCLES {
            let h = s.ready_head().unwrap();
            s.unschedule(h).unwrap();
            s.schedule(black_box(h), When::Later).unwrap();
        }
    });
    let mut q: VecDeque<usize> = (0..TASKS).collect();
    let base = best(5, CYCLES, || {
        for _ in 0..CYCLES {
            let h = q.pop_front().unwrap();
            q.push_back(black_box(h));
        }
    });
    row("schedule + take-next cycle (1000 tasks)", ours, base);
}

/// ns per notify moving `n` waiters between two signals, and the same with
/// the waiters moved one by one between two `VecDeque`s.
fn notify(n: usize) -> (f64, f64) {
    let (a, b) = (0xa0usize, 0xb0usize);
    let mut s = Sched::new();
    for i in 0..n {
        let t = s.task_new(i);
        s.schedule(t, When::Wait(a)).unwrap();
    }
    const ROUNDS: u64 = 200_000;
    let ours = best(5, 2 * ROUNDS, || {
        for _ in 0..ROUNDS {
            s.notify(black_box(a), When::Wait(b)).unwrap();
            s.notify(black_box(b), When::Wait(a)).unwrap();
        }
    });
    let (mut qa, mut qb): (VecDeque<usize>, VecDeque<usize>) = ((0..n).collect(), VecDeque::new());
    let rounds = (ROUNDS as usize * 10 / n).max(5) as u64;
    let base = best(3, 2 * rounds, || {
        for _ in 0..rounds {
            qb.extend(qa.drain(..));
            qa.extend(qb.drain(..));
        }
        black_box(&qa);
    });
    (ours, base)
}

/// ns per task to postpone `n` tasks at pseudo-random times and expire them
/// all, and the same with `BinaryHeap` push + pop.
fn postpone(n: usize) -> (f64, f64) {
    let times: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 44).collect();
    let now = Rc::new(Cell::new(0u64));
    let clock = now.clone();
    let mut s = Sched::with_clock(Clock::Custom(Box::new(move || clock.get())));
    let tasks: Vec<_> = (0..n).map(|i| s.task_new(i)).collect();
    let ours = best(3, n as u64, || {
        now.set(0);
        for (t, &at) in tasks.iter().zip(&times) {
            s.schedule(*t, When::Postpone(at)).unwrap();
        }
        now.set(u64::MAX);
        s.take_due();
        for &t in &tasks {
            s.unschedule(t).unwrap();
        }
    });
    let base = best(3, n as u64, || {
        let mut h = BinaryHeap::with_capacity(n);
        for (i, &at) in times.iter().enumerate() {
            h.push(Reverse((at, i as u64, i)));
        }
        let mut ready = VecDeque::with_capacity(n);
        while let Some(Reverse((_, _, i))) = h.pop() {
            ready.push_back(i);
        }
        ready.clear();
        black_box(&ready);
    });
    (ours, base)
}

/// ns per cycle of: `t` waits on `wait_on`, `fire` notifies the keys that
/// wake it, `t` leaves the ready queue.
fn wait_cycle(s: &mut Sched, wait_on: usize, fire: &[usize]) -> f64 {
    let t = s.task_new(0);
    const CYCLES: u64 = 1_000_000;
    best(5, CYCLES, || {
        for _ in 0..CYCLES {
            s.schedule(t, When::Wait(black_box(wait_on))).unwrap();
            for &k in fire {
                s.notify(black_box(k), When::Later).unwrap();
            }
            s.unschedule(t).unwrap();
        }
    })
}

fn combined() {
    let (a, b, c) = (0xa0usize, 0xb0usize, 0xc0usize);
    let mut s = Sched::new();
    let plain = wait_cycle(&mut s, a, &[a]);
    let any = s.onany(&[a, b]).unwrap();
    row("onany(a, b): wait, notify a", wait_cycle(&mut s, any, &[a]), plain);
    let all = s.onall(&[a, b, c]).unwrap();
    row("onall(a, b, c): wait, notify a, b, c", wait_cycle(&mut s, all, &[a, b, c]), plain);
    let inner = s.onany(&[a, b]).unwrap();
    let outer = s.onall(&[inner, c]).unwrap();
    row("onall(onany(a, b), c): wait, notify a, c", wait_cycle(&mut s, outer, &[a, c]), plain);
}

fn main() {
    println!("cothread core scheduler benchmark (best of several runs; baseline in the same run)");
    println!("{:<44} {:>13} {:>13} {:>9}", "", "cothread", "baseline", "ratio");
    schedule_cycle();

    let (n10, b10) = notify(10);
    let (n100k, b100k) = notify(100_000);
    row("notify, 10 waiters (vs VecDeque move)", n10, b10);
    row("notify, 100000 waiters (vs VecDeque move)", n100k, b100k);
    println!("notify 100000 / notify 10 waiters: {:.2}x (O(1) means within 2x)", n100k / n10);

    println!("combined signals (baseline: the same cycle on a plain signal)");
    combined();

    let (p100k, q100k) = postpone(100_000);
    let (p1m, q1m) = postpone(1_000_000);
    row("postpone + expire, per task, n=100000", p100k, q100k);
    row("postpone + expire, per task, n=1000000", p1m, q1m);
    println!(
        "per-task cost at 1000000 / at 100000: {:.2}x (BinaryHeap alone: {:.2}x; log n alone would be 1.2x, the rest is cache misses)",
        p1m / p100k,
        q1m / q100k
    );
}
