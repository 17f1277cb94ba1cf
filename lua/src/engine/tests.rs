//! The engine's Lua-free half: sources, timers, jobs and events turn into
//! due operations (with the right `Why`), once; detaching and dropping
//! leave nothing behind. Records are made by hand (no Lua state: the crate
//! is a module and does not link Lua, so nothing here may reach a Lua
//! function, not even through a vtable), without a cothread.

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::sync::Arc;

use cothread::{Sched, Task};

use super::event::Fire;
use super::frame::{Frame, Next, Why};
use super::link::{CoreRef, HostLoop};
use super::lp::{Block, LoopRef};
use super::op::Operation;
use super::records::{Engine, OPERATION_BIT, Wake};
use super::source::{READ, Source, SourceKind};
use crate::lua::Thread;

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
fn socketpair() -> (UnixStream, UnixStream) {
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    (a, b)
}

fn write(mut s: &UnixStream) {
    assert_eq!(s.write(b"x").unwrap(), 1);
}

/// An engine over a fresh core, which the test shares.
fn engine() -> (Rc<RefCell<Sched>>, Box<Engine>) {
    let core = Rc::new(RefCell::new(Sched::new()));
    let e = Box::new(Engine::with_own_loop(CoreRef::new(core.clone()), 1).unwrap());
    (core, e)
}

/// A new task of `core`, in no queue.
fn new_task(core: &RefCell<Sched>) -> Task {
    core.borrow_mut().task_new(0)
}

/// A thread that is only an identity: nothing here steps, so nothing
/// reaches a Lua stack.
fn no_thread() -> Thread {
    // SAFETY: the handle is only stored and compared (`Record::co`): no
    // method of it runs in these tests.
    unsafe { Thread::from_raw(std::ptr::null_mut()) }
}

/// Records an idle operation of `task` waiting on `sources` until `deadline`.
fn wait(e: &Engine, task: Task, sources: &[(&Source, RawFd, u32)], deadline: Option<u64>) -> u64 {
    let mut s = e.inner();
    let id = s.new_record(Box::new(Idle), task, std::ptr::null_mut(), no_thread(), 0);
    let real = s.list(id, |each| names(sources, each)).unwrap();
    s.set_deadline(id, deadline);
    s.rearm(id, real);
    id
}

fn names(sources: &[(&Source, RawFd, u32)], each: &mut dyn FnMut(&Source, RawFd, u32)) {
    for &(src, fd, dir) in sources {
        each(src, fd, dir);
    }
}

/// The due operations (their tasks made ready, marked), with what they
/// step with; forgets that they were due.
fn due(core: &RefCell<Sched>, e: &Engine) -> Vec<(u64, Why)> {
    let mut v = Vec::new();
    let mut s = e.inner();
    let key = s.key;
    for id in s.records.ids() {
        let r = s.records.get_mut(id).unwrap();
        if r.queued {
            let mut core = core.borrow_mut();
            assert_eq!(core.data(r.task), Ok(OPERATION_BIT), "marked");
            assert_eq!(core.ready().find(|&t| t == r.task), Some(r.task), "made ready");
            r.queued = false;
            let _ = core.reschedule(r.task, cothread::When::Wait(key));
            v.push((id, r.why.take().unwrap()));
        }
    }
    v.sort_by_key(|x| x.0);
    v
}

/// Runs the loop until something is due (bounded).
fn poll_some(core: &RefCell<Sched>, e: &Engine) -> Vec<(u64, Why)> {
    for _ in 0..200 {
        e.inner().run_loop(Block::Until(cothread::time::monotonic_ns() + 10_000_000));
        let v = due(core, e);
        if !v.is_empty() {
            return v;
        }
    }
    Vec::new()
}

fn run(e: &Engine, block: Block) {
    e.inner().run_loop(block);
}

fn end(e: &Engine, id: u64) {
    let mut s = e.inner();
    assert!(s.records.get(id).is_some());
    s.disarm(id);
    s.remove(id);
}

/// Is `src` attached to a live engine?
fn attached(src: &Source) -> bool {
    src.owner().is_some()
}

#[test]
fn readiness_makes_a_waiting_operation_due_once() {
    let (core, e) = engine();
    let task = new_task(&core);
    let (a, b) = socketpair();
    let src = Source::new(SourceKind::Socket);
    let id = wait(&e, task, &[(&src, a.as_raw_fd(), READ)], None);
    assert_eq!(e.armed(), 1, "a descriptor keeps run going");
    run(&e, Block::No);
    assert!(due(&core, &e).is_empty());
    write(&b);
    run(&e, Block::Forever);
    run(&e, Block::No); // level-triggered: ready again, still due once
    assert_eq!(due(&core, &e), vec![(id, Why::Ready)]);
    end(&e, id);
    assert_eq!(e.armed(), 0);
    write(&b);
    run(&e, Block::No);
    assert!(due(&core, &e).is_empty(), "an ended operation is never due again");
    drop(e);
    assert!(!attached(&src), "the engine let go of the source");
}

#[test]
fn a_deadline_makes_it_due_with_timeout_and_loses_to_readiness_in_the_same_turn() {
    let (core, e) = engine();
    let (t1, t2) = (new_task(&core), new_task(&core));
    let (a, b) = socketpair();
    let src = Source::new(SourceKind::Socket);
    let t0 = cothread::time::monotonic_ns();
    let timed = wait(&e, t1, &[(&src, a.as_raw_fd(), READ)], Some(t0 + 20_000_000));
    assert_eq!(poll_some(&core, &e), vec![(timed, Why::Timeout)]);
    assert!(cothread::time::monotonic_ns() - t0 >= 20_000_000);
    end(&e, timed);
    // Due and ready in one turn: the readiness wins.
    let both = wait(&e, t2, &[(&src, a.as_raw_fd(), READ)], Some(cothread::time::monotonic_ns() + 1_000_000));
    write(&b);
    std::thread::sleep(std::time::Duration::from_millis(5));
    run(&e, Block::No);
    assert_eq!(due(&core, &e), vec![(both, Why::Ready)]);
    end(&e, both);
}

#[test]
fn a_sleep_leaves_the_sources_until_the_next_wait() {
    let (core, e) = engine();
    let task = new_task(&core);
    let (a, b) = socketpair();
    write(&b); // readable all along, as a listener with its queue full
    let src = Source::new(SourceKind::Socket);
    let on = [(&src, a.as_raw_fd(), READ)];
    let id = wait(&e, task, &on, None);
    let t0 = cothread::time::monotonic_ns();
    {
        // A step answered a sleep: off the source, only its time.
        let mut s = e.inner();
        s.follow_sources(id, Next::Sleep(t0 + 30_000_000), |each| names(&on, each)).unwrap();
        s.set_deadline(id, Some(t0 + 30_000_000));
        assert!(s.records.get(id).unwrap().sources.is_empty());
    }
    assert_eq!(poll_some(&core, &e), vec![(id, Why::Timeout)], "the readable source did not wake it");
    assert!(cothread::time::monotonic_ns() - t0 >= 30_000_000);
    {
        // Then a wait: on the source again.
        let mut s = e.inner();
        s.follow_sources(id, Next::Wait(None), |each| names(&on, each)).unwrap();
        s.set_deadline(id, None);
        assert_eq!(s.records.get(id).unwrap().sources.len(), 1);
    }
    assert_eq!(poll_some(&core, &e), vec![(id, Why::Ready)]);
    end(&e, id);
}

#[test]
fn a_job_makes_it_due_with_its_payload_and_an_ended_one_drops_it() {
    let (core, e) = engine();
    let (t1, t2) = (new_task(&core), new_task(&core));
    let id = wait(&e, t1, &[], None);
    e.inner().submit(id, Box::new(|| Box::new(42u32)));
    e.inner().rearm(id, false);
    assert_eq!(e.armed(), 1, "a job keeps run going");
    assert_eq!(poll_some(&core, &e), vec![(id, Why::Done)]);
    let got = e.inner().records.get_mut(id).unwrap().payload.take().and_then(|p| p.downcast::<u32>().ok());
    assert_eq!(got.map(|b| *b), Some(42));
    end(&e, id);
    // A job whose operation ends first: its late payload is dropped.
    let owned = Arc::new(());
    let mine = owned.clone();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let id = wait(&e, t2, &[], None);
    e.inner().submit(
        id,
        Box::new(move || {
            let _ = rx.recv();
            Box::new(mine)
        }),
    );
    end(&e, id);
    let _ = tx.send(());
    for _ in 0..100 {
        run(&e, Block::Until(cothread::time::monotonic_ns() + 5_000_000));
        assert!(due(&core, &e).is_empty(), "the late job makes nothing due");
        if Arc::strong_count(&owned) == 1 {
            break;
        }
    }
    assert_eq!(Arc::strong_count(&owned), 1, "the late payload was dropped");
}

#[test]
fn an_outside_event_fires_once_and_its_cleanup_runs_however_it_ends() {
    let (core, e) = engine();
    let task = new_task(&core);
    let ran = Rc::new(Cell::new(0));
    for fired in [true, false] {
        let id = wait(&e, task, &[], None);
        let count = ran.clone();
        e.inner().set_on_end(id, Box::new(move |_| count.set(count.get() + 1)));
        let fire = Fire { events: e.inner().events.clone(), id };
        if fired {
            fire.fire_with(Box::new(7i32));
            run(&e, Block::No);
            assert_eq!(due(&core, &e), vec![(id, Why::Done)]);
        }
        end(&e, id);
        fire.fire(); // late: nobody's
        run(&e, Block::No);
        assert!(due(&core, &e).is_empty());
    }
    assert_eq!(ran.get(), 2, "the cleanup ran for the fired and the ended wait");
    assert_eq!(e.armed(), 0);
}

#[test]
fn a_source_moves_between_engines_only_when_idle() {
    let (c1, e1) = engine();
    let (_c2, e2) = engine();
    let task = new_task(&c1);
    let ch = Source::new(SourceKind::Channel);
    let id = wait(&e1, task, &[(&ch, -1, READ)], None);
    assert_eq!(e1.armed(), 0, "a channel alone does not keep run going");
    let busy = wait_failing(&e2, task, &ch);
    assert_eq!(busy, Err(c"channel in use by another scheduler"));
    assert_eq!(e1.inner().sources.waiters(ch.id.get(), true), vec![id]);
    let first = ch.id.get();
    end(&e1, id);
    let moved = wait(&e2, task, &[(&ch, -1, READ)], None);
    assert!(ch.owner().is_some_and(|o| std::ptr::addr_eq(Rc::as_ptr(&o), Rc::as_ptr(&e2.rc))));
    assert_eq!(e2.inner().sources.waiters(ch.id.get(), true), vec![moved]);
    assert!(!e1.inner().sources.ids().contains(&first), "forgotten by the first engine");
    drop(e2);
    assert!(!attached(&ch));
}

/// Tries to attach `src` to `e` for a new operation: the error, if any.
fn wait_failing(e: &Engine, task: Task, src: &Source) -> Result<bool, &'static std::ffi::CStr> {
    let mut s = e.inner();
    let id = s.new_record(Box::new(Idle), task, std::ptr::null_mut(), no_thread(), 0);
    let listed = s.list(id, |each| each(src, -1, READ));
    s.remove(id);
    listed
}

#[test]
fn a_cothread_of_the_last_wake_keeps_what_it_waited_on() {
    let (core, e) = engine();
    let task = new_task(&core);
    assert!(e.last_wake(task).is_none());
    e.inner().wakes.insert(task.to_raw(), Wake { time: 5, readers: 1, writers: 0 });
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
    let core = Rc::new(RefCell::new(Sched::new()));
    let task = new_task(&core);
    // SAFETY: the host's loop lives until the end of the test and is used
    // here only between engine calls.
    let e = Engine::new(CoreRef::new(core.clone()), 1, LoopRef::Host(unsafe { HostLoop::new(host) }));
    let (a, _b) = socketpair();
    let src = Source::new(SourceKind::Socket);
    wait(&e, task, &[(&src, a.as_raw_fd(), READ)], Some(cothread::time::monotonic_ns() + 5_000_000_000));
    // The scheduler's poll runs the host's loop: the host's timer fires there.
    while FIRED.load(Ordering::SeqCst) == 0 {
        run(&e, Block::Until(cothread::time::monotonic_ns() + 10_000_000));
        assert!(due(&core, &e).is_empty());
    }
    drop(e); // parked operation, poll handle, timers: all left on the host's loop
    assert!(!attached(&src));
    // SAFETY: the loop is live and no reference into it is held.
    unsafe {
        assert_eq!(cot_close(host, timer, None), 0);
        assert_eq!(cot_loop_run(host, COT_RUN_DEFAULT), 0, "nothing of the scheduler keeps it alive");
        assert_eq!(cot_loop_close(host), 0, "every handle closed");
    }
}
