use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::reactor::{Handle, Loop};

/// What the test face saw, per hook.
#[derive(Default)]
struct Seen {
    opened: AtomicUsize,
    drained: AtomicUsize,
    cancelled: AtomicUsize,
    closed: AtomicUsize,
    loads: Mutex<Vec<Arc<AtomicUsize>>>,
}

/// A face whose loop is a plain core loop; `fail_at` makes that member's
/// open fail.
struct Plain {
    seen: Arc<Seen>,
    fail_at: Option<usize>,
}

impl Face for Plain {
    type Local = (Loop, Arc<AtomicUsize>);

    fn open(&self, index: usize) -> Result<Self::Local> {
        if self.fail_at == Some(index) {
            return Err(Error::NoMem);
        }
        self.seen.opened.fetch_add(1, Ordering::SeqCst);
        let load = Arc::new(AtomicUsize::new(0));
        self.seen.loads.lock().unwrap().push(load.clone());
        Ok((Loop::new().map_err(|_| Error::NoMem)?, load))
    }

    fn with_loop<R>(&self, local: &mut Self::Local, f: impl FnOnce(&mut Loop) -> R) -> R {
        f(&mut local.0)
    }

    fn load(&self, local: &Self::Local) -> Arc<AtomicUsize> {
        local.1.clone()
    }

    fn drain(&self, _: usize, _: &mut Loop) {
        self.seen.drained.fetch_add(1, Ordering::SeqCst);
    }

    fn cancel(&self, _: usize, _: &mut Loop) {
        self.seen.cancelled.fetch_add(1, Ordering::SeqCst);
    }

    fn close(&self, _: usize, _: Self::Local) {
        self.seen.closed.fetch_add(1, Ordering::SeqCst);
    }
}

fn start(loops: usize) -> (Group, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let g = Group::start(Options { loops, pin: false }, Plain { seen: seen.clone(), fail_at: None }).unwrap();
    (g, seen)
}

/// Runs `f` on loop `index` and returns its result.
fn ask<T: Send + 'static>(g: &Group, index: usize, f: impl FnOnce(&mut Loop) -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    g.post(index, move |lp| tx.send(f(lp)).unwrap()).unwrap();
    rx.recv_timeout(Duration::from_secs(10)).unwrap()
}

#[test]
fn zero_loops_are_refused() {
    let seen = Arc::new(Seen::default());
    let r = Group::start(Options { loops: 0, pin: false }, Plain { seen: seen.clone(), fail_at: None });
    assert_eq!(r.err(), Some(Error::Inval));
    assert_eq!(seen.opened.load(Ordering::SeqCst), 0);
}

#[test]
fn each_loop_runs_its_posts_on_its_own_thread_and_waits_for_more() {
    let (g, _) = start(3);
    assert_eq!(g.len(), 3);
    for i in 0..3 {
        let name = ask(&g, i, |_| std::thread::current().name().unwrap().to_string());
        assert_eq!(name, format!("cothread-loop-{i}"));
    }
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(ask(&g, 2, |_| 7), 7, "an idle loop still runs: the group holds it");
    assert_eq!(g.current_index(), None, "not a member's thread");
    assert_eq!(g.post(3, |_| {}), Err(Error::Inval));
}

#[test]
fn a_member_knows_its_index_and_posts_to_another() {
    let (g, _) = start(2);
    let g = Arc::new(g);
    let (tx, rx) = mpsc::channel();
    let g2 = g.clone();
    g.post(0, move |_| {
        let me = g2.current_index();
        let g3 = g2.clone();
        g2.post(1, move |_| tx.send((me, g3.current_index())).unwrap()).unwrap();
    })
    .unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), (Some(0), Some(1)));
    // The last clone may be dropped on a member's thread: wait for ours.
    while Arc::strong_count(&g) > 1 {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_stop_of_the_loop_does_not_end_a_member() {
    let (g, seen) = start(1);
    ask(&g, 0, |lp| lp.stop());
    assert_eq!(ask(&g, 0, |_| 1), 1);
    assert_eq!(seen.closed.load(Ordering::SeqCst), 0);
}

#[test]
fn shutdown_drains_idle_loops_without_cancelling_them() {
    let (g, seen) = start(4);
    let t = Instant::now();
    g.shutdown(Duration::from_secs(10)).unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "idle loops end at once");
    assert_eq!(seen.drained.load(Ordering::SeqCst), 4);
    assert_eq!(seen.cancelled.load(Ordering::SeqCst), 0);
    assert_eq!(seen.closed.load(Ordering::SeqCst), 4);
    assert_eq!(g.post(0, |_| {}), Err(Error::Pipe), "gone");
    assert_eq!(g.least_loaded(), None);
    g.shutdown(Duration::ZERO).unwrap(); // a second time: nothing
}

/// Starts a repeating timer on `lp`: open work that never ends by itself.
fn busy(lp: &mut Loop) -> Handle {
    let h = lp.timer_init(0);
    lp.timer_start(h, 1_000_000, 1_000_000, Box::new(|_, _| {})).unwrap();
    h
}

#[test]
fn open_work_gets_its_grace_then_is_cancelled() {
    let (g, seen) = start(2);
    ask(&g, 1, |lp| {
        busy(lp);
    });
    let t = Instant::now();
    g.shutdown(Duration::from_millis(100)).unwrap();
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(100), "the busy loop had its grace: {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(seen.drained.load(Ordering::SeqCst), 2);
    assert_eq!(seen.cancelled.load(Ordering::SeqCst), 1, "only the busy loop");
    assert_eq!(seen.closed.load(Ordering::SeqCst), 2);
}

#[test]
fn work_that_ends_within_the_grace_is_not_cancelled() {
    let (g, seen) = start(1);
    let (tx, rx) = mpsc::channel();
    ask(&g, 0, move |lp| {
        let h = lp.timer_init(0);
        lp.timer_start(
            h,
            30_000_000,
            0,
            Box::new(move |lp, h| {
                tx.send(()).unwrap();
                lp.close(h, None).unwrap();
            }),
        )
        .unwrap();
    });
    g.shutdown(Duration::from_secs(10)).unwrap();
    rx.try_recv().expect("the timer fired before the loop ended");
    assert_eq!(seen.cancelled.load(Ordering::SeqCst), 0);
}

#[test]
fn posts_during_the_grace_run_and_are_refused_once_ended() {
    let (g, _) = start(1);
    let g = Arc::new(g);
    ask(&g, 0, |lp| {
        busy(lp);
    });
    let g2 = g.clone();
    let shutter = std::thread::spawn(move || g2.shutdown(Duration::from_millis(300)));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(ask(&g, 0, |_| 5), 5, "the draining loop still takes posts");
    shutter.join().unwrap().unwrap();
    assert_eq!(g.post(0, |_| {}), Err(Error::Pipe));
}

#[test]
fn least_loaded_follows_the_faces_counters() {
    let (g, seen) = start(3);
    let loads = seen.loads.lock().unwrap().clone();
    assert_eq!(loads.len(), 3);
    assert_eq!(g.least_loaded(), Some(0), "all equal: the first");
    loads[0].store(5, Ordering::SeqCst);
    loads[1].store(2, Ordering::SeqCst);
    loads[2].store(3, Ordering::SeqCst);
    // The counters' order is the order the threads opened their loops.
    let least = g.least_loaded().unwrap();
    assert_eq!(g.load(least), 2);
    assert_eq!(g.load(9), 0);
}

#[test]
fn shutdown_from_a_members_thread_is_refused() {
    let (g, _) = start(1);
    let g = Arc::new(g);
    let (tx, rx) = mpsc::channel();
    let g2 = g.clone();
    g.post(0, move |_| tx.send(g2.shutdown(Duration::ZERO)).unwrap()).unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), Err(Error::Busy));
    g.shutdown(Duration::ZERO).unwrap();
    // The closure's clone went with the loop; ours is the last.
    assert_eq!(Arc::strong_count(&g), 1);
}

#[test]
fn dropping_the_group_ends_every_loop() {
    let (g, seen) = start(3);
    ask(&g, 0, |lp| {
        busy(lp);
    });
    drop(g);
    assert_eq!(seen.closed.load(Ordering::SeqCst), 3);
    assert_eq!(seen.drained.load(Ordering::SeqCst), 3);
    assert!(seen.cancelled.load(Ordering::SeqCst) >= 1, "no grace: the busy loop at least");
}

#[test]
fn a_loop_that_cannot_be_made_fails_the_start_and_ends_the_others() {
    let seen = Arc::new(Seen::default());
    let r = Group::start(Options { loops: 3, pin: false }, Plain { seen: seen.clone(), fail_at: Some(1) });
    assert_eq!(r.err(), Some(Error::NoMem));
    assert_eq!(seen.opened.load(Ordering::SeqCst), 2);
    assert_eq!(seen.closed.load(Ordering::SeqCst), 2, "the others were shut down");
}

#[test]
fn pinned_members_run_on_one_processor_each() {
    let cpus = crate::util::cpu::allowed();
    let seen = Arc::new(Seen::default());
    let g = Group::start(Options { loops: 2, pin: true }, Plain { seen, fail_at: None }).unwrap();
    for i in 0..2 {
        assert_eq!(ask(&g, i, |_| crate::util::cpu::allowed()), vec![cpus[i % cpus.len()]]);
    }
}

#[test]
fn every_post_accepted_runs_even_when_the_shutdown_cancels() {
    for _ in 0..20 {
        let (g, _) = start(2);
        let g = Arc::new(g);
        ask(&g, 0, |lp| {
            busy(lp);
        });
        let ran = Arc::new(AtomicUsize::new(0));
        let (g2, r2) = (g.clone(), ran.clone());
        let poster = std::thread::spawn(move || {
            let mut accepted = 0;
            for k in 0..100_000 {
                let r = r2.clone();
                match g2.post(k % 2, move |_| {
                    r.fetch_add(1, Ordering::SeqCst);
                }) {
                    Ok(()) => accepted += 1,
                    Err(e) => {
                        assert_eq!(e, Error::Pipe);
                        break;
                    }
                }
            }
            accepted
        });
        std::thread::sleep(Duration::from_millis(2));
        g.shutdown(Duration::ZERO).unwrap();
        let accepted = poster.join().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), accepted, "accepted posts ran, once each");
    }
}
