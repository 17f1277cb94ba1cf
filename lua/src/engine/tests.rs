//! The engine's Lua-free half: sources, timers, jobs and events turn into
//! due operations (with the right `Why`), once; detaching and dropping
//! leave nothing behind. Records are made by hand (no Lua state: the crate
//! is a module and does not link Lua, so nothing here may reach a Lua
//! function, not even through a vtable), without a cothread.

use std::cell::Cell;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::Arc;

use cothread::{Sched, Task};

use super::event::{Fire, new_id};
use super::frame::{Frame, Next, Why};
use super::lp::{Block, LoopRef};
use super::op::Operation;
use super::records::{Engine, OPERATION_BIT, Wake};
use super::source::{READ, Source, SourceKind};

/// An operation that is never stepped here.
struct Idle;

impl Operation for Idle {
    fn step(&mut self, _f: &mut Frame, _why: Why) -> Next {
        Next::Done(0)
    }

    fn block(&mut self, _f: &mut Frame, _next: Next) -> Why {
        Why::Timeout
    }
}

/// A connected pair of non-blocking stream sockets.
fn socketpair() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is valid for two ints.
    let r = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0, fds.as_mut_ptr()) };
    assert_eq!(r, 0);
    (fds[0], fds[1])
}

fn write(fd: RawFd) {
    // SAFETY: writes one byte from a valid buffer.
    assert_eq!(unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) }, 1);
}

fn close(fds: &[RawFd]) {
    for &fd in fds {
        // SAFETY: the test owns its descriptors.
        unsafe { libc::close(fd) };
    }
}

/// An engine over a fresh core (both boxed: the engine keeps the core's address).
fn engine() -> (Box<Sched>, Box<Engine>) {
    let mut core = Box::new(Sched::new());
    let e = Box::new(Engine::with_own_loop(&raw mut *core, 1).unwrap());
    (core, e)
}

/// Records an idle operation of `task` waiting on `sources` until `deadline`.
fn wait(e: &mut Engine, task: Task, sources: &[(*mut Source, RawFd, u32)], deadline: Option<u64>) -> u64 {
    let id = new_id();
    let r = e.new_record(Box::new(Idle), task, std::ptr::null_mut(), 0);
    // SAFETY: the record is fresh; the sources are the test's live boxes.
    unsafe {
        let real = e.enlist(r, id, sources).unwrap();
        e.ops.insert(id, r);
        e.set_deadline(r, id, deadline);
        e.rearm(r, real);
    }
    id
}

/// The due operations (their tasks made ready, marked), with what they
/// step with; forgets that they were due.
fn due(e: &mut Engine) -> Vec<(u64, Why)> {
    let mut v = Vec::new();
    for (&id, &r) in &e.ops {
        // SAFETY: a live record; the core outlives the engine.
        unsafe {
            if (*r).queued {
                assert_eq!((*e.sched).data((*r).task), Ok(OPERATION_BIT), "marked");
                assert_eq!((*e.sched).ready().find(|&t| t == (*r).task), Some((*r).task), "made ready");
                (*r).queued = false;
                let _ = (*e.sched).reschedule((*r).task, cothread::When::Wait(e.key));
                v.push((id, (*r).why.take().unwrap()));
            }
        }
    }
    v.sort_by_key(|x| x.0);
    v
}

/// Runs the loop until something is due (bounded).
fn poll_some(e: &mut Engine) -> Vec<(u64, Why)> {
    for _ in 0..200 {
        e.run_loop(Block::Until(cothread::time::monotonic_ns() + 10_000_000));
        let v = due(e);
        if !v.is_empty() {
            return v;
        }
    }
    Vec::new()
}

fn end(e: &mut Engine, id: u64) {
    let r = e.ops.remove(&id).unwrap();
    // SAFETY: the record left `ops` here.
    unsafe {
        e.disarm(r, id);
        e.recycle(r);
    }
}

#[test]
fn readiness_makes_a_waiting_operation_due_once() {
    let (mut core, mut e) = engine();
    let task = core.task_new(0);
    let (a, b) = socketpair();
    let mut src = Box::new(Source::new(SourceKind::Socket));
    let id = wait(&mut e, task, &[(&raw mut *src, a, READ)], None);
    assert_eq!(e.armed(), 1, "a descriptor keeps run going");
    e.run_loop(Block::No);
    assert!(due(&mut e).is_empty());
    write(b);
    e.run_loop(Block::Forever);
    e.run_loop(Block::No); // level-triggered: ready again, still due once
    assert_eq!(due(&mut e), vec![(id, Why::Ready)]);
    end(&mut e, id);
    assert_eq!(e.armed(), 0);
    write(b);
    e.run_loop(Block::No);
    assert!(due(&mut e).is_empty(), "an ended operation is never due again");
    drop(e);
    assert!(src.owner.get().is_none(), "the engine let go of the source");
    close(&[a, b]);
}

#[test]
fn a_deadline_makes_it_due_with_timeout_and_loses_to_readiness_in_the_same_turn() {
    let (mut core, mut e) = engine();
    let (t1, t2) = (core.task_new(0), core.task_new(0));
    let (a, b) = socketpair();
    let mut src = Box::new(Source::new(SourceKind::Socket));
    let t0 = cothread::time::monotonic_ns();
    let timed = wait(&mut e, t1, &[(&raw mut *src, a, READ)], Some(t0 + 20_000_000));
    assert_eq!(poll_some(&mut e), vec![(timed, Why::Timeout)]);
    assert!(cothread::time::monotonic_ns() - t0 >= 20_000_000);
    end(&mut e, timed);
    // Due and ready in one turn: the readiness wins.
    let both = wait(&mut e, t2, &[(&raw mut *src, a, READ)], Some(cothread::time::monotonic_ns() + 1_000_000));
    write(b);
    std::thread::sleep(std::time::Duration::from_millis(5));
    e.run_loop(Block::No);
    assert_eq!(due(&mut e), vec![(both, Why::Ready)]);
    end(&mut e, both);
    drop(e);
    close(&[a, b]);
}

/// An operation that names one source (never stepped here).
struct OnSource(*mut Source, RawFd);

impl Operation for OnSource {
    fn step(&mut self, _f: &mut Frame, _why: Why) -> Next {
        Next::Done(0)
    }

    fn sources(&self, _f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        each(self.0, self.1, READ);
    }

    fn block(&mut self, _f: &mut Frame, _next: Next) -> Why {
        Why::Timeout
    }
}

#[test]
fn a_sleep_leaves_the_sources_until_the_next_wait() {
    let (mut core, mut e) = engine();
    let task = core.task_new(0);
    let (a, b) = socketpair();
    write(b); // readable all along, as a listener with its queue full
    let mut src = Box::new(Source::new(SourceKind::Socket));
    let id = new_id();
    let r = e.new_record(Box::new(OnSource(&raw mut *src, a)), task, std::ptr::null_mut(), 0);
    // SAFETY: nothing reaches the frame's thread: `OnSource` never looks at it.
    let f = unsafe { Frame::new(std::ptr::null_mut(), 0) };
    let t0 = cothread::time::monotonic_ns();
    // SAFETY: the record is fresh, then in `ops`; the source is the test's box.
    unsafe {
        let real = e.list(r, id, &f).unwrap();
        e.ops.insert(id, r);
        e.rearm(r, real);
        // A step answered a sleep: off the source, only its time.
        e.follow_sources(r, id, &f, Next::Sleep(t0 + 30_000_000)).unwrap();
        e.set_deadline(r, id, Some(t0 + 30_000_000));
        assert!((*r).sources.is_empty());
    }
    assert_eq!(poll_some(&mut e), vec![(id, Why::Timeout)], "the readable source did not wake it");
    assert!(cothread::time::monotonic_ns() - t0 >= 30_000_000);
    // SAFETY: `r` is still the live record of `id`.
    unsafe {
        // Then a wait: on the source again.
        e.follow_sources(r, id, &f, Next::Wait(None)).unwrap();
        e.set_deadline(r, id, None);
        assert_eq!((*r).sources.len(), 1);
    }
    assert_eq!(poll_some(&mut e), vec![(id, Why::Ready)]);
    end(&mut e, id);
    drop(e);
    close(&[a, b]);
}

#[test]
fn a_job_makes_it_due_with_its_payload_and_an_ended_one_drops_it() {
    let (mut core, mut e) = engine();
    let (t1, t2) = (core.task_new(0), core.task_new(0));
    let id = wait(&mut e, t1, &[], None);
    let r = e.ops[&id];
    // SAFETY: a live record.
    unsafe { e.submit(r, id, Box::new(|| Box::new(42u32))) };
    // SAFETY: `r` is live; nothing else rearms it.
    unsafe { e.rearm(r, false) };
    assert_eq!(e.armed(), 1, "a job keeps run going");
    assert_eq!(poll_some(&mut e), vec![(id, Why::Done)]);
    // SAFETY: `r` stays live: its operation is due, not ended.
    let got = unsafe { (*r).payload.take().and_then(|p| p.downcast::<u32>().ok()) };
    assert_eq!(got.map(|b| *b), Some(42));
    end(&mut e, id);
    // A job whose operation ends first: its late payload is dropped.
    let owned = Arc::new(());
    let mine = owned.clone();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let id = wait(&mut e, t2, &[], None);
    let r = e.ops[&id];
    // SAFETY: a live record.
    unsafe {
        e.submit(
            r,
            id,
            Box::new(move || {
                let _ = rx.recv();
                Box::new(mine)
            }),
        )
    };
    end(&mut e, id);
    let _ = tx.send(());
    for _ in 0..100 {
        e.run_loop(Block::Until(cothread::time::monotonic_ns() + 5_000_000));
        assert!(due(&mut e).is_empty(), "the late job makes nothing due");
        if Arc::strong_count(&owned) == 1 {
            break;
        }
    }
    assert_eq!(Arc::strong_count(&owned), 1, "the late payload was dropped");
}

#[test]
fn an_outside_event_fires_once_and_its_cleanup_runs_however_it_ends() {
    let (mut core, mut e) = engine();
    let task = core.task_new(0);
    let ran = Rc::new(Cell::new(0));
    for fired in [true, false] {
        let id = wait(&mut e, task, &[], None);
        let r = e.ops[&id];
        let count = ran.clone();
        // SAFETY: a live record.
        unsafe { e.set_on_end(r, Box::new(move |_| count.set(count.get() + 1))) };
        let fire = Fire { events: e.events.clone(), id };
        if fired {
            fire.fire_with(Box::new(7i32));
            e.run_loop(Block::No);
            assert_eq!(due(&mut e), vec![(id, Why::Done)]);
        }
        end(&mut e, id);
        fire.fire(); // late: nobody's
        e.run_loop(Block::No);
        assert!(due(&mut e).is_empty());
    }
    assert_eq!(ran.get(), 2, "the cleanup ran for the fired and the ended wait");
    assert_eq!(e.armed(), 0);
}

#[test]
fn a_source_moves_between_engines_only_when_idle() {
    let (mut c1, mut e1) = engine();
    let (_c2, mut e2) = engine();
    let task = c1.task_new(0);
    let mut ch = Box::new(Source::new(SourceKind::Channel));
    let id = wait(&mut e1, task, &[(&raw mut *ch, -1, READ)], None);
    assert_eq!(e1.armed(), 0, "a channel alone does not keep run going");
    // SAFETY: the source and both engines are live.
    let busy = unsafe { e2.attach(&raw mut *ch, -1) };
    assert_eq!(busy, Err(c"channel in use by another scheduler"));
    assert_eq!(e1.sources.waiters(ch.id.get(), true), vec![id]);
    let first = ch.id.get();
    end(&mut e1, id);
    // SAFETY: `ch` is live, owned by this test.
    let moved = unsafe { e2.attach(&raw mut *ch, -1) }.unwrap();
    assert!(ch.owner.get().is_some_and(|o| std::ptr::addr_eq(o.as_ptr(), &raw const *e2)));
    assert_eq!(ch.id.get(), moved);
    assert!(!e1.sources.ids().contains(&first), "forgotten by the first engine");
    drop(e2);
    assert!(ch.owner.get().is_none());
}

#[test]
fn a_cothread_of_the_last_wake_keeps_what_it_waited_on() {
    let (mut core, e) = engine();
    let task = core.task_new(0);
    assert!(e.last_wake(task).is_none());
    let mut e = e;
    e.wakes.insert(task.to_raw(), Wake { time: 5, readers: 1, writers: 0 });
    assert_eq!(e.last_wake(task), Some(5));
    e.forget(task);
    assert!(e.last_wake(task).is_none());
}

#[test]
fn on_a_host_loop_the_host_handles_run_and_a_dropped_engine_leaves_nothing_behind() {
    use cothread::ffi::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static FIRED: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn fired(_: *mut cot_loop, _: cot_handle, _: *mut std::ffi::c_void) {
        FIRED.fetch_add(1, Ordering::SeqCst);
    }
    let host = cot_loop_new();
    assert!(!host.is_null());
    let mut timer: cot_handle = 0;
    // SAFETY: a live loop, used on this thread only; `timer` is writable.
    unsafe {
        assert_eq!(cot_timer_init(host, std::ptr::null_mut(), &mut timer), 0);
        assert_eq!(cot_timer_start(host, timer, Some(fired), 1, 0), 0);
    }
    let mut core = Box::new(Sched::new());
    let task = core.task_new(0);
    let mut e = Box::new(Engine::new(&raw mut *core, 1, LoopRef::Host(host)));
    let (a, b) = socketpair();
    let mut src = Box::new(Source::new(SourceKind::Socket));
    wait(&mut e, task, &[(&raw mut *src, a, READ)], Some(cothread::time::monotonic_ns() + 5_000_000_000));
    // The scheduler's poll runs the host's loop: the host's timer fires there.
    while FIRED.load(Ordering::SeqCst) == 0 {
        e.run_loop(Block::Until(cothread::time::monotonic_ns() + 10_000_000));
        assert!(due(&mut e).is_empty());
    }
    drop(e); // parked operation, poll handle, timers: all left on the host's loop
    assert!(src.owner.get().is_none());
    // SAFETY: the loop is live and no reference into it is held.
    unsafe {
        assert_eq!(cot_close(host, timer, None), 0);
        assert_eq!(cot_loop_run(host, COT_RUN_DEFAULT), 0, "nothing of the scheduler keeps it alive");
        assert_eq!(cot_loop_close(host), 0, "every handle closed");
    }
    close(&[a, b]);
}
