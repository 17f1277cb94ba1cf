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
use crate::lua::ffi::{LUA_MULTRET, lua_CFunction};
use crate::lua::{Error, L, Lua, Ret, Type, YIELD, YIELD_ALL, shown};
use crate::registry;
use crate::signal::{self, is_no_signal};
use crate::state::{self, Quick, State, with_resuming, with_state};
use crate::time;

/// `[-0, +0, -]` The built-in whose name is the string at `idx`, if any:
/// `names` holds the objects of interned strings kept alive by UV_NAMES,
/// and equal short strings are one object in Lua 5.4 (any other value has
/// another address, or none).
#[inline]
pub fn builtin_at(lua: &Lua, idx: c_int, st: &State) -> Option<Builtin> {
    let o = lua.to_identity(idx);
    let i = st.names.iter().position(|n| n.get() == o)?;
    Some(Builtin::ALL[i])
}

// ===== the yield operations, as called by cothreads =====

/// A yield operation: yields its name (upvalue 1) and its arguments.
fn op_plain(lua: &mut Lua) -> Ret {
    lua.push_value(Lua::upvalue(1));
    lua.insert(1);
    Ok(YIELD_ALL)
}
crate::cfn!(op_plain_c = op_plain);

/// The quick way of `yield()` and `halt()` without values, in a cothread
/// being resumed by a scheduler: tells the resume loop directly
/// (`State::quick`) and yields nothing, instead of yielding the operation's
/// name for the loop to recognize. False if it does not apply.
fn quick_yield(lua: &mut Lua, q: Quick) -> bool {
    lua.top() == 0 && with_resuming(lua, |_, st, _| st.quick.set(Some(q))).is_some()
}

/// `yield(...)`.
fn op_yield(lua: &mut Lua) -> Ret {
    if quick_yield(lua, Quick::Yield) { Ok(YIELD) } else { op_plain(lua) }
}
crate::cfn!(op_yield_c = op_yield);

/// `halt(...)`.
fn op_halt(lua: &mut Lua) -> Ret {
    if quick_yield(lua, Quick::Halt) { Ok(YIELD) } else { op_plain(lua) }
}
crate::cfn!(op_halt_c = op_halt);

/// `wait(signal, ...)`: checks the signal before yielding.
fn op_wait(lua: &mut Lua) -> Ret {
    if is_no_signal(lua, 1) {
        return Err(Error::arg(1, c"signal expected"));
    }
    op_plain(lua)
}
crate::cfn!(op_wait_c = op_wait);

/// `postpone(time, ...)`, `delay(seconds, ...)`: check the number first.
fn op_time(lua: &mut Lua) -> Ret {
    lua.check_time(1)?;
    op_plain(lua)
}
crate::cfn!(op_time_c = op_time);

/// The C function of built-in yield operation `b` (upvalue: its name).
pub fn builtin_function(b: Builtin) -> lua_CFunction {
    match b {
        Builtin::Wait => op_wait_c,
        Builtin::Postpone | Builtin::Delay => op_time_c,
        Builtin::Yield => op_yield_c,
        Builtin::Halt => op_halt_c,
        _ => op_plain_c,
    }
}

/// `[-0, +1, m]` Pushes a yield operation function named `name` (the string
/// at `name_idx`).
pub fn push_yield_op(lua: &mut Lua, name_idx: c_int, f: lua_CFunction) {
    lua.push_value(name_idx);
    lua.push_closure(f, 1);
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
/// on `lua` above `base` (the operation name first). Places the thread, and leaves
/// the produced values above `base`. `co` is the registered thread of
/// `task`, just yielded.
pub fn dispatch(lua: &mut Lua, st: &State, base: c_int, co: L, task: Task) -> Result<Turn, Error> {
    let n = lua.top() - base;
    let name = base + 1;
    let Some(op) = (if n > 0 { builtin_at(lua, name, st) } else { None }) else {
        return custom_yield(lua, st, base, co, task);
    };
    let when = match op {
        Builtin::Yield => When::Later,
        Builtin::Halt => When::Next,
        Builtin::Suspend => {
            registry::unregister(lua, st, co, task);
            drop_fixed(lua, name, 0);
            return Ok(Turn::Continue);
        }
        Builtin::Wait => {
            if n < 2 || is_no_signal(lua, name + 1) {
                return invalid(lua, st, base, co, task, c"bad argument #1 to 'wait' (signal expected)");
            }
            When::Wait(signal::signal_key(lua, st, name + 1, true).expect("made"))
        }
        Builtin::Postpone | Builtin::Delay => {
            let t = lua.to_num(name + 1).filter(|t| n >= 2 && lua.kind(name + 1) == Type::Number && !t.is_nan());
            let Some(t) = t else {
                let msg = if op == Builtin::Delay {
                    c"bad argument #1 to 'delay' (number expected)"
                } else {
                    c"bad argument #1 to 'postpone' (number expected)"
                };
                return invalid(lua, st, base, co, task, msg);
            };
            // Read the clock before touching the queues: a user's `time` may raise.
            let at = if op == Builtin::Delay { time::after(time::now(lua, st)?, t) } else { t };
            When::Postpone(time::to_core(at))
        }
        Builtin::Next | Builtin::Later => return custom_yield(lua, st, base, co, task),
    };
    // Taken out of every queue, then placed by the operation.
    let _ = st.core().reschedule(task, when);
    if let When::Wait(k) = when {
        signal::hold(lua, st, name + 1, k);
    }
    drop_fixed(lua, name, op.nfixed());
    Ok(if op == Builtin::Halt { Turn::Halt } else { Turn::Continue })
}

/// `[-(1+k), +0, -]` Removes the operation name at `name` and its `k` fixed
/// arguments, keeping the produced values after them.
fn drop_fixed(lua: &mut Lua, name: c_int, k: c_int) {
    if lua.top() == name + k {
        lua.set_top(name - 1);
    } else {
        for _ in 0..=k {
            lua.remove(name);
        }
    }
}

/// `[-0, +1, -]` Pushes the `{nfixed, handler}` entry of operation table
/// `uv` for the name at `name`, and says whether it has a handler.
fn push_entry(lua: &mut Lua, uv: c_int, name: c_int) -> bool {
    state::push_uv(lua, uv);
    lua.push_value(name);
    lua.get_table(-2);
    lua.remove(-2);
    lua.kind(-1) == Type::Table && lua.with_index(-1, 2, |_, t| t == Type::Function)
}

/// `[-1, +1, -]` Replaces the entry on the top (with a handler) by its
/// handler, and answers its number of fixed arguments.
fn entry_handler(lua: &mut Lua) -> c_int {
    let k = lua.with_index(-1, 1, |lua, _| lua.to_int(-1).unwrap_or(0)).clamp(0, 250) as c_int;
    lua.get_index(-1, 2);
    lua.remove(-2);
    k
}

/// A plugin yield operation: unregisters the thread and calls
/// `handler(thread, fixed...)`, which places it or leaves it out.
fn custom_yield(lua: &mut Lua, st: &State, base: c_int, co: L, task: Task) -> Result<Turn, Error> {
    let name = base + 1;
    let n = lua.top() - base;
    if n == 0 || lua.kind(name) != Type::String {
        return invalid(lua, st, base, co, task, c"invalid yield operation (cothreads yield with an operation name)");
    }
    if !push_entry(lua, state::UV_YIELDOPS, name) {
        lua.set_top(base + n);
        let msg = format!("invalid yield operation '{}'", shown(lua.to_bytes(name).unwrap_or_default()));
        lua.push_owned(msg);
        return invalid_top(lua, st, base, co, task);
    }
    let k = entry_handler(lua); // ... handler
    lua.check_stack(k + 2)?;
    // SAFETY: `co` is the registered thread of `task` (the contract of
    // `dispatch`), held by the alive table until it is unregistered below.
    unsafe { lua.push_thread(co) };
    for i in 0..k {
        if i + 1 < n {
            lua.push_value(name + 1 + i);
        } else {
            lua.push_nil();
        }
    }
    registry::unregister(lua, st, co, task);
    lua.call(1 + k, 0)?;
    drop_fixed(lua, name, k.min(n - 1));
    Ok(Turn::Continue)
}

/// An invalid yield is an error raised by the cothread: drops what it yielded
/// and reports `msg` through `trap` / `error`.
fn invalid(lua: &mut Lua, st: &State, base: c_int, co: L, task: Task, msg: &CStr) -> Result<Turn, Error> {
    lua.push_bytes(msg.to_bytes());
    invalid_top(lua, st, base, co, task)
}

/// As `invalid`, with the message on the top of the stack.
fn invalid_top(lua: &mut Lua, st: &State, base: c_int, co: L, task: Task) -> Result<Turn, Error> {
    lua.insert(base + 1);
    lua.set_top(base + 1); // only the message
    // SAFETY: `co` is the registered thread of `task` (see `dispatch`).
    unsafe { registry::finish(lua, st, base, co, Some(task), false)? };
    Ok(Turn::Continue)
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
/// fixed arguments after it, answering argument errors. For `wait` the target's
/// key is made (the caller holds the value with `signal::hold` once waited on).
pub fn resolve_when(lua: &mut Lua, st: &State, idx: c_int) -> Result<Place, Error> {
    if lua.is_nil(idx) {
        return Ok(Place::Core(When::Later));
    }
    if let Some(b) = builtin_at(lua, idx, st).filter(|b| b.is_when()) {
        let arg = idx + 1;
        return Ok(Place::Core(match b {
            Builtin::Next => When::Next,
            Builtin::Later => When::Later,
            Builtin::Wait => {
                if is_no_signal(lua, arg) {
                    return Err(Error::arg(arg, c"signal expected"));
                }
                When::Wait(signal::signal_key(lua, st, arg, true).expect("made"))
            }
            Builtin::Postpone => When::Postpone(time::to_core(lua.check_time(arg)?)),
            _ => {
                let s = lua.check_time(arg)?;
                When::Postpone(time::to_core(time::after(time::now(lua, st)?, s)))
            }
        }));
    }
    if lua.kind(idx) == Type::String {
        if push_entry(lua, state::UV_WHENS, idx) {
            return Ok(Place::Custom(entry_handler(lua)));
        }
        lua.pop(1);
    }
    lua.push_tostring(idx)?;
    let msg = format!("invalid option '{}'", shown(lua.to_bytes(-1).unwrap_or_default()));
    Err(Error::arg_owned(idx, msg))
}

/// `[-0, +0, e]` Calls the plugin `when` handler at `handler` as
/// `handler(thread at thread_idx, fixed...)`, the `k` fixed arguments being
/// those from `first` up to the handler (missing ones nil). On an error, its
/// value is on the top.
pub fn call_when(lua: &mut Lua, handler: c_int, thread_idx: c_int, first: c_int, k: c_int) -> Result<(), Error> {
    lua.check_stack(k + 2)?;
    lua.push_value(handler);
    lua.push_value(thread_idx);
    for i in 0..k {
        // The fixed arguments lie between `first` and the handler; missing ones are nil.
        if first + i < handler {
            lua.push_value(first + i);
        } else {
            lua.push_nil();
        }
    }
    lua.call(1 + k, 0)
}

// ===== plugin =====

/// `cothread.plugin(f)`: calls `f(cothread, ops)` once and remembers its results.
fn plugin(lua: &mut Lua) -> Ret {
    lua.check_type(1, Type::Function)?;
    lua.set_top(1);
    state::push_uv(lua, state::UV_PLUGINS); // f plugins
    lua.push_value(1);
    if lua.get_table(2) == Type::Table {
        return unpack(lua, 3);
    }
    lua.pop(1);
    lua.push_value(1); // f plugins f
    state::push_uv(lua, state::UV_MODULE);
    lua.new_table(0, 2);
    for (name, f) in [(c"yieldop", YIELDOP), (c"scheduleop", SCHEDULEOP)] {
        lua.push_upvalue_fn(f, Lua::upvalue(1), 0);
        lua.set_field(-2, name);
    }
    lua.call(2, LUA_MULTRET)?; // f plugins results...
    let n = lua.top() - 2;
    lua.new_table(n, 1);
    for i in (1..=n).rev() {
        lua.push_value(2 + i);
        lua.set_index(-2, i as i64);
    }
    lua.push_int(n as i64);
    lua.set_field(-2, c"n");
    lua.push_value(1);
    lua.push_value(-2);
    lua.set_table(2); // plugins[f] = {results, n}
    lua.pop(1);
    Ok(n)
}
crate::cfn!(pub plugin_c = plugin);

/// `[-0, +n, m]` Pushes the `n` values of the results table at `idx`.
fn unpack(lua: &mut Lua, idx: c_int) -> Ret {
    lua.get_field(idx, c"n");
    let n = lua.to_int(-1).unwrap_or(0) as c_int;
    lua.pop(1);
    lua.check_stack(n)?;
    for i in 1..=n {
        lua.get_index(idx, i as i64);
    }
    Ok(n)
}

/// `[-0, +0, e]` Checks `(name, nfixed, handler)` and records them in the
/// operation table `uv` unless the name is taken. Leaves the stack as it was.
fn define_op(lua: &mut Lua, uv: c_int, what: &CStr) -> Result<(), Error> {
    lua.check_bytes(1)?;
    let nfixed = lua.check_int(2)?;
    if !(0..=250).contains(&nfixed) {
        return Err(Error::arg(2, c"number of fixed arguments out of range"));
    }
    lua.check_type(3, Type::Function)?;
    lua.set_top(3);
    state::push_uv(lua, uv);
    if lua.with_key(-1, 1, |_, t| t != Type::Nil) {
        let name = shown(lua.to_bytes(1).unwrap_or_default());
        return Err(Error::owned(format!("{} '{name}' already exists", what.to_string_lossy())));
    }
    lua.push_value(1);
    lua.new_table(2, 0);
    lua.push_value(2);
    lua.set_index(-2, 1);
    lua.push_value(3);
    lua.set_index(-2, 2);
    lua.set_table(-3);
    lua.pop(1);
    Ok(())
}

/// `ops.yieldop(name, nfixed, handler)`: defines the yield operation
/// `cothread[name]`.
fn yieldop(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, _| {
        lua.check_bytes(1)?;
        state::push_uv(lua, state::UV_MODULE);
        if lua.with_key(-1, 1, |_, t| t != Type::Nil) {
            let name = shown(lua.to_bytes(1).unwrap_or_default());
            return Err(Error::owned(format!("cothread.{name} already exists")));
        }
        lua.pop(1);
        define_op(lua, state::UV_YIELDOPS, c"yield operation")?;
        state::push_uv(lua, state::UV_MODULE);
        lua.push_value(1);
        push_yield_op(lua, 1, op_plain_c);
        lua.set_table(-3);
        Ok(0)
    })
}
crate::upvalue_fn!(YIELDOP: State = yieldop);

/// `ops.scheduleop(name, nfixed, handler)`: defines a new `when` for
/// `schedule` and `notify`.
fn scheduleop(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, _| {
        define_op(lua, state::UV_WHENS, c"scheduling operation")?;
        Ok(0)
    })
}
crate::upvalue_fn!(SCHEDULEOP: State = scheduleop);
