//! Stackful coroutines, run as tasks of an event loop.
//!
//! A [`Coro`] is a control block (a context, a stack, an entry function and
//! its result) attached to a loop task of a [`Loop`]. The loop runs it like
//! any loop task: when one of the task's nodes reaches the head of the ready
//! queue, the task's callback (the face's, which calls [`run`]) switches into
//! the coroutine's stack; the coroutine runs until it suspends or returns,
//! then switches back and the callback returns to the loop.
//!
//! A waiting call inside the coroutine is two steps: *arm* (`arm_*`, with the
//! loop: place the task's node in a queue, start an operation, place
//! watches), then [`suspend`] (no loop held: switch back to the loop). When
//! the coroutine runs again, the [`Wake`] the loop gave its task says why,
//! and the `*_result` function of the wait turns it into the call's result.
//!
//! A yield may skip the loop: [`arm_yield_pass`] asks the loop for the next
//! ready coroutine (`Loop::task_pass`), and [`hand_off`] switches straight
//! to it, on the loop's behalf; the coroutine that finally switches back
//! hands its own address over, so the loop's callback ([`run`]'s caller)
//! knows whose run ended.
//!
//! # Nodes of a coroutine's task
//! - its own node: in the ready queue after a yield or a start, in a
//!   signal's queue during a wait, postponed during a sleep;
//! - watch [`INTERRUPT`]: placed in the ready queue by [`wake`] (the wait
//!   ends with `Error::Canceled`);
//! - watch [`TIMEOUT`]: postponed to a wait's deadline;
//! - watches from [`FIRST_SOURCE`] on: one per signal or coroutine a
//!   [`arm_any`] waits for.
//!
//! The first node to reach the head of the ready queue runs the coroutine
//! and takes the others out of their queues, so a notification that came
//! before an interrupt or a timeout wins over them, and vice versa. An
//! operation (work, a poll) that completed first wins over all.
//!
//! # States
//! `Created` (made, not started) -> `Ready` (in the ready queue: started,
//! yielded, or woken) -> `Running` -> `Ready` / `Waiting` (suspended in a
//! waiting call, until it runs again) / `Finished` (its function returned;
//! its stack is released at once, its loop task closed, its joiners
//! notified; the block stays until freed, for the result).
//!
//! # Memory
//! The block is the caller's (an embedded `cot_coro_block`) or a `Box`; the
//! stack is mapped ([`Stack::new`]) or lent. Nothing else is allocated per
//! coroutine: the loop task's callback is a plain function, its state the
//! handle's user value. The loop's own tables (handle slab, scheduler nodes)
//! grow as needed, amortized.
//!
//! # Threads
//! A coroutine runs on its loop's thread; every function here is for that
//! thread. The block holds `Cell`s, never referenced mutably across a
//! switch: both sides of a switch only go through shared references.

use std::cell::Cell;
use std::ffi::c_void;

use super::context::{Context, switch};
use super::memory::Stack;
use super::sanitizer;
use crate::error::{Error, Result};
use crate::future::Future;
use crate::reactor::{Handle, Loop, Outcome, TaskFn, Wake, Work};
use crate::sched::{BUDGET, When};

/// A coroutine's function: its argument in, its result out.
pub type CoroFn = unsafe extern "C" fn(arg: *mut c_void) -> *mut c_void;

/// Where a coroutine is in its life (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum State {
    /// Made, not started.
    Created = 0,
    /// In the ready queue: started, yielded or woken, waiting for its turn.
    Ready = 1,
    /// Running (the current coroutine, or one that resumed another).
    Running = 2,
    /// Suspended in a waiting call, until it runs again.
    Waiting = 3,
    /// Its function returned.
    Finished = 4,
}

/// The watch that [`wake`] places: the wait ends with `Error::Canceled`.
pub const INTERRUPT: u32 = 0;
/// The watch postponed to a wait's deadline: it ends with `Error::TimedOut`.
pub const TIMEOUT: u32 = 1;
/// The watch of the first source of [`arm_any`]; source `i` has `FIRST_SOURCE + i`.
pub const FIRST_SOURCE: u32 = 2;

const MAGIC: u32 = 0x636f_726f; // "coro"
const FREED: u32 = 0x6465_6164; // "dead"

/// A coroutine's control block. See the [module documentation](self).
#[repr(C)]
pub struct Coro {
    /// The coroutine's context while it is suspended.
    ctx: Cell<Context>,
    /// The resumer's context while the coroutine runs.
    back: Cell<Context>,
    magic: Cell<u32>,
    state: Cell<State>,
    /// The block is a `Box` (freed with the coroutine), not the caller's.
    boxed: Cell<bool>,
    /// Coroutines waiting for this one to finish (it may not be freed then).
    joiners: Cell<u32>,
    /// Its loop task, until it finished.
    task: Cell<Option<Handle>>,
    entry: Cell<Option<CoroFn>>,
    arg: Cell<*mut c_void>,
    result: Cell<*mut c_void>,
    /// The face's object for the loop (the C ABI's `cot_loop`).
    owner: Cell<usize>,
    /// Why the loop ran it last.
    wake: Cell<Wake>,
    /// Its stack, until it finished.
    stack: Cell<Option<Stack>>,
    /// Its ThreadSanitizer fiber (NULL without TSan), until it finished.
    fiber: Cell<*mut c_void>,
    /// The resumer's TSan fiber while it runs.
    back_fiber: Cell<*mut c_void>,
    /// What `free` runs if the coroutine is freed in a call that started
    /// something off its stack (a socket operation to cancel).
    on_free: Cell<Option<OnFree>>,
    /// Operations it completed without suspending since the loop last
    /// resumed it (see [`Coro::spend`]).
    spent: Cell<u32>,
}

/// What `Coro::set_on_free` keeps: shared, so the call that sets it can
/// hand over memory it holds anyway (no allocation of its own).
pub type OnFree = std::rc::Rc<dyn Undo>;

/// Undoes what a coroutine's call started off its stack, when the
/// coroutine is freed in that call.
pub trait Undo {
    /// Undoes it, on the coroutine's loop `l`.
    fn undo(&self, l: &mut Loop);
}

impl std::fmt::Debug for Coro {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coro")
            .field("state", &self.state.get())
            .field("task", &self.task.get())
            .field("joiners", &self.joiners.get())
            .finish_non_exhaustive()
    }
}

thread_local! {
    /// The coroutine running on this thread, if any.
    static CURRENT: Cell<*const Coro> = const { Cell::new(std::ptr::null()) };
}

/// The coroutine running on this thread (NULL outside coroutines).
#[inline]
pub fn current() -> *const Coro {
    CURRENT.with(Cell::get)
}

impl Coro {
    /// Makes a coroutine in `place`: a loop task of `l` in no queue (state
    /// `Created`) whose callback is `run_task` (the face's, which calls
    /// [`run`]). `owner` is the face's object for `l`; `boxed` says `place`
    /// is a leaked `Box<Coro>`, to be freed by [`free`].
    ///
    /// # Safety
    /// `place` is valid for writes of a `Coro`, aligned, and stays valid and
    /// unmoved until [`free`]; `entry(arg)` may run on `l`'s thread.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn init<'a>(
        place: *mut Coro,
        l: &mut Loop,
        stack: Stack,
        entry: CoroFn,
        arg: *mut c_void,
        owner: usize,
        run_task: TaskFn,
        boxed: bool,
    ) -> &'a Coro {
        // SAFETY: the stack is unused and outlives the context (it is
        // released only once the coroutine finished or is freed).
        let ctx = unsafe { Context::new(stack.top(), coro_main, place as usize) };
        let task = l.task_init_fn(place as usize, run_task);
        let co = Coro {
            ctx: Cell::new(ctx),
            back: Cell::new(Context::NONE),
            magic: Cell::new(MAGIC),
            state: Cell::new(State::Created),
            boxed: Cell::new(boxed),
            joiners: Cell::new(0),
            task: Cell::new(Some(task)),
            entry: Cell::new(Some(entry)),
            arg: Cell::new(arg),
            result: Cell::new(std::ptr::null_mut()),
            owner: Cell::new(owner),
            wake: Cell::new(Wake::Resumed),
            stack: Cell::new(Some(stack)),
            fiber: Cell::new(sanitizer::tsan().map_or(std::ptr::null_mut(), |t| t.create())),
            back_fiber: Cell::new(std::ptr::null_mut()),
            on_free: Cell::new(None),
            spent: Cell::new(0),
        };
        // SAFETY: `place` is writable and aligned (caller's contract).
        unsafe {
            place.write(co);
            &*place
        }
    }

    /// The coroutine behind `p`: `Error::Inval` for NULL, a block that holds
    /// no coroutine (never made, or freed).
    ///
    /// # Safety
    /// `p` is NULL or points at readable memory of a `Coro`'s size (a block
    /// given to [`Coro::init`], or a live boxed coroutine).
    pub unsafe fn check<'a>(p: *const Coro) -> Result<&'a Coro> {
        // SAFETY: NULL or readable (caller's contract); `magic` is read
        // through a raw pointer, so an uninitialised block is not referenced.
        let magic = unsafe { p.as_ref().map(|_| std::ptr::addr_of!((*p).magic).cast::<u32>().read()) };
        match magic {
            // SAFETY: the magic says a coroutine lives there.
            Some(MAGIC) => Ok(unsafe { &*p }),
            _ => Err(Error::Inval),
        }
    }

    /// Its state.
    pub fn state(&self) -> State {
        self.state.get()
    }

    /// Its function's result, once finished.
    pub fn result(&self) -> Option<*mut c_void> {
        (self.state.get() == State::Finished).then(|| self.result.get())
    }

    /// The argument it was made with.
    pub fn arg(&self) -> *mut c_void {
        self.arg.get()
    }

    /// Sets what `free` runs (given the loop) if the coroutine is freed
    /// before it clears it with `None`; a freed coroutine's stack is
    /// abandoned, so what its call started elsewhere is undone here.
    pub fn set_on_free(&self, undo: Option<OnFree>) {
        drop(self.on_free.replace(undo));
    }

    /// Counts one operation of this turn that may complete without
    /// suspending; `true` when it is past [`BUDGET`]: the caller yields
    /// before trying it. The count lives in the coroutine, not the loop: a
    /// turn is the coroutine's own (a `cot_coro_resume` of another one
    /// inside it neither spends nor resets it), and the two places that
    /// resume a coroutine ([`run`], [`hand_off`]) reset it.
    pub fn spend(&self) -> bool {
        let n = self.spent.get().saturating_add(1);
        self.spent.set(n);
        n > BUDGET
    }

    /// The face's object for its loop.
    pub fn owner(&self) -> usize {
        self.owner.get()
    }

    /// Its loop task, until it finished.
    pub fn task(&self) -> Option<Handle> {
        self.task.get()
    }

    /// Is the block a `Box` the coroutine owns?
    pub fn is_boxed(&self) -> bool {
        self.boxed.get()
    }

    /// The signal key its joiners wait on (an address inside the block).
    fn join_key(&self) -> usize {
        &self.joiners as *const Cell<u32> as usize
    }

    fn handle(&self) -> Result<Handle> {
        self.task.get().ok_or(Error::Inval)
    }
}

// ===== running =====

/// First code of a coroutine's context: runs its function, records the
/// result and switches back for good.
unsafe extern "C" fn coro_main(_arg: usize, data: usize) -> ! {
    let co = data as *const Coro;
    // SAFETY: `data` is the block `init` made the context for; it outlives
    // the coroutine's run (a running coroutine cannot be freed).
    unsafe {
        let entry = (*co).entry.get().expect("set by init");
        let result = entry((*co).arg.get());
        (*co).result.set(result);
        (*co).state.set(State::Finished);
        if let Some(t) = sanitizer::tsan() {
            t.switch_to((*co).back_fiber.get());
        }
        let mut dead = Context::NONE;
        switch(&mut dead, (*co).back.get(), co as usize);
    }
    // Nothing resumes a finished coroutine.
    std::process::abort()
}

/// Runs the coroutine (the loop side, from its task's callback) until it
/// suspends or finishes, telling it `wake`. Returns the coroutine that gave
/// control back: `co`, or the last one it handed the CPU on to (see
/// [`hand_off`]); if that one is `Finished`, the caller [`reap`]s it.
///
/// # Safety
/// `co` is a live coroutine, not running, whose task is being run by its
/// loop on this thread.
pub unsafe fn run(co: *const Coro, wake: Wake) -> *const Coro {
    // SAFETY: live (caller's contract); only shared references to its cells.
    let c = unsafe { &*co };
    c.wake.set(wake);
    c.state.set(State::Running);
    c.spent.set(0);
    let prev = CURRENT.with(|cur| cur.replace(co));
    if let Some(t) = sanitizer::tsan() {
        c.back_fiber.set(t.current());
        t.switch_to(c.fiber.get());
    }
    // SAFETY: `ctx` is the coroutine's suspended context (it is not
    // running), on its live stack; `back` is written before the switch. The
    // coroutine that switches back hands over its own address.
    let last = unsafe { switch(c.back.as_ptr(), c.ctx.get(), 0) } as *const Coro;
    CURRENT.with(|cur| cur.set(prev));
    last
}

/// Suspends the running coroutine `co` in `state` (`Ready` or `Waiting`)
/// after a wait was armed; returns, when the loop runs it again, why.
///
/// # Safety
/// `co` is the coroutine running on this thread ([`current`]), and no
/// reference into its loop is held.
pub unsafe fn suspend(co: *const Coro, state: State) -> Wake {
    // SAFETY: the running coroutine is live.
    let c = unsafe { &*co };
    c.state.set(state);
    if let Some(t) = sanitizer::tsan() {
        t.switch_to(c.back_fiber.get());
    }
    // SAFETY: `back` is the context of `run`, suspended in its switch.
    unsafe { switch(c.ctx.as_ptr(), c.back.get(), co as usize) };
    c.wake.get()
}

/// Arms a yield that may hand the CPU straight to the next ready coroutine
/// (see `Loop::task_pass`; `run_task` is the face's callback of every
/// coroutine). Returns that coroutine, for [`hand_off`], or `None`: then
/// [`suspend`] as for [`arm_yield`].
pub fn arm_yield_pass(l: &mut Loop, co: &Coro, run_task: TaskFn) -> Result<Option<*const Coro>> {
    let h = co.handle()?;
    Ok(l.task_pass(h, run_task)?.map(|(next, data)| if next == h { co as *const Coro } else { data as *const Coro }))
}

/// Suspends the running coroutine `co` (yielded: `Ready`) and runs `next`
/// in its place, as the loop would have, on the loop's behalf: when `next`
/// suspends, it returns to the loop. Returns, when `co` runs again, why. A
/// `next` that is `co` itself goes on at once.
///
/// # Safety
/// `co` is the coroutine running on this thread; `next` is the live
/// coroutine [`arm_yield_pass`] returned; no reference into the loop is held.
#[inline]
pub unsafe fn hand_off(co: *const Coro, next: *const Coro) -> Wake {
    // SAFETY: both live (caller's contract).
    let (c, n) = unsafe { (&*co, &*next) };
    n.spent.set(0); // a new turn, also for `co` alone going on
    if std::ptr::eq(co, next) {
        return Wake::Resumed;
    }
    c.state.set(State::Ready);
    n.wake.set(Wake::Resumed);
    n.state.set(State::Running);
    n.back.set(c.back.get());
    n.back_fiber.set(c.back_fiber.get());
    CURRENT.with(|cur| cur.set(next));
    if let Some(t) = sanitizer::tsan() {
        t.switch_to(n.fiber.get());
    }
    // SAFETY: `next` is suspended (it was in the ready queue), its stack live.
    unsafe { switch(c.ctx.as_ptr(), n.ctx.get(), 0) };
    c.wake.get()
}

/// After [`run`] returned a `Finished` coroutine: closes its loop task, notifies its
/// joiners and releases its stack (a lent one is the caller's again).
pub fn reap(l: &mut Loop, co: &Coro) {
    if let Some(h) = co.task.take() {
        let _ = l.close(h, None);
    }
    let _ = l.task_notify(co.join_key(), When::Later);
    release(co);
}

/// Releases the stack and the TSan fiber of a coroutine that does not run.
fn release(co: &Coro) {
    drop(co.stack.take());
    let fiber = co.fiber.replace(std::ptr::null_mut());
    if let (false, Some(t)) = (fiber.is_null(), sanitizer::tsan()) {
        t.destroy(fiber);
    }
}

/// Frees the coroutine: its loop task is closed (it leaves whatever it
/// waited for), its stack released, and the block freed (a `Box`) or handed
/// back (the caller's). `Error::Busy` while it runs or while coroutines join
/// it. `l` is its loop, needed unless it finished.
///
/// # Safety
/// `co` is live and not used after this call; `l`, if given, is its loop.
pub unsafe fn free(l: Option<&mut Loop>, co: *const Coro) -> Result<()> {
    // SAFETY: live (caller's contract).
    let c = unsafe { &*co };
    if c.state.get() == State::Running || c.joiners.get() > 0 {
        return Err(Error::Busy);
    }
    if let Some(h) = c.task.get() {
        let l = l.ok_or(Error::Inval)?;
        if let Some(undo) = c.on_free.take() {
            undo.undo(l);
        }
        l.close(h, None)?;
        c.task.set(None);
    }
    release(c);
    c.magic.set(FREED);
    if c.boxed.get() {
        // SAFETY: a boxed block was leaked from a `Box<Coro>` by the face and
        // nothing refers to it any more (caller's contract).
        drop(unsafe { Box::from_raw(co.cast_mut()) });
    }
    Ok(())
}

// ===== from outside the coroutine =====

/// Starts a `Created` coroutine: it goes to the ready tail. `Error::Busy` if
/// it was started already, `Error::Inval` if it finished.
pub fn start(l: &mut Loop, co: &Coro) -> Result<()> {
    match co.state.get() {
        State::Created => {
            l.task_schedule(co.handle()?, When::Later)?;
            co.state.set(State::Ready);
            Ok(())
        }
        State::Finished => Err(Error::Inval),
        _ => Err(Error::Busy),
    }
}

/// Makes the coroutine ready: starts a `Created` one, interrupts the wait of
/// a `Waiting` one (it ends with `Error::Canceled`, unless what it waited
/// for came first). Returns `false` if it was ready already.
/// `Error::Busy` while it runs, `Error::Inval` once finished.
pub fn wake(l: &mut Loop, co: &Coro) -> Result<bool> {
    match co.state.get() {
        State::Created => start(l, co).map(|_| true),
        State::Ready => Ok(false),
        State::Waiting => {
            let placed = l.task_watch(co.handle()?, INTERRUPT, When::Later)?;
            Ok(placed)
        }
        State::Running => Err(Error::Busy),
        State::Finished => Err(Error::Inval),
    }
}

/// Runs a `Created` or `Ready` coroutine now, on the caller's stack, until
/// it suspends or finishes, as if its turn had come (it leaves the ready
/// queue). `Error::Busy` while it runs or waits (wake it, and let the loop
/// run it: what it waits for may have come already), `Error::Inval` once
/// finished. The face's task callback does the running (and the reaping).
pub fn resume(l: &mut Loop, co: &Coro) -> Result<()> {
    match co.state.get() {
        State::Created | State::Ready => l.task_run_now(co.handle()?),
        State::Running | State::Waiting => Err(Error::Busy),
        State::Finished => Err(Error::Inval),
    }
}

// ===== waits (inside the coroutine) =====

/// The running coroutine, or `Error::Perm` outside coroutines.
pub fn running<'a>() -> Result<&'a Coro> {
    let p = current();
    // SAFETY: CURRENT is set only by `run`, to a live coroutine, while it
    // runs; a running coroutine cannot be freed.
    unsafe { p.as_ref() }.ok_or(Error::Perm)
}

/// Arms a yield: the coroutine goes to the ready tail.
pub fn arm_yield(l: &mut Loop, co: &Coro) -> Result<()> {
    l.task_schedule(co.handle()?, When::Later).map(drop)
}

/// The time `ns` from now (a fresh clock read: the wait lasts at least `ns`).
fn deadline(l: &mut Loop, ns: u64) -> u64 {
    l.wait_start().saturating_add(ns)
}

/// Places the timeout watch, unless `timeout` is `None` (forever).
fn arm_timeout(l: &mut Loop, h: Handle, timeout: Option<u64>) -> Result<()> {
    if let Some(ns) = timeout {
        let at = deadline(l, ns);
        l.task_watch(h, TIMEOUT, When::Postpone(at))?;
    }
    Ok(())
}

/// Arms a sleep of `ns` nanoseconds from now.
pub fn arm_sleep(l: &mut Loop, co: &Coro, ns: u64) -> Result<()> {
    let h = co.handle()?;
    let at = deadline(l, ns);
    l.task_schedule(h, When::Postpone(at)).map(drop)
}

/// A sleep's result: done, or interrupted.
pub fn sleep_result(w: Wake) -> Result<()> {
    match w {
        Wake::Resumed => Ok(()),
        _ => Err(Error::Canceled),
    }
}

/// Arms a wait for `key` (a signal of the loop), with a timeout.
pub fn arm_wait(l: &mut Loop, co: &Coro, key: usize, timeout: Option<u64>) -> Result<()> {
    if key == 0 {
        return Err(Error::Inval);
    }
    let h = co.handle()?;
    l.task_schedule(h, When::Wait(key))?;
    arm_timeout(l, h, timeout)
}

/// What ends a wait that has no operation: the task's own node (notified,
/// slept), a timeout, an interrupt, or a source of [`arm_any`].
fn wait_end(w: Wake) -> Result<Option<u32>> {
    match w {
        Wake::Resumed => Ok(None),
        Wake::Watch(TIMEOUT) => Err(Error::TimedOut),
        Wake::Watch(i) if i >= FIRST_SOURCE => Ok(Some(i - FIRST_SOURCE)),
        _ => Err(Error::Canceled),
    }
}

/// A signal wait's result.
pub fn wait_result(w: Wake) -> Result<()> {
    wait_end(w).map(drop)
}

/// Arms a wait for readiness of poll handle `poll` for `events`, with a
/// timeout (the loop's rules: one waiter per poll handle, `Error::Busy`).
pub fn arm_poll(l: &mut Loop, co: &Coro, poll: Handle, events: u32, timeout: Option<u64>) -> Result<()> {
    let h = co.handle()?;
    l.task_poll(h, poll, events)?;
    arm_timeout(l, h, timeout)
}

/// A poll wait's result: the ready events, `Error::BadF` if the handle was
/// closed meanwhile.
pub fn poll_result(w: Wake) -> Result<u32> {
    match w {
        Wake::Done(Outcome::Ready(ev)) => Ok(ev),
        Wake::Done(Outcome::Closed) => Err(Error::BadF),
        Wake::Watch(TIMEOUT) => Err(Error::TimedOut),
        _ => Err(Error::Canceled),
    }
}

/// Arms work on the loop's pool.
pub fn arm_work(l: &mut Loop, co: &Coro, work: Work) -> Result<()> {
    l.task_work(co.handle()?, work)
}

/// A work wait's result: it ran, or it was cancelled (interrupted before it
/// started, or its pool stopped).
pub fn work_result(w: Wake) -> Result<()> {
    match w {
        Wake::Done(Outcome::Worked) => Ok(()),
        Wake::Done(Outcome::Failed(e)) => Err(e),
        _ => Err(Error::Canceled),
    }
}

/// Arms a wait for `future`, unless it is settled (then returns `false`: no
/// need to suspend).
pub fn arm_future(l: &mut Loop, co: &Coro, future: &Future, timeout: Option<u64>) -> Result<bool> {
    if future.outcome().is_some() {
        return Ok(false);
    }
    let h = co.handle()?;
    l.task_future(h, future)?;
    arm_timeout(l, h, timeout)?;
    Ok(true)
}

/// A future wait's result: settled, timed out, or interrupted (the future
/// is untouched either way).
pub fn future_result(w: Wake) -> Result<()> {
    match w {
        Wake::Done(Outcome::Settled) => Ok(()),
        Wake::Watch(TIMEOUT) => Err(Error::TimedOut),
        _ => Err(Error::Canceled),
    }
}

/// Checks that `co` may join `other`: another coroutine of the same loop.
fn check_join(co: &Coro, other: &Coro) -> Result<()> {
    if std::ptr::eq(co, other) || co.owner.get() != other.owner.get() {
        return Err(Error::Inval);
    }
    Ok(())
}

/// Arms a join of `other`, unless it finished (then returns `false`: no
/// need to suspend). Counts `co` among its joiners until [`join_done`].
pub fn arm_join(l: &mut Loop, co: &Coro, other: &Coro, timeout: Option<u64>) -> Result<bool> {
    check_join(co, other)?;
    if other.state.get() == State::Finished {
        return Ok(false);
    }
    let h = co.handle()?;
    l.task_schedule(h, When::Wait(other.join_key()))?;
    arm_timeout(l, h, timeout)?;
    other.joiners.set(other.joiners.get() + 1);
    Ok(true)
}

/// Ends a join armed by [`arm_join`]: `other` may be freed again.
pub fn join_done(other: &Coro) {
    other.joiners.set(other.joiners.get().saturating_sub(1));
}

/// A source of [`arm_any`].
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// A signal of the loop.
    Signal(usize),
    /// The end of another coroutine of the loop.
    Coro(&'a Coro),
    /// Readiness of a poll handle for these events (one per wait).
    Poll(Handle, u32),
}

/// Arms a wait for the first of `sources`, with a timeout. Returns
/// `Some(i)` without arming anything if source `i` is a coroutine that has
/// finished. `Error::Inval` for a zero signal, a coroutine of another loop
/// (or `co` itself), a second poll source, or more than `u32::MAX - 2`
/// sources; the loop's errors for the poll. Counts `co` among the joiners
/// of the coroutine sources until [`any_done`].
pub fn arm_any(l: &mut Loop, co: &Coro, sources: &[Source<'_>], timeout: Option<u64>) -> Result<Option<usize>> {
    if sources.len() > (u32::MAX - FIRST_SOURCE) as usize {
        return Err(Error::Inval);
    }
    let mut poll = None;
    for (i, s) in sources.iter().enumerate() {
        match *s {
            Source::Signal(0) => return Err(Error::Inval),
            Source::Signal(_) => {}
            Source::Coro(other) => {
                check_join(co, other)?;
                if other.state.get() == State::Finished {
                    return Ok(Some(i));
                }
            }
            Source::Poll(p, ev) => {
                if poll.replace((p, ev)).is_some() {
                    return Err(Error::Inval);
                }
            }
        }
    }
    let h = co.handle()?;
    if let Some((p, ev)) = poll {
        l.task_poll(h, p, ev)?; // may fail: nothing else is armed yet
    }
    for (i, s) in sources.iter().enumerate() {
        let key = match *s {
            Source::Signal(key) => key,
            Source::Coro(other) => {
                other.joiners.set(other.joiners.get() + 1);
                other.join_key()
            }
            Source::Poll(..) => continue,
        };
        l.task_watch(h, FIRST_SOURCE + i as u32, When::Wait(key))?;
    }
    arm_timeout(l, h, timeout)?;
    Ok(None)
}

/// Ends a wait armed by [`arm_any`] (the joins it counted).
pub fn any_done(sources: &[Source<'_>]) {
    for s in sources {
        if let Source::Coro(other) = s {
            join_done(other);
        }
    }
}

/// An [`arm_any`] wait's result: the index of the source that fired, with
/// the ready events for a poll source (0 for the others).
pub fn any_result(sources: &[Source<'_>], w: Wake) -> Result<(usize, u32)> {
    let poll = || sources.iter().position(|s| matches!(s, Source::Poll(..))).ok_or(Error::Canceled);
    match w {
        Wake::Done(Outcome::Ready(ev)) => Ok((poll()?, ev)),
        Wake::Done(Outcome::Closed) => Err(Error::BadF),
        Wake::Done(_) => Err(Error::Canceled),
        w => match wait_end(w)? {
            Some(i) => Ok((i as usize, 0)),
            None => Err(Error::Canceled), // its own node is in no queue
        },
    }
}
