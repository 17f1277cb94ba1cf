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

use cothread::reactor::Loop;

use crate::engine::{self, Fire, Frame, Next, OnEnd, Operation, Why};
use crate::park::drive;
use crate::raw::{self, L, ffi};

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

/// `cothread.signal.wait`. Its frame is empty.
#[derive(Clone, Copy)]
struct Wait {
    /// The signals (bit n-1 for signal n).
    mask: u64,
    deadline: Option<u64>,
    /// The signal that came (0: none yet).
    got: c_int,
}

impl Operation for Wait {
    unsafe fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: a step's slots on `f.l`.
        unsafe {
            let l = f.l;
            if why == Why::Done {
                if let Some(n) = engine::payload_as::<c_int>(f.payload()) {
                    self.got = *n;
                }
            }
            Next::Done(match why {
                Why::Start | Why::Ready | Why::Closed => return Next::Event(self.deadline),
                Why::Done if self.got > 0 => {
                    push_name(l, self.got);
                    ffi::lua_pushinteger(l, self.got as ffi::lua_Integer);
                    2
                }
                Why::Timeout => raw::push_fail(l, c"timeout"),
                Why::Failed(m) => raw::push_fail(l, m),
                Why::Done | Why::Cancelled => raw::push_fail(l, c"cancelled"),
            })
        }
    }

    unsafe fn start(&mut self, _f: &Frame, lp: &mut Loop, fire: Fire) -> Result<OnEnd, &'static CStr> {
        let mut handles = Vec::new();
        let mut failed = None;
        for sig in signals(self.mask) {
            let h = lp.signal_init(0);
            handles.push(h);
            let fire = fire.clone();
            let cb = Box::new(move |_: &mut Loop, _, signo: c_int| fire.fire_with(Box::new(signo)));
            if let Err(e) = lp.signal_start(h, sig, cb) {
                failed = Some(e.c_message());
                break;
            }
        }
        let close: OnEnd = Box::new(move |lp| {
            for h in handles {
                let _ = lp.close(h, None);
            }
        });
        match failed {
            Some(m) => {
                close(lp);
                Err(m)
            }
            None => Ok(close),
        }
    }

    unsafe fn block(&mut self, _f: &mut Frame, _next: Next) -> Why {
        // SAFETY: only the signal mask of this thread changes, and is restored.
        match unsafe { wait_blocking(self.mask, self.deadline) } {
            Some(n) => {
                self.got = n;
                Why::Done
            }
            None => Why::Timeout,
        }
    }
}

/// `cothread.signal.wait(signals [, timeout])`: waits until one of the
/// signals (a signal, or a list of them) arrives; returns its name and
/// number, or `nil, "timeout"`.
unsafe extern "C-unwind" fn wait(l: L) -> c_int {
    // SAFETY: a module function: the arguments are checked (raising), then
    // the (empty) frame is its own stack.
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
            Some(engine::deadline_in(engine::ns_of(raw::check_time(l, 2, 2))))
        };
        ffi::lua_settop(l, 0);
        drive(l, Wait { mask, deadline, got: 0 })
    }
}

/// Waits in `sigtimedwait` with the signals blocked meanwhile: the signal
/// that came, or `None` at the deadline.
unsafe fn wait_blocking(mask: u64, deadline: Option<u64>) -> Option<c_int> {
    // SAFETY: valid sigset_t values, filled before use; the old mask is
    // restored before returning.
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
                        tv_sec: (left / 1_000_000_000).min(libc::time_t::MAX as u64) as libc::time_t,
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
        got
    }
}

/// `cothread.signal.raise(sig)`: sends `sig` to this process (`kill(getpid(),
/// sig)`); true, or `nil, message, errno`.
unsafe extern "C-unwind" fn raise(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        let n = check_signal(l, 1, 1);
        if libc::kill(libc::getpid(), n) < 0 {
            return raw::push_errno(l, std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO), None);
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
