//! `cothread.process`: child processes with pipes, waited for in the event
//! loop.
//!
//! `spawn` starts a program with `posix_spawnp` (no code of ours runs in the
//! child: the C library's vfork-style spawn sets up the descriptors, the
//! signal mask and dispositions, and executes it). Its piped stdin, stdout
//! and stderr are streams (see `stream`) over non-blocking pipe ends. A wait
//! in a cothread watches the child's pidfd (a child handle of the loop, made
//! for the wait and closed when it ends, however it ends); outside cothreads
//! it blocks in `poll(2)` on a pidfd.
//!
//! A process object collected before its child was reaped leaves the pid in
//! a list reaped (without blocking) at each later `spawn`, so no zombie stays.

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString, c_char, c_int};
use std::rc::Rc;

use cothread::reactor::{Exit, Loop};

use crate::engine::{self, Fire, Frame, Next, OnEnd, Operation, Why};
use crate::ossignal;
use crate::park::drive_raw;
use crate::raw::{self, L, ffi};
use crate::stream;

/// Metatable name of a process object.
const PROCESS: &CStr = c"cothread.process";
/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.process.module";

thread_local! {
    /// Children of collected process objects, not reaped yet.
    static ORPHANS: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
}

unsafe extern "C" {
    static environ: *const *mut c_char;
}

struct Proc {
    pid: i32,
    /// How it ended, once reaped (also by a child handle's callback);
    /// `None` once collected (a finalizer may still reach the object).
    exit: Option<Rc<Cell<Option<Exit>>>>,
}

/// How a standard stream of the child is set up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Std {
    Inherit,
    Pipe,
    Null,
    /// stderr only: where stdout goes.
    Stdout,
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Reaps `pid` without blocking.
fn reap(pid: i32) -> Option<Exit> {
    let mut st: c_int = 0;
    // SAFETY: `st` is a valid int to write the status into.
    let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
    if r != pid {
        return None;
    }
    Some(if libc::WIFSIGNALED(st) {
        Exit { status: 0, signal: libc::WTERMSIG(st) }
    } else {
        Exit { status: libc::WEXITSTATUS(st), signal: 0 }
    })
}

/// Reaps the orphans that ended (or that someone else reaped).
fn reap_orphans() {
    ORPHANS.with(|o| {
        o.borrow_mut().retain(|&pid| {
            let mut st: c_int = 0;
            // SAFETY: `st` is a valid int to write the status into.
            unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) == 0 }
        })
    });
}

// ===== spawn =====

/// `[-0, +0, e]` Checks the command at `idx`: a non-empty list of strings, or
/// a string (run by `/bin/sh -c`).
unsafe fn check_command(l: L, idx: c_int) {
    // SAFETY: valid state.
    unsafe {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TSTRING => {}
            ffi::LUA_TTABLE => {
                let n = ffi::lua_rawlen(l, idx);
                if n == 0 {
                    raw::arg_error(l, idx, c"empty command");
                }
                for i in 1..=n {
                    ffi::lua_rawgeti(l, idx, i as ffi::lua_Integer);
                    if raw::to_str(l, -1).is_none() {
                        raw::arg_error(l, idx, c"command must be a list of strings");
                    }
                    ffi::lua_pop(l, 1);
                }
            }
            _ => {
                let msg =
                    ffi::lua_pushfstring(l, c"table or string expected, got %s".as_ptr(), ffi::luaL_typename(l, idx));
                ffi::luaL_argerror(l, idx, msg);
            }
        }
    }
}

/// `[-0, +0, e]` The setup of option `name` of the options at 2.
unsafe fn check_std(l: L, name: &CStr) -> Std {
    // SAFETY: valid state; slot 2 is a table.
    unsafe {
        ffi::lua_getfield(l, 2, name.as_ptr());
        let v = match ffi::lua_type(l, -1) {
            ffi::LUA_TNIL => Std::Inherit,
            ffi::LUA_TBOOLEAN => {
                if ffi::lua_toboolean(l, -1) != 0 {
                    Std::Pipe
                } else {
                    Std::Inherit
                }
            }
            _ => match raw::to_str(l, -1).map(|s| CStr::from_ptr(s).to_bytes()) {
                Some(b"pipe") => Std::Pipe,
                Some(b"inherit") => Std::Inherit,
                Some(b"null") => Std::Null,
                Some(b"stdout") if name == c"stderr" => Std::Stdout,
                _ => {
                    let msg = ffi::lua_pushfstring(l, c"invalid option '%s'".as_ptr(), name.as_ptr());
                    ffi::luaL_argerror(l, 2, msg);
                    unreachable!("luaL_argerror returned")
                }
            },
        };
        ffi::lua_pop(l, 1);
        v
    }
}

/// The options of a spawn, checked.
struct Options {
    std: [Std; 3],
    /// Slot of the env table (checked), if any.
    env: bool,
    cwd: bool,
}

/// `[-0, +2, e]` Checks the options at 2 and leaves `env`, `cwd` in slots 3, 4.
unsafe fn check_options(l: L) -> Options {
    // SAFETY: valid state; the frame has the command and the options.
    unsafe {
        ffi::lua_settop(l, 2);
        if ffi::lua_isnoneornil(l, 2) != 0 {
            ffi::lua_pushnil(l);
            ffi::lua_pushnil(l);
            return Options { std: [Std::Inherit; 3], env: false, cwd: false };
        }
        ffi::luaL_checktype(l, 2, ffi::LUA_TTABLE);
        let std = [check_std(l, c"stdin"), check_std(l, c"stdout"), check_std(l, c"stderr")];
        if std[0] == Std::Stdout {
            raw::arg_error(l, 2, c"invalid option 'stdin'");
        }
        ffi::lua_getfield(l, 2, c"env".as_ptr()); // 3
        let env = ffi::lua_isnil(l, 3) == 0;
        if env {
            if ffi::lua_type(l, 3) != ffi::LUA_TTABLE {
                raw::arg_error(l, 2, c"option 'env' must be a table");
            }
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, 3) != 0 {
                if ffi::lua_type(l, -2) != ffi::LUA_TSTRING || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
                    raw::arg_error(l, 2, c"option 'env' must map strings to strings");
                }
                ffi::lua_pop(l, 1);
            }
        }
        ffi::lua_getfield(l, 2, c"cwd".as_ptr()); // 4
        let cwd = ffi::lua_isnil(l, 4) == 0;
        if cwd && raw::to_str(l, 4).is_none() {
            raw::arg_error(l, 2, c"option 'cwd' must be a string");
        }
        Options { std, env, cwd }
    }
}

/// The command at 1 as C strings (checked already; no Lua call raises here).
unsafe fn argv_of(l: L) -> Vec<CString> {
    // SAFETY: valid state; raw reads of strings.
    unsafe {
        let c = |i: c_int| CString::from(CStr::from_ptr(ffi::lua_tolstring(l, i, std::ptr::null_mut())));
        if ffi::lua_type(l, 1) == ffi::LUA_TSTRING {
            return vec![CString::from(c"/bin/sh"), CString::from(c"-c"), c(1)];
        }
        let n = ffi::lua_rawlen(l, 1);
        let mut v = Vec::with_capacity(n as usize);
        for i in 1..=n {
            ffi::lua_rawgeti(l, 1, i as ffi::lua_Integer);
            v.push(c(-1));
            ffi::lua_pop(l, 1);
        }
        v
    }
}

/// The environment at 3 as "name=value" C strings (checked already).
unsafe fn env_of(l: L) -> Vec<CString> {
    // SAFETY: valid state; raw reads of string keys and values.
    unsafe {
        let mut v = Vec::new();
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, 3) != 0 {
            let mut kv = CStr::from_ptr(ffi::lua_tolstring(l, -2, std::ptr::null_mut())).to_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(CStr::from_ptr(ffi::lua_tolstring(l, -1, std::ptr::null_mut())).to_bytes());
            v.push(CString::new(kv).unwrap_or_default());
            ffi::lua_pop(l, 1);
        }
        v
    }
}

/// The parent's ends of the pipes made for a spawn (-1: none).
struct Spawned {
    pid: i32,
    parent: [c_int; 3],
}

/// Closes the descriptors of `fds` that are >= 0.
fn close_all(fds: &[c_int]) {
    for &fd in fds {
        if fd >= 0 {
            crate::sys::close(fd);
        }
    }
}

/// Makes the pipes and spawns the program: the pid and the parent's pipe
/// ends (non-blocking), or the errno.
fn spawn_child(argv: &[CString], env: Option<&[CString]>, cwd: Option<&CStr>, std: [Std; 3]) -> Result<Spawned, i32> {
    let mut parent = [-1; 3];
    let mut child = [-1; 3];
    for i in 0..3 {
        if std[i] != Std::Pipe {
            continue;
        }
        let mut p = [0; 2];
        // SAFETY: `p` holds two ints.
        if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
            let e = errno();
            close_all(&parent);
            close_all(&child);
            return Err(e);
        }
        // stdin: the child reads; stdout, stderr: the child writes.
        let (c, pa) = if i == 0 { (p[0], p[1]) } else { (p[1], p[0]) };
        child[i] = c;
        parent[i] = pa;
        // SAFETY: a plain fcntl on a descriptor just made.
        unsafe { libc::fcntl(pa, libc::F_SETFL, libc::O_NONBLOCK) };
    }
    let r = posix_spawn(argv, env, cwd, std, &child);
    close_all(&child);
    match r {
        Ok(pid) => Ok(Spawned { pid, parent }),
        Err(e) => {
            close_all(&parent);
            Err(e)
        }
    }
}

/// `posix_spawnp` with the file actions for `std` (pipe ends in `child`),
/// an empty signal mask and default dispositions in the child.
fn posix_spawn(
    argv: &[CString],
    env: Option<&[CString]>,
    cwd: Option<&CStr>,
    std: [Std; 3],
    child: &[c_int; 3],
) -> Result<i32, i32> {
    let mut args: Vec<*mut c_char> = argv.iter().map(|a| a.as_ptr() as *mut c_char).collect();
    args.push(std::ptr::null_mut());
    let envp: Option<Vec<*mut c_char>> =
        env.map(|e| e.iter().map(|a| a.as_ptr() as *mut c_char).chain([std::ptr::null_mut()]).collect());
    // SAFETY: the attribute and action objects are initialised before use and
    // destroyed after; every pointer handed over (argv, envp, paths) stays
    // valid for the call; the spawn reads them only until it returns.
    unsafe {
        let mut fa: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawn_file_actions_init(&mut fa);
        libc::posix_spawnattr_init(&mut attr);
        let mut none: libc::sigset_t = std::mem::zeroed();
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigfillset(&mut all);
        libc::posix_spawnattr_setsigmask(&mut attr, &none);
        libc::posix_spawnattr_setsigdefault(&mut attr, &all);
        libc::posix_spawnattr_setflags(&mut attr, (libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF) as _);
        for (i, s) in std.iter().enumerate() {
            let target = i as c_int;
            match s {
                Std::Inherit => {}
                Std::Pipe => {
                    libc::posix_spawn_file_actions_adddup2(&mut fa, child[i], target);
                }
                Std::Null => {
                    libc::posix_spawn_file_actions_addopen(&mut fa, target, c"/dev/null".as_ptr(), libc::O_RDWR, 0);
                }
                Std::Stdout => {
                    libc::posix_spawn_file_actions_adddup2(&mut fa, 1, 2);
                }
            }
        }
        if let Some(dir) = cwd {
            libc::posix_spawn_file_actions_addchdir_np(&mut fa, dir.as_ptr());
        }
        let envp_ptr = match &envp {
            Some(e) => e.as_ptr(),
            None => environ,
        };
        let mut pid = 0;
        let r = libc::posix_spawnp(&mut pid, args[0], &fa, &attr, args.as_ptr(), envp_ptr);
        libc::posix_spawn_file_actions_destroy(&mut fa);
        libc::posix_spawnattr_destroy(&mut attr);
        if r != 0 { Err(r) } else { Ok(pid) }
    }
}

/// `cothread.process.spawn(command [, options])`: starts `command` (a list
/// `{program, args...}` searched in PATH, or a string run by `/bin/sh -c`).
/// Options: `stdin`, `stdout`, `stderr` (true/"pipe", "null", "inherit" (the
/// default), and for stderr "stdout"), `env` (a table name -> value: the whole
/// environment), `cwd`. A process object, or `nil, message, errno`.
unsafe extern "C-unwind" fn spawn(l: L) -> c_int {
    // SAFETY: a function of the module; the vectors live only between the
    // checks (which raise) and the pushes (which may raise only for memory).
    unsafe {
        check_command(l, 1);
        let o = check_options(l); // command options env cwd
        raw::check_stack(l, 8);
        reap_orphans();
        let argv = argv_of(l);
        let env = o.env.then(|| env_of(l));
        let cwd = o.cwd.then(|| CString::from(CStr::from_ptr(ffi::lua_tolstring(l, 4, std::ptr::null_mut()))));
        let r = spawn_child(&argv, env.as_deref(), cwd.as_deref(), o.std);
        let program = argv[0].clone();
        drop((argv, env, cwd));
        let sp = match r {
            Ok(sp) => sp,
            Err(e) => {
                ffi::lua_pushstring(l, program.as_ptr());
                drop(program);
                let name = ffi::lua_gettop(l);
                ffi::lua_pushnil(l);
                ffi::lua_pushfstring(
                    l,
                    c"%s: %s".as_ptr(),
                    ffi::lua_tolstring(l, name, std::ptr::null_mut()),
                    libc::strerror(e),
                );
                ffi::lua_pushinteger(l, e as ffi::lua_Integer);
                return 3;
            }
        };
        drop(program);
        let p = ffi::lua_newuserdatauv(l, std::mem::size_of::<Proc>(), 3) as *mut Proc;
        p.write(Proc { pid: sp.pid, exit: Some(Rc::default()) });
        ffi::luaL_setmetatable(l, PROCESS.as_ptr());
        for (i, fd) in sp.parent.into_iter().enumerate() {
            if fd >= 0 {
                stream::push_stream(&crate::lua::Lua::from_raw(l), fd, true);
                ffi::lua_setiuservalue(l, -2, i as c_int + 1);
            }
        }
        1
    }
}

// ===== process objects =====

/// `[-0, +0, e]` The process object at `idx`, raising unless it is one
/// (and not collected already).
unsafe fn check_proc(l: L, idx: c_int) -> *mut Proc {
    // SAFETY: valid state; a userdata with this metatable holds a `Proc`.
    unsafe {
        let p = ffi::luaL_checkudata(l, idx, PROCESS.as_ptr()) as *mut Proc;
        if (*p).exit.is_none() {
            raw::error(l, c"attempt to use a collected process object");
        }
        p
    }
}

/// The exit of `p`, reaping it now if it ended.
unsafe fn exit_of(p: *mut Proc) -> Option<Exit> {
    // SAFETY: `p` is live.
    unsafe {
        let exit = (*p).exit.as_ref()?;
        if exit.get().is_none() {
            exit.set(reap((*p).pid));
        }
        exit.get()
    }
}

/// `[-0, +3, m]` Pushes `os.execute`'s results for `e`: `true|nil`, "exit"
/// or "signal", the code or signal number.
unsafe fn push_exit(l: L, e: Exit) -> c_int {
    // SAFETY: valid state with free slots.
    unsafe {
        raw::check_stack(l, 3);
        if e.signal == 0 && e.status == 0 {
            ffi::lua_pushboolean(l, 1);
        } else {
            ffi::lua_pushnil(l);
        }
        if e.signal != 0 {
            ffi::lua_pushliteral(l, c"signal");
            ffi::lua_pushinteger(l, e.signal as ffi::lua_Integer);
        } else {
            ffi::lua_pushliteral(l, c"exit");
            ffi::lua_pushinteger(l, e.status as ffi::lua_Integer);
        }
        3
    }
}

/// `proc:wait`. Frame: 1 the process object.
#[derive(Clone, Copy)]
struct Wait {
    deadline: Option<u64>,
    /// Outside cothreads: the errno of a failed blocking wait.
    errno: i32,
}

/// The process object in slot 1 of the frame.
unsafe fn proc_of(f: &Frame) -> *mut Proc {
    // SAFETY: slot 1 of a wait's frame holds the (checked) process object.
    unsafe { ffi::lua_touserdata(f.l(), f.at(1)) as *mut Proc }
}

impl Operation for Wait {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `proc_wait` built; the object stays in slot 1.
        unsafe {
            let l = f.l();
            if let Some(e) = exit_of(proc_of(f)) {
                return Next::Done(push_exit(l, e));
            }
            Next::Done(match why {
                Why::Start | Why::Ready | Why::Closed => return Next::Event(self.deadline),
                Why::Done if self.errno != 0 => raw::push_errno(l, self.errno, None),
                Why::Done => raw::push_errno(l, libc::ECHILD, None),
                Why::Timeout => raw::push_fail(l, c"timeout"),
                Why::Cancelled => raw::push_fail(l, c"cancelled"),
                Why::Failed(m) => raw::push_fail(l, m),
            })
        }
    }

    fn start(&mut self, f: &Frame, lp: &mut Loop, fire: Fire) -> Result<OnEnd, &'static CStr> {
        // SAFETY: as `step`; the callback keeps its own reference to the cell
        // the exit goes into.
        unsafe {
            let p = proc_of(f);
            let (pid, exit) = ((*p).pid, (*p).exit.clone().ok_or(c"collected")?);
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
    }

    fn block(&mut self, f: &mut Frame, _next: Next) -> Why {
        // SAFETY: as `step`.
        unsafe { wait_blocking(proc_of(f), self.deadline, &mut self.errno) }
    }
}

/// `proc:wait([timeout])`: waits until the child ends: `true|nil, "exit",
/// code` or `nil, "signal", signum` (as `os.execute`), or `nil, "timeout"`.
unsafe extern "C-unwind" fn proc_wait(l: L) -> c_int {
    // SAFETY: `check_proc` returns a live process object or raises; the frame
    // is the function's own stack.
    unsafe {
        check_proc(l, 1);
        let deadline = if ffi::lua_isnoneornil(l, 2) != 0 {
            None
        } else {
            Some(engine::deadline_in(engine::ns_of(raw::check_time(l, 2, 2))))
        };
        ffi::lua_settop(l, 1);
        drive_raw(l, Wait { deadline, errno: 0 })
    }
}

/// Waits outside cothreads: `poll(2)` on a pidfd until the child ends
/// (`Done`) or `deadline` (`Timeout`); a failure sets `errno`.
unsafe fn wait_blocking(p: *mut Proc, deadline: Option<u64>, errno_out: &mut i32) -> Why {
    // SAFETY: `p` is live; the pidfd is closed before returning.
    unsafe {
        let fd = libc::syscall(libc::SYS_pidfd_open, (*p).pid, 0) as c_int;
        if fd < 0 {
            *errno_out = errno();
            return Why::Done;
        }
        let mut fds = [crate::sys::pollfd(fd, crate::sys::POLL_IN)];
        let why = loop {
            if exit_of(p).is_some() {
                break Why::Done;
            }
            let ms = match deadline {
                None => -1,
                Some(d) => {
                    let now = cothread::time::monotonic_ns();
                    if d <= now {
                        break Why::Timeout;
                    }
                    (d - now).div_ceil(1_000_000).min(c_int::MAX as u64) as c_int
                }
            };
            let _ = crate::sys::poll(&mut fds, ms);
        };
        crate::sys::close(fd);
        why
    }
}

/// `proc:kill([sig])`: sends `sig` (default "SIGTERM"; a name or a number);
/// true, or `nil, message, errno` (ESRCH once it was reaped).
unsafe extern "C-unwind" fn proc_kill(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let p = check_proc(l, 1);
        let sig = if ffi::lua_isnoneornil(l, 2) != 0 {
            libc::SIGTERM
        } else {
            crate::lua::or_raise(ossignal::check_signal(&crate::lua::Lua::from_raw(l), 2, 2), l)
        };
        // Once reaped, the pid may belong to another process.
        if exit_of(p).is_some() {
            return raw::push_errno(l, libc::ESRCH, None);
        }
        if libc::kill((*p).pid, sig) < 0 {
            return raw::push_errno(l, errno(), None);
        }
        ffi::lua_pushboolean(l, 1);
        1
    }
}

/// `__index`: `pid`, `stdin`, `stdout`, `stderr`, then the methods.
unsafe extern "C-unwind" fn proc_index(l: L) -> c_int {
    // SAFETY: a metamethod; the methods table is upvalue 1.
    unsafe {
        let p = check_proc(l, 1);
        let key = raw::to_str(l, 2).map(|s| CStr::from_ptr(s).to_bytes());
        match key {
            Some(b"pid") => ffi::lua_pushinteger(l, (*p).pid as ffi::lua_Integer),
            Some(b"stdin") => {
                ffi::lua_getiuservalue(l, 1, 1);
            }
            Some(b"stdout") => {
                ffi::lua_getiuservalue(l, 1, 2);
            }
            Some(b"stderr") => {
                ffi::lua_getiuservalue(l, 1, 3);
            }
            _ => {
                ffi::lua_pushvalue(l, 2);
                ffi::lua_rawget(l, ffi::lua_upvalueindex(1));
            }
        }
        1
    }
}

unsafe extern "C-unwind" fn proc_tostring(l: L) -> c_int {
    // SAFETY: a metamethod.
    unsafe {
        let p = check_proc(l, 1);
        ffi::lua_pushfstring(l, c"process (%d)".as_ptr(), (*p).pid as c_int);
        1
    }
}

/// `__gc`: a child not reaped yet is left to `reap_orphans`.
unsafe extern "C-unwind" fn proc_gc(l: L) -> c_int {
    // SAFETY: called by Lua once on a `Proc`.
    unsafe {
        let p = ffi::lua_touserdata(l, 1) as *mut Proc;
        if (*p).exit.is_some() && exit_of(p).is_none() {
            let pid = (*p).pid;
            ORPHANS.with(|o| o.borrow_mut().push(pid));
        }
        (*p).exit = None;
    }
    0
}

const METHODS: &[(&CStr, ffi::lua_CFunction)] = &[(c"wait", proc_wait), (c"kill", proc_kill)];

/// `[-0, +1, m]` Pushes the `cothread.process` table (made, with the
/// metatables it needs, once per Lua state).
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn push_module(l: L) {
    // SAFETY: valid state; `init` leaves the stack as it found it.
    unsafe {
        raw::push_module_once(l, MODULE, |l| {
            register(l);
            raw::push_functions(l, &[(c"spawn", spawn)]);
        })
    }
}

/// `[-0, +0, m]` Registers the metatables of process objects and their pipes.
unsafe fn register(l: L) {
    // SAFETY: valid state; balanced pushes.
    unsafe {
        raw::check_stack(l, 3);
        crate::lua::or_raise(stream::register(&mut crate::lua::Lua::from_raw(l)), l);
        if ffi::luaL_newmetatable(l, PROCESS.as_ptr()) != 0 {
            raw::push_functions(l, METHODS);
            ffi::lua_pushcclosure(l, proc_index, 1);
            ffi::lua_setfield(l, -2, c"__index".as_ptr());
            ffi::lua_pushcfunction(l, proc_tostring);
            ffi::lua_setfield(l, -2, c"__tostring".as_ptr());
            ffi::lua_pushcfunction(l, proc_gc);
            ffi::lua_setfield(l, -2, c"__gc".as_ptr());
        }
        ffi::lua_pop(l, 1);
    }
}
