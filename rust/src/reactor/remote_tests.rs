//! Tests of posts (`remote.rs`) and of the inbox's wakeups (`inbox.rs`):
//! order, batches, rings of the eventfd, a dropped loop.

use super::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counts its drops: a post's capture proves the post was dropped.
struct Token(Arc<AtomicUsize>);

impl Drop for Token {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Is the loop's epoll descriptor readable?
fn backend_ready(l: &Loop) -> bool {
    let mut pfd = libc::pollfd { fd: l.backend_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, for the duration of the call.
    unsafe { libc::poll(&mut pfd, 1, 0) == 1 }
}

#[test]
fn posts_from_four_threads_run_once_each_in_each_senders_order() {
    const SENDERS: usize = 4;
    const EACH: u32 = 10_000;
    let mut l = Loop::new().unwrap();
    // An async handle keeps the loop alive until the last post closes it.
    let keep = l.async_init(0, Box::new(|_, _| {}));
    let seen: Arc<Mutex<Vec<Vec<u32>>>> = Arc::new(Mutex::new(vec![Vec::new(); SENDERS]));
    let count = Arc::new(AtomicUsize::new(0));
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| {
            let (remote, seen, count) = (l.remote(), seen.clone(), count.clone());
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let (seen, count) = (seen.clone(), count.clone());
                    remote
                        .post(move |l| {
                            seen.lock().unwrap()[s].push(i);
                            if count.fetch_add(1, Ordering::Relaxed) + 1 == SENDERS * EACH as usize {
                                l.close(keep, None).unwrap();
                            }
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    assert!(!l.run(RunMode::Default).unwrap());
    for s in senders {
        s.join().unwrap();
    }
    let expected: Vec<u32> = (0..EACH).collect();
    for (s, got) in seen.lock().unwrap().iter().enumerate() {
        assert!(*got == expected, "sender {s}: each post once, in the order sent");
    }
    assert_eq!(count.load(Ordering::Relaxed), SENDERS * EACH as usize);
}

#[test]
fn a_post_that_posts_to_its_own_loop_runs_in_the_next_iteration() {
    let mut l = Loop::new().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let (remote, inner) = (l.remote(), log.clone());
    l.remote()
        .post(move |_| {
            inner.lock().unwrap().push("first");
            let again = inner.clone();
            remote.post(move |_| again.lock().unwrap().push("second")).unwrap();
        })
        .unwrap();
    assert!(l.alive(), "a pending post keeps the loop alive");
    assert_eq!(l.backend_timeout(), 0, "a pending post: do not block");
    assert!(l.run(RunMode::NoWait).unwrap(), "the second post is pending");
    assert_eq!(*log.lock().unwrap(), ["first"], "one iteration runs one batch");
    assert!(!l.run(RunMode::NoWait).unwrap());
    assert_eq!(*log.lock().unwrap(), ["first", "second"]);
}

#[test]
fn a_post_that_keeps_posting_itself_does_not_starve_a_timer() {
    fn again(remote: Remote, stop: Arc<AtomicBool>, n: Arc<AtomicUsize>) {
        let r = remote.clone();
        remote
            .post(move |_| {
                n.fetch_add(1, Ordering::Relaxed);
                if !stop.load(Ordering::Relaxed) {
                    again(r, stop, n);
                }
            })
            .unwrap();
    }
    let mut l = Loop::new().unwrap();
    let (stop, n) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    again(l.remote(), stop.clone(), n.clone());
    let t = l.timer_init(0);
    let s = stop.clone();
    l.timer_start(t, 2_000_000, 0, Box::new(move |_, _| s.store(true, Ordering::Relaxed))).unwrap();
    let start = Instant::now();
    assert!(!l.run(RunMode::Default).unwrap(), "the timer fired, the chain ended");
    assert!(stop.load(Ordering::Relaxed) && start.elapsed() < Duration::from_secs(10));
    assert!(n.load(Ordering::Relaxed) > 1, "the chain ran meanwhile");
}

#[test]
fn a_busy_loop_takes_posts_without_writing_its_eventfd() {
    const POSTS: usize = 10_000;
    let mut l = Loop::new().unwrap();
    let running = Arc::new(AtomicBool::new(false));
    // Always ready: the task schedules itself again at every run.
    let r = running.clone();
    let busy = l.task_init(
        0,
        Box::new(move |l, h, _| {
            r.store(true, Ordering::Release);
            l.task_schedule(h, When::Later).unwrap();
        }),
    );
    l.task_schedule(busy, When::Later).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let (remote, ran2) = (l.remote(), ran.clone());
    let sender = std::thread::spawn(move || {
        while !running.load(Ordering::Acquire) {
            std::thread::yield_now(); // until the loop runs (a loop away is rung)
        }
        for _ in 0..POSTS {
            let ran = ran2.clone();
            remote
                .post(move |_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
        }
        remote.post(|l| l.stop()).unwrap();
    });
    l.run(RunMode::Default).unwrap();
    sender.join().unwrap();
    assert_eq!(ran.load(Ordering::Relaxed), POSTS, "every post ran before the stop");
    assert_eq!(l.inbox.rings(), 0, "no eventfd write: the loop never slept");
    l.close(busy, None).unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
}

#[test]
fn a_sleeping_loop_is_woken_by_a_post_at_once() {
    let mut l = Loop::new().unwrap();
    let keep = l.async_init(0, Box::new(|_, _| {}));
    let go = Arc::new(AtomicBool::new(false));
    let took = Arc::new(Mutex::new(None));
    let (remote, go2, took2) = (l.remote(), go.clone(), took.clone());
    // The sender waits until the loop runs, then until it announces its
    // sleep (before epoll_wait, or in it): the post must ring.
    let sender = std::thread::spawn(move || {
        while !(go2.load(Ordering::Acquire) && remote.inbox.asleep()) {
            std::thread::yield_now();
        }
        let sent = Instant::now();
        remote
            .post(move |l| {
                *took2.lock().unwrap() = Some(Instant::now());
                l.close(keep, None).unwrap();
            })
            .unwrap();
        sent
    });
    let t = l.timer_init(0);
    l.timer_start(t, 0, 0, Box::new(move |_, _| go.store(true, Ordering::Release))).unwrap();
    assert!(!l.run(RunMode::Default).unwrap());
    let sent = sender.join().unwrap();
    let took = took.lock().unwrap().unwrap();
    assert!(took - sent < Duration::from_secs(2), "woken in {:?}", took - sent);
    assert_eq!(l.inbox.rings(), 1, "the post rang the sleeping loop, once");
}

#[test]
fn a_host_waiting_on_the_backend_fd_is_woken_by_a_post_and_no_count_is_left() {
    let mut l = Loop::new().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let (remote, r) = (l.remote(), ran.clone());
    std::thread::spawn(move || {
        remote
            .post(move |_| {
                r.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(l.backend_timeout(), 0, "a post is pending");
    assert!(backend_ready(&l), "outside `run` the loop counts as asleep: the post rang");
    assert!(!l.run(RunMode::NoWait).unwrap());
    assert_eq!(ran.load(Ordering::Relaxed), 1);
    assert!(!backend_ready(&l), "the ring was read: a host does not spin");
    assert_eq!(l.inbox.rings(), 1);
}

#[test]
fn a_dropped_loop_drops_its_queued_posts_and_refuses_new_ones() {
    let mut l = Loop::new().unwrap();
    let (drops, ran) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let post = |drops: &Arc<AtomicUsize>, ran: &Arc<AtomicUsize>| {
        let (token, ran) = (Token(drops.clone()), ran.clone());
        move |_: &mut Loop| {
            let _token = token;
            ran.fetch_add(1, Ordering::Relaxed);
        }
    };
    let remote = l.remote();
    let h = l.async_init(0, Box::new(|_, _| {}));
    let sender = l.async_sender(h).unwrap();
    remote.post(post(&drops, &ran)).unwrap();
    drop(l);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the queued post was dropped with the loop");
    assert_eq!(remote.post(post(&drops, &ran)), Err(Error::Pipe), "the loop is gone");
    assert_eq!(drops.load(Ordering::SeqCst), 2, "the refused post was dropped");
    let (r, d) = (remote.clone(), drops.clone());
    let from_thread = std::thread::spawn(move || r.post(post(&d, &Arc::new(AtomicUsize::new(0)))));
    assert_eq!(from_thread.join().unwrap(), Err(Error::Pipe));
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_eq!(ran.load(Ordering::Relaxed), 0, "none ran");
    assert_eq!(sender.send(), Err(Error::Inval), "an async send: its handle is gone");
}

#[test]
fn close_posts_runs_the_queued_posts_and_refuses_later_ones() {
    let mut l = Loop::new().unwrap();
    let remote = l.remote();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    for i in 0..3 {
        let o = order.clone();
        remote
            .post(move |lp: &mut Loop| {
                o.lock().unwrap().push(i);
                // A post made while the posts close is refused, not lost.
                assert_eq!(lp.remote().post(|_| {}), Err(Error::Pipe));
            })
            .unwrap();
    }
    l.close_posts();
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2], "each ran once, in order");
    assert_eq!(remote.post(|_| {}), Err(Error::Pipe));
    assert!(!l.alive(), "nothing pending");
}
