//! One scheduler instance: the core scheduler, the Lua side kept in the
//! user values of its userdata, and how a C function finds it.
//!
//! The `State` lives in a full userdata (freed by its `__gc`) whose user values
//! hold the Lua side (see the `UV_*` slots). Every function of an instance is a
//! C closure whose first upvalue is that userdata. What the slots map is kept
//! by the modules above: cothreads to tasks in `registry`, signal values to
//! keys in `signal`.
//!
//! Rust references into a `State` never live across a call into Lua: Lua may
//! re-enter (a cothread calls `schedule`) or longjmp out (an error). Code reaches
//! the state through `*mut State` in short expressions instead.
//!
//! A task's user value is its thread, with `engine::OPERATION_BIT` set while
//! the engine has something to do before the thread resumes (see `engine`):
//! `thread_of` and the resume loop mask it.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::rc::Rc;

use cothread::{Sched, Task};

use crate::builtin::Builtin;
use crate::engine::{self, Block, Engine, OPERATION_BIT};
use crate::raw::{self, L, ffi};

thread_local! {
    /// The scheduler resuming a cothread on this thread, innermost first (set
    /// around `lua_resume` by the resume loop): how a C function finds the
    /// scheduler of the cothread calling it (`park::cothread_of`).
    pub static CURRENT: Cell<*mut State> = const { Cell::new(std::ptr::null_mut()) };
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

/// User value slots of the state userdata.
pub const UV_MODULE: c_int = 1; // the scheduler table (fields error, trap, time, idle)
pub const UV_ALIVE: c_int = 2; // thread -> task handle (`lua::ffi::push_id`)
pub const UV_KEYOF: c_int = 3; // signal value -> key (weak keys)
pub const UV_HELD: c_int = 4; // key -> signal value, while the key has waiters
pub const UV_YIELDOPS: c_int = 5; // name -> {nfixed, handler} (handler false: built-in)
pub const UV_WHENS: c_int = 6; // name -> {nfixed, handler} (handler false: built-in)
pub const UV_PLUGINS: c_int = 7; // plugin function -> {n = count, results...}
pub const UV_NAMES: c_int = 8; // the built-in operation names (kept alive: their addresses are cached)
pub const UV_TIME: c_int = 9; // the default `time` function
pub const NUV: c_int = 9;

/// Tables this large are replaced by fresh ones once empty, to give memory back.
pub const SHRINK_AFTER: usize = 256;

pub struct State {
    pub core: Sched,
    /// The cothread being resumed by `step`/`run`, or null.
    pub running: L,
    /// Its task (valid while `running` is set).
    pub running_task: Option<Task>,
    /// Cothreads in `alive`, and the most there were since it was last replaced.
    pub registered: usize,
    pub registered_peak: usize,
    /// Keys in `held`; keys made since `keyof` was last replaced.
    pub held: usize,
    pub made: usize,
    /// Live combined signals (they need their parts' keys to stay).
    pub combined: usize,
    /// Next odd key for a signal value.
    next_key: usize,
    /// Keys whose queue lost its last waiter (told by the core's hook).
    emptied: Rc<RefCell<Vec<usize>>>,
    /// Combined signals whose Lua function was collected, to free.
    pub unreferenced: Vec<usize>,
    /// The interned string objects of the built-in operation names (their
    /// `lua_topointer`), by `Builtin`.
    pub names: [*const c_void; Builtin::COUNT],
    /// Did the `time` field last return an integer? Then wake times handed to
    /// `idle` are integers too.
    pub integer_clock: bool,
    /// Set by `__gc`: the userdata may still be reached by finalizers.
    pub closed: bool,
    /// The waiting engine (from `Box::into_raw`; null until first needed).
    pub engine: *mut Engine,
    /// Set by a C function of the module just before the running cothread
    /// yields with no values (see `Quick`); taken by the resume loop.
    pub quick: Option<Quick>,
}

impl Drop for State {
    fn drop(&mut self) {
        if !self.engine.is_null() {
            // SAFETY: the engine comes from `Box::into_raw` and is freed once,
            // here, before the core it points to.
            drop(unsafe { Box::from_raw(std::mem::replace(&mut self.engine, std::ptr::null_mut())) });
        }
    }
}

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
            core,
            running: std::ptr::null_mut(),
            running_task: None,
            registered: 0,
            registered_peak: 0,
            held: 0,
            made: 0,
            combined: 0,
            next_key: 1,
            emptied,
            unreferenced: Vec::new(),
            names: [std::ptr::null(); Builtin::COUNT],
            integer_clock: false,
            closed: false,
            engine: std::ptr::null_mut(),
            quick: None,
        }
    }

    /// A key for a new signal value: odd, so never a combined signal's address.
    pub fn new_key(&mut self) -> usize {
        let k = self.next_key;
        self.next_key += 2;
        self.made += 1;
        k
    }

    /// A key that no value maps to, for moving a queue aside.
    pub fn scratch_key(&mut self) -> usize {
        self.new_key()
    }

    pub fn pop_emptied(&self) -> Option<usize> {
        self.emptied.borrow_mut().pop()
    }
}

/// `[-0, +1, m]` Creates a state userdata with its metatable and user values
/// (the module table slot is left for the caller to fill).
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn push_new(l: L) -> *mut State {
    // The metatable is made first: once the state is written, its `__gc`
    // must be set before Lua allocates again (a memory error would leak it).
    // SAFETY: valid state; the userdata block is fresh, sized and aligned for a
    // `State` (Lua aligns userdata for any C type; `State` needs 8).
    unsafe {
        raw::check_stack(l, 4);
        raw::metatable_once(l, c"cothread.state", |l| {
            ffi::lua_pushcfunction(l, state_gc);
            ffi::lua_setfield(l, -2, c"__gc".as_ptr());
            ffi::lua_pushliteral(l, c"cothread.state");
            ffi::lua_setfield(l, -2, c"__metatable".as_ptr());
        });
        let p = ffi::lua_newuserdatauv(l, std::mem::size_of::<State>(), NUV) as *mut State;
        p.write(State::new());
        ffi::lua_rotate(l, -2, 1); // state metatable
        ffi::lua_setmetatable(l, -2);
        for uv in [UV_ALIVE, UV_HELD, UV_YIELDOPS, UV_WHENS, UV_NAMES] {
            ffi::lua_newtable(l);
            ffi::lua_setiuservalue(l, -2, uv);
        }
        // Signal values and plugins are remembered weakly.
        for uv in [UV_KEYOF, UV_PLUGINS] {
            push_weak_table(l);
            ffi::lua_setiuservalue(l, -2, uv);
        }
        push_schedulers(l);
        ffi::lua_pushvalue(l, -2);
        ffi::lua_pushboolean(l, 1);
        ffi::lua_rawset(l, -3); // schedulers[state] = true
        ffi::lua_pop(l, 1);
        new_sentinel(l);
        p
    }
}

/// Registry field of the closing sentinel: a userdata (a `bool`, set by
/// its `__gc`) made anew after each state, so that Lua, which calls the
/// finalizers in the reverse order of their objects' making when it
/// closes, finalizes it before every state. Held by the registry, it is
/// finalized only then (a replaced one is not the field's any more).
const SENTINEL: &std::ffi::CStr = c"cothread.closing";

/// `[-0, +0, m]` Makes a new closing sentinel and registers it.
///
/// # Safety
/// `l` is a valid state with three free slots.
unsafe fn new_sentinel(l: L) {
    // SAFETY: valid state (contract); the block is written before the
    // metatable makes its `__gc` reach it.
    unsafe {
        let flag = ffi::lua_newuserdatauv(l, 1, 0) as *mut bool;
        flag.write(false);
        raw::metatable_once(l, c"cothread.sentinel", |l| {
            ffi::lua_pushcfunction(l, sentinel_gc);
            ffi::lua_setfield(l, -2, c"__gc".as_ptr());
        });
        ffi::lua_setmetatable(l, -2);
        ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, SENTINEL.as_ptr());
    }
}

/// `__gc` of a closing sentinel: Lua is closing if it is still the
/// registry's.
unsafe extern "C-unwind" fn sentinel_gc(l: L) -> c_int {
    // SAFETY: called by Lua with the sentinel (a one-byte block) at index 1;
    // a finalizer has a free slot for the registry's field (LUA_MINSTACK).
    unsafe {
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, SENTINEL.as_ptr());
        if ffi::lua_rawequal(l, -1, 1) != 0 {
            (ffi::lua_touserdata(l, 1) as *mut bool).write(true);
        }
    }
    0
}

/// `[-0, +0, -]` Is Lua closing (`lua_close`)? Objects made from then on
/// are never finalized: Lua marks none any more.
///
/// # Safety
/// `l` is a valid state with a free slot.
unsafe fn closing(l: L) -> bool {
    // SAFETY: valid state (contract); the registry's field is pushed and
    // popped; a userdata there is a sentinel (only `new_sentinel` sets it).
    unsafe {
        let t = ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, SENTINEL.as_ptr());
        let closing = t == ffi::LUA_TUSERDATA && *(ffi::lua_touserdata(l, -1) as *const bool);
        ffi::lua_pop(l, 1);
        closing
    }
}

/// Registry field: the set of this Lua state's schedulers (their state
/// userdata, as weak keys), so that one can tell whether another holds a
/// coroutine (`registry::held_elsewhere`).
const SCHEDULERS: &std::ffi::CStr = c"cothread.schedulers";

/// `[-0, +1, m]` Pushes the set of schedulers, made on first use.
///
/// # Safety
/// `l` is a valid state with 3 free slots.
pub unsafe fn push_schedulers(l: L) {
    // SAFETY: valid state (contract); the registry field holds a table made
    // here.
    unsafe {
        if ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, SCHEDULERS.as_ptr()) == ffi::LUA_TTABLE {
            return;
        }
        ffi::lua_pop(l, 1);
        push_weak_table(l);
        ffi::lua_pushvalue(l, -1);
        ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, SCHEDULERS.as_ptr());
    }
}

/// `[-0, +0, e]` The waiting engine of state `p`, made now if needed (raises
/// if the system refuses an event loop).
///
/// # Safety
/// `l` is valid; `p` is a live state.
pub unsafe fn engine_of(l: L, p: *mut State) -> *mut Engine {
    // SAFETY: `p` is live; the engine's core pointer is the state's own core,
    // which outlives it (the state drops the engine first).
    unsafe {
        if (*p).engine.is_null() {
            let key = (*p).new_key();
            let core = &raw mut (*p).core;
            let failed = match Engine::with_own_loop(core, key) {
                Ok(e) => {
                    (*p).engine = Box::into_raw(Box::new(e));
                    None
                }
                Err(e) => Some(
                    std::ffi::CString::new(format!("cothread: cannot create the event loop: {e}")).unwrap_or_default(),
                ),
            };
            if let Some(msg) = failed {
                ffi::lua_pushstring(l, msg.as_ptr());
                drop(msg); // nothing with a destructor may stay alive across lua_error
                ffi::lua_error(l);
            }
        }
        (*p).engine
    }
}

/// Runs the engine of state `p` once, blocking as `block` says; the
/// cothreads whose operations its events concern become ready. Returns
/// whether any did.
///
/// # Safety
/// `p` is a live state.
pub unsafe fn poll_io(p: *mut State, block: Block) -> bool {
    // SAFETY: `p` is live; its engine, if any, too.
    unsafe {
        let e = (*p).engine;
        !e.is_null() && engine::poll(e, block)
    }
}

/// Operations of state `p` that can end by themselves (they keep `run` going).
///
/// # Safety
/// `p` is a live state.
#[inline]
pub unsafe fn io_armed(p: *mut State) -> usize {
    // SAFETY: `p` is live; its engine, if any, too.
    unsafe {
        let e = (*p).engine;
        if e.is_null() { 0 } else { (*e).armed() }
    }
}

/// `[-0, +1, m]` Pushes a new table with weak keys.
///
/// # Safety
/// `l` is a valid state with two free slots.
pub unsafe fn push_weak_table(l: L) {
    // SAFETY: a valid state with the two slots the table and its metatable
    // take (caller's contract); the metatable is consumed by its table.
    unsafe {
        ffi::lua_newtable(l);
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_pushliteral(l, c"k");
        ffi::lua_setfield(l, -2, c"__mode".as_ptr());
        ffi::lua_setmetatable(l, -2);
    }
}

/// `__gc` of the state: drops the core (and everything it holds).
unsafe extern "C-unwind" fn state_gc(l: L) -> c_int {
    // SAFETY: called by Lua with the state userdata at index 1; it is dropped
    // once, and `closed` tells finalizers that run later.
    unsafe {
        let p = ffi::lua_touserdata(l, 1) as *mut State;
        if !p.is_null() && !(*p).closed {
            // Its parked cothreads keep their calls, in tickets; not when
            // Lua closes: no ticket made then would be finalized (its
            // operation would leak), and no cothread runs again.
            if !(*p).engine.is_null() && !closing(l) {
                ffi::lua_pushcfunction(l, engine::abandon);
                ffi::lua_pushlightuserdata(l, (*p).engine.cast());
                if ffi::lua_pcall(l, 1, 0, 0) != ffi::LUA_OK {
                    ffi::lua_pop(l, 1);
                }
            }
            std::ptr::drop_in_place(p);
            std::ptr::addr_of_mut!((*p).closed).write(true);
        }
    }
    0
}

/// `[-0, +0, e]` The state of the running C closure (upvalue 1). Raises if the
/// state was already finalized (a finalizer of an older object may still call
/// the scheduler while Lua closes).
///
/// # Safety
/// Called from a C closure of this module whose upvalue 1 is a state userdata.
#[inline]
pub unsafe fn this(l: L) -> *mut State {
    // SAFETY: upvalue 1 of every closure of the module is its state (contract);
    // `closed` stays readable after `__gc` (see `state_gc`).
    unsafe {
        let p = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut State;
        if (*p).closed {
            raw::error(l, c"cothread: scheduler used after it was collected");
        }
        p
    }
}

/// `[-0, +1, -]` Pushes the user value `uv` of the running closure's state.
///
/// # Safety
/// As `this`.
#[inline]
pub unsafe fn push_uv(l: L, uv: c_int) {
    // SAFETY: upvalue 1 is the state userdata (contract).
    unsafe {
        ffi::lua_getiuservalue(l, ffi::lua_upvalueindex(1), uv);
    }
}

/// `[-0, +1, e]` Pushes field `name` of the scheduler table.
///
/// # Safety
/// As `this`.
pub unsafe fn push_field(l: L, name: &std::ffi::CStr) {
    // SAFETY: as `this`; the module slot holds the scheduler table.
    unsafe {
        push_uv(l, UV_MODULE);
        ffi::lua_getfield(l, -1, name.as_ptr());
        ffi::lua_remove(l, -2);
    }
}

/// The thread of a task.
///
/// # Safety
/// `p` is a live state.
pub unsafe fn thread_of(p: *mut State, task: Task) -> Option<L> {
    // SAFETY: live state (contract).
    unsafe { (*p).core.data(task).ok().map(|d| (d & !OPERATION_BIT) as L) }
}
