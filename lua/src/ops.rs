//! Operations: the yield operations a cothread ends a turn with (`yield`,
//! `wait`, ...) and the `when`s that place a thread (`next`, `wait`, ...).
//!
//! Built-in and plugin operations share one table per kind (`UV_YIELDOPS`,
//! `UV_WHENS`: name -> `{nfixed, handler}`, handler `false` for a built-in).
//! The built-ins are dispatched natively by the address of their interned name
//! string, so the hot path compares pointers instead of looking names up.

use std::ffi::{CStr, c_int};

use cothread::{Task, When};

use crate::builtin::Builtin;
use crate::raw::{self, L, ffi};
use crate::registry;
use crate::signal;
use crate::state::{self, Quick, State, this};
use crate::time;

/// `[-0, +0, -]` The built-in whose name is the string at `idx`, if any.
///
/// # Safety
/// `l` is valid; `p` is a live state.
#[inline]
pub unsafe fn builtin_at(l: L, idx: c_int, p: *mut State) -> Option<Builtin> {
    // SAFETY: valid state; `names` holds the objects of interned strings kept
    // alive by UV_NAMES, and equal short strings are one object in Lua 5.4
    // (any other value has another address, or none).
    unsafe {
        let o = ffi::lua_topointer(l, idx);
        let i = (*p).names.iter().position(|&n| n == o)?;
        Some(Builtin::ALL[i])
    }
}

/// The hot path: a cothread that yielded just `yield` or `halt` (no produced
/// values) is placed without moving anything off its stack. `None` for any
/// other yield.
///
/// # Safety
/// `co` just yielded `nres` values; `task` is its task in state `p`.
#[inline]
pub unsafe fn quick_turn(co: L, nres: c_int, p: *mut State, task: Task) -> Option<Turn> {
    if nres != 1 {
        return None;
    }
    // SAFETY: as stated; the yielded value is popped, which a resume ignores anyway.
    unsafe {
        let (when, turn) = match builtin_at(co, -1, p)? {
            Builtin::Yield => (When::Later, Turn::Continue),
            Builtin::Halt => (When::Next, Turn::Halt),
            _ => return None,
        };
        ffi::lua_settop(co, -2);
        let _ = (*p).core.reschedule(task, when);
        Some(turn)
    }
}

// ===== the yield operations, as called by cothreads =====

/// A yield operation: yields its name (upvalue 1) and its arguments.
pub unsafe extern "C-unwind" fn op_plain(l: L) -> c_int {
    // SAFETY: a closure made by `push_yield_op`; yielding from a C function
    // without continuation longjmps, and this frame holds nothing to drop.
    unsafe {
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_insert(l, 1);
        ffi::lua_yield(l, ffi::lua_gettop(l))
    }
}

/// `[-0, +0, e]` The quick way of `yield()` and `halt()` without values, in
/// a cothread being resumed by a scheduler (`state::CURRENT`): tells the
/// resume loop directly (`State::quick`) and yields nothing, instead of
/// yielding the operation's name for the loop to recognize. Returns 0 if it
/// does not apply.
unsafe fn quick_yield(l: L, q: Quick) -> c_int {
    // SAFETY: CURRENT is a live state while it resumes a cothread (set and
    // restored around `lua_resume`, which does not raise). Yielding without
    // continuation longjmps; nothing here has a destructor.
    unsafe {
        if ffi::lua_gettop(l) != 0 {
            return 0;
        }
        let p = state::CURRENT.get();
        if p.is_null() || (*p).running != l || ffi::lua_isyieldable(l) == 0 {
            return 0;
        }
        (*p).quick = Some(q);
        ffi::lua_yield(l, 0)
    }
}

/// `yield(...)`.
unsafe extern "C-unwind" fn op_yield(l: L) -> c_int {
    // SAFETY: a built-in yield operation's closure (see `quick_yield`).
    unsafe {
        let r = quick_yield(l, Quick::Yield);
        if r != 0 {
            return r; // Lua 5.1 and LuaJIT: lua_yield returns, for the function to return
        }
        op_plain(l)
    }
}

/// `halt(...)`.
unsafe extern "C-unwind" fn op_halt(l: L) -> c_int {
    // SAFETY: as `op_yield`.
    unsafe {
        let r = quick_yield(l, Quick::Halt);
        if r != 0 {
            return r; // Lua 5.1 and LuaJIT: lua_yield returns, for the function to return
        }
        op_plain(l)
    }
}

/// `wait(signal, ...)`: checks the signal before yielding.
unsafe extern "C-unwind" fn op_wait(l: L) -> c_int {
    // SAFETY: as `op_plain`.
    unsafe {
        if raw::is_nil_or_nan(l, 1) {
            raw::arg_error(l, 1, c"signal expected");
        }
        op_plain(l)
    }
}

/// `postpone(time, ...)`, `delay(seconds, ...)`: check the number first.
unsafe extern "C-unwind" fn op_time(l: L) -> c_int {
    // SAFETY: as `op_plain`.
    unsafe {
        raw::check_time(l, 1, 1);
        op_plain(l)
    }
}

/// The C function of built-in yield operation `b` (upvalue: its name).
pub fn builtin_function(b: Builtin) -> ffi::lua_CFunction {
    match b {
        Builtin::Wait => op_wait,
        Builtin::Postpone | Builtin::Delay => op_time,
        Builtin::Yield => op_yield,
        Builtin::Halt => op_halt,
        _ => op_plain,
    }
}

/// `[-0, +1, m]` Pushes a yield operation function named `name` (the string
/// at `name_idx`).
///
/// # Safety
/// `l` is valid.
pub unsafe fn push_yield_op(l: L, name_idx: c_int, f: ffi::lua_CFunction) {
    // SAFETY: a valid state (caller's contract); the name is copied up, then
    // taken by the closure (a net push of one).
    unsafe {
        ffi::lua_pushvalue(l, name_idx);
        ffi::lua_pushcclosure(l, f, 1);
    }
}

// ===== dispatch of a yield =====

/// What the resumed cothread asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Keep running the scheduler.
    Continue,
    /// `halt`: `run` returns.
    Halt,
}

/// `[-?, +?, e]` Handles the yield of cothread `co` (task `task`): its values are
/// on `l` above `base` (the operation name first). Places the thread, and leaves
/// the produced values above `base`.
///
/// # Safety
/// In a closure of the module whose state is `p`; `co` is the thread of
/// `task`, just yielded.
pub unsafe fn dispatch(l: L, p: *mut State, base: c_int, co: L, task: Task) -> Turn {
    // SAFETY: as `this`; the state is reached in short expressions.
    unsafe {
        let n = ffi::lua_gettop(l) - base;
        let name = base + 1;
        let Some(op) = (if n > 0 { builtin_at(l, name, p) } else { None }) else {
            return custom_yield(l, base, co, task);
        };
        let when = match op {
            Builtin::Yield => When::Later,
            Builtin::Halt => When::Next,
            Builtin::Suspend => {
                registry::unregister(l, co, task);
                drop_fixed(l, name, 0);
                return Turn::Continue;
            }
            Builtin::Wait => {
                if n < 2 || raw::is_nil_or_nan(l, name + 1) {
                    return invalid(l, base, co, task, c"bad argument #1 to 'wait' (signal expected)");
                }
                When::Wait(signal::signal_key(l, name + 1, true).expect("made"))
            }
            Builtin::Postpone | Builtin::Delay => {
                if n < 2 || ffi::lua_type(l, name + 1) != ffi::LUA_TNUMBER || raw::is_nan(l, name + 1) {
                    let msg = if op == Builtin::Delay {
                        c"bad argument #1 to 'delay' (number expected)"
                    } else {
                        c"bad argument #1 to 'postpone' (number expected)"
                    };
                    return invalid(l, base, co, task, msg);
                }
                let t = ffi::lua_tonumber(l, name + 1);
                // Read the clock before touching the queues: a user's `time` may raise.
                let at = if op == Builtin::Delay { time::after(time::now(l), t) } else { t };
                When::Postpone(time::to_core(at))
            }
            Builtin::Next | Builtin::Later => return custom_yield(l, base, co, task),
        };
        // Taken out of every queue, then placed by the operation.
        let _ = (*p).core.reschedule(task, when);
        if let When::Wait(k) = when {
            signal::hold(l, name + 1, k);
        }
        drop_fixed(l, name, op.nfixed());
        if op == Builtin::Halt { Turn::Halt } else { Turn::Continue }
    }
}

/// `[-(1+k), +0, -]` Removes the operation name at `name` and its `k` fixed
/// arguments, keeping the produced values after them.
unsafe fn drop_fixed(l: L, name: c_int, k: c_int) {
    // SAFETY: valid indices (callers pass the dispatched operation's).
    unsafe {
        if ffi::lua_gettop(l) == name + k {
            ffi::lua_settop(l, name - 1);
        } else {
            ffi::lua_rotate(l, name, -(1 + k));
            ffi::lua_pop(l, 1 + k);
        }
    }
}

/// A plugin yield operation: unregisters the thread and calls
/// `handler(thread, fixed...)`, which places it or leaves it out.
unsafe fn custom_yield(l: L, base: c_int, co: L, task: Task) -> Turn {
    // SAFETY: as `dispatch`.
    unsafe {
        let name = base + 1;
        let n = ffi::lua_gettop(l) - base;
        if n == 0 || raw::to_str(l, name).is_none() {
            return invalid(l, base, co, task, c"invalid yield operation (cothreads yield with an operation name)");
        }
        state::push_uv(l, state::UV_YIELDOPS);
        ffi::lua_pushvalue(l, name);
        ffi::lua_rawget(l, -2);
        ffi::lua_remove(l, -2);
        if ffi::lua_type(l, -1) != ffi::LUA_TTABLE || ffi::lua_rawgeti(l, -1, 2) != ffi::LUA_TFUNCTION {
            ffi::lua_settop(l, base + n);
            let shown = raw::push_shown(l, name);
            ffi::lua_pushfstring(l, c"invalid yield operation '%s'".as_ptr(), shown);
            ffi::lua_remove(l, -2);
            return invalid_top(l, base, co, task);
        }
        ffi::lua_rawgeti(l, -2, 1);
        let k = (ffi::lua_tointegerx(l, -1, std::ptr::null_mut()) as c_int).max(0);
        ffi::lua_pop(l, 1);
        ffi::lua_remove(l, -2); // ... handler
        raw::check_stack(l, k + 2);
        raw::push_thread(l, co);
        for i in 0..k {
            if i + 1 < n {
                ffi::lua_pushvalue(l, name + 1 + i);
            } else {
                ffi::lua_pushnil(l);
            }
        }
        registry::unregister(l, co, task);
        ffi::lua_call(l, 1 + k, 0);
        drop_fixed(l, name, k.min(n - 1));
        Turn::Continue
    }
}

/// An invalid yield is an error raised by the cothread: drops what it yielded
/// and reports `msg` through `trap` / `error`.
unsafe fn invalid(l: L, base: c_int, co: L, task: Task, msg: &CStr) -> Turn {
    // SAFETY: as `dispatch`.
    unsafe {
        ffi::lua_pushstring(l, msg.as_ptr());
        invalid_top(l, base, co, task)
    }
}

/// As `invalid`, with the message on the top of the stack.
unsafe fn invalid_top(l: L, base: c_int, co: L, task: Task) -> Turn {
    // SAFETY: as `dispatch`.
    unsafe {
        ffi::lua_insert(l, base + 1);
        ffi::lua_settop(l, base + 1); // only the message

        registry::finish(l, base, co, Some(task), false);
        Turn::Continue
    }
}

// ===== whens =====

/// A `when` argument, resolved.
pub enum Place {
    /// A core placement.
    Core(When),
    /// A plugin `when`: its handler is on the top of the stack, with `nfixed`.
    Custom(c_int),
}

/// `[-0, +(0|1), e]` Resolves the `when` at `idx` (default `"later"`) and its
/// fixed arguments after it, raising argument errors. For `wait` the target's
/// key is made (the caller holds the value with `signal::hold` once waited on).
///
/// # Safety
/// In a closure of the module.
pub unsafe fn resolve_when(l: L, idx: c_int) -> Place {
    // SAFETY: as `this`.
    unsafe {
        let p = this(l);
        if ffi::lua_isnoneornil(l, idx) != 0 {
            return Place::Core(When::Later);
        }
        if let Some(b) = builtin_at(l, idx, p).filter(|b| b.is_when()) {
            let arg = idx + 1;
            return Place::Core(match b {
                Builtin::Next => When::Next,
                Builtin::Later => When::Later,
                Builtin::Wait => {
                    if raw::is_nil_or_nan(l, arg) {
                        raw::arg_error(l, arg, c"signal expected");
                    }
                    When::Wait(signal::signal_key(l, arg, true).expect("made"))
                }
                Builtin::Postpone => When::Postpone(time::to_core(raw::check_time(l, arg, arg))),
                _ => {
                    let s = raw::check_time(l, arg, arg);
                    When::Postpone(time::to_core(time::after(time::now(l), s)))
                }
            });
        }
        if ffi::lua_type(l, idx) == ffi::LUA_TSTRING {
            state::push_uv(l, state::UV_WHENS);
            ffi::lua_pushvalue(l, idx);
            ffi::lua_rawget(l, -2);
            ffi::lua_remove(l, -2);
            if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
                if ffi::lua_rawgeti(l, -1, 2) == ffi::LUA_TFUNCTION {
                    ffi::lua_rawgeti(l, -2, 1);
                    let k = (ffi::lua_tointegerx(l, -1, std::ptr::null_mut()) as c_int).max(0);
                    ffi::lua_pop(l, 1);
                    ffi::lua_remove(l, -2);
                    return Place::Custom(k);
                }
                ffi::lua_pop(l, 1);
            }
            ffi::lua_pop(l, 1);
        }
        ffi::luaL_tolstring(l, idx, std::ptr::null_mut());
        let msg = ffi::lua_pushfstring(l, c"invalid option '%s'".as_ptr(), raw::push_shown(l, -1));
        ffi::luaL_argerror(l, idx, msg);
        unreachable!()
    }
}

/// `[-0, +0, e]` Calls the plugin `when` handler at `handler` as
/// `handler(thread at thread_idx, fixed...)`, the `k` fixed arguments being
/// those from `first` up to the handler (missing ones nil). Returns the status
/// of `lua_pcall` if `protected`, else raises on error.
///
/// # Safety
/// Valid indices, `first <= handler`.
pub unsafe fn call_when(l: L, handler: c_int, thread_idx: c_int, first: c_int, k: c_int, protected: bool) -> c_int {
    // SAFETY: valid state and indices (caller's contract).
    unsafe {
        raw::check_stack(l, k + 2);
        ffi::lua_pushvalue(l, handler);
        ffi::lua_pushvalue(l, thread_idx);
        for i in 0..k {
            // The fixed arguments lie between `first` and the handler; missing ones are nil.
            if first + i < handler {
                ffi::lua_pushvalue(l, first + i);
            } else {
                ffi::lua_pushnil(l);
            }
        }
        if protected {
            ffi::lua_pcall(l, 1 + k, 0, 0)
        } else {
            ffi::lua_call(l, 1 + k, 0);
            ffi::LUA_OK
        }
    }
}

// ===== plugin =====

/// `cothread.plugin(f)`: calls `f(cothread, ops)` once and remembers its results.
pub unsafe extern "C-unwind" fn plugin(l: L) -> c_int {
    // SAFETY: Lua calls this closure (upvalue 1: its state); the argument is
    // checked to be a function before it is called (unprotected: its error
    // is the caller's).
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TFUNCTION);
        ffi::lua_settop(l, 1);
        state::push_uv(l, state::UV_PLUGINS); // f plugins
        ffi::lua_pushvalue(l, 1);
        if ffi::lua_rawget(l, 2) == ffi::LUA_TTABLE {
            return unpack(l, 3);
        }
        ffi::lua_pop(l, 1);
        ffi::lua_pushvalue(l, 1); // f plugins f
        state::push_uv(l, state::UV_MODULE);
        ffi::lua_createtable(l, 0, 2);
        for (name, f) in [(c"yieldop", yieldop as ffi::lua_CFunction), (c"scheduleop", scheduleop)] {
            ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
            ffi::lua_pushcclosure(l, f, 1);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        ffi::lua_call(l, 2, ffi::LUA_MULTRET); // f plugins results...
        let n = ffi::lua_gettop(l) - 2;
        ffi::lua_createtable(l, n, 1);
        for i in (1..=n).rev() {
            ffi::lua_pushvalue(l, 2 + i);
            ffi::lua_rawseti(l, -2, i as ffi::lua_Integer);
        }
        ffi::lua_pushinteger(l, n as ffi::lua_Integer);
        ffi::lua_setfield(l, -2, c"n".as_ptr());
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushvalue(l, -2);
        ffi::lua_rawset(l, 2); // plugins[f] = {results, n}
        ffi::lua_pop(l, 1);
        n
    }
}

/// `[-0, +n, m]` Pushes the `n` values of the results table at `idx`.
unsafe fn unpack(l: L, idx: c_int) -> c_int {
    // SAFETY: a table made by `plugin` is at `idx`.
    unsafe {
        ffi::lua_getfield(l, idx, c"n".as_ptr());
        let n = ffi::lua_tointegerx(l, -1, std::ptr::null_mut()) as c_int;
        ffi::lua_pop(l, 1);
        raw::check_stack(l, n);
        for i in 1..=n {
            ffi::lua_rawgeti(l, idx, i as ffi::lua_Integer);
        }
        n
    }
}

/// `[-0, +0, e]` Checks `(name, nfixed, handler)` and records them in the
/// operation table `uv` unless the name is taken. Leaves the stack as it was.
unsafe fn define_op(l: L, uv: c_int, what: &CStr) {
    // SAFETY: called by `yieldop` and `scheduleop`, closures over the state;
    // the checks raise before the table is touched, and the pushes are
    // popped before returning.
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        let nfixed = ffi::luaL_checkinteger(l, 2);
        if !(0..=250).contains(&nfixed) {
            raw::arg_error(l, 2, c"number of fixed arguments out of range");
        }
        ffi::luaL_checktype(l, 3, ffi::LUA_TFUNCTION);
        ffi::lua_settop(l, 3);
        state::push_uv(l, uv);
        ffi::lua_pushvalue(l, 1);
        if ffi::lua_rawget(l, -2) != ffi::LUA_TNIL {
            ffi::luaL_error(l, c"%s '%s' already exists".as_ptr(), what.as_ptr(), raw::push_shown(l, 1));
        }
        ffi::lua_pop(l, 1);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_createtable(l, 2, 0);
        ffi::lua_pushvalue(l, 2);
        ffi::lua_rawseti(l, -2, 1);
        ffi::lua_pushvalue(l, 3);
        ffi::lua_rawseti(l, -2, 2);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
    }
}

/// `ops.yieldop(name, nfixed, handler)`: defines the yield operation
/// `cothread[name]`.
unsafe extern "C-unwind" fn yieldop(l: L) -> c_int {
    // SAFETY: Lua calls this closure (made by `plugin` over the state);
    // the name is checked to be a string before it is used as a key.
    unsafe {
        state::push_uv(l, state::UV_MODULE);
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        ffi::lua_pushvalue(l, 1);
        if ffi::lua_rawget(l, -2) != ffi::LUA_TNIL {
            ffi::luaL_error(l, c"cothread.%s already exists".as_ptr(), raw::push_shown(l, 1));
        }
        ffi::lua_pop(l, 2);
        define_op(l, state::UV_YIELDOPS, c"yield operation");
        state::push_uv(l, state::UV_MODULE);
        ffi::lua_pushvalue(l, 1);
        push_yield_op(l, 1, op_plain);
        ffi::lua_rawset(l, -3);
        0
    }
}

/// `ops.scheduleop(name, nfixed, handler)`: defines a new `when` for
/// `schedule` and `notify`.
unsafe extern "C-unwind" fn scheduleop(l: L) -> c_int {
    // SAFETY: as `yieldop`, for the table of whens.
    unsafe {
        define_op(l, state::UV_WHENS, c"scheduling operation");
        0
    }
}
