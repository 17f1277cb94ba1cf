//! Tests of loop tasks (`task.rs`): awaiting operations, sleeps, signals,
//! readiness and futures, and being resumed from outside.

use super::*;
use crate::sched::When;
use std::cell::RefCell;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::rc::Rc;

const MS: u64 = 1_000_000;

type Wakes = Rc<RefCell<Vec<(u32, Wake)>>>;

/// A task that records its wakes and then does `next(turn)`.
fn recording_task(l: &mut Loop, wakes: &Wakes, mut next: impl FnMut(&mut Loop, Handle, u32) + 'static) -> Handle {
    let w = wakes.clone();
    let mut turn = 0;
    l.task_init(
        0,
        Box::new(move |l, h, wake| {
            w.borrow_mut().push((turn, wake));
            next(l, h, turn);
            turn += 1;
        }),
    )
}

#[test]
fn a_task_sleeps_and_the_same_timer_is_rearmed() {
    let mut l = Loop::new().unwrap();
    let wakes: Wakes = Rc::default();
    let t = recording_task(&mut l, &wakes, |l, h, turn| {
        if turn < 2 {
            l.task_sleep(h, MS).unwrap();
        }
    });
    l.task_schedule(t, When::Later).unwrap();
    let start = std::time::Instant::now();
    assert!(!l.run(RunMode::Default).unwrap());
    assert!(start.elapsed() >= std::time::Duration::from_millis(2));
    assert_eq!(*wakes.borrow(), [(0, Wake::Resumed), (1, Wake::Done(Outcome::Slept)), (2, Wake::Done(Outcome::Slept))]);
    assert_eq!(l.handle_count(), 1, "the timer was closed once the task went on; only the task remains");
    l.close(t, None).unwrap();
    l.run(RunMode::Default).unwrap();
    assert_eq!(l.check_close(), Ok(()));
}

#[test]
fn a_task_resumed_from_outside_leaves_its_work_which_is_cancelled() {
    let mut l = Loop::new().unwrap();
    l.set_pool(Pool::new(1)).unwrap();
    let (go, wait) = std::sync::mpsc::channel::<()>();
    // Keep the only pool thread busy so the task's work stays queued.
    l.work_submit(Box::new(move || wait.recv().unwrap()), Box::new(|_, _, s| assert_eq!(s, Ok(()))));
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let wakes: Wakes = Rc::default();
    let r = ran.clone();
    let mut work = Some(Box::new(move || r.store(true, std::sync::atomic::Ordering::SeqCst)) as Work);
    let t = recording_task(&mut l, &wakes, move |l, h, turn| {
        if turn == 0 {
            l.task_work(h, work.take().unwrap()).unwrap();
        }
    });
    l.task_schedule(t, When::Later).unwrap();
    l.run(RunMode::NoWait).unwrap(); // turn 0: awaits the work
    assert_eq!(l.task_schedule(t, When::Later), Ok(true), "an outside resume");
    l.run(RunMode::NoWait).unwrap();
    go.send(()).unwrap();
    assert!(!l.run(RunMode::Default).unwrap(), "an idle task does not keep the loop alive");
    l.close(t, None).unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(*wakes.borrow(), [(0, Wake::Resumed), (1, Wake::Resumed)], "resumed once, never by the work");
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "cancelled before it started");
}

#[test]
fn a_timeout_makes_a_sleeping_task_leave_and_a_new_await_starts_after_the_close() {
    let mut l = Loop::new().unwrap();
    let wakes: Wakes = Rc::default();
    let worked = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let wk = worked.clone();
    let mut work = Some(Box::new(move || wk.store(true, std::sync::atomic::Ordering::SeqCst)) as Work);
    let t = recording_task(&mut l, &wakes, move |l, h, turn| match turn {
        0 => {
            l.task_sleep(h, 60_000 * MS).unwrap(); // a long sleep...
            l.task_schedule(h, When::Delay(2 * MS)).unwrap(); // ...with a 2 ms timeout
        }
        // Timed out: the sleep's timer is closing; this start waits for its close callback.
        1 => l.task_work(h, work.take().unwrap()).unwrap(),
        _ => l.close(h, None).unwrap(),
    });
    l.task_schedule(t, When::Later).unwrap();
    let start = std::time::Instant::now();
    assert!(!l.run(RunMode::Default).unwrap());
    assert!(start.elapsed() < std::time::Duration::from_secs(5), "the sleep was left");
    assert_eq!(*wakes.borrow(), [(0, Wake::Resumed), (1, Wake::Resumed), (2, Wake::Done(Outcome::Worked))]);
    assert!(worked.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(l.check_close(), Ok(()), "nothing left behind");
}

#[test]
fn a_task_waiting_on_a_signal_and_an_operation_wakes_once() {
    let mut l = Loop::new().unwrap();
    let wakes: Wakes = Rc::default();
    const SIG: usize = 0x5160;
    let t = recording_task(&mut l, &wakes, |l, h, turn| {
        if turn == 0 {
            l.task_sleep(h, 5 * MS).unwrap();
            l.task_schedule(h, When::Wait(SIG)).unwrap(); // either the signal or the sleep
        }
    });
    l.task_schedule(t, When::Later).unwrap();
    l.run(RunMode::NoWait).unwrap();
    // The sleep ends first: the task runs once, with the sleep's outcome.
    std::thread::sleep(std::time::Duration::from_millis(6));
    l.run(RunMode::Once).unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(wakes.borrow().len(), 2);
    assert_eq!(wakes.borrow()[1], (1, Wake::Done(Outcome::Slept)));
    assert!(!l.task_notify(SIG, When::Later).unwrap(), "it no longer waits on the signal");
    l.close(t, None).unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
}

#[test]
fn a_signal_first_makes_the_task_leave_its_sleep() {
    let mut l = Loop::new().unwrap();
    let wakes: Wakes = Rc::default();
    const SIG: usize = 0x5161;
    let t = recording_task(&mut l, &wakes, |l, h, turn| {
        if turn == 0 {
            l.task_sleep(h, 60_000 * MS).unwrap();
            l.task_schedule(h, When::Wait(SIG)).unwrap();
        }
    });
    l.task_schedule(t, When::Later).unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert!(l.task_notify(SIG, When::Later).unwrap());
    let start = std::time::Instant::now();
    assert!(!l.run(RunMode::Default).unwrap(), "the long sleep's timer was closed");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(*wakes.borrow(), [(0, Wake::Resumed), (1, Wake::Resumed)]);
    l.close(t, None).unwrap();
    l.run(RunMode::Default).unwrap();
    assert_eq!(l.check_close(), Ok(()));
}

#[test]
fn a_task_awaits_readiness_one_waiter_at_a_time_and_is_told_of_a_close() {
    let mut l = Loop::new().unwrap();
    let (mut a, b) = UnixStream::pair().unwrap();
    let p = l.poll_init(b.as_raw_fd(), 0).unwrap();
    let wakes: Wakes = Rc::default();
    let t = recording_task(&mut l, &wakes, move |l, h, turn| {
        if turn < 2 {
            l.task_poll(h, p, READABLE).unwrap();
        }
    });
    let other_wake = Rc::new(RefCell::new(None));
    let ow = other_wake.clone();
    let other = l.task_init(0, Box::new(move |_, _, w| *ow.borrow_mut() = Some(w)));
    l.task_schedule(t, When::Later).unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(l.task_poll(other, p, READABLE), Err(Error::Busy), "one waiter at a time");
    assert_eq!(l.task_poll(other, p, 0), Err(Error::Inval));
    a.write_all(b"x").unwrap();
    l.run(RunMode::Once).unwrap(); // readable: the task is made ready
    l.run(RunMode::NoWait).unwrap(); // it runs, and awaits again
    assert_eq!(wakes.borrow()[1], (1, Wake::Done(Outcome::Ready(READABLE))));
    // Still readable (nobody read the byte): level-triggered, so ready again.
    l.run(RunMode::NoWait).unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(wakes.borrow().len(), 3);
    // Turn 2 did not await: the poll is stopped for it; await again, then close the handle.
    assert!(!l.is_active(p).unwrap());
    l.task_poll(other, p, READABLE).unwrap();
    l.close(p, None).unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*other_wake.borrow(), Some(Wake::Done(Outcome::Closed)), "its waiter is told");
    assert_eq!(l.task_poll(t, p, READABLE), Err(Error::Inval), "closed handle");
    for h in [t, other] {
        l.close(h, None).unwrap();
    }
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(l.check_close(), Ok(()));
}

#[test]
fn an_iteration_runs_the_tasks_ready_at_its_start_each_once() {
    let mut l = Loop::new().unwrap();
    let ran: Rc<RefCell<Vec<&str>>> = Rc::default();
    let counting = |l: &mut Loop, name: &'static str| {
        let ran = ran.clone();
        l.task_init(0, Box::new(move |_: &mut Loop, _, _| ran.borrow_mut().push(name)))
    };
    let [b, c] = [counting(&mut l, "b"), counting(&mut l, "c")];
    // `a` reschedules itself and takes `b` out of the batch.
    let ran_a = ran.clone();
    let a = l.task_init(
        0,
        Box::new(move |l: &mut Loop, h, _| {
            ran_a.borrow_mut().push("a");
            l.task_schedule(h, When::Later).unwrap();
            l.task_unschedule(b).unwrap();
        }),
    );
    for t in [a, b, c] {
        l.task_schedule(t, When::Later).unwrap();
    }
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*ran.borrow(), ["a", "c"], "b left the batch; a's reschedule waits for the next iteration");
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*ran.borrow(), ["a", "c", "a"]);
    for t in [a, b, c] {
        l.close(t, None).unwrap();
    }
    l.run(RunMode::Default).unwrap();
    assert_eq!(l.check_close(), Ok(()));
}

#[test]
fn a_future_wait_completes_on_the_loop_when_another_thread_settles() {
    use crate::future::{Promise, State};
    let mut l = Loop::new().unwrap();
    let (p, f) = Promise::new();
    let out = Rc::new(RefCell::new(Vec::new()));
    let o = out.clone();
    let loop_thread = std::thread::current().id();
    let g = f.clone();
    l.future_wait(
        &f,
        Box::new(move |_, _, s| {
            assert_eq!(std::thread::current().id(), loop_thread, "on the loop's thread");
            o.borrow_mut().push((s, g.state()));
        }),
    );
    drop(f);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(5));
        p.fail(-1, c"from a thread").unwrap();
    });
    assert!(!l.run(RunMode::Default).unwrap(), "the request kept the loop alive until it completed");
    setter.join().unwrap();
    assert_eq!(*out.borrow(), [(Ok(()), State::Error)]);
    // Settled already: the callback still waits for the loop, never inside the call.
    let (p, f) = Promise::new();
    p.fail(-1, c"x").unwrap();
    let o = out.clone();
    l.future_wait(&f, Box::new(move |_, _, s| o.borrow_mut().push((s, State::Pending))));
    assert_eq!(out.borrow().len(), 1);
    l.run(RunMode::Default).unwrap();
    assert_eq!(out.borrow().len(), 2);
    assert_eq!(l.check_close(), Ok(()));
}

#[test]
fn a_cancelled_future_wait_calls_back_once_with_canceled_and_leaves_the_future_alone() {
    use crate::future::{Promise, State};
    let mut l = Loop::new().unwrap();
    let (p, f) = Promise::new();
    let out = Rc::new(RefCell::new(Vec::new()));
    let (o1, o2) = (out.clone(), out.clone());
    let a = l.future_wait(&f, Box::new(move |_, _, s| o1.borrow_mut().push(("a", s))));
    l.future_wait(&f, Box::new(move |_, _, s| o2.borrow_mut().push(("b", s))));
    assert_eq!(f.waiter_count(), 2);
    assert_eq!(l.request_cancel(a), Ok(()));
    assert!(out.borrow().is_empty(), "never inside cancel");
    assert_eq!(l.request_cancel(a), Err(Error::Busy), "cancelled already");
    assert_eq!(f.waiter_count(), 1, "only that waiter left");
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*out.borrow(), [("a", Err(Error::Canceled))]);
    p.fail(-2, c"later").unwrap();
    l.run(RunMode::Default).unwrap();
    assert_eq!(*out.borrow(), [("a", Err(Error::Canceled)), ("b", Ok(()))]);
    assert_eq!(f.state(), State::Error);
    assert_eq!(l.request_cancel(a), Err(Error::Inval), "finished");
}

#[test]
fn a_task_awaits_a_future_or_leaves_it_untouched_when_resumed() {
    use crate::future::{Promise, State};
    let mut l = Loop::new().unwrap();
    let (p, f) = Promise::new();
    let wakes: Wakes = Rc::default();
    let g = f.clone();
    let t = recording_task(&mut l, &wakes, move |l, h, turn| {
        if turn <= 1 {
            l.task_future(h, &g).unwrap();
        }
    });
    l.task_schedule(t, When::Later).unwrap();
    l.run(RunMode::NoWait).unwrap(); // turn 0: awaits
    assert_eq!(f.waiter_count(), 1);
    assert_eq!(l.task_schedule(t, When::Later), Ok(true), "an outside resume");
    l.run(RunMode::NoWait).unwrap(); // turn 1: left the first wait, awaits again
    l.run(RunMode::NoWait).unwrap(); // the first wait's cancellation completes
    assert_eq!(f.waiter_count(), 1, "the first waiter is gone, the second waits");
    assert_eq!(f.state(), State::Pending);
    let setter = std::thread::spawn(move || p.fail(-1, c"done").unwrap());
    setter.join().unwrap();
    l.run(RunMode::Default).unwrap();
    assert_eq!(*wakes.borrow(), [(0, Wake::Resumed), (1, Wake::Resumed), (2, Wake::Done(Outcome::Settled))]);
    l.close(t, None).unwrap();
    l.run(RunMode::Default).unwrap();
    assert_eq!(l.check_close(), Ok(()));
}

#[test]
fn a_thread_waits_for_a_signal_until_its_deadline() {
    let t0 = crate::time::monotonic_ns();
    let mask = 1u64 << (libc::SIGWINCH - 1);
    assert_eq!(super::wait_in_thread(mask, Some(t0 + 20_000_000)), None, "no SIGWINCH came");
    assert!(crate::time::monotonic_ns() - t0 >= 20_000_000, "it waited until the deadline");
    assert_eq!(super::raise(-1), Err(libc::EINVAL), "an invalid signal is an error, not a crash");
}
