//! Tasks of the loop that await operations: a sleep (a timer handle), work
//! on the pool or a future's settlement (requests), driven by the slot machine of `op`; and the
//! readiness of a poll handle, awaited as an `op` *object* (one waiter at a
//! time; closing the handle resumes its waiter with `Outcome::Closed`).
//!
//! A loop task is a handle whose core task lives in the loop's scheduler, so
//! it can be scheduled, postponed (a timeout) or made to wait on a signal like
//! any task. When it runs, its callback learns why:
//! - `Wake::Done(outcome)`: the operation it awaited completed (if it completed
//!   before the task ran, its result wins over a later reason);
//! - `Wake::Resumed`: it was scheduled for another reason while awaiting (an
//!   outside resume, a timeout, a notify): it left the operation, which is
//!   cancelled, stopped or closed as the tables of `op` say, and whose late
//!   callback is dropped.
//!
//! Each task has one operation slot. Awaiting again right after a sleep
//! re-arms the same timer; awaiting something else while the old memory is
//! still the backend's defers the start to that callback, as the table says.
//! A task that returns without awaiting again leaves its completed operation
//! (the timer is closed, the request released, the poll stopped).
//!
//! # Watches
//! Besides its own node, a task may place extra scheduler nodes, its
//! *watches* (`task_watch`), each in any queue: a signal's, the postponed
//! queue (a timeout), the ready queue. Whichever of the task's nodes reaches
//! the head of the ready queue first runs the task, and all its other nodes
//! leave their queues then: so a task waits for one of several signals, or a
//! signal and a timeout, at once. A watch that ran it says so with
//! `Wake::Watch(index)`; an operation that completed first still wins.
//! Watches are the scheduler's nodes, not handles: placing one allocates
//! nothing once the task has had that many.
//!
//! # Callbacks
//! A task's callback is a boxed closure (`task_init`) or a plain function
//! (`task_init_fn`), which gets the handle's user value: a task that needs
//! no allocation of its own (a stackful coroutine in caller-provided
//! memory). `task_run_now` runs a task at once, outside the ready queue's
//! order, as if it had reached its head.
//!
//! # Hand-offs
//! A task that only ran and goes back to the ready tail (a coroutine's
//! yield) would return to the loop, which would take the next ready task and
//! call it: `task_pass` does that in place, when the next task is a plain
//! one with the same callback and nothing for the loop to do before running
//! it (no result, no operation, no poll, no watch). The caller then runs it
//! without returning (a coroutine switches straight to the next one), and
//! the loop learns, from the plain callback's return value, which task's run
//! ended last. Only inside the loop's run of the ready batch: the batch's end
//! marker stops hand-offs, so a yielding task still waits for the next
//! iteration and does not starve I/O (unless the loop has nothing else
//! alive: no active handle, nothing postponed or closing, `run` in its
//! default mode and not stopped; then the next batch starts in place, as an
//! iteration would start it); never inside `task_run_now`, whose caller
//! waits for that one task.

use super::handle::Kind;
use super::pool::Work;
use super::request::{After, Request};
use super::{Handle, Loop};
use crate::error::{Error, Result};
use crate::future::Future;
use crate::op::{Action, Actions, HandleType, Kind as OpKind, Slot};
use crate::sched::{Task, When};

/// Why a loop task runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wake {
    /// The operation it awaited completed.
    Done(Outcome),
    /// Scheduled for another reason: it left the operation it awaited, if any.
    Resumed,
    /// Its watch of this index reached the ready queue first (see the module
    /// documentation); it left the operation it awaited, if any.
    Watch(u32),
}

/// What a completed operation gives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Outcome {
    /// The sleep ended.
    Slept,
    /// The work ran.
    Worked,
    /// The future awaited is settled.
    Settled,
    /// The polled descriptor is ready for these events.
    Ready(u32),
    /// The poll handle awaited was closed.
    Closed,
    /// The operation could not run: `Error::NoMem` (work, and no pool
    /// thread could start) or `Error::Canceled` (the pool was stopped).
    Failed(Error),
}

/// A loop task's callback.
pub type TaskCallback = Box<dyn FnMut(&mut Loop, Handle, Wake)>;

/// A loop task's callback as a plain function: `f(loop, task, wake, data)`,
/// `data` being the handle's user value. It returns the task whose run ends
/// with its return: `task`, or the last task it handed the CPU on to with
/// `Loop::task_pass`.
pub type TaskFn = fn(&mut Loop, Handle, Wake, usize) -> Handle;

/// A loop task's callback, either kind.
enum Callback {
    /// Taken out while it runs.
    Boxed(Option<TaskCallback>),
    Plain(TaskFn),
}

/// The handle type of a sleep's timer, for the slot.
const SLEEP: HandleType = HandleType(1);

/// An operation a task awaits, until it starts.
enum Op {
    Sleep(u64),
    Work(Work),
    Future(Future),
}

pub(crate) struct LoopTask {
    pub(super) task: Task,
    cb: Callback,
    /// Its callback is running (`task_run_now` refuses then).
    running: bool,
    /// Its watch nodes (see the module documentation), made on first use.
    pub(super) watches: Vec<Task>,
    /// A watch may be in a queue (placed since they were last taken out).
    armed: bool,
    slot: Slot,
    /// The sleep's timer (the slot's handle memory), while open.
    timer: Option<Handle>,
    /// The work in flight (the slot's request memory).
    request: Option<Request>,
    /// The operation to start (now or when the memory comes back).
    next: Option<Op>,
    /// The last sleep's duration, for a re-arm.
    sleep: u64,
    /// A completed operation's result, until the task runs.
    outcome: Option<Outcome>,
    /// The poll handle (an object) it awaits or was resumed by.
    poll: Option<Handle>,
}

impl LoopTask {
    /// Does running it need nothing of the loop first: no result to hand
    /// over, no operation or poll to leave, no watch to take out?
    #[inline]
    fn is_idle(&self) -> bool {
        self.outcome.is_none() && self.slot.is_freed() && self.poll.is_none() && !self.armed
    }
}

impl Loop {
    /// A new loop task, in no queue: `cb` runs each time it is resumed.
    pub fn task_init(&mut self, data: usize, cb: TaskCallback) -> Handle {
        self.task_new(data, Callback::Boxed(Some(cb)))
    }

    /// A new loop task, in no queue, whose callback is a plain function: no
    /// allocation besides the loop's own tables.
    pub fn task_init_fn(&mut self, data: usize, f: TaskFn) -> Handle {
        self.task_new(data, Callback::Plain(f))
    }

    fn task_new(&mut self, data: usize, cb: Callback) -> Handle {
        let task = self.sched.task_new(0);
        let t = LoopTask {
            task,
            cb,
            running: false,
            watches: Vec::new(),
            armed: false,
            slot: Slot::new(),
            timer: None,
            request: None,
            next: None,
            sleep: 0,
            outcome: None,
            poll: None,
        };
        let h = self.insert(Kind::Task(t), data);
        let _ = self.sched.set_data(task, h.to_raw() as usize);
        h
    }

    fn loop_task(&mut self, h: Handle) -> Result<&mut LoopTask> {
        match &mut self.slot_mut(h)?.kind {
            Kind::Task(t) => Ok(t),
            _ => Err(Error::Inval),
        }
    }

    /// Schedules a loop task (`When` as for any task: ready, a signal, a time).
    /// Scheduling a task that awaits an operation makes it leave the operation
    /// when it runs (unless the operation completed first). Returns `false` if
    /// it is already in a queue.
    pub fn task_schedule(&mut self, h: Handle, when: When) -> Result<bool> {
        let task = self.loop_task(h)?.task;
        self.sched.schedule(task, when)
    }

    /// Takes a loop task, and its watches, out of their queues. Returns
    /// whether one was in a queue.
    pub fn task_unschedule(&mut self, h: Handle) -> Result<bool> {
        let task = self.loop_task(h)?.task;
        let watched = self.unschedule_watches(h);
        Ok(self.sched.unschedule(task)? | watched)
    }

    /// Places watch `index` of the task as `when` says (making the task's
    /// watches up to `index` if it has fewer): the task runs with
    /// `Wake::Watch(index)` when that node reaches the head of the ready
    /// queue before its other nodes. Returns `false` if that watch is in a
    /// queue already.
    pub fn task_watch(&mut self, h: Handle, index: u32, when: When) -> Result<bool> {
        let have = self.loop_task(h)?.watches.len();
        for _ in have..=index as usize {
            let w = self.sched.task_new(h.to_raw() as usize);
            self.loop_task(h)?.watches.push(w);
        }
        let t = self.loop_task(h)?;
        let w = t.watches[index as usize];
        t.armed = true;
        self.sched.schedule(w, when)
    }

    /// Takes every watch of the task out of its queue. Returns whether one
    /// was in a queue.
    fn unschedule_watches(&mut self, h: Handle) -> bool {
        let Ok(t) = self.loop_task(h) else { return false };
        if !t.armed {
            return false;
        }
        t.armed = false;
        let watches = std::mem::take(&mut t.watches);
        let mut any = false;
        for &w in &watches {
            any |= self.sched.unschedule(w).unwrap_or(false);
        }
        if let Ok(t) = self.loop_task(h) {
            t.watches = watches;
        }
        any
    }

    /// Runs the task now, wherever it waits, as if it had reached the head
    /// of the ready queue: its callback gets what it would have got then (an
    /// operation's result, or `Wake::Resumed`). `Error::Busy` while its
    /// callback runs.
    pub fn task_run_now(&mut self, h: Handle) -> Result<()> {
        let t = self.loop_task(h)?;
        if t.running {
            return Err(Error::Busy);
        }
        let task = t.task;
        self.sched.unschedule(task)?;
        let passing = std::mem::replace(&mut self.passing, false);
        self.run_task(h, task);
        self.passing = passing;
        Ok(())
    }

    /// A hand-off (see the module documentation): the running plain task `h`
    /// goes to the ready tail, as for a yield; then, if the head of the ready
    /// queue is a plain task with callback `f` whose run needs nothing of the
    /// loop first, and hand-offs are allowed here, `h`'s run ends, that task
    /// leaves the queue and is marked running, and it is returned with its
    /// user value: the caller runs it in place (`h` itself, with value 0, when
    /// it is alone in the ready queue and the loop has nothing else to do: it
    /// goes on running). Otherwise `None`: the caller returns to the loop as
    /// usual. `Error::Inval` for a bad task.
    pub fn task_pass(&mut self, h: Handle, f: TaskFn) -> Result<Option<(Handle, usize)>> {
        let passing = self.passing;
        let t = self.loop_task(h)?;
        let task = t.task;
        if !passing {
            self.sched.schedule(task, When::Later)?;
            return Ok(None);
        }
        // Its run ends here if it hands off; with nothing to leave (the
        // common case), ending it is this flag, set now: harmless if it does
        // not hand off (the loop clears it again when it returns).
        let simple = t.poll.is_none() && t.slot.is_freed();
        if simple {
            t.running = false;
        }
        // At the batch's end, an iteration that would have nothing else to
        // do starts the next batch here (the time is read when needed).
        let pass_end = self.only_ready_alive();
        let taken = self.sched.requeue_take_head(task, self.batch_end, pass_end)?;
        if pass_end {
            self.time_stale = true;
        }
        if taken.is_none() && pass_end && self.sched.ready_head() == Some(task) {
            // Alone in the ready queue: it goes on running.
            let _ = self.sched.unschedule(task);
            let t = self.loop_task(h)?;
            t.running = true;
            return Ok(Some((h, 0)));
        }
        let Some((next, raw)) = taken else { return Ok(None) };
        let eligible = Handle::from_raw(raw as u64).and_then(|nh| {
            let slot = self.handles.get_mut(nh.0).filter(|s| !s.closing)?;
            let data = slot.data;
            let Kind::Task(t) = &mut slot.kind else { return None };
            let plain = matches!(t.cb, Callback::Plain(g) if std::ptr::fn_addr_eq(g, f));
            if !plain || t.task != next || t.running || !t.is_idle() {
                return None;
            }
            t.running = true;
            Some((nh, data))
        });
        match eligible {
            Some(_) if !simple => self.end_run(h),
            Some(_) => {}
            None => {
                let _ = self.sched.schedule(next, When::Next); // back where it was
            }
        }
        Ok(eligible)
    }

    /// Moves the waiters of `key` as `when` says (see `Sched::notify`).
    pub fn task_notify(&mut self, key: usize, when: When) -> Result<bool> {
        self.sched.notify(key, when)
    }

    /// The task awaits a sleep of `ns` nanoseconds: it runs with
    /// `Wake::Done(Outcome::Slept)` then (unless resumed before).
    pub fn task_sleep(&mut self, h: Handle, ns: u64) -> Result<()> {
        self.task_await(h, OpKind::Handle(SLEEP), Op::Sleep(ns))
    }

    /// The task awaits `work` on the pool: it runs with
    /// `Wake::Done(Outcome::Worked)` once the work ran (unless resumed
    /// before; then the work is cancelled if it has not started).
    pub fn task_work(&mut self, h: Handle, work: Work) -> Result<()> {
        self.task_await(h, OpKind::Request, Op::Work(work))
    }

    /// The task awaits `future`: it runs with `Wake::Done(Outcome::Settled)`
    /// once it is settled (unless resumed before: then it stops waiting, and
    /// the future is untouched).
    pub fn task_future(&mut self, h: Handle, future: &Future) -> Result<()> {
        self.task_await(h, OpKind::Request, Op::Future(future.clone()))
    }

    fn task_await(&mut self, h: Handle, kind: OpKind, op: Op) -> Result<()> {
        let t = self.loop_task(h)?;
        let actions = t.slot.await_op(kind).map_err(Error::from)?;
        t.next = Some(op);
        t.outcome = None;
        let task = t.task;
        self.sched.unschedule(task)?; // it waits on the operation now
        self.perform(h, actions);
        Ok(())
    }

    /// Performs the actions of the task's slot, in order.
    fn perform(&mut self, h: Handle, actions: Actions) {
        for a in actions {
            let Ok(t) = self.loop_task(h) else { return };
            match a {
                Action::DropResults => t.outcome = None,
                Action::CancelRequest => {
                    if let Some(r) = t.request {
                        let _ = self.request_cancel(r); // too late to cancel is fine
                    }
                }
                Action::StopHandle => {
                    if let Some(timer) = t.timer {
                        let _ = self.timer_stop(timer);
                    }
                }
                Action::CloseHandle => {
                    if let Some(timer) = t.timer {
                        let cb = Box::new(move |l: &mut Loop, _| l.task_closed(h));
                        let _ = self.close(timer, Some(cb));
                    }
                }
                Action::StartRequest => {
                    let r = match t.next.take() {
                        Some(Op::Work(work)) => self.work_submit(work, task_after(h, Outcome::Worked)),
                        Some(Op::Future(f)) => self.future_wait(&f, task_after(h, Outcome::Settled)),
                        _ => continue,
                    };
                    if let Ok(t) = self.loop_task(h) {
                        t.request = Some(r);
                    }
                }
                Action::StartHandle | Action::RearmHandle => {
                    if let Some(Op::Sleep(ns)) = t.next.take() {
                        t.sleep = ns;
                    }
                    let ns = t.sleep;
                    let timer = match t.timer {
                        Some(timer) => timer,
                        None => {
                            let timer = self.timer_init(0);
                            if let Ok(t) = self.loop_task(h) {
                                t.timer = Some(timer);
                            }
                            timer
                        }
                    };
                    let fired = Box::new(move |l: &mut Loop, _| l.task_callback(h, Some(Outcome::Slept)));
                    let _ = self.timer_start(timer, ns, 0, fired);
                }
                Action::Release => {
                    t.timer = None;
                    t.request = None;
                }
                Action::Resume | Action::ResumeFailed | Action::ResumeClosed => {
                    // Out of whatever else it waited on (a signal, a timeout): ready.
                    let task = t.task;
                    let _ = self.sched.reschedule(task, When::Later);
                }
            }
        }
    }

    /// The callback of the task's operation: `outcome` is kept for the task if
    /// the slot resumes it (a late callback's is dropped).
    fn task_callback(&mut self, h: Handle, outcome: Option<Outcome>) {
        let Ok(t) = self.loop_task(h) else { return }; // the task was closed meanwhile
        let Ok(actions) = t.slot.callback() else { return };
        if actions.contains(Action::Resume) {
            t.outcome = outcome;
        }
        self.perform(h, actions);
    }

    /// The close callback of the task's timer: the timer is gone.
    fn task_closed(&mut self, h: Handle) {
        let Ok(t) = self.loop_task(h) else { return };
        t.timer = None;
        if let Ok(actions) = t.slot.close_callback() {
            self.perform(h, actions);
        }
    }

    /// Runs a loop task one of whose nodes (`node`: its own or a watch)
    /// reached the head of the ready queue.
    pub(super) fn run_task(&mut self, h: Handle, node: Task) {
        let Some(slot) = self.handles.get_mut(h.0).filter(|s| !s.closing) else { return };
        let data = slot.data;
        let Kind::Task(t) = &mut slot.kind else { return };
        if t.running {
            return; // `task_run_now` from its own callback: refused there
        }
        // The common case (a yield, a start, a notify): nothing to leave.
        if let (Callback::Plain(f), true) = (&t.cb, node == t.task && t.is_idle()) {
            let f = *f;
            t.running = true;
            let last = f(self, h, Wake::Resumed, data);
            self.end_run(last);
            return;
        }
        let main = t.task;
        let watch = if node == main { None } else { t.watches.iter().position(|&w| w == node) };
        let wake = match (t.outcome.take(), watch) {
            (Some(o), _) => Wake::Done(o),
            (None, Some(i)) => Wake::Watch(i as u32),
            (None, None) => Wake::Resumed,
        };
        // Resumed from outside while awaiting: it leaves the operation.
        let left = if t.slot.is_waiting() { t.slot.outside_resume(false).ok() } else { None };
        let poll = t.poll;
        let plain = match t.cb {
            Callback::Plain(f) => Some(f),
            Callback::Boxed(_) => None,
        };
        t.running = true;
        // Its other nodes leave their queues: the first reason to run wins.
        if node != main {
            let _ = self.sched.unschedule(main);
        }
        self.unschedule_watches(h);
        if let Some(actions) = left {
            self.perform(h, actions);
        }
        if let Some(p) = poll {
            self.poll_event(p, |o| o.outside_resume(h.to_raw()));
        }
        let last = match plain {
            Some(f) => f(self, h, wake, data),
            None => {
                fn field(k: &mut Kind) -> Option<&mut Option<TaskCallback>> {
                    match k {
                        Kind::Task(LoopTask { cb: Callback::Boxed(cb), .. }) => Some(cb),
                        _ => None,
                    }
                }
                self.call_back(h, field, |l, f| f(l, h, wake));
                h
            }
        };
        self.end_run(last);
    }

    /// Ends the run of task `h` (its callback returned, or it handed the CPU
    /// on): if it went on without awaiting again, it leaves its completed
    /// operation and poll.
    #[inline]
    fn end_run(&mut self, h: Handle) {
        let Ok(t) = self.loop_task(h) else { return };
        t.running = false;
        let poll = t.poll;
        if poll.is_none() && t.slot.is_freed() {
            return;
        }
        if !t.slot.is_waiting() {
            if let Ok(actions) = t.slot.task_left() {
                self.perform(h, actions);
            }
        }
        if let Some(p) = poll {
            let raw = h.to_raw();
            self.poll_event(p, |o| o.task_left(raw));
            // Done with the poll once it neither waits on it nor holds it.
            let involved = self.poll(p).is_ok_and(|p| p.obj.waiter() == Some(raw) || p.obj.holder() == Some(raw));
            if let (false, Ok(t)) = (involved, self.loop_task(h)) {
                t.poll = None;
            }
        }
    }

    /// The task awaits readiness of poll handle `poll` for `events`: it runs
    /// with `Wake::Done(Outcome::Ready(ready))`, or `Outcome::Closed` if the
    /// handle is closed meanwhile. One task at a time (`Error::Busy`); the
    /// handle's own callback is replaced while tasks await it.
    pub fn task_poll(&mut self, h: Handle, poll: Handle, events: u32) -> Result<()> {
        if events == 0 || events & !(super::READABLE | super::WRITABLE | super::DISCONNECT) != 0 {
            return Err(Error::Inval);
        }
        self.loop_task(h)?;
        let p = self.poll(poll)?;
        let restart = !p.registered_for(events);
        let actions = p.obj.await_op(h.to_raw()).map_err(Error::from)?;
        if actions.contains(Action::StartHandle) || restart {
            let cb = Box::new(move |l: &mut Loop, p, ready| l.poll_ready(p, ready));
            if let Err(e) = self.poll_start(poll, events, cb) {
                let _ = self.poll(poll).map(|p| p.obj.start_failed());
                return Err(e);
            }
        }
        self.poll(poll)?.waiter = Some(h);
        let t = self.loop_task(h)?;
        t.poll = Some(poll);
        t.outcome = None;
        let task = t.task;
        self.sched.unschedule(task)?;
        Ok(())
    }

    /// Readiness of a poll awaited by a task: resumes the waiter (later
    /// readiness, before the task ran, is level-triggered state: nothing lost).
    fn poll_ready(&mut self, poll: Handle, ready: u32) {
        let Ok(p) = self.poll(poll) else { return };
        let Ok(actions) = p.obj.callback() else { return };
        let waiter = p.waiter;
        if let (true, Some(w)) = (actions.contains(Action::Resume), waiter) {
            self.resume_with(w, Outcome::Ready(ready));
        }
    }

    /// Applies an event to a poll's object and performs its actions.
    pub(super) fn poll_event(
        &mut self,
        poll: Handle,
        event: impl FnOnce(&mut crate::op::Object) -> std::result::Result<Actions, crate::op::OpError>,
    ) {
        let Some(slot) = self.handles.get_mut(poll.0) else { return };
        let Kind::Poll(p) = &mut slot.kind else { return };
        let Ok(actions) = event(&mut p.obj) else { return };
        let waiter = p.waiter;
        for a in actions {
            match a {
                Action::StopHandle => {
                    let _ = self.poll_stop(poll);
                }
                Action::ResumeClosed => {
                    if let Some(w) = waiter {
                        self.resume_with(w, Outcome::Closed);
                    }
                }
                _ => {} // CloseHandle, Release: the loop's close does it
            }
        }
    }

    /// Makes loop task `h` ready with `outcome`.
    fn resume_with(&mut self, h: Handle, outcome: Outcome) {
        if let Ok(t) = self.loop_task(h) {
            t.outcome = Some(outcome);
            let task = t.task;
            let _ = self.sched.reschedule(task, When::Later);
        }
    }

    /// Closing a loop task: it leaves its operation (whose late callbacks are
    /// then ignored) and its queue.
    pub(super) fn task_stop(&mut self, h: Handle) -> Result<()> {
        if let Some(p) = self.loop_task(h)?.poll {
            self.poll_event(p, |o| o.outside_resume(h.to_raw()));
            self.poll_event(p, |o| o.task_left(h.to_raw()));
        }
        let t = self.loop_task(h)?;
        let mut actions = Actions::none();
        if t.slot.is_waiting() {
            actions = t.slot.outside_resume(false).unwrap_or(Actions::none());
        }
        let task = t.task;
        self.perform(h, actions);
        if let Ok(t) = self.loop_task(h) {
            if let Ok(more) = t.slot.task_left() {
                self.perform(h, more);
            }
        }
        self.unschedule_watches(h);
        let _ = self.sched.unschedule(task);
        Ok(())
    }
}

/// The `after` of a task's request: hands `outcome` to the task on success,
/// the error otherwise.
fn task_after(h: Handle, outcome: Outcome) -> After {
    Box::new(move |l: &mut Loop, _, status: Result<()>| {
        l.task_callback(h, Some(status.map_or_else(Outcome::Failed, |()| outcome)))
    })
}
