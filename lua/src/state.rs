//! One scheduler instance: the core scheduler, the Lua side kept in the
//! user values of its userdata, and how a C function finds it.
//!
//! The `State` is a `Udata` whose user values hold the Lua side (see the
//! `UV_*` slots). Every function of an instance is a C closure whose first
//! upvalue is that userdata, lent to its body by `with_state`. What the
//! slots map is kept by the modules above: cothreads to tasks in
//! `registry`, signal values to keys in `signal`.
//!
//! Lua may re-enter (a cothread calls `schedule`) while a body holds the
//! state, so it is shared: what changes is in `Cell`s, and the core in a
//! `RefCell` borrowed for one call of it at a time (`core()`), never across
//! a call into Lua.
//!
//! A task's user value is its thread, with `engine::OPERATION_BIT` set while
//! the engine has something to do before the thread resumes (see `engine`):
//! `thread_of` and the resume loop mask it.

use std::borrow::Borrow;
use std::cell::{Cell, OnceCell, RefCell, RefMut};
use std::ffi::{CStr, c_int, c_void};
use std::rc::Rc;

use cothread::{Sched, Task};

use crate::builtin::Builtin;
use crate::engine::{self, Block, CoreRef, Engine, OPERATION_BIT};
use crate::lua::{Classes, Error, L, Lua, REGISTRY, Type, Udata};

thread_local! {
    /// The scheduler resuming a cothread on this thread, innermost first (set
    /// around `lua_resume` by the resume loop, `with_resuming`): how a C
    /// function finds the scheduler of the cothread calling it.
    static CURRENT: Cell<*const State> = const { Cell::new(std::ptr::null()) };
}

/// How the running cothread ended its turn, when a C function of the module
/// says so itself instead of yielding an operation name: the resume loop
/// places it without looking at its stack.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Quick {
    /// `yield()`: to the ready tail.
    Yield,
    /// `halt()`: to the ready head; `run` returns.
    Halt,
    /// Parked by the engine: to the private queue of the engine's key.
    Park,
}

/// How many operations a cothread may start in one turn (from its resume
/// to its next suspension) before the next one yields to the ready tail
/// first (doc/lua.md, "Fairness"). Larger than the core's
/// `cothread::sched::BUDGET` because a Lua call is often served from a
/// buffer (0.1 µs) while a forced yield parks and steps it through the
/// engine (about 1 µs): 128 keeps that under 10 % (bench/lua/fairness.lua)
/// and a turn under 1 ms even when every call is a system call.
pub const BUDGET: u32 = 128;

/// User value slots of the state userdata (1 is the layer's tag of a
/// `State`: see `Udata::CLASSES`).
pub const UV_MODULE: c_int = 2; // the scheduler table (fields error, trap, time, idle)
pub const UV_ALIVE: c_int = 3; // thread -> task handle (`Lua::push_id`)
pub const UV_KEYOF: c_int = 4; // signal value -> key (weak keys)
pub const UV_HELD: c_int = 5; // key -> signal value, while the key has waiters
pub const UV_YIELDOPS: c_int = 6; // name -> {nfixed, handler} (handler false: built-in)
pub const UV_WHENS: c_int = 7; // name -> {nfixed, handler} (handler false: built-in)
pub const UV_PLUGINS: c_int = 8; // plugin function -> {n = count, results...}
pub const UV_NAMES: c_int = 9; // the built-in operation names (kept alive: their addresses are cached)
pub const UV_TIME: c_int = 10; // the default `time` function
pub const NUV: c_int = 9; // after the layer's tag, user value 1

/// Tables this large are replaced by fresh ones once empty, to give memory back.
pub const SHRINK_AFTER: usize = 256;

pub struct State {
    /// The scheduler core, shared with the engine.
    core: Rc<RefCell<Sched>>,
    /// The cothread being resumed by `step`/`run`, or null.
    pub running: Cell<L>,
    /// Its task (valid while `running` is set).
    pub running_task: Cell<Option<Task>>,
    /// The coroutine that runs for it in `cothread.pcall` on Lua 5.1, or
    /// null: the C functions it calls take it for the cothread.
    pub stand_in: Cell<L>,
    /// Cothreads in `alive`, and the most there were since it was last replaced.
    pub registered: Cell<usize>,
    pub registered_peak: Cell<usize>,
    /// Keys in `held`; keys made since `keyof` was last replaced.
    pub held: Cell<usize>,
    pub made: Cell<usize>,
    /// Live combined signals (they need their parts' keys to stay).
    pub combined: Cell<usize>,
    /// Next odd key for a signal value.
    next_key: Cell<usize>,
    /// Keys whose queue lost its last waiter (told by the core's hook).
    emptied: Rc<RefCell<Vec<usize>>>,
    /// Combined signals whose Lua function was collected, to free.
    pub unreferenced: RefCell<Vec<usize>>,
    /// The interned string objects of the built-in operation names (their
    /// `lua_topointer`), by `Builtin`.
    pub names: [Cell<*const c_void>; Builtin::COUNT],
    /// Did the `time` field last return an integer? Then wake times handed to
    /// `idle` are integers too.
    pub integer_clock: Cell<bool>,
    /// The waiting engine, made when first needed.
    engine: OnceCell<Engine>,
    /// Set by a C function of the module just before the running cothread
    /// yields with no values (see `Quick`); taken by the resume loop.
    pub quick: Cell<Option<Quick>>,
    /// Operations the running cothread may still start in this turn before
    /// one yields first (`park::within_budget`); set anew at each resume.
    pub budget: Cell<u32>,
}

// SAFETY: "cothread.state" names only this type's metatable, and
// `STATE_CLASSES` is a static of its own.
unsafe impl Udata for State {
    const NAME: &'static CStr = c"cothread.state";
    // One class: its tag is a cheaper check than a metatable's (every
    // scheduler function makes it).
    const CLASSES: Option<&'static Classes> = Some(&STATE_CLASSES);

    /// Its parked cothreads keep their calls, in tickets; not when Lua
    /// closes: no ticket made then would be finalized (its operation would
    /// leak), and no cothread runs again.
    fn finalize(&self, lua: &mut Lua) {
        if let Some(e) = self.engine.get().filter(|_| !closing(lua)) {
            if let Err(Error::Value) = lua.protected(&mut |lua| engine::abandon_all(lua, e)) {
                lua.pop(1);
            }
        }
    }
}

static STATE_CLASSES: Classes = Classes(&[c"cothread.state"]);

impl State {
    fn new() -> State {
        let emptied = Rc::new(RefCell::new(Vec::new()));
        let mut core = Sched::new();
        let hook = emptied.clone();
        core.set_signal_hook(Some(Box::new(move |key, active| {
            if !active {
                hook.borrow_mut().push(key);
            }
        })));
        State {
            core: Rc::new(RefCell::new(core)),
            running: Cell::new(std::ptr::null_mut()),
            running_task: Cell::new(None),
            stand_in: Cell::new(std::ptr::null_mut()),
            registered: Cell::new(0),
            registered_peak: Cell::new(0),
            held: Cell::new(0),
            made: Cell::new(0),
            combined: Cell::new(0),
            next_key: Cell::new(1),
            emptied,
            unreferenced: RefCell::new(Vec::new()),
            names: std::array::from_fn(|_| Cell::new(std::ptr::null())),
            integer_clock: Cell::new(false),
            engine: OnceCell::new(),
            quick: Cell::new(None),
            budget: Cell::new(BUDGET),
        }
    }

    /// The core scheduler, for one short use (no Lua call while held).
    #[inline]
    pub fn core(&self) -> RefMut<'_, Sched> {
        self.core.borrow_mut()
    }

    /// A key for a new signal value: odd, so never a combined signal's address.
    pub fn new_key(&self) -> usize {
        let k = self.next_key.get();
        self.next_key.set(k + 2);
        self.made.set(self.made.get() + 1);
        k
    }

    /// A key that no value maps to, for moving a queue aside.
    pub fn scratch_key(&self) -> usize {
        self.new_key()
    }

    pub fn pop_emptied(&self) -> Option<usize> {
        self.emptied.borrow_mut().pop()
    }

    /// The thread of a task.
    pub fn thread_of(&self, task: Task) -> Option<L> {
        self.core().data(task).ok().map(|d| (d & !OPERATION_BIT) as L)
    }

    /// The waiting engine, if made.
    #[inline]
    pub fn engine(&self) -> Option<&Engine> {
        self.engine.get()
    }

    /// The private key of the engine's parked cothreads (it has parked one).
    #[inline]
    pub fn engine_key(&self) -> usize {
        self.engine.get().map_or(0, Engine::key)
    }

    /// Makes the engine of this state (it has none) with `make`, given the
    /// core and a key of its own.
    pub fn set_engine(&self, make: impl FnOnce(CoreRef, usize) -> Engine) {
        let key = self.new_key();
        let _ = self.engine.set(make(self.core_ref(), key));
    }

    /// The core, for an engine of this state.
    fn core_ref(&self) -> CoreRef {
        CoreRef::new(self.core.clone())
    }

    /// The waiting engine, made now if needed (an error if the system
    /// refuses an event loop).
    pub fn engine_or_make(&self) -> Result<&Engine, Error> {
        if let Some(e) = self.engine.get() {
            return Ok(e);
        }
        let key = self.new_key();
        match Engine::with_own_loop(self.core_ref(), key) {
            Ok(e) => Ok(self.engine.get_or_init(|| e)),
            Err(e) => Err(Error::owned(format!("cothread: cannot create the event loop: {e}"))),
        }
    }

    /// Runs the engine once, blocking as `block` says; the cothreads whose
    /// operations its events concern become ready. Whether any did.
    pub fn poll_io(&self, block: Block) -> bool {
        // (The engine borrows this state's core, which is not borrowed now.)
        self.engine.get().is_some_and(|e| engine::poll(e, block))
    }

    /// Takes one operation from the running cothread's budget: `false`
    /// when none is left.
    #[inline]
    pub fn spend(&self) -> bool {
        let left = self.budget.get();
        self.budget.set(left.saturating_sub(1));
        left > 0
    }

    /// Operations that can end by themselves (they keep `run` going).
    #[inline]
    pub fn io_armed(&self) -> usize {
        self.engine.get().map_or(0, Engine::armed)
    }
}

/// The scheduler resuming the calling thread `lua`, and its task, if the
/// caller is that scheduler's cothread and may yield: `f` runs with them.
pub fn with_resuming<H: Borrow<Lua>, R>(lua: H, f: impl FnOnce(H, &State, Task) -> R) -> Option<R> {
    let p = CURRENT.get();
    // SAFETY: CURRENT is non-null only while `resuming` runs a resume, its
    // state held for it by the closure that runs the resume loop (an
    // upvalue), so alive; `f` cannot keep the reference (higher-ranked).
    let st = unsafe { p.as_ref() }?;
    let me = lua.borrow();
    let here = |t: L| t == me.raw();
    let task =
        st.running_task.get().filter(|_| (here(st.running.get()) || here(st.stand_in.get())) && me.is_yieldable())?;
    Some(f(lua, st, task))
}

/// Runs `resume` with `st` as the scheduler resuming (`with_resuming`),
/// restoring the outer one after.
#[inline]
pub fn resuming<R>(st: &State, resume: impl FnOnce() -> R) -> R {
    // One look-up of the thread-local for both writes: this is the hot path.
    CURRENT.with(|c| {
        let outer = c.replace(st);
        let r = resume();
        c.set(outer);
        r
    })
}

/// `[-0, +1, m]` Pushes a new state userdata with its user values (the
/// module table slot is left for the caller to fill).
pub fn push_new(lua: &mut Lua) -> Result<(), Error> {
    lua.udata_class::<State>(0, |_| Ok(()))?;
    lua.pop(1);
    lua.new_udata_class(State::new(), 0, NUV);
    for uv in [UV_ALIVE, UV_HELD, UV_YIELDOPS, UV_WHENS, UV_NAMES] {
        lua.new_table(0, 0);
        lua.set_uservalue(-2, uv);
    }
    // Signal values and plugins are remembered weakly.
    for uv in [UV_KEYOF, UV_PLUGINS] {
        push_weak_table(lua);
        lua.set_uservalue(-2, uv);
    }
    push_schedulers(lua);
    lua.push_value(-2);
    lua.push_bool(true);
    lua.set_table(-3); // schedulers[state] = true
    lua.pop(1);
    new_sentinel(lua)
}

/// Registry field of the closing sentinel: a userdata made anew after each
/// state, so that Lua, which calls the finalizers in the reverse order of
/// their objects' making when it closes, finalizes it before every state.
/// Held by the registry, it is finalized only then (a replaced one is not
/// the field's any more), and its finalizer leaves `true` in the field.
const SENTINEL: &CStr = c"cothread.closing";

/// The closing sentinel.
struct Sentinel;

// SAFETY: "cothread.sentinel" names no other registry field.
unsafe impl Udata for Sentinel {
    const NAME: &'static CStr = c"cothread.sentinel";

    /// Lua is closing if this is still the registry's sentinel: the field
    /// says so from now on. (Not the sentinel itself: a finalized userdata
    /// is dead to the layer.) The key exists, so the write allocates
    /// nothing.
    fn finalize(&self, lua: &mut Lua) {
        lua.get_field(REGISTRY, SENTINEL);
        let ours = lua.raw_equal(-1, 1);
        lua.pop(1);
        if ours {
            lua.push_bool(true);
            lua.set_field(REGISTRY, SENTINEL);
        }
    }
}

/// `[-0, +0, m]` Makes a new closing sentinel and registers it.
fn new_sentinel(lua: &mut Lua) -> Result<(), Error> {
    lua.udata_metatable::<Sentinel>(|_| Ok(()))?;
    lua.pop(1);
    lua.new_udata(Sentinel, 0);
    lua.set_field(REGISTRY, SENTINEL);
    Ok(())
}

/// `[-0, +0, -]` Is Lua closing (`lua_close`)? Objects made from then on
/// are never finalized: Lua marks none any more.
fn closing(lua: &mut Lua) -> bool {
    let closing = lua.get_field(REGISTRY, SENTINEL) == Type::Boolean;
    lua.pop(1);
    closing
}

/// Registry field: the set of this Lua state's schedulers (their state
/// userdata, as weak keys), so that one can tell whether another holds a
/// coroutine (`registry::held_elsewhere`).
const SCHEDULERS: &CStr = c"cothread.schedulers";

/// `[-0, +1, m]` Pushes the set of schedulers, made on first use.
pub fn push_schedulers(lua: &mut Lua) {
    if lua.get_field(REGISTRY, SCHEDULERS) == Type::Table {
        return;
    }
    lua.pop(1);
    push_weak_table(lua);
    lua.push_value(-1);
    lua.set_field(REGISTRY, SCHEDULERS);
}

/// `[-0, +1, m]` Pushes a new table with weak keys.
pub fn push_weak_table(lua: &mut Lua) {
    lua.new_table(0, 0);
    lua.new_table(0, 1);
    lua.push_bytes(b"k");
    lua.set_field(-2, c"__mode");
    lua.set_metatable_top(-2);
}

/// Runs `f` with the state of the running C closure (upvalue 1); an error
/// if the state was already finalized (a finalizer of an older object may
/// still call the scheduler while Lua closes).
#[inline]
pub fn with_state<R>(lua: &mut Lua, f: impl FnOnce(&mut Lua, &State) -> Result<R, Error>) -> Result<R, Error> {
    lua.with_upvalue(1, |lua, st| match st {
        Some(st) => f(lua, st),
        None => Err(Error::msg(c"cothread: scheduler used after it was collected")),
    })
}

/// `[-0, +1, -]` Pushes the user value `uv` of the running closure's state.
#[inline]
pub fn push_uv(lua: &Lua, uv: c_int) {
    lua.get_uservalue(Lua::upvalue(1), uv);
}

/// `[-1, +0, -]` Pops the top value into user value `uv` of the running
/// closure's state.
pub fn set_uv(lua: &mut Lua, uv: c_int) {
    lua.set_uservalue(Lua::upvalue(1), uv);
}

/// `[-0, +1, m]` Pushes field `name` of the scheduler table.
pub fn push_field(lua: &mut Lua, name: &CStr) {
    push_uv(lua, UV_MODULE);
    lua.get_field(-1, name);
    lua.remove(-2);
}
