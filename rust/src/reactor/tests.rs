//! Tests of the loop: timers, poll, async, close, run modes, embedding,
//! work, signals and children. Loop tasks: `task_tests.rs`.

use super::*;
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
