//! Child processes: spawning with pipes (`posix_spawnp`: no code of ours
//! runs in the child), reaping without blocking, signals, pidfds.

use std::ffi::{CStr, CString, c_char, c_int};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use super::fd::Errno;
use crate::reactor::Exit;

unsafe extern "C" {
    static environ: *const *mut c_char;
}

fn errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// How a standard stream of the child is set up.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stdio {
    /// The parent's.
    Inherit,
    /// A pipe; the parent keeps the other end (non-blocking).
    Pipe,
    /// `/dev/null`.
    Null,
    /// stderr only: where stdout goes.
    Stdout,
}

/// A started child: its pid and the parent's pipe ends (`None`: no pipe).
#[derive(Debug)]
pub struct Spawned {
    /// The child's process id.
    pub pid: i32,
    /// The parent's ends of stdin, stdout, stderr, where piped.
    pub pipes: [Option<OwnedFd>; 3],
}

/// Starts `argv[0]` (searched in `PATH`) with `argv`, the environment `env`
/// ("name=value" strings; `None`: the parent's), in `cwd`, its standard
/// streams set up as `stdio` says; its signal mask empty and every signal at
/// its default disposition. `argv` must not be empty.
pub fn spawn(
    argv: &[CString],
    env: Option<&[CString]>,
    cwd: Option<&CStr>,
    stdio: [Stdio; 3],
) -> Result<Spawned, Errno> {
    if argv.is_empty() {
        return Err(libc::EINVAL);
    }
    let mut parent: [Option<OwnedFd>; 3] = [None, None, None];
    let mut child: [Option<OwnedFd>; 3] = [None, None, None];
    for i in 0..3 {
        if stdio[i] != Stdio::Pipe {
            continue;
        }
        let (r, w) = pipe()?;
        // stdin: the child reads; stdout, stderr: the child writes.
        let (c, p) = if i == 0 { (r, w) } else { (w, r) };
        crate::net::sys::set_nonblocking(std::os::fd::AsRawFd::as_raw_fd(&p))?;
        child[i] = Some(c);
        parent[i] = Some(p);
    }
    let fds = child.each_ref().map(|c| c.as_ref().map_or(-1, std::os::fd::AsRawFd::as_raw_fd));
    let pid = posix_spawn(argv, env, cwd, stdio, &fds)?;
    Ok(Spawned { pid, pipes: parent })
}

/// A pipe, both ends closed on exec: (read end, write end).
fn pipe() -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut p = [0; 2];
    // SAFETY: `p` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(errno());
    }
    // SAFETY: two descriptors just made, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) })
}

/// `posix_spawnp` with the file actions for `stdio` (pipe ends in `child`),
/// an empty signal mask and default dispositions in the child.
fn posix_spawn(
    argv: &[CString],
    env: Option<&[CString]>,
    cwd: Option<&CStr>,
    stdio: [Stdio; 3],
    child: &[RawFd; 3],
) -> Result<i32, Errno> {
    let mut args: Vec<*mut c_char> = argv.iter().map(|a| a.as_ptr() as *mut c_char).collect();
    args.push(std::ptr::null_mut());
    let envp: Option<Vec<*mut c_char>> =
        env.map(|e| e.iter().map(|a| a.as_ptr() as *mut c_char).chain([std::ptr::null_mut()]).collect());
    // SAFETY: the attribute and action objects are initialised before use and
    // destroyed after; every pointer handed over (argv, envp, paths) stays
    // valid for the call, which reads them only until it returns; `environ`
    // is the C library's own, read by the spawn as it is.
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
        for (i, s) in stdio.iter().enumerate() {
            let target = i as c_int;
            match s {
                Stdio::Inherit => {}
                Stdio::Pipe => {
                    libc::posix_spawn_file_actions_adddup2(&mut fa, child[i], target);
                }
                Stdio::Null => {
                    libc::posix_spawn_file_actions_addopen(&mut fa, target, c"/dev/null".as_ptr(), libc::O_RDWR, 0);
                }
                Stdio::Stdout => {
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

/// Reaps the child `pid` if it ended, without blocking.
pub fn reap(pid: i32) -> Option<Exit> {
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

/// Is the child `pid` gone: reaped now (it ended) or not ours any more?
pub fn reaped(pid: i32) -> bool {
    let mut st: c_int = 0;
    // SAFETY: `st` is a valid int to write the status into.
    unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) != 0 }
}

/// Sends `signum` to the process `pid`.
pub fn kill(pid: i32, signum: i32) -> Result<(), Errno> {
    // SAFETY: kill takes plain integers.
    if unsafe { libc::kill(pid, signum) } < 0 { Err(errno()) } else { Ok(()) }
}

/// A pidfd of `pid`: readable once the process ends.
pub fn pidfd(pid: i32) -> Result<OwnedFd, Errno> {
    // SAFETY: pidfd_open takes plain integers and returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as c_int;
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: a descriptor just made, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<CString> {
        a.iter().map(|s| CString::new(*s).unwrap()).collect()
    }

    /// Waits (polling) for `pid` to end.
    fn wait(pid: i32) -> Exit {
        loop {
            if let Some(e) = reap(pid) {
                return e;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    #[test]
    fn a_child_writes_to_its_pipe_and_exits_with_its_status() {
        let sp = spawn(&args(&["sh", "-c", "echo hi; exit 3"]), None, None, [Stdio::Null, Stdio::Pipe, Stdio::Inherit])
            .expect("spawned");
        assert!(sp.pipes[0].is_none() && sp.pipes[2].is_none());
        assert_eq!(wait(sp.pid), Exit { status: 3, signal: 0 });
        let out = sp.pipes[1].as_ref().expect("a pipe");
        let mut buf = Vec::new();
        assert_eq!(super::super::fd::read_into(std::os::fd::AsRawFd::as_raw_fd(out), &mut buf, 64), Ok(3));
        assert_eq!(buf, b"hi\n");
    }

    #[test]
    fn environment_and_directory_are_the_given_ones() {
        let env = args(&["ONLY=this"]);
        let sp = spawn(
            &args(&["sh", "-c", "test \"$ONLY\" = this && test \"$(pwd)\" = / && test -z \"$HOME\""]),
            Some(&env),
            Some(c"/"),
            [Stdio::Null; 3],
        )
        .expect("spawned");
        assert_eq!(wait(sp.pid), Exit { status: 0, signal: 0 });
    }

    #[test]
    fn a_killed_child_reports_its_signal_and_is_reaped_once() {
        let sp = spawn(&args(&["sleep", "10"]), None, None, [Stdio::Null; 3]).expect("spawned");
        let fd = pidfd(sp.pid).expect("a pidfd");
        assert_eq!(kill(sp.pid, libc::SIGKILL), Ok(()));
        assert_eq!(wait(sp.pid), Exit { status: 0, signal: libc::SIGKILL });
        assert!(reaped(sp.pid), "not ours any more");
        drop(fd);
    }

    #[test]
    fn bad_commands_are_errors() {
        assert_eq!(spawn(&[], None, None, [Stdio::Null; 3]).map(|s| s.pid), Err(libc::EINVAL));
        // POSIX lets posix_spawn report a failed exec as the child's exit
        // status 127 instead of an error: glibc does so under qemu-user,
        // whose emulated clone cannot pass the error back.
        match spawn(&args(&["/no/such/program"]), None, None, [Stdio::Null; 3]) {
            Err(e) => assert_eq!(e, libc::ENOENT),
            Ok(sp) => assert_eq!(wait(sp.pid), Exit { status: 127, signal: 0 }),
        }
        assert_eq!(kill(-99_999_999, 0), Err(libc::ESRCH));
    }
}
