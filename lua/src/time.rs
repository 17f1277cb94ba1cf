//! Time: the scheduler's `time` and `idle` fields and their defaults.
//!
//! Lua times are numbers in the unit of `cothread.time` (seconds by default).
//! The core only compares times, so a Lua time maps onto a core `u64` by an
//! order-preserving bijection of `f64`; any unit a user's `time` returns works.

use crate::engine::Block;
use crate::lua::{Error, Lua, Ret, Type};
use crate::state::{self, State, with_state};

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
pub fn push(lua: &Lua, st: &State, u: u64) {
    let t = from_core(u);
    if st.integer_clock.get() && t.fract() == 0.0 && t.abs() < 9.0e15 {
        lua.push_int(t as i64);
    } else {
        lua.push_num(t);
    }
}

/// Monotonic seconds.
fn monotonic() -> f64 {
    cothread::time::monotonic_ns() as f64 * 1e-9
}

/// `cothread.time()`: the default clock, monotonic seconds (float).
fn time_default(lua: &mut Lua) -> Ret {
    lua.push_num(monotonic());
    Ok(1)
}
crate::cfn!(pub time_default_c = time_default);

/// `[-0, +0, e]` The scheduler's current time: its `time` field, called.
pub fn now(lua: &mut Lua, st: &State) -> Result<f64, Error> {
    state::push_field(lua, c"time");
    if is_default_time(lua, -1) {
        lua.pop(1);
        st.integer_clock.set(false);
        return Ok(monotonic());
    }
    lua.call(0, 1)?;
    if lua.kind(-1) != Type::Number || lua.to_num(-1).is_some_and(f64::is_nan) {
        return Err(Error::msg(c"cothread.time must return a number"));
    }
    st.integer_clock.set(lua.is_integer(-1));
    let t = lua.to_num(-1).unwrap_or(0.0);
    lua.pop(1);
    Ok(t)
}

/// `[-0, +0, -]` Is the value at `idx` the default `time`?
fn is_default_time(lua: &mut Lua, idx: i32) -> bool {
    let idx = lua.abs(idx);
    state::push_uv(lua, state::UV_TIME);
    let yes = lua.raw_equal(idx, -1);
    lua.pop(1);
    yes
}

/// `[-0, +0, e]` Moves the postponed cothreads whose time has come to the ready
/// tail (reads the time only if something is postponed).
#[inline]
pub fn take_due(lua: &mut Lua, st: &State) -> Result<(), Error> {
    if st.core().next_wake().is_none() {
        return Ok(());
    }
    let t = now(lua, st)?;
    st.core().take_due_at(to_core(t));
    Ok(())
}

/// `cothread.idle(t)`: the default idle. With the default `time`, waits until
/// `t`: in the event loop if the scheduler has one (returning early when I/O
/// or a socket timeout makes a cothread ready), else asleep. With a user's
/// `time`, calls it until it reaches `t` (it cannot know how that clock
/// relates to real time), polling the event loop in between.
fn idle_default(lua: &mut Lua) -> Ret {
    with_state(lua, |lua, st| {
        let t = lua.check_time(1)?;
        state::push_field(lua, c"time");
        let default = is_default_time(lua, -1);
        lua.pop(1);
        if default {
            if st.engine().is_some() {
                if t > 0.0 {
                    // Rounded up: the loop wakes at `t` or just after it.
                    st.poll_io(Block::Until(crate::engine::ns_of(t)));
                }
            } else {
                sleep_until(t);
            }
        } else {
            while now(lua, st)? < t {
                if st.io_armed() > 0 && st.poll_io(Block::No) {
                    break;
                }
            }
        }
        Ok(0)
    })
}
crate::upvalue_fn!(pub IDLE_DEFAULT: State = idle_default);

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
