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

use crate::cfn;
use crate::engine::{self, Fire, Frame, Next, OnEnd, Operation, Why};
use crate::lua::{Error, Lua, Reg, Ret, Type, lua_Integer};
use crate::park::drive;

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

/// The signal at `idx` (a name as "SIGINT" or "INT", or a number 1..64);
/// `bad argument #arg` for anything else.
pub fn check_signal(lua: &Lua, idx: c_int, arg: c_int) -> Result<c_int, Error> {
    if lua.kind(idx) == Type::Number {
        return match lua.to_int(idx) {
            Some(n) if (1..=64).contains(&n) => Ok(n as c_int),
            _ => Err(Error::arg(arg, c"invalid signal number")),
        };
    }
    let Some(s) = lua.to_bytes(idx) else {
        return Err(Error::Type { arg, expected: c"signal" });
    };
    NAMES
        .iter()
        .find(|(name, _)| s == name.to_bytes() || s == &name.to_bytes()[3..])
        .map(|&(_, n)| n)
        .ok_or(Error::arg(arg, c"unknown signal name"))
}

/// `[-0, +1, m]` Pushes the name of signal `n` (`SIG<n>` if it has none
/// here, e.g. a real-time signal).
fn push_name(lua: &Lua, n: c_int) {
    match NAMES.iter().find(|(_, m)| *m == n) {
        Some((name, _)) => lua.push_bytes(name.to_bytes()),
        None => lua.push_owned(format!("SIG{n}")),
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
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        if why == Why::Done {
            if let Some(n) = engine::payload_as::<c_int>(f.take_payload()) {
                self.got = n;
            }
        }
        let lua = &f.lua;
        Next::Done(match why {
            Why::Start | Why::Ready | Why::Closed => return Next::Event(self.deadline),
            Why::Done if self.got > 0 => {
                push_name(lua, self.got);
                lua.push_int(self.got as lua_Integer);
                2
            }
            Why::Timeout => lua.fail(c"timeout"),
            Why::Failed(m) => lua.fail(m),
            Why::Done | Why::Cancelled => lua.fail(c"cancelled"),
        })
    }

    fn start(&mut self, _f: &Frame, lp: &mut Loop, fire: Fire) -> Result<OnEnd, &'static CStr> {
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

    fn block(&mut self, _f: &mut Frame, _next: Next) -> Why {
        match cothread::reactor::wait_in_thread(self.mask, self.deadline) {
            Some(n) => {
                self.got = n;
                Why::Done
            }
            None => Why::Timeout,
        }
    }
}

cfn!(wait = wait_body);

/// `cothread.signal.wait(signals [, timeout])`: waits until one of the
/// signals (a signal, or a list of them) arrives; returns its name and
/// number, or `nil, "timeout"`.
fn wait_body(lua: &mut Lua) -> Ret {
    let mut mask = 0u64;
    let mut add = |n: c_int| {
        if n == libc::SIGKILL || n == libc::SIGSTOP {
            return Err(Error::arg(1, c"SIGKILL and SIGSTOP cannot be waited for"));
        }
        mask |= 1u64 << (n - 1);
        Ok(())
    };
    if lua.kind(1) == Type::Table {
        let mut i = 1;
        while lua.get_index(1, i) != Type::Nil {
            add(check_signal(lua, -1, 1)?)?;
            lua.pop(1);
            i += 1;
        }
        lua.pop(1);
    } else {
        add(check_signal(lua, 1, 1)?)?;
    }
    if mask == 0 {
        return Err(Error::arg(1, c"no signal to wait for"));
    }
    let deadline = if lua.is_nil(2) { None } else { Some(engine::deadline_in(engine::ns_of(lua.check_time(2)?))) };
    lua.set_top(0);
    drive(lua, Wait { mask, deadline, got: 0 })
}

cfn!(raise = raise_body);

/// `cothread.signal.raise(sig)`: sends `sig` to this process (`kill(getpid(),
/// sig)`); true, or `nil, message, errno`.
fn raise_body(lua: &mut Lua) -> Ret {
    let n = check_signal(lua, 1, 1)?;
    if let Err(errno) = cothread::reactor::raise(n) {
        return Ok(lua.fail_errno(errno, None));
    }
    lua.push_bool(true);
    Ok(1)
}

cfn!(getpid = getpid_body);

/// `cothread.signal.getpid()`: this process's id.
fn getpid_body(lua: &mut Lua) -> Ret {
    lua.push_int(std::process::id() as lua_Integer);
    Ok(1)
}

const FUNCTIONS: &[Reg] = &[(c"wait", wait), (c"raise", raise), (c"getpid", getpid)];

/// `[-0, +1, m]` Pushes the `cothread.signal` table (one per Lua state).
pub fn push_module(lua: &mut Lua) -> Result<(), Error> {
    lua.push_functions_once(MODULE, FUNCTIONS);
    Ok(())
}
