//! Tests of the loop: timers, poll, async, close, run modes, embedding.

use super::*;
use crate::sched::When;
use std::cell::RefCell;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::rc::Rc;

const MS: u64 = 1_000_000;

type Log = Rc<RefCell<Vec<String>>>;

fn log() -> Log {
    Rc::new(RefCell::new(Vec::new()))
}

fn note(log: &Log, what: impl Into<String>) -> Callback {
    let (log, what) = (log.clone(), what.into());
    Box::new(move |_, _| log.borrow_mut().push(what.clone()))
}

#[test]
fn timers_fire_in_due_order_and_the_loop_ends() {
    // Before the loop: timers count from the loop's cached time, read when
    // it is made (slow runs, as under qemu, showed the difference).
    let start = std::time::Instant::now();
    let mut l = Loop::new().unwrap();
    let out = log();
    for (name, ms) in [("c", 30), ("a", 10), ("b", 20), ("a2", 10)] {
        let t = l.timer_init(0);
        l.timer_start(t, ms * MS, 0, note(&out, name)).unwrap();
    }
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(*out.borrow(), ["a", "a2", "b", "c"]);
    assert!(start.elapsed() >= std::time::Duration::from_millis(30));
    assert!(!l.alive());
}

#[test]
fn repeating_timers_stop_and_again() {
    let mut l = Loop::new().unwrap();
    let count = Rc::new(RefCell::new(0));
    let t = l.timer_init(7);
    assert_eq!(l.data(t), Ok(7));
    let c = count.clone();
    l.timer_start(
        t,
        MS,
        MS,
        Box::new(move |l, h| {
            *c.borrow_mut() += 1;
            if *c.borrow() == 3 {
                l.timer_stop(h).unwrap();
            }
        }),
    )
    .unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(*count.borrow(), 3);
    assert!(!l.is_active(t).unwrap());
    l.timer_again(t).unwrap(); // repeat 1 ms: armed again
    assert!(l.is_active(t).unwrap());
    l.timer_set_repeat(t, 0).unwrap();
    l.run(RunMode::Once).unwrap();
    assert_eq!(*count.borrow(), 4);
    l.timer_stop(t).unwrap();
    l.timer_stop(t).unwrap(); // stopping twice is fine
    let fresh = l.timer_init(0);
    assert_eq!(l.timer_again(fresh), Err(Error::Inval), "never started");
}

#[test]
fn a_timer_started_by_a_timer_callback_fires_on_a_later_iteration() {
    let mut l = Loop::new().unwrap();
    let out = log();
    let t1 = l.timer_init(0);
    let t2 = l.timer_init(0);
    let o = out.clone();
    let inner = note(&out, "second");
    let mut inner = Some(inner);
    l.timer_start(
        t1,
        0,
        0,
        Box::new(move |l, _| {
            o.borrow_mut().push("first".into());
            l.timer_start(t2, 0, 0, inner.take().unwrap()).unwrap();
        }),
    )
    .unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*out.borrow(), ["first"]);
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*out.borrow(), ["first", "second"]);
}

#[test]
fn poll_reports_readiness_level_triggered() {
    let mut l = Loop::new().unwrap();
    let (mut a, b) = UnixStream::pair().unwrap();
    b.set_nonblocking(true).unwrap();
    let got = Rc::new(RefCell::new(Vec::new()));
    let p = l.poll_init(b.as_raw_fd(), 0).unwrap();
    let g = got.clone();
    let mut reader = b.try_clone().unwrap();
    l.poll_start(
        p,
        READABLE,
        Box::new(move |l, h, ev| {
            let mut buf = [0u8; 16];
            let n = reader.read(&mut buf).unwrap_or(0);
            g.borrow_mut().push((ev, buf[..n].to_vec()));
            if n == 0 {
                l.poll_stop(h).unwrap();
            }
        }),
    )
    .unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert!(got.borrow().is_empty(), "nothing to read yet");
    a.write_all(b"hi").unwrap();
    l.run(RunMode::Once).unwrap();
    assert_eq!(*got.borrow(), [(READABLE, b"hi".to_vec())]);
    drop(a); // the peer hangs up: readable (EOF), then stopped by the callback
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(got.borrow().len(), 2);
    assert_eq!(got.borrow()[1].1, b"");
    assert_eq!(l.poll_start(p, 0, Box::new(|_, _, _| {})), Err(Error::Inval));
    assert_eq!(l.poll_start(p, 64, Box::new(|_, _, _| {})), Err(Error::Inval));
    assert_eq!(l.poll_init(-1, 0), Err(Error::BadF));
}

/// Is the loop's epoll descriptor readable: does a descriptor in its set have
/// an event ready?
fn epoll_ready(l: &Loop) -> bool {
    let mut pfd = libc::pollfd { fd: l.backend_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, for the duration of the call.
    unsafe { libc::poll(&mut pfd, 1, 0) == 1 }
}

#[test]
fn a_paused_poll_stays_in_epoll_until_it_fires_unheard() {
    let mut l = Loop::new().unwrap();
    let (mut a, b) = UnixStream::pair().unwrap();
    let p = l.poll_init(b.as_raw_fd(), 0).unwrap();
    let (calls, made) = (Rc::new(RefCell::new(0)), Rc::new(RefCell::new(0)));
    let start = |l: &mut Loop| {
        let (c, m) = (calls.clone(), made.clone());
        l.poll_start_with(p, READABLE, 7, move || {
            *m.borrow_mut() += 1;
            Box::new(move |_, _, _| *c.borrow_mut() += 1)
        })
    };
    start(&mut l).unwrap();
    l.poll_pause(p).unwrap();
    assert!(!l.is_active(p).unwrap() && !l.alive(), "a paused poll keeps nothing going");
    a.write_all(b"x").unwrap();
    assert!(epoll_ready(&l), "pausing made no epoll_ctl: the descriptor is still in the set");
    // Another poll keeps the loop alive, so that it polls.
    let (_c, d) = UnixStream::pair().unwrap();
    let other = l.poll_init(d.as_raw_fd(), 0).unwrap();
    l.poll_start(other, READABLE, Box::new(|_, _, _| {})).unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*calls.borrow(), 0, "no callback while paused");
    assert!(!epoll_ready(&l), "ready while paused: taken out of epoll");
    start(&mut l).unwrap();
    assert!(epoll_ready(&l), "started again: back in the set");
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*calls.borrow(), 1);
    assert_eq!(*made.borrow(), 1, "the same tag reuses the callback");
    l.poll_pause(p).unwrap();
    l.poll_pause(p).unwrap(); // twice is fine
    l.poll_stop(p).unwrap();
    l.poll_pause(p).unwrap(); // a stopped handle stays stopped
    assert!(!epoll_ready(&l));
    assert_eq!(l.poll_start_with(p, 0, 7, || Box::new(|_, _, _| {})), Err(Error::Inval));
    l.close(p, None).unwrap();
    l.close(other, None).unwrap();
    assert_eq!(l.poll_pause(p), Err(Error::Inval), "closed");
}

#[test]
fn poll_of_a_bad_descriptor_is_an_error() {
    let mut l = Loop::new().unwrap();
    let p = l.poll_init(1_000_000, 0).unwrap();
    assert_eq!(l.poll_start(p, READABLE, Box::new(|_, _, _| {})), Err(Error::BadF));
    assert!(!l.is_active(p).unwrap());
    let file = std::fs::File::open("/proc/self/status").unwrap();
    let q = l.poll_init(file.as_raw_fd(), 0).unwrap();
    assert_eq!(l.poll_start(q, READABLE, Box::new(|_, _, _| {})), Err(Error::Perm), "regular files");
}

#[test]
fn async_sends_from_four_threads_are_never_lost() {
    const THREADS: usize = 4;
    const SENDS: usize = 10_000;
    let mut l = Loop::new().unwrap();
    let calls = Rc::new(RefCell::new(0usize));
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen_total = Rc::new(RefCell::new(0usize));
    let (c, s, seen) = (calls.clone(), sent.clone(), seen_total.clone());
    let h = l.async_init(
        0,
        Box::new(move |_, _| {
            *c.borrow_mut() += 1;
            *seen.borrow_mut() = s.load(std::sync::atomic::Ordering::SeqCst);
        }),
    );
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let tx = l.async_sender(h).unwrap();
            let sent = sent.clone();
            std::thread::spawn(move || {
                for _ in 0..SENDS {
                    sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    tx.send().unwrap();
                }
            })
        })
        .collect();
    // Every send made after a callback started causes another callback, so the
    // callbacks end up seeing the last count (each Once blocks until a wakeup).
    while *seen_total.borrow() < THREADS * SENDS {
        assert!(l.run(RunMode::Once).unwrap());
    }
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(*seen_total.borrow(), THREADS * SENDS);
    assert!(*calls.borrow() >= 1 && *calls.borrow() <= THREADS * SENDS);
    l.close(h, None).unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
    let tx = l.async_sender(h);
    assert!(tx.is_err(), "closed");
}

/// A timer that falls due at the start of a `Once` iteration is its work:
/// the poll after it must not block, even with a wakeup source active
/// (before, it waited for that source alone: the poco scheduler's idle step
/// hung under qemu, where the time between starting its timer and running
/// the loop was longer than the timer).
#[test]
fn once_does_not_block_after_a_due_timer() {
    let mut l = Loop::new().unwrap();
    let out = log();
    let wakeup = l.async_init(0, note(&out, "async"));
    let tx = l.async_sender(wakeup).unwrap();
    let t = l.timer_init(0);
    l.timer_start(t, 0, 0, note(&out, "timer")).unwrap();
    // Should `Once` block, the async sent late ends the wait (and the check).
    let late = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(2));
        tx.send().unwrap();
    });
    let start = std::time::Instant::now();
    assert!(l.run(RunMode::Once).unwrap(), "the async keeps it alive");
    assert!(start.elapsed() < std::time::Duration::from_secs(1), "Once blocked after the timer ran");
    assert_eq!(*out.borrow(), ["timer"]);
    late.join().unwrap();
    assert!(l.run(RunMode::Once).unwrap());
    assert_eq!(*out.borrow(), ["timer", "async"], "and blocks when nothing ran");
    l.close(wakeup, None).unwrap();
    l.close(t, None).unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
}

#[test]
fn close_callbacks_run_later_once_and_invalidate_the_handle() {
    let mut l = Loop::new().unwrap();
    let out = log();
    let t = l.timer_init(0);
    l.timer_start(t, 60_000 * MS, 0, note(&out, "never")).unwrap();
    let o = out.clone();
    l.close(t, Some(Box::new(move |_, _| o.borrow_mut().push("closed".into())))).unwrap();
    assert!(out.borrow().is_empty(), "never inside close");
    assert_eq!(l.close(t, None), Err(Error::Inval), "closing twice");
    assert_eq!(l.timer_start(t, 0, 0, note(&out, "x")), Err(Error::Inval), "closing");
    assert_eq!(l.backend_timeout(), 0, "a close callback is due");
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(*out.borrow(), ["closed"]);
    assert_eq!(l.data(t), Err(Error::Inval));
    assert_eq!(l.handle_count(), 0);
    assert_eq!(l.check_close(), Ok(()));
}

#[test]
fn handles_closed_without_a_callback_need_no_run_before_closing_the_loop() {
    let mut l = Loop::new().unwrap();
    let out = Rc::new(RefCell::new(Vec::new()));
    let (quiet, told) = (l.timer_init(0), l.timer_init(0));
    l.timer_start(quiet, 1_000_000_000, 0, note(&out, "fired")).unwrap();
    l.close(quiet, None).unwrap();
    let o = out.clone();
    l.close(told, Some(Box::new(move |_, _| o.borrow_mut().push("closed".into())))).unwrap();
    l.free_quietly_closed().unwrap();
    assert_eq!(l.handle_count(), 1, "the quiet one is gone");
    assert!(out.borrow().is_empty(), "callbacks run only from run");
    assert_eq!(l.check_close(), Err(Error::Busy));
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(*out.borrow(), ["closed"]);
    assert_eq!(l.check_close(), Ok(()));
}

#[test]
fn a_handle_may_close_itself_from_its_callback() {
    let mut l = Loop::new().unwrap();
    let out = log();
    let t = l.timer_init(0);
    let o = out.clone();
    l.timer_start(
        t,
        0,
        MS,
        Box::new(move |l, h| {
            o.borrow_mut().push("tick".into());
            let o = o.clone();
            l.close(h, Some(Box::new(move |_, _| o.borrow_mut().push("closed".into())))).unwrap();
        }),
    )
    .unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(*out.borrow(), ["tick", "closed"]);
}

#[test]
fn run_from_a_callback_is_refused_and_stop_returns() {
    let mut l = Loop::new().unwrap();
    let res = Rc::new(RefCell::new(None));
    let r = res.clone();
    let t = l.timer_init(0);
    l.timer_start(
        t,
        0,
        MS,
        Box::new(move |l, _| {
            *r.borrow_mut() = Some(l.run(RunMode::NoWait));
            l.stop();
        }),
    )
    .unwrap();
    assert!(l.run(RunMode::Default).unwrap(), "stopped while the repeating timer is active");
    assert_eq!(*res.borrow(), Some(Err(Error::Busy)));
    assert_eq!(l.check_close(), Err(Error::Busy), "a handle remains");
    drop(l); // dropping frees everything anyway
}

#[test]
fn backend_fd_and_timeout_let_a_host_embed_the_loop() {
    let mut l = Loop::new().unwrap();
    assert_eq!(l.backend_timeout(), 0, "nothing alive");
    let out = log();
    let t = l.timer_init(0);
    l.timer_start(t, 50 * MS, 0, note(&out, "timer")).unwrap();
    let ms = l.backend_timeout();
    assert!((1..=50).contains(&ms), "{ms} ms: at most the 50 ms left, rounded up");
    let h = l.async_init(0, note(&out, "async"));
    l.async_sender(h).unwrap().send().unwrap();
    // The host waits on the backend fd (here with poll(2)), then runs NoWait.
    let mut pfd = libc::pollfd { fd: l.backend_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut pfd, 1, 1000) };
    assert_eq!(n, 1, "the backend fd is readable after a send");
    assert!(l.run(RunMode::NoWait).unwrap());
    assert_eq!(*out.borrow(), ["async"]);
    std::thread::sleep(std::time::Duration::from_millis(55));
    assert_eq!(l.backend_timeout(), 0, "the timer is due");
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*out.borrow(), ["async", "timer"]);
    l.close(h, None).unwrap();
    l.close(t, None).unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
}

#[test]
fn handle_ids_of_one_kind_are_refused_by_another() {
    let mut l = Loop::new().unwrap();
    let t = l.timer_init(0);
    let h = l.async_init(0, Box::new(|_, _| {}));
    assert_eq!(l.poll_start(t, READABLE, Box::new(|_, _, _| {})), Err(Error::Inval));
    assert_eq!(l.timer_start(h, 0, 0, Box::new(|_, _| {})), Err(Error::Inval));
    assert!(l.async_sender(t).is_err());
    assert_eq!(l.data(Handle::from_raw(12345 << 32 | 77).unwrap()), Err(Error::Inval));
}

#[test]
fn work_runs_on_the_pool_and_after_on_the_loop() {
    let mut l = Loop::new().unwrap();
    let loop_thread = std::thread::current().id();
    let done = Rc::new(RefCell::new(Vec::new()));
    for i in 0..8 {
        let d = done.clone();
        l.work_submit(
            Box::new(move || assert_ne!(std::thread::current().id(), loop_thread)),
            Box::new(move |_, _, status| {
                assert_eq!(std::thread::current().id(), loop_thread);
                d.borrow_mut().push((i, status));
            }),
        );
    }
    assert!(l.alive());
    assert!(!l.run(RunMode::Default).unwrap());
    let mut got = done.borrow().clone();
    got.sort_by_key(|(i, _)| *i);
    assert_eq!(got, (0..8).map(|i| (i, Ok(()))).collect::<Vec<_>>());
    assert_eq!(l.check_close(), Ok(()));
}

#[test]
fn loops_share_a_pool_and_its_stop_cancels_their_work() {
    let pool = Pool::new(1);
    let (mut a, mut b) = (Loop::new().unwrap(), Loop::new().unwrap());
    a.set_pool(pool.clone()).unwrap();
    b.set_pool(pool.clone()).unwrap();
    let out = Rc::new(RefCell::new(Vec::new()));
    for (l, name) in [(&mut a, "a"), (&mut b, "b")] {
        let o = out.clone();
        l.work_submit(Box::new(|| {}), Box::new(move |_, _, s| o.borrow_mut().push((name, s))));
    }
    assert!(!a.run(RunMode::Default).unwrap());
    assert!(!b.run(RunMode::Default).unwrap());
    pool.stop();
    drop(pool); // the loops keep it alive
    let o = out.clone();
    a.work_submit(
        Box::new(|| panic!("a stopped pool runs nothing")),
        Box::new(move |_, _, s| o.borrow_mut().push(("late", s))),
    );
    assert!(!a.run(RunMode::Default).unwrap());
    assert_eq!(*out.borrow(), [("a", Ok(())), ("b", Ok(())), ("late", Err(Error::Canceled))]);
    assert_eq!(a.check_close(), Ok(()));
    assert_eq!(b.check_close(), Ok(()));
}

#[test]
fn work_not_started_can_be_cancelled_and_still_calls_back_once() {
    let mut l = Loop::new().unwrap();
    l.set_pool(Pool::new(1)).unwrap();
    assert_eq!(l.set_pool(Pool::new(1)), Err(Error::Busy));
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (started_tx, started) = std::sync::mpsc::channel::<()>();
    let out = Rc::new(RefCell::new(Vec::new()));
    let o = out.clone();
    let first = l.work_submit(
        Box::new(move || {
            started_tx.send(()).unwrap();
            wait.recv().unwrap();
        }),
        Box::new(move |_, _, s| o.borrow_mut().push(("first", s))),
    );
    let o = out.clone();
    let second = l.work_submit(
        Box::new(|| panic!("cancelled work must not run")),
        Box::new(move |_, _, s| o.borrow_mut().push(("second", s))),
    );
    started.recv().unwrap();
    assert_eq!(l.request_cancel(first), Err(Error::Busy), "running");
    assert_eq!(l.request_cancel(second), Ok(()));
    assert!(out.borrow().is_empty(), "never inside cancel");
    assert_eq!(l.request_cancel(second), Err(Error::Busy), "already cancelled");
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(*out.borrow(), [("second", Err(Error::Canceled))]);
    go.send(()).unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(*out.borrow(), [("second", Err(Error::Canceled)), ("first", Ok(()))]);
    assert_eq!(l.request_cancel(first), Err(Error::Inval), "finished");
}

#[test]
fn signal_handles_see_signals_sent_to_the_process() {
    let mut l = Loop::new().unwrap();
    let got = Rc::new(RefCell::new(Vec::new()));
    let (g1, g2) = (got.clone(), got.clone());
    let a = l.signal_init(0);
    let b = l.signal_init(0);
    l.signal_start(a, libc::SIGUSR1, Box::new(move |_, _, s| g1.borrow_mut().push(("a", s)))).unwrap();
    l.signal_start(
        b,
        libc::SIGUSR1,
        Box::new(move |l, h, s| {
            g2.borrow_mut().push(("b", s));
            l.close(h, None).unwrap();
        }),
    )
    .unwrap();
    assert_eq!(l.signal_start(a, libc::SIGKILL, Box::new(|_, _, _| {})), Err(Error::Inval));
    assert_eq!(l.signal_start(a, 0, Box::new(|_, _, _| {})), Err(Error::Inval));
    // SAFETY: raise only sends a signal to this thread, which blocks it.
    unsafe { libc::raise(libc::SIGUSR1) };
    l.run(RunMode::Once).unwrap();
    assert_eq!(*got.borrow(), [("a", libc::SIGUSR1), ("b", libc::SIGUSR1)], "every handle of the signal");
    l.signal_stop(a).unwrap();
    l.close(a, None).unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
}

#[test]
#[allow(clippy::zombie_processes)] // the loop reaps the children
fn child_handles_reap_the_child_and_report_its_exit() {
    let mut l = Loop::new().unwrap();
    let got = Rc::new(RefCell::new(Vec::new()));
    for (script, id) in [("exit 3", 1usize), ("kill -TERM $$", 2)] {
        let child = std::process::Command::new("sh").args(["-c", script]).spawn().unwrap();
        let h = l.child_init(child.id() as i32, id).unwrap();
        let g = got.clone();
        l.child_start(
            h,
            Box::new(move |l, h, exit| {
                g.borrow_mut().push((l.data(h).unwrap(), exit));
                l.close(h, None).unwrap();
            }),
        )
        .unwrap();
    }
    assert!(!l.run(RunMode::Default).unwrap());
    let mut got = got.borrow().clone();
    got.sort_by_key(|(id, _)| *id);
    assert_eq!(got, [(1, Ok(Exit { status: 3, signal: 0 })), (2, Ok(Exit { status: 0, signal: libc::SIGTERM }))]);
    assert_eq!(l.child_init(0, 0), Err(Error::Inval));
    assert_eq!(l.child_init(i32::MAX, 0), Err(Error::Srch));
    let parent = std::os::unix::process::parent_id() as i32;
    assert_eq!(l.child_init(parent, 0), Err(Error::Child), "alive, not ours: it could never be reaped");
}

#[test]
fn timer_again_and_restarts_work_from_the_timers_own_callback() {
    let mut l = Loop::new().unwrap();
    let count = Rc::new(RefCell::new(0));
    let t = l.timer_init(0);
    let c = count.clone();
    l.timer_start_with(
        t,
        0,
        MS,
        7,
        Box::new(move || -> Callback {
            Box::new(move |l, h| {
                *c.borrow_mut() += 1;
                match *c.borrow() {
                    1 => l.timer_again(h).unwrap(),
                    2 => l.timer_start_with(h, 0, 0, 7, || panic!("same tag: the callback is kept")).unwrap(),
                    _ => {}
                }
            })
        }),
    )
    .unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
    assert_eq!(*count.borrow(), 3, "again, then restarted once more, one-shot");
    l.timer_start_with(t, 0, 0, 7, || panic!("kept")).unwrap();
    l.run(RunMode::Default).unwrap();
    assert_eq!(*count.borrow(), 4);
}

// ===== loop tasks awaiting operations =====

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
