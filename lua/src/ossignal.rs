//! `cothread.signal`: waiting for operating-system signals (SIGINT, SIGTERM,
//! SIGUSR1, ...) in a cothread. Not the scheduler's signals (`notify`,
//! `onall`, `onany`, in `signal`): those are values cothreads wait on; these
//! are what the kernel delivers to the process.
//!
//! A wait makes one signal handle per signal on the scheduler's loop (the
//! loop blocks the signal in its thread and reads it from a signalfd) and
//! closes them when it ends, however it ends: between waits a signal has its
//! usual effect again. Outside a cothread, `wait` blocks in `sigtimedwait`.

use std::ffi::{CStr, c_int};

use crate::io::Outcome;
use crate::park::{self, cothread_of};
use crate::raw::{self, L, ffi};
use crate::state;

const NAMES: &[(&CStr, c_int)] = &[
    (c"SIGHUP", libc::SIGHUP),
    (c"SIGINT", libc::SIGINT),
    (c"SIGQUIT", libc::SIGQUIT),
    (c"SIGILL", libc::SIGILL),
    (c"SIGTRAP", libc::SIGTRAP),
    (c"SIGABRT", libc::SIGABRT),
    (c"SIGBUS", libc::SIGBUS),
    (c"SIGFPE", libc::SIGFPE),
    (c"SIGKILL", libc::SIGKILL),
    (c"SIGUSR1", libc::SIGUSR1),
    (c"SIGSEGV", libc::SIGSEGV),
    (c"SIGUSR2", libc::SIGUSR2),
    (c"SIGPIPE", libc::SIGPIPE),
    (c"SIGALRM", libc::SIGALRM),
    (c"SIGTERM", libc::SIGTERM),
    (c"SIGCHLD", libc::SIGCHLD),
    (c"SIGCONT", libc::SIGCONT),
    (c"SIGSTOP", libc::SIGSTOP),
    (c"SIGTSTP", libc::SIGTSTP),
    (c"SIGTTIN", libc::SIGTTIN),
    (c"SIGTTOU", libc::SIGTTOU),
    (c"SIGURG", libc::SIGURG),
    (c"SIGXCPU", libc::SIGXCPU),
    (c"SIGXFSZ", libc::SIGXFSZ),
    (c"SIGVTALRM", libc::SIGVTALRM),
    (c"SIGPROF", libc::SIGPROF),
    (c"SIGWINCH", libc::SIGWINCH),
    (c"SIGIO", libc::SIGIO),
    (c"SIGPWR", libc::SIGPWR),
    (c"SIGSYS", libc::SIGSYS),
];

const OP_WAIT: u8 = 1;
/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.signal.module";

/// `[-0, +0, e]` The signal at `idx` (a name as "SIGINT" or "INT", or a
/// number 1..64), raising `bad argument #arg` for anything else.
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn check_signal(l: L, idx: c_int, arg: c_int) -> c_int {
    // SAFETY: valid state.
    unsafe {
        if ffi::lua_type(l, idx) == ffi::LUA_TNUMBER {
            let n = ffi::lua_tointegerx(l, idx, std::ptr::null_mut());
            if !(1..=64).contains(&n) {
                raw::arg_error(l, arg, c"invalid signal number");
            }
            return n as c_int;
        }
        let Some(s) = raw::to_str(l, idx) else {
            let msg = ffi::lua_pushfstring(l, c"signal expected, got %s".as_ptr(), ffi::luaL_typename(l, idx));
            ffi::luaL_argerror(l, arg, msg);
            unreachable!("luaL_argerror returned")
        };
        let s = CStr::from_ptr(s).to_bytes();
        for (name, n) in NAMES {
            let name = name.to_bytes();
            if s == name || s == &name[3..] {
                return *n;
            }
        }
        raw::arg_error(l, arg, c"unknown signal name")
    }
}

/// `[-0, +1, m]` Pushes the name of signal `n` (its number as a string if
/// it has none here, e.g. a real-time signal).
unsafe fn push_name(l: L, n: c_int) {
    // SAFETY: valid state.
    unsafe {
        match NAMES.iter().find(|(_, m)| *m == n) {
            Some((name, _)) => ffi::lua_pushstring(l, name.as_ptr()),
            None => ffi::lua_pushfstring(l, c"SIG%d".as_ptr(), n),
        };
    }
}

/// The signals of a wait, one bit each (bit n-1 for signal n).
fn signals(mask: u64) -> impl Iterator<Item = c_int> {
    (1..=64).filter(move |n| mask & (1u64 << (n - 1)) != 0)
}

/// `cothread.signal.wait(signals [, timeout])`: waits until one of the
/// signals (a signal, or a list of them) arrives; returns its name and
/// number, or `nil, "timeout"`.
unsafe extern "C-unwind" fn wait(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        let mut mask = 0u64;
        let mut add = |n: c_int| {
            if n == libc::SIGKILL || n == libc::SIGSTOP {
                raw::arg_error(l, 1, c"SIGKILL and SIGSTOP cannot be waited for");
            }
            mask |= 1u64 << (n - 1);
        };
        if ffi::lua_type(l, 1) == ffi::LUA_TTABLE {
            let mut i = 1;
            while ffi::lua_rawgeti(l, 1, i) != ffi::LUA_TNIL {
                add(check_signal(l, -1, 1));
                ffi::lua_pop(l, 1);
                i += 1;
            }
            ffi::lua_pop(l, 1);
        } else {
            add(check_signal(l, 1, 1));
        }
        if mask == 0 {
            raw::arg_error(l, 1, c"no signal to wait for");
        }
        let deadline = if ffi::lua_isnoneornil(l, 2) != 0 {
            None
        } else {
            let t = raw::check_time(l, 2, 2);
            Some(cothread::time::monotonic_ns().saturating_add(park::ns_of(t.max(0.0)).unwrap_or(u64::MAX / 2)))
        };
        ffi::lua_settop(l, 0);
        match cothread_of(l) {
            Some((p, task)) => {
                state::io_of(l, p);
                let m = park::park(l, p, OP_WAIT, continuation, |io| {
                    let id = io.begin_external(task, deadline);
                    let n = io.notifier();
                    let mut handles = Vec::new();
                    let mut failed = None;
                    for sig in signals(mask) {
                        let h = io.lp().signal_init(0);
                        handles.push(h);
                        let n = n.clone();
                        let cb = Box::new(move |_: &mut cothread::reactor::Loop, _, signo: i32| {
                            n.done_with(id, Box::new(signo))
                        });
                        if let Err(e) = io.lp().signal_start(h, sig, cb) {
                            failed = Some(e.c_message());
                            break;
                        }
                    }
                    io.on_end(
                        id,
                        Box::new(move |lp| {
                            for h in handles {
                                let _ = lp.close(h, None);
                            }
                        }),
                    );
                    match failed {
                        Some(m) => {
                            io.cancel(task);
                            Err(m)
                        }
                        None => Ok(id),
                    }
                });
                park::push_fail(l, m)
            }
            None => wait_blocking(l, mask, deadline),
        }
    }
}

unsafe extern "C-unwind" fn continuation(l: L, _status: c_int, ctx: ffi::lua_KContext) -> c_int {
    // SAFETY: the (empty) frame of `wait` as `park` left it.
    unsafe {
        let (_, outcome, result) = park::unpark(l, ctx);
        match (outcome, result.and_then(|r| r.downcast::<i32>().ok())) {
            (Outcome::Ready, Some(n)) => {
                push_name(l, *n);
                ffi::lua_pushinteger(l, *n as ffi::lua_Integer);
                2
            }
            (Outcome::Timeout, _) => park::push_fail(l, c"timeout"),
            _ => park::push_fail(l, c"cancelled"),
        }
    }
}

/// Waits in `sigtimedwait` with the signals blocked meanwhile.
unsafe fn wait_blocking(l: L, mask: u64, deadline: Option<u64>) -> c_int {
    // SAFETY: valid sigset_t values, filled before use; the old mask is
    // restored before anything is pushed.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for n in signals(mask) {
            libc::sigaddset(&mut set, n);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let got = loop {
            let r = match deadline {
                None => libc::sigwaitinfo(&set, std::ptr::null_mut()),
                Some(d) => {
                    let left = d.saturating_sub(cothread::time::monotonic_ns());
                    let ts = libc::timespec {
                        tv_sec: (left / 1_000_000_000) as libc::time_t,
                        tv_nsec: (left % 1_000_000_000) as libc::c_long,
                    };
                    libc::sigtimedwait(&set, std::ptr::null_mut(), &ts)
                }
            };
            if r > 0 {
                break Some(r);
            }
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break None;
            }
        };
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        match got {
            Some(n) => {
                push_name(l, n);
                ffi::lua_pushinteger(l, n as ffi::lua_Integer);
                2
            }
            None => park::push_fail(l, c"timeout"),
        }
    }
}

/// `cothread.signal.raise(sig)`: sends `sig` to this process (`kill(getpid(),
/// sig)`); true, or `nil, message, errno`.
unsafe extern "C-unwind" fn raise(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        let n = check_signal(l, 1, 1);
        if libc::kill(libc::getpid(), n) < 0 {
            return park::push_errno(l, std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO), None);
        }
        ffi::lua_pushboolean(l, 1);
        1
    }
}

/// `cothread.signal.getpid()`: this process's id.
unsafe extern "C-unwind" fn getpid(l: L) -> c_int {
    // SAFETY: valid state; getpid cannot fail.
    unsafe { ffi::lua_pushinteger(l, libc::getpid() as ffi::lua_Integer) };
    1
}

const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"wait", wait), (c"raise", raise), (c"getpid", getpid)];

/// `[-0, +1, m]` Pushes the `cothread.signal` table (one per Lua state).
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn push_module(l: L) {
    // SAFETY: valid state.
    unsafe { raw::push_module_once(l, MODULE, |l| raw::push_functions(l, FUNCTIONS)) }
}
