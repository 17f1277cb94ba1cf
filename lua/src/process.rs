//! `cothread.process`: child processes with pipes, waited for in the event
//! loop.
//!
//! `spawn` starts a program with the core's `os::process::spawn`
//! (`posix_spawnp`: no code of ours runs in the child). Its piped stdin, stdout
//! and stderr are streams (see `stream`) over non-blocking pipe ends. A wait
//! in a cothread watches the child's pidfd (a child handle of the loop, made
//! for the wait and closed when it ends, however it ends); outside cothreads
//! it blocks in `poll(2)` on a pidfd.
//!
//! A process object collected before its child was reaped leaves the pid in
//! a list reaped (without blocking) at each later `spawn`, so no zombie stays.

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString, c_int};
use std::os::fd::{AsRawFd, IntoRawFd};
use std::rc::Rc;

use cothread::os::process::{self as os, Stdio};
use cothread::reactor::{Exit, Loop};

use crate::cfn;
use crate::engine::{self, Fire, Frame, Next, OnEnd, Operation, Why};
use crate::lua::{Error, Lua, Reg, Ret, Type, Udata, lua_Integer};
use crate::ossignal;
use crate::park::drive;
use crate::stream;

/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.process.module";

thread_local! {
    /// Children of collected process objects, not reaped yet.
    static ORPHANS: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
}

/// A process object (userdata `cothread.process`; user values 1..3: its
/// stdin, stdout and stderr streams, if piped).
struct Proc {
    pid: i32,
    /// How it ended, once reaped (also by a child handle's callback, which
    /// shares the cell).
    exit: Rc<Cell<Option<Exit>>>,
}

// SAFETY: c"cothread.process" names only this type (no other `Udata`, no registry field).
unsafe impl Udata for Proc {
    const NAME: &'static CStr = c"cothread.process";
}

impl Drop for Proc {
    /// A child not reaped yet is left to `reap_orphans`.
    fn drop(&mut self) {
        if self.exit_now().is_none() {
            let pid = self.pid;
            ORPHANS.with(|o| o.borrow_mut().push(pid));
        }
    }
}

impl Proc {
    /// How it ended, reaping it now if it did.
    fn exit_now(&self) -> Option<Exit> {
        if self.exit.get().is_none() {
            self.exit.set(os::reap(self.pid));
        }
        self.exit.get()
    }
}

/// Reaps the orphans that ended (or that someone else reaped).
fn reap_orphans() {
    ORPHANS.with(|o| o.borrow_mut().retain(|&pid| !os::reaped(pid)));
}

// ===== spawn =====

/// The string at `idx` as a C string; `None` if it holds a NUL byte.
fn c_string(lua: &Lua, idx: c_int) -> Option<CString> {
    CString::new(lua.to_bytes(idx)?).ok()
}

/// The command at argument 1 (a non-empty list of strings, or a string run
/// by `/bin/sh -c`) as the program's arguments. A NUL byte, which would cut
/// an argument short, is refused.
fn check_command(lua: &mut Lua) -> Result<Vec<CString>, Error> {
    let no_nul = || Error::arg(1, c"command contains a NUL byte");
    match lua.kind(1) {
        Type::String => Ok(vec![c"/bin/sh".into(), c"-c".into(), c_string(lua, 1).ok_or_else(no_nul)?]),
        Type::Table => {
            let mut argv = Vec::new();
            for i in 1.. {
                let t = lua.get_index(1, i);
                if t == Type::Nil {
                    lua.pop(1);
                    break;
                }
                let arg = (t == Type::String).then(|| c_string(lua, -1));
                lua.pop(1);
                match arg {
                    Some(Some(a)) => argv.push(a),
                    Some(None) => return Err(no_nul()),
                    None => return Err(Error::arg(1, c"command must be a list of strings")),
                }
            }
            if argv.is_empty() {
                return Err(Error::arg(1, c"empty command"));
            }
            Ok(argv)
        }
        _ => Err(Error::Type { arg: 1, expected: c"table or string" }),
    }
}

/// The setup of option `name` (a field of the options at 2).
fn check_stdio(lua: &mut Lua, name: &'static CStr) -> Result<Stdio, Error> {
    let v = match lua.get_field(2, name) {
        Type::Nil => Some(Stdio::Inherit),
        Type::Boolean => Some(if lua.to_bool(-1) { Stdio::Pipe } else { Stdio::Inherit }),
        _ => match lua.to_bytes(-1) {
            Some(b"pipe") => Some(Stdio::Pipe),
            Some(b"inherit") => Some(Stdio::Inherit),
            Some(b"null") => Some(Stdio::Null),
            Some(b"stdout") if name == c"stderr" => Some(Stdio::Stdout),
            _ => None,
        },
    };
    lua.pop(1);
    v.ok_or_else(|| Error::arg_owned(2, format!("invalid option '{}'", name.to_string_lossy())))
}

/// A spawn's options, checked.
struct Options {
    stdio: [Stdio; 3],
    env: Option<Vec<CString>>,
    cwd: Option<CString>,
}

/// Checks the options at argument 2 (nil: the defaults), leaving their
/// `env` and `cwd` at slots 3 and 4 (nil if absent). Reading a field may
/// allocate (its name): no value of ours is made here (a memory error
/// would longjmp past it); `options` makes them.
fn check_options(lua: &mut Lua) -> Result<[Stdio; 3], Error> {
    lua.set_top(2);
    if lua.is_nil(2) {
        lua.set_top(4);
        return Ok([Stdio::Inherit; 3]);
    }
    lua.check_type(2, Type::Table)?;
    let stdio = [check_stdio(lua, c"stdin")?, check_stdio(lua, c"stdout")?, check_stdio(lua, c"stderr")?];
    if stdio[0] == Stdio::Stdout {
        return Err(Error::arg(2, c"invalid option 'stdin'"));
    }
    if !matches!(lua.get_field(2, c"env"), Type::Nil | Type::Table) {
        return Err(Error::arg(2, c"option 'env' must be a table"));
    }
    if !matches!(lua.get_field(2, c"cwd"), Type::Nil | Type::String) {
        return Err(Error::arg(2, c"option 'cwd' must be a string"));
    }
    Ok(stdio)
}

/// The options `check_options` checked (Lua allocates nothing here).
fn options(lua: &mut Lua, stdio: [Stdio; 3]) -> Result<Options, Error> {
    let env = if lua.is_nil(3) { None } else { Some(env_of(lua, 3)?) };
    let cwd = if lua.is_nil(4) {
        None
    } else {
        Some(c_string(lua, 4).ok_or(Error::arg(2, c"option 'cwd' contains a NUL byte"))?)
    };
    Ok(Options { stdio, env, cwd })
}

/// The environment table at `t` as "name=value" strings. A name must be
/// a non-empty string without `=`, and neither may hold a NUL byte.
fn env_of(lua: &mut Lua, t: c_int) -> Result<Vec<CString>, Error> {
    let mut env = Vec::new();
    let mut bad = None;
    lua.each(t, |lua| {
        let (Some(k), Some(v)) = (lua.to_bytes(-2), lua.to_bytes(-1)) else {
            bad = Some(Error::arg(2, c"option 'env' must map strings to strings"));
            return false;
        };
        if k.is_empty() || k.contains(&b'=') || k.contains(&0) || v.contains(&0) {
            bad = Some(Error::arg_owned(2, format!("option 'env': invalid variable '{}'", crate::lua::shown(k))));
            return false;
        }
        env.push(CString::new([k, b"=", v].concat()).unwrap_or_default());
        true
    });
    bad.map_or(Ok(env), Err)
}

cfn!(spawn = spawn_body);

/// `cothread.process.spawn(command [, options])`: starts `command` (a list
/// `{program, args...}` searched in PATH, or a string run by `/bin/sh -c`).
/// Options: `stdin`, `stdout`, `stderr` (true/"pipe", "null", "inherit" (the
/// default), and for stderr "stdout"), `env` (a table name -> value: the whole
/// environment), `cwd`. A process object, or `nil, message, errno`.
fn spawn_body(lua: &mut Lua) -> Ret {
    // The command's errors come first; it is made again once the options'
    // fields are read (which may allocate), so that none of ours is alive
    // then.
    drop(check_command(lua)?);
    let stdio = check_options(lua)?;
    let argv = check_command(lua)?;
    let o = options(lua, stdio)?;
    reap_orphans();
    let spawned = os::spawn(&argv, o.env.as_deref(), o.cwd.as_deref(), o.stdio);
    // Nothing of ours is held while Lua allocates: a memory error would
    // longjmp past this frame. The program's name is pushed protected.
    let name = argv[0].as_bytes().to_vec();
    drop((argv, o));
    let sp = match spawned {
        Ok(sp) => {
            drop(name);
            sp
        }
        Err(e) => {
            lua.push_owned(name);
            let at = lua.top();
            return Ok(lua.fail_errno(e, lua.to_cstr(at)));
        }
    };
    // The pipes stay in this frame until their streams own them: the
    // objects are made protected, so on a memory error the pipes not yet
    // handed over close here (and a process object made goes to the
    // orphans when collected).
    let (pid, mut pipes) = (sp.pid, sp.pipes);
    lua.protected(&mut |lua| {
        lua.new_udata(Proc { pid, exit: Rc::default() }, 3);
        for (i, fd) in pipes.iter_mut().enumerate() {
            if let Some(fd) = fd.take() {
                debug_assert!(fd.as_raw_fd() >= 0);
                stream::push_stream(lua, fd.into_raw_fd(), true);
                lua.set_uservalue(-2, i as c_int + 1);
            }
        }
    })?;
    Ok(1)
}

// ===== process objects =====

/// `[-0, +3, m]` Pushes `os.execute`'s results for `e`: `true|nil`, "exit"
/// or "signal", the code or signal number.
fn push_exit(lua: &Lua, e: Exit) -> c_int {
    if e.signal == 0 && e.status == 0 {
        lua.push_bool(true);
    } else {
        lua.push_nil();
    }
    if e.signal != 0 {
        lua.push_bytes(b"signal");
        lua.push_int(e.signal as lua_Integer);
    } else {
        lua.push_bytes(b"exit");
        lua.push_int(e.status as lua_Integer);
    }
    3
}

/// `proc:wait`. Frame: 1 the process object.
#[derive(Clone, Copy)]
struct Wait {
    deadline: Option<u64>,
    /// Outside cothreads: the errno of a failed blocking wait.
    errno: i32,
}

impl Operation for Wait {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        let lua = &f.lua;
        let Some(p) = lua.test_udata::<Proc>(f.at(1)) else { return Next::Done(lua.fail(c"collected")) };
        if let Some(e) = p.exit_now() {
            return Next::Done(push_exit(lua, e));
        }
        Next::Done(match why {
            Why::Start | Why::Ready | Why::Closed => return Next::Event(self.deadline),
            Why::Done if self.errno != 0 => lua.fail_errno(self.errno, None),
            Why::Done => lua.fail_errno(libc::ECHILD, None),
            Why::Timeout => lua.fail(c"timeout"),
            Why::Cancelled => lua.fail(c"cancelled"),
            Why::Failed(m) => lua.fail(m),
        })
    }

    fn start(&mut self, f: &Frame, lp: &mut Loop, fire: Fire) -> Result<OnEnd, &'static CStr> {
        // The callback keeps its own reference to the cell the exit goes into.
        let p = f.lua.test_udata::<Proc>(f.at(1)).ok_or(c"collected")?;
        let (pid, exit) = (p.pid, p.exit.clone());
        let h = lp.child_init(pid, 0).map_err(|e| e.c_message())?;
        let cb = Box::new(move |_: &mut Loop, _, r: cothread::error::Result<Exit>| {
            if let Ok(e) = r {
                exit.set(Some(e));
            }
            fire.fire();
        });
        if let Err(e) = lp.child_start(h, cb) {
            let _ = lp.close(h, None);
            return Err(e.c_message());
        }
        Ok(Box::new(move |lp| {
            let _ = lp.close(h, None);
        }))
    }

    fn block(&mut self, f: &mut Frame, _next: Next) -> Why {
        match f.lua.test_udata::<Proc>(f.at(1)) {
            Some(p) => wait_blocking(p, self.deadline, &mut self.errno),
            None => Why::Done,
        }
    }
}

cfn!(proc_wait = wait_body);

/// `proc:wait([timeout])`: waits until the child ends: `true|nil, "exit",
/// code` or `nil, "signal", signum` (as `os.execute`), or `nil, "timeout"`.
fn wait_body(lua: &mut Lua) -> Ret {
    lua.udata::<Proc>(1)?;
    let deadline = if lua.is_nil(2) { None } else { Some(engine::deadline_in(engine::ns_of(lua.check_time(2)?))) };
    lua.set_top(1);
    drive(lua, Wait { deadline, errno: 0 })
}

/// Waits outside cothreads: `poll(2)` on a pidfd until the child ends
/// (`Done`) or `deadline` (`Timeout`); a failure sets `errno`.
fn wait_blocking(p: &Proc, deadline: Option<u64>, errno_out: &mut i32) -> Why {
    let fd = match os::pidfd(p.pid) {
        Ok(fd) => fd,
        Err(e) => {
            *errno_out = e;
            return Why::Done;
        }
    };
    loop {
        if p.exit_now().is_some() {
            return Why::Done;
        }
        // The pidfd becomes readable when the child ends.
        match engine::block_on(deadline, |each| {
            each(&engine::Source::new(engine::SourceKind::Pipe), fd.as_raw_fd(), engine::READ)
        }) {
            Why::Ready => {}
            why => return why,
        }
    }
}

cfn!(proc_kill = kill_body);

/// `proc:kill([sig])`: sends `sig` (default "SIGTERM"; a name or a number);
/// true, or `nil, message, errno` (ESRCH once it was reaped).
fn kill_body(lua: &mut Lua) -> Ret {
    let p = lua.udata::<Proc>(1)?;
    let sig = if lua.is_nil(2) { libc::SIGTERM } else { ossignal::check_signal(lua, 2, 2)? };
    // Once reaped, the pid may belong to another process.
    if p.exit_now().is_some() {
        return Ok(lua.fail_errno(libc::ESRCH, None));
    }
    if let Err(e) = os::kill(p.pid, sig) {
        return Ok(lua.fail_errno(e, None));
    }
    lua.push_bool(true);
    Ok(1)
}

cfn!(proc_index = index_body);

/// `__index`: `pid`, `stdin`, `stdout`, `stderr`, then the methods
/// (upvalue 1).
fn index_body(lua: &mut Lua) -> Ret {
    let pid = lua.udata::<Proc>(1)?.pid;
    match lua.to_bytes(2) {
        Some(b"pid") => lua.push_int(pid as lua_Integer),
        Some(b"stdin") => drop(lua.get_uservalue(1, 1)),
        Some(b"stdout") => drop(lua.get_uservalue(1, 2)),
        Some(b"stderr") => drop(lua.get_uservalue(1, 3)),
        Some(name) => {
            let name = CString::new(name).unwrap_or_default();
            lua.get_field(Lua::upvalue(1), &name);
        }
        None => lua.push_nil(),
    }
    Ok(1)
}

cfn!(proc_tostring = tostring_body);

fn tostring_body(lua: &mut Lua) -> Ret {
    let pid = lua.udata::<Proc>(1)?.pid;
    lua.push_owned(format!("process ({pid})"));
    Ok(1)
}

const METHODS: &[Reg] = &[(c"wait", proc_wait), (c"kill", proc_kill)];

/// `[-0, +1, m]` Pushes the `cothread.process` table (made, with the
/// metatables it needs, once per Lua state).
pub fn push_module(lua: &mut Lua) -> Result<(), Error> {
    lua.push_once(MODULE, |lua| {
        register(lua)?;
        lua.push_functions(&[(c"spawn", spawn)]);
        Ok(())
    })
}

/// `[-0, +0, m]` Registers the metatables of process objects and their pipes.
fn register(lua: &mut Lua) -> Result<(), Error> {
    stream::register(lua)?;
    lua.udata_metatable::<Proc>(|lua| {
        lua.push_functions(METHODS);
        lua.push_closure(proc_index, 1);
        lua.set_field(-2, c"__index");
        lua.push_fn(proc_tostring);
        lua.set_field(-2, c"__tostring");
        Ok(())
    })?;
    lua.pop(1);
    Ok(())
}
