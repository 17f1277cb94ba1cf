//! Signals: signal values mapped onto core keys, and the combined signals
//! `onall(...)` and `onany(...)`.
//!
//! A signal value is a core key: an odd integer from a counter. `keyof`
//! (weak keys) maps a value to its key for as long as the value lives, so a
//! combined signal, which holds its parts, always sees the same keys; `held`
//! references the value only while its key has waiters. Combined signals use
//! the core's keys (addresses, even), so the two kinds never collide.
//!
//! A combined signal is a Lua function (calling it resets it) whose upvalues
//! are the state and a small handle userdata holding the core key. When the
//! function is collected, the handle's `__gc` queues the key; the core signal
//! is freed once nothing waits on it and no other combined signal includes it.

use std::cell::Cell;
use std::ffi::{CStr, c_int};

use cothread::Mode;

use crate::lua::{Error, Lua, Ret, Type, Udata};
use crate::state::{SHRINK_AFTER, State, UV_HELD, UV_KEYOF, push_uv, push_weak_table, set_uv, with_state};

// ===== signal values and their keys =====

/// Is the value at `idx` no signal: nil, none or a float NaN?
pub fn is_no_signal(lua: &Lua, idx: c_int) -> bool {
    match lua.kind(idx) {
        Type::Nil | Type::None => true,
        Type::Number => lua.to_num(idx).is_some_and(f64::is_nan),
        _ => false,
    }
}

/// `[-0, +0, m]` The core key of the signal value at `idx`: a combined signal of
/// this scheduler answers its own key; another value its key, made now if
/// `make` (otherwise `None` when it has none: nobody ever waited on it).
/// The value at `idx` is not nil or NaN.
pub fn signal_key(lua: &mut Lua, st: &State, idx: c_int, make: bool) -> Option<usize> {
    let idx = lua.abs(idx);
    if let Some(k) = combined_key(lua, idx) {
        return Some(k);
    }
    let k = lua.uservalue_field_int(Lua::upvalue(1), UV_KEYOF, idx).unwrap_or(0) as usize;
    if k != 0 || !make {
        return (k != 0).then_some(k);
    }
    let k = st.new_key();
    push_uv(lua, UV_KEYOF);
    lua.push_value(idx);
    lua.push_int(k as i64);
    lua.set_table(-3);
    lua.pop(1);
    Some(k)
}

/// `[-0, +0, m]` References the signal value at `idx` (of key `k`, combined
/// signals included) while `k` has waiters. Call after placing a waiter on `k`.
pub fn hold(lua: &mut Lua, st: &State, idx: c_int, k: usize) {
    if st.core().waiting(k) != Ok(true) {
        return; // nobody waits
    }
    if lua.swap_uservalue_index(Lua::upvalue(1), UV_HELD, k as i64, Some(idx)) {
        st.held.set(st.held.get() + 1);
    }
}

/// `[-0, +0, m]` Stops referencing the value of key `k` once it has no waiters.
fn release(lua: &mut Lua, st: &State, k: usize) {
    if st.core().waiting(k) != Ok(false) {
        return;
    }
    if !lua.swap_uservalue_index(Lua::upvalue(1), UV_HELD, k as i64, None) {
        st.held.set(st.held.get() - 1);
    }
}

/// `[-0, +0, m]` Releases the values of the keys whose queues emptied, and
/// frees the combined signals whose functions were collected.
pub fn settle_signals(lua: &mut Lua, st: &State) {
    if !st.unreferenced.borrow().is_empty() {
        free_unreferenced(st);
    }
    while let Some(k) = st.pop_emptied() {
        release(lua, st, k);
    }
    // Tables keep their size when emptied: start afresh once nothing needs a
    // key (no waiter, no combined signal, and no key in use by a caller:
    // this runs only between operations).
    if st.held.get() == 0 && st.combined.get() == 0 && st.made.get() > SHRINK_AFTER {
        push_weak_table(lua);
        set_uv(lua, UV_KEYOF);
        lua.new_table(0, 0);
        set_uv(lua, UV_HELD);
        st.made.set(0);
    }
}

// ===== combined signals =====

/// The handle of a combined signal: its core key (0 until made). User value
/// 1 is its state, 2 the table of its parts (so their keys stay).
struct Combined(Cell<usize>);

// SAFETY: "cothread.combined" names no other registry field.
unsafe impl Udata for Combined {
    const NAME: &'static CStr = c"cothread.combined";

    /// Queues the key for freeing (the function was collected).
    fn finalize(&self, lua: &mut Lua) {
        lua.get_uservalue(1, 1);
        if let Some(st) = lua.test_udata::<State>(-1).filter(|_| self.0.get() != 0) {
            st.unreferenced.borrow_mut().push(self.0.get());
        }
        lua.pop(1);
    }
}

/// `[-0, +0, -]` The core key of the value at `idx` if it is a combined signal
/// of the running closure's state: a C closure whose upvalues are that
/// state and a combined handle.
pub fn combined_key(lua: &mut Lua, idx: c_int) -> Option<usize> {
    if lua.to_cfunction(idx).is_none() || !lua.get_upvalue(idx, 1) {
        return None;
    }
    let same = lua.raw_equal(-1, Lua::upvalue(1));
    lua.pop(1);
    if !same || !lua.get_upvalue(idx, 2) {
        return None;
    }
    let key = lua.test_udata::<Combined>(-1).map(|h| h.0.get());
    lua.pop(1);
    key
}

/// A combined signal, called: forgets the notifications counted so far.
fn combined(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        if let Some(h) = lua.test_udata::<Combined>(Lua::upvalue(2)) {
            let _ = st.core().reset(h.0.get());
        }
        Ok(0)
    })
}
crate::upvalue_fn!(COMBINED: State = combined);

fn combine(lua: &mut Lua, mode: Mode) -> Ret {
    with_state(lua, |lua, st| {
        let n = lua.top();
        lua.new_table(n, 0); // parts: the handle holds them, so their keys stay
        for i in 1..=n {
            if is_no_signal(lua, i) {
                return Err(Error::arg(i, c"signal expected"));
            }
            signal_key(lua, st, i, true);
            lua.push_value(i);
            lua.set_index(-2, i as i64);
        }
        lua.udata_metatable::<Combined>(|_| Ok(()))?;
        lua.pop(1);
        lua.new_udata(Combined(Cell::new(0)), 2);
        lua.insert(-2);
        lua.set_uservalue(-2, 2);
        lua.push_value(Lua::upvalue(1));
        lua.set_uservalue(-2, 1);
        lua.push_upvalue_fn(COMBINED, Lua::upvalue(1), 1);
        // Nothing raises from here on: the keys exist and the parts are held.
        let key = make_combined(lua, st, mode, n)?;
        lua.get_upvalue(-1, 2);
        if let Some(h) = lua.test_udata::<Combined>(-1) {
            h.0.set(key);
        }
        lua.pop(1);
        st.combined.set(st.combined.get() + 1);
        Ok(1)
    })
}

/// The core signal combining the keys of arguments `1..=n` (made).
fn make_combined(lua: &mut Lua, st: &State, mode: Mode, n: c_int) -> Result<usize, Error> {
    let parts: Vec<usize> = (1..=n).map(|i| signal_key(lua, st, i, false).expect("made above")).collect();
    Ok(st.core().combine(mode, &parts).expect("parts are valid keys"))
}

/// `onall(...)`: a signal that fires once all of `...` were notified.
fn onall(lua: &mut Lua) -> Ret {
    combine(lua, Mode::All)
}
crate::upvalue_fn!(pub ONALL: State = onall);

/// `onany(...)`: a signal that fires once any of `...` was notified.
fn onany(lua: &mut Lua) -> Ret {
    combine(lua, Mode::Any)
}
crate::upvalue_fn!(pub ONANY: State = onany);

/// Frees the combined signals whose functions were collected and that nothing
/// needs any more (freeing one may make its parts free to go).
pub fn free_unreferenced(st: &State) {
    // Only Rust code runs here, so no finalizer can add to the list meanwhile.
    let mut pending = std::mem::take(&mut *st.unreferenced.borrow_mut());
    loop {
        let before = pending.len();
        pending.retain(|&key| match st.core().free_combined(key) {
            Err(cothread::Error::Busy) => true,
            _ => {
                st.combined.set(st.combined.get() - 1);
                false
            }
        });
        if pending.len() == before || pending.is_empty() {
            break;
        }
    }
    st.unreferenced.borrow_mut().extend(pending);
}
