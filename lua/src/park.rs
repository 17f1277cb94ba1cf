//! Driving an operation from the C function that starts it: the first step
//! runs in the function; when it must wait, a cothread is parked on its
//! scheduler's engine (a plain `lua_yield(l, 0)`: the engine resumes it
//! once, with the results), and any other caller blocks its thread.

use std::ffi::c_int;

use crate::engine::{self, Finish, Frame, Next, Operation, STEP_SLOTS, Why};
use crate::lua::{Error, Lua, Resumed, Ret, Thread, YIELD};
use crate::state::{Quick, with_resuming};

/// Whether the caller of the running C function is a cothread that may
/// park (an operation it drives waits on the engine, not in `poll(2)`).
pub fn in_cothread(lua: &Lua) -> bool {
    with_resuming(lua, |_, _, _| ()).is_some()
}

/// Takes one operation from the running cothread's budget (doc/lua.md,
/// "Fairness"): `false` when it is spent, and the operation must let the
/// other cothreads run first (`drive_waiting(.., None)`). Outside cothreads
/// there is no budget.
#[inline]
pub fn within_budget(lua: &Lua) -> bool {
    with_resuming(lua, |_, st, _| st.spend()).unwrap_or(true)
}

/// The first step of an operation, made by its C function itself (then
/// `drive_waiting`) if the cothread is within its budget: `Ok(n)` when it
/// finished with `n` results, else what to pass `drive_waiting`.
#[inline]
pub fn first_step(lua: &Lua, step: impl FnOnce() -> Next) -> Result<c_int, Option<Next>> {
    if !within_budget(lua) {
        return Err(None);
    }
    match step() {
        Next::Done(n) => Ok(n),
        next => Err(Some(next)),
    }
}

/// Runs `op` for the C function whose whole stack is the operation's
/// frame: its results, or `YIELD` when the calling cothread parked (its
/// trampoline yields; the function then returns the results it is resumed
/// with). Outside cothreads the wait blocks this thread. A cothread over
/// its budget yields first.
pub fn drive<O: Operation + Copy + 'static>(lua: &mut Lua, op: O) -> Ret {
    let first = if within_budget(lua) { Begin::Step } else { Begin::YieldFirst };
    drive_from(lua, op, first)
}

/// `drive` for a C function that made the first step of `op` itself (with
/// what it had checked, sparing the step a second look) and must wait as
/// `first` says; `None`: it did not, being over its budget
/// (`within_budget`): the cothread yields first.
pub fn drive_waiting<O: Operation + Copy + 'static>(lua: &mut Lua, op: O, first: Option<Next>) -> Ret {
    drive_from(lua, op, first.map_or(Begin::YieldFirst, Begin::Waiting))
}

/// How a driven operation begins.
enum Begin {
    /// Its first step runs now.
    Step,
    /// Its first step ran, and answered this.
    Waiting(Next),
    /// Its cothread yields to the ready tail first; the operation steps
    /// from the start when it is resumed.
    YieldFirst,
}

/// `drive`, from `begin`.
fn drive_from<O: Operation + Copy + 'static>(lua: &mut Lua, mut op: O, begin: Begin) -> Ret {
    let l = lua.raw();
    // SAFETY: `lua` runs this C function (a body's handle); `lua` itself is
    // not used while the frame's handle is.
    let mut f = Frame::new(unsafe { Lua::from_raw(l) }, 0);
    let mut first = match begin {
        Begin::Step => None,
        Begin::Waiting(next) => Some(next),
        Begin::YieldFirst => match with_resuming(&mut f, |f, st, task| park(f, st, task, op, None)) {
            Some(Ok(Ok(()))) => return Ok(YIELD),
            Some(Err(e)) => return Err(e),
            // It cannot park: it goes on now.
            Some(Ok(Err(_))) | None => None,
        },
    };
    let mut why = Why::Start;
    loop {
        f.lua.check_stack(STEP_SLOTS)?;
        let next = match first.take() {
            Some(next) => next,
            // A step that raised holding a payload left its error on the top.
            None => engine::step_guarded(&mut op, &mut f, why).map_err(|()| Error::Value)?,
        };
        if let Next::Done(n) = next {
            return Ok(n);
        }
        why = match with_resuming(&mut f, |f, st, task| park(f, st, task, op, Some(next))) {
            Some(Ok(Ok(()))) => return Ok(YIELD),
            Some(Ok(Err(m))) => Why::Failed(m),
            Some(Err(e)) => return Err(e),
            None => op.block(&mut f, next),
        };
    }
}

/// Parks `op` of the running cothread `lua` (task `task` of `st`) on the
/// engine, waiting as `next` says (`None`: due at once, its cothread at the
/// ready tail): an error if no engine can be made, a message if the
/// operation cannot wait.
fn park<O: Operation + 'static>(
    f: &mut Frame,
    st: &crate::state::State,
    task: cothread::Task,
    op: O,
    next: Option<Next>,
) -> Result<Result<(), &'static std::ffi::CStr>, Error> {
    let e = st.engine_or_make()?;
    f.lua.check_stack(1)?;
    // SAFETY: the frame's thread is `st`'s running cothread, registered:
    // the alive table keeps it while the engine holds its record
    // (unregistering it takes the record out: `engine::cancel`); or its
    // stand-in (`with_resuming` says which), which the cothread's
    // `cothread.pcall` holds until it ends (unregistering the cothread
    // drops the record: `Engine::forget`).
    let co = unsafe { Thread::from_raw(f.lua.raw()) };
    let quick = if next.is_some() { Quick::Park } else { Quick::Yield };
    if let Err(m) = engine::park(f, e, (co, st.running.get()), task, Box::new(op), next) {
        return Ok(Err(m));
    }
    st.quick.set(Some(quick));
    Ok(Ok(()))
}

/// `[-nargs, +n, e]` Resumes the coroutine at `idx` (`cothread.pcall`'s, on
/// Lua 5.1) with the `nargs` values on the top, and moves what it yields or
/// returns here (`Lua::resume_at`). In a cothread the coroutine stands in
/// for it (`State::stand_in`): a call that waits parks the cothread. A
/// coroutine parked so is resumed with its operation's results instead
/// (the values given are dropped, as the resume loop drops them); should
/// the operation wait again, it is not resumed, and this answers a yield of
/// nothing, which parks the cothread again.
pub fn resume_standing_in(lua: &mut Lua, idx: c_int, nargs: c_int) -> Result<(Resumed, c_int), Error> {
    let done = with_resuming(&mut *lua, |lua, st, _| {
        let mut nargs = nargs;
        let mut kept = 0;
        if lua.with_thread_at(idx, engine::is_parked) == Some(true) {
            lua.pop(nargs);
            nargs = 0;
            // SAFETY: `lua` runs this C function: the runner the step
            // needs, its own handle unused while the step runs.
            let runner = unsafe { Lua::from_raw(lua.raw()) };
            match lua.with_thread_at(idx, |co| engine::finish(runner, st.engine(), co)).expect("a thread")? {
                Finish::Resume(n) => kept = n,
                Finish::Parked => {
                    st.quick.set(Some(Quick::Park));
                    return Ok((Resumed::Yielded, 0));
                }
            }
        }
        let outer = st.stand_in.replace(lua.to_thread(idx).expect("a thread"));
        let r = lua.resume_at(idx, nargs, kept);
        st.stand_in.set(outer);
        r
    });
    match done {
        Some(r) => r,
        None => lua.resume_at(idx, nargs, 0),
    }
}
