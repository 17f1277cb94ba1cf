//! Time: the scheduler's `time` and `idle` fields and their defaults.
//!
//! Lua times are numbers in the unit of `cothread.time` (seconds by default).
//! The core only compares times, so a Lua time maps onto a core `u64` by an
//! order-preserving bijection of `f64`; any unit a user's `time` returns works.

use std::ffi::c_int;

use crate::engine::Block;
use crate::raw::{self, L, ffi};
use crate::state::{self, State, this};

/// The core time of Lua time `t` (order-preserving, exact).
pub fn to_core(t: f64) -> u64 {
    let b = t.to_bits();
    if b >> 63 == 0 { b | 1 << 63 } else { !b }
}

/// The Lua time of core time `u` (inverse of `to_core`).
pub fn from_core(u: u64) -> f64 {
    if u >> 63 == 1 { f64::from_bits(u & !(1 << 63)) } else { f64::from_bits(!u) }
}

/// The wake time `d` after `now`. A positive `d` too small to change `now`
/// (a clock past 2^53, integer or not, has gaps between its floats) wakes
/// at the next float after `now`, never at once.
pub fn after(now: f64, d: f64) -> f64 {
    let at = now + d;
    if d > 0.0 && at <= now { next_up(now) } else { at }
}

/// The least float above `t` (`f64::next_up`, which needs Rust 1.86; the
/// crate's minimum is 1.85). `t` is finite: a clock's time.
fn next_up(t: f64) -> f64 {
    match t {
        0.0 => f64::from_bits(1),
        t if t > 0.0 => f64::from_bits(t.to_bits() + 1),
        t => f64::from_bits(t.to_bits() - 1),
    }
}

/// `[-0, +1, -]` Pushes core time `u` as a Lua number: an integer if the
/// clock gives integers and the time is one.
///
/// # Safety
/// In a closure of the module whose state is `p`.
pub unsafe fn push(l: L, p: *mut State, u: u64) {
    let t = from_core(u);
    // SAFETY: `p` is the live state of the running closure and `l` has the
    // slot a C function always has (caller's contract).
    unsafe {
        if (*p).integer_clock && t.fract() == 0.0 && t.abs() < 9.0e15 {
            ffi::lua_pushinteger(l, t as ffi::lua_Integer);
        } else {
            ffi::lua_pushnumber(l, t);
        }
    }
}

/// Monotonic seconds.
fn monotonic() -> f64 {
    cothread::time::monotonic_ns() as f64 * 1e-9
}

/// `cothread.time()`: the default clock, monotonic seconds (float).
pub unsafe extern "C-unwind" fn time_default(l: L) -> c_int {
    // SAFETY: Lua calls this C function on its thread; a number takes the
    // slot every C function has.
    unsafe { ffi::lua_pushnumber(l, monotonic()) };
    1
}

/// `[-0, +0, e]` The scheduler's current time: its `time` field, called.
///
/// # Safety
/// In a closure of the module (see `state::this`).
pub unsafe fn now(l: L) -> f64 {
    // SAFETY: as `state::this`.
    unsafe {
        state::push_field(l, c"time");
        if is_default_time(l, -1) {
            ffi::lua_pop(l, 1);
            (*this(l)).integer_clock = false;
            return monotonic();
        }
        ffi::lua_call(l, 0, 1);
        if ffi::lua_type(l, -1) != ffi::LUA_TNUMBER || raw::is_nan(l, -1) {
            raw::error(l, c"cothread.time must return a number");
        }
        (*this(l)).integer_clock = ffi::lua_isinteger(l, -1) != 0;
        let t = ffi::lua_tonumber(l, -1);
        ffi::lua_pop(l, 1);
        t
    }
}

/// `[-0, +0, -]` Is the value at `idx` the default `time`?
unsafe fn is_default_time(l: L, idx: c_int) -> bool {
    // SAFETY: in a closure of the module (caller's contract).
    unsafe {
        let idx = ffi::lua_absindex(l, idx);
        state::push_uv(l, state::UV_TIME);
        let yes = ffi::lua_rawequal(l, idx, -1) != 0;
        ffi::lua_pop(l, 1);
        yes
    }
}

/// `[-0, +0, e]` Moves the postponed cothreads whose time has come to the ready
/// tail (reads the time only if something is postponed).
///
/// # Safety
/// In a closure of the module whose state is `p`.
#[inline]
pub unsafe fn take_due(l: L, p: *mut State) {
    // SAFETY: as `state::this`; the state is reached in short expressions.
    unsafe {
        if (*p).core.next_wake().is_none() {
            return;
        }
        let t = now(l);
        (*p).core.take_due_at(to_core(t));
    }
}

/// `cothread.idle(t)`: the default idle. With the default `time`, waits until
/// `t`: in the event loop if the scheduler has one (returning early when I/O
/// or a socket timeout makes a cothread ready), else asleep. With a user's
/// `time`, calls it until it reaches `t` (it cannot know how that clock
/// relates to real time), polling the event loop in between.
pub unsafe extern "C-unwind" fn idle_default(l: L) -> c_int {
    // SAFETY: a closure of the module; Lua calls it with a valid state.
    unsafe {
        let t = raw::check_time(l, 1, 1);
        state::push_field(l, c"time");
        let default = is_default_time(l, -1);
        ffi::lua_pop(l, 1);
        let p = this(l);
        if default {
            if !(*p).engine.is_null() {
                if t > 0.0 {
                    // Rounded up: the loop wakes at `t` or just after it.
                    state::poll_io(p, Block::Until(crate::engine::ns_of(t)));
                }
            } else {
                sleep_until(t);
            }
        } else {
            while now(l) < t {
                if state::io_armed(p) > 0 && state::poll_io(p, Block::No) {
                    break;
                }
            }
        }
    }
    0
}

fn sleep_until(t: f64) {
    loop {
        let left = t - monotonic();
        if left <= 0.0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_secs_f64(left.min(86_400.0)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_mapping_keeps_order_and_round_trips() {
        let ts = [f64::NEG_INFINITY, -1e300, -2.5, -1e-300, -0.0, 0.0, 1e-300, 1.0, 1.5, 1.7e9, 1e300, f64::INFINITY];
        for w in ts.windows(2) {
            assert!(to_core(w[0]) <= to_core(w[1]), "{} vs {}", w[0], w[1]);
        }
        for &t in &ts {
            assert_eq!(from_core(to_core(t)).to_bits(), t.to_bits());
        }
    }

    #[test]
    fn a_delay_never_wakes_at_once_near_the_top_of_an_integer_clock() {
        let now = (i64::MAX - 1) as f64;
        assert!(after(now, 1.0) > now, "delay(1) near maxinteger wakes later, not now");
        assert_eq!(after(now, 0.0), now);
        assert_eq!(after(now, -1.0), now - 1.0);
        assert_eq!(after(1.5, 2.0), 3.5);
        assert!(to_core(after(now, 1.0)) > to_core(now), "and the core sees it later");
        for t in [-1e300, -1.0, -0.0, 0.0, 1e-300, 1.0, 9.3e18] {
            assert!(next_up(t) > t && next_up(t) == next_float(t), "{t}");
        }
    }

    /// The least float above `t`, the slow way, for the test.
    fn next_float(t: f64) -> f64 {
        let mut d = t.abs().max(f64::MIN_POSITIVE) * f64::EPSILON;
        while t + d / 2.0 > t {
            d /= 2.0;
        }
        while t + d <= t {
            d *= 2.0;
        }
        t + d
    }
}
