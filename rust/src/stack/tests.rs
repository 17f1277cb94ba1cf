//! Coroutines on a loop, driven through the Rust API (the C ABI has its own
//! tests in tests/c/test_coro.c).

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::time::Duration;

use super::coro::{self, Source};
use super::*;
use crate::error::Error;
use crate::reactor::{Handle, Loop, RunMode, Wake};

thread_local! {
    /// The loop of the running coroutine's task callback (what the C ABI's
    /// `lend` does for C code).
    static LOOP: Cell<*mut Loop> = const { Cell::new(std::ptr::null_mut()) };
    static LOG: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn log(s: impl Into<String>) {
    LOG.with(|l| l.borrow_mut().push(s.into()));
}

fn take_log() -> Vec<String> {
    LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

fn run_task(lp: &mut Loop, h: Handle, wake: Wake, data: usize) -> Handle {
    let co = data as *const Coro;
    let prev = LOOP.with(|c| c.replace(lp as *mut Loop));
    // SAFETY: the task carries its live coroutine.
    let last = unsafe { &*coro::run(co, wake) };
    LOOP.with(|c| c.set(prev));
    let task = last.task().unwrap_or(h);
    if last.state() == State::Finished {
        coro::reap(lp, last);
    }
    task
}

/// Arms a wait with the loop, suspends, returns the wake.
fn wait(state: State, arm: impl FnOnce(&mut Loop, &Coro) -> crate::error::Result<()>) -> Wake {
    let co = coro::running().expect("inside a coroutine");
    // SAFETY: LOOP is the loop lent to the running coroutine's callback.
    arm(unsafe { &mut *LOOP.with(Cell::get) }, co).unwrap();
    // SAFETY: the running coroutine, no loop reference held.
    unsafe { coro::suspend(co, state) }
}

/// A yield that hands the CPU straight to the next ready coroutine when it
/// can (as `cot_coro_yield` does).
fn yield_now() {
    let co = coro::running().expect("inside a coroutine");
    // SAFETY: LOOP is the loop lent to the running coroutine's callback.
    let next = coro::arm_yield_pass(unsafe { &mut *LOOP.with(Cell::get) }, co, run_task).unwrap();
    // SAFETY: the running coroutine, no loop reference held; `next` was taken
    // out of the ready queue for it.
    let w = unsafe {
        match next {
            Some(next) => coro::hand_off(co, next),
            None => coro::suspend(co, State::Ready),
        }
    };
    assert_eq!(w, Wake::Resumed);
}

/// A boxed coroutine on a mapped stack.
fn spawn(l: &mut Loop, f: CoroFn, arg: usize, size: usize) -> *const Coro {
    let place = Box::into_raw(Box::<std::mem::MaybeUninit<Coro>>::new_uninit()).cast::<Coro>();
    // SAFETY: a fresh box, freed by `coro::free`.
    let co = unsafe { Coro::init(place, l, Stack::new(size).unwrap(), f, arg as *mut c_void, 0, run_task, true) };
    coro::start(l, co).unwrap();
    co
}

fn free(l: &mut Loop, co: *const Coro) {
    // SAFETY: a coroutine of `l`, not used afterwards.
    unsafe { coro::free(Some(l), co).unwrap() };
}

fn state(co: *const Coro) -> State {
    // SAFETY: the tests free coroutines only at their end.
    unsafe { (*co).state() }
}

fn close(mut l: Loop) {
    l.run(RunMode::Default).unwrap();
    l.check_close().unwrap();
}

unsafe extern "C" fn pinger(arg: *mut c_void) -> *mut c_void {
    for i in 0..3 {
        log(format!("{}{i}", arg as usize));
        yield_now();
    }
    (arg as usize * 10) as *mut c_void
}

#[test]
fn yields_alternate_and_results_are_kept() {
    let mut l = Loop::new().unwrap();
    let a = spawn(&mut l, pinger, 1, 0);
    let b = spawn(&mut l, pinger, 2, 0);
    assert_eq!(state(a), State::Ready);
    l.run(RunMode::Default).unwrap();
    assert_eq!(take_log(), ["10", "20", "11", "21", "12", "22"]);
    assert_eq!(state(a), State::Finished);
    // SAFETY: `a` and `b` are freed only at the end of this test.
    unsafe {
        assert_eq!((*a).result(), Some(10 as *mut c_void));
        assert_eq!((*b).result(), Some(20 as *mut c_void));
        assert!((*a).task().is_none(), "a finished coroutine's task is closed");
        // Finished coroutines do not hold the loop: it closes first.
        l.check_close().unwrap();
        coro::free(None, a).unwrap();
        coro::free(None, b).unwrap();
    }
}

unsafe extern "C" fn sleeper(arg: *mut c_void) -> *mut c_void {
    let ns = arg as u64;
    let w = wait(State::Waiting, |l, co| coro::arm_sleep(l, co, ns));
    log(format!("slept {:?}", coro::sleep_result(w)));
    std::ptr::null_mut()
}

#[test]
fn sleeps_end_in_order() {
    let mut l = Loop::new().unwrap();
    let t0 = crate::time::monotonic_ns();
    let a = spawn(&mut l, sleeper, 3_000_000, 0);
    let b = spawn(&mut l, sleeper, 1_000_000, 0);
    l.run(RunMode::Default).unwrap();
    assert!(crate::time::monotonic_ns() - t0 >= 3_000_000);
    assert_eq!(take_log(), ["slept Ok(())", "slept Ok(())"]);
    free(&mut l, a);
    free(&mut l, b);
    close(l);
}

static SIG: u8 = 0;

fn sig() -> usize {
    &SIG as *const u8 as usize
}

unsafe extern "C" fn waiter(arg: *mut c_void) -> *mut c_void {
    let timeout = (arg as u64 != 0).then_some(arg as u64);
    let w = wait(State::Waiting, |l, co| coro::arm_wait(l, co, sig(), timeout));
    log(format!("wait {:?}", coro::wait_result(w)));
    std::ptr::null_mut()
}

#[test]
fn signal_waits_end_by_notify_timeout_or_wake() {
    let mut l = Loop::new().unwrap();
    // Notified.
    let a = spawn(&mut l, waiter, 0, 0);
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(state(a), State::Waiting);
    assert!(!l.alive(), "waiting only on a signal keeps nothing alive");
    l.task_notify(sig(), crate::sched::When::Later).unwrap();
    l.run(RunMode::Default).unwrap();
    assert_eq!(take_log(), ["wait Ok(())"]);
    // Timed out.
    let b = spawn(&mut l, waiter, 1_000_000, 0);
    l.run(RunMode::Default).unwrap();
    assert_eq!(take_log(), ["wait Err(TimedOut)"]);
    // Woken from outside.
    let c = spawn(&mut l, waiter, 10_000_000_000, 0);
    l.run(RunMode::NoWait).unwrap();
    // SAFETY: `c` is live until the loop below frees it.
    assert!(coro::wake(&mut l, unsafe { &*c }).unwrap());
    // SAFETY: `c` is still live: it is freed at the end of the test.
    assert!(!coro::wake(&mut l, unsafe { &*c }).unwrap(), "woken already");
    l.run(RunMode::Default).unwrap();
    assert_eq!(take_log(), ["wait Err(Canceled)"]);
    // A notification that came before the wake wins.
    let d = spawn(&mut l, waiter, 0, 0);
    l.run(RunMode::NoWait).unwrap();
    l.task_notify(sig(), crate::sched::When::Later).unwrap();
    // SAFETY: `d` is live until the loop below frees it.
    coro::wake(&mut l, unsafe { &*d }).unwrap();
    l.run(RunMode::Default).unwrap();
    assert_eq!(take_log(), ["wait Ok(())"]);
    for co in [a, b, c, d] {
        free(&mut l, co);
    }
    close(l);
}

unsafe extern "C" fn any_waiter(arg: *mut c_void) -> *mut c_void {
    let keys = [sig(), sig() + 1, sig() + 2];
    let sources: Vec<Source<'_>> = keys.iter().map(|&k| Source::Signal(k)).collect();
    let timeout = Some(arg as u64);
    let co = coro::running().unwrap();
    // SAFETY: `LOOP` holds the running loop, which outlives this coroutine, as in `wait`.
    let fired = coro::arm_any(unsafe { &mut *LOOP.with(Cell::get) }, co, &sources, timeout).unwrap();
    assert_eq!(fired, None);
    // SAFETY: `co` is the running coroutine, armed just above, as in `wait`.
    let w = unsafe { coro::suspend(co, State::Waiting) };
    coro::any_done(&sources);
    log(format!("any {:?}", coro::any_result(&sources, w)));
    std::ptr::null_mut()
}

#[test]
fn the_first_of_several_sources_is_told() {
    let mut l = Loop::new().unwrap();
    let a = spawn(&mut l, any_waiter, 50_000_000_000, 0);
    l.run(RunMode::NoWait).unwrap();
    l.task_notify(sig() + 2, crate::sched::When::Later).unwrap();
    l.task_notify(sig() + 1, crate::sched::When::Later).unwrap();
    l.run(RunMode::Default).unwrap();
    assert_eq!(take_log(), ["any Ok((2, 0))"]);
    // Again, on the same watches: the timeout.
    let b = spawn(&mut l, any_waiter, 1_000_000, 0);
    l.run(RunMode::Default).unwrap();
    assert_eq!(take_log(), ["any Err(TimedOut)"]);
    free(&mut l, a);
    free(&mut l, b);
    close(l);
}

unsafe extern "C" fn joiner(arg: *mut c_void) -> *mut c_void {
    // SAFETY: the test passes a live coroutine.
    let other = unsafe { &*(arg as *const Coro) };
    let co = coro::running().unwrap();
    // SAFETY: `LOOP` points to the live loop running this joiner (see `wait`).
    let armed = coro::arm_join(unsafe { &mut *LOOP.with(Cell::get) }, co, other, None).unwrap();
    assert!(armed);
    // SAFETY: `co` is the running coroutine and the join is armed (see `wait`).
    let w = unsafe { coro::suspend(co, State::Waiting) };
    coro::join_done(other);
    log(format!("joined {:?} {:?}", coro::wait_result(w), other.result()));
    std::ptr::null_mut()
}

#[test]
fn joins_wait_for_the_end_and_block_freeing() {
    let mut l = Loop::new().unwrap();
    let a = spawn(&mut l, sleeper, 2_000_000, 0);
    let b = spawn(&mut l, joiner, a as usize, 0);
    l.run(RunMode::NoWait).unwrap();
    // SAFETY: a is live; freeing it is refused.
    assert_eq!(unsafe { coro::free(Some(&mut l), a) }, Err(Error::Busy));
    l.run(RunMode::Default).unwrap();
    assert_eq!(take_log(), ["slept Ok(())", "joined Ok(()) Some(0x0)"]);
    free(&mut l, a);
    free(&mut l, b);
    close(l);
}

#[test]
fn freeing_a_suspended_coroutine_leaves_its_wait() {
    let mut l = Loop::new().unwrap();
    let a = spawn(&mut l, sleeper, 60_000_000_000, 0);
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(state(a), State::Waiting);
    free(&mut l, a);
    let t0 = crate::time::monotonic_ns();
    l.run(RunMode::Default).unwrap(); // its task's close callback, no sleep
    assert!(crate::time::monotonic_ns() - t0 < 1_000_000_000, "its sleep is gone");
    assert!(!l.alive());
    assert!(take_log().is_empty());
    close(l);
}

unsafe extern "C" fn resumer(arg: *mut c_void) -> *mut c_void {
    // SAFETY: the test passes a live coroutine.
    let other = unsafe { &*(arg as *const Coro) };
    // SAFETY: `LOOP` points to the live loop that runs this resumer (see `wait`).
    let l = unsafe { &mut *LOOP.with(Cell::get) };
    log("resumer runs the other");
    coro::resume(l, other).unwrap();
    log(format!("the other suspended: {:?}", other.state()));
    assert_eq!(coro::resume(l, coro::running().unwrap()), Err(Error::Busy));
    std::ptr::null_mut()
}

#[test]
fn resume_runs_a_coroutine_at_once() {
    let mut l = Loop::new().unwrap();
    let place = Box::into_raw(Box::<std::mem::MaybeUninit<Coro>>::new_uninit()).cast::<Coro>();
    // SAFETY: a fresh box.
    let a = unsafe { Coro::init(place, &mut l, Stack::new(0).unwrap(), pinger, 7 as *mut c_void, 0, run_task, true) };
    assert_eq!(a.state(), State::Created);
    let b = spawn(&mut l, resumer, a as *const Coro as usize, 0);
    l.run(RunMode::Default).unwrap();
    assert_eq!(
        take_log(),
        ["resumer runs the other", "70", "the other suspended: Ready", "71", "72"],
        "the resumed coroutine yields back to its resumer, then runs in turns"
    );
    free(&mut l, a);
    free(&mut l, b);
    close(l);
}

#[test]
fn many_coroutines_on_lent_stacks() {
    const N: usize = 10_000;
    const SIZE: usize = 16 * 1024;
    let mut l = Loop::new().unwrap();
    let region = Stack::new(N * SIZE).unwrap(); // one mapping, carved up
    let mut blocks: Vec<std::mem::MaybeUninit<Coro>> = (0..N).map(|_| std::mem::MaybeUninit::uninit()).collect();
    let cos: Vec<*const Coro> = (0..N)
        .map(|i| {
            // SAFETY: disjoint slices of the region, blocks that outlive the
            // coroutines.
            unsafe {
                let stack = Stack::lent(region.base().add(i * SIZE), SIZE).unwrap();
                let co = Coro::init(
                    blocks[i].as_mut_ptr(),
                    &mut l,
                    stack,
                    counter,
                    std::ptr::null_mut(),
                    0,
                    run_task,
                    false,
                );
                coro::start(&mut l, co).unwrap();
                co as *const Coro
            }
        })
        .collect();
    l.run(RunMode::Default).unwrap();
    assert_eq!(COUNT.with(Cell::get), 3 * N);
    for co in cos {
        free(&mut l, co);
    }
    close(l);
}

thread_local! {
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

unsafe extern "C" fn counter(_: *mut c_void) -> *mut c_void {
    for _ in 0..3 {
        COUNT.with(|c| c.set(c.get() + 1));
        yield_now();
    }
    std::ptr::null_mut()
}

/// Recurses until the stack overflows, touching each frame.
#[inline(never)]
fn recurse(depth: usize) -> usize {
    let frame = std::hint::black_box([depth as u8; 512]);
    if std::hint::black_box(depth) == usize::MAX {
        return 0;
    }
    recurse(depth + 1) + frame[depth % 512] as usize
}

unsafe extern "C" fn overflow(_: *mut c_void) -> *mut c_void {
    recurse(0) as *mut c_void
}

#[test]
fn a_stack_overflow_hits_the_guard_page() {
    // SAFETY: the child only runs the loop with the coroutine, then exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: plain calls on this process: the default action for the
        // fault (the harness may have a handler), and no core file, so the
        // death is quick wherever core dumps are on (qemu-user writes its own).
        unsafe {
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            libc::prctl(libc::PR_SET_DUMPABLE, 0);
            libc::setrlimit(libc::RLIMIT_CORE, &libc::rlimit { rlim_cur: 0, rlim_max: 0 });
        }
        let mut l = Loop::new().unwrap();
        spawn(&mut l, overflow, 0, 16 * 1024);
        let _ = l.run(RunMode::Default);
        // SAFETY: leaves the child at once.
        unsafe { libc::_exit(0) };
    }
    let status = wait_child(pid, Duration::from_secs(60));
    assert!(libc::WIFSIGNALED(status), "the child died of a signal, status {status:#x}");
    assert_eq!(libc::WTERMSIG(status), libc::SIGSEGV);
}

/// Runs the scheduler's deep-chain tests; returns 1 if they passed (a panic
/// must not unwind out of the coroutine).
unsafe extern "C" fn deep_chains(_: *mut c_void) -> *mut c_void {
    use crate::sched::tests::{DEEP, deep_chain, deep_chain_paths};
    let passed = std::panic::catch_unwind(|| {
        deep_chain(DEEP);
        deep_chain_paths(DEEP / 10);
    });
    passed.is_ok() as usize as *mut c_void
}

#[test]
fn a_million_nested_combined_signals_fit_a_64_kib_coroutine_stack() {
    let mut l = Loop::new().unwrap();
    let co = spawn(&mut l, deep_chains, 0, 64 * 1024);
    l.run(RunMode::Default).unwrap();
    // SAFETY: the coroutine is freed only below.
    assert_eq!(unsafe { (*co).result() }.map(|r| r as usize), Some(1), "the chains' checks passed");
    // SAFETY: finished, not used afterwards.
    unsafe { coro::free(None, co).unwrap() };
    close(l);
}

/// Waits for a forked child; a child alive after `limit` is killed and the
/// test fails, so a hang costs a minute, not the CI's whole budget.
fn wait_child(pid: libc::pid_t, limit: Duration) -> i32 {
    let t0 = std::time::Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: polls the child just forked; `status` is ours.
        match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
            0 if t0.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            0 => {
                // SAFETY: kills and reaps our own child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                panic!("the child neither faulted nor exited within {limit:?}");
            }
            r => {
                assert_eq!(r, pid);
                return status;
            }
        }
    }
}
