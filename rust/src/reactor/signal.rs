//! Signal handles: a callback when the process receives a signal.
//!
//! The loop reads its watched signals from one signalfd. For that, a watched
//! signal is blocked in the loop's thread (threads started later inherit the
//! mask; threads started before must block it themselves, or the kernel may
//! deliver it to them instead). When the last handle of a signal stops, the
//! signal is unblocked again if it was not blocked before.

use std::collections::HashMap;

use super::handle::Kind;
use super::{Handle, Loop, sys};
use crate::error::{Error, Result};

/// A signal callback: the handle and the signal number.
pub type SignalCallback = Box<dyn FnMut(&mut Loop, Handle, i32)>;

pub(crate) struct Signal {
    signum: i32,
    cb: Option<SignalCallback>,
}

/// The loop's signal watching: its signalfd and, per signal, the handles.
#[derive(Default)]
pub(crate) struct Signals {
    fd: Option<sys::Fd>,
    watched: HashMap<i32, Watched>,
}

struct Watched {
    handles: Vec<Handle>,
    was_blocked: bool,
}

/// The epoll token of the signalfd (handle ids are at least 2^32).
pub(crate) const SIGNAL_TOKEN: u64 = 1;

impl Loop {
    /// A new, stopped signal handle carrying `data`.
    pub fn signal_init(&mut self, data: usize) -> Handle {
        self.insert(Kind::Signal(Signal { signum: 0, cb: None }), data)
    }

    fn signal(&mut self, h: Handle) -> Result<&mut Signal> {
        match &mut self.slot_mut(h)?.kind {
            Kind::Signal(s) => Ok(s),
            _ => Err(Error::Inval),
        }
    }

    /// Watches `signum` (1..=64, not SIGKILL or SIGSTOP): `cb` runs on the loop
    /// each time the process receives it. Restarting with another signal
    /// stops watching the first.
    pub fn signal_start(&mut self, h: Handle, signum: i32, cb: SignalCallback) -> Result<()> {
        if !(1..=64).contains(&signum) || signum == libc::SIGKILL || signum == libc::SIGSTOP {
            return Err(Error::Inval);
        }
        self.signal(h)?;
        self.signal_stop(h)?;
        let first = !self.signals.watched.contains_key(&signum);
        if first {
            let was_blocked = sys::block_signal(signum, true).map_err(|e| Error::from_io(&e))?;
            self.signals.watched.insert(signum, Watched { handles: Vec::new(), was_blocked });
            if let Err(e) = self.update_signalfd() {
                self.forget_signal(signum);
                return Err(e);
            }
        }
        self.signals.watched.get_mut(&signum).expect("inserted").handles.push(h);
        let s = self.signal(h)?;
        s.signum = signum;
        s.cb = Some(cb);
        self.set_active(h, true);
        Ok(())
    }

    /// Stops watching (stopping a stopped handle is fine).
    pub fn signal_stop(&mut self, h: Handle) -> Result<()> {
        let s = self.signal(h)?;
        let signum = std::mem::replace(&mut s.signum, 0);
        self.set_active(h, false);
        if signum == 0 {
            return Ok(());
        }
        let w = self.signals.watched.get_mut(&signum).expect("a watched signal");
        w.handles.retain(|&x| x != h);
        if w.handles.is_empty() {
            self.forget_signal(signum);
            let _ = self.update_signalfd();
        }
        Ok(())
    }

    fn forget_signal(&mut self, signum: i32) {
        if let Some(w) = self.signals.watched.remove(&signum) {
            if !w.was_blocked {
                let _ = sys::block_signal(signum, false);
            }
        }
    }

    /// Makes the signalfd watch exactly the watched signals.
    fn update_signalfd(&mut self) -> Result<()> {
        let signals: Vec<i32> = self.signals.watched.keys().copied().collect();
        let io = |e: std::io::Error| Error::from_io(&e);
        match &self.signals.fd {
            Some(fd) => sys::signalfd(Some(fd), &signals).map_err(io).map(drop),
            None => {
                let fd = sys::signalfd(None, &signals).map_err(io)?.expect("a new signalfd");
                sys::epoll_ctl(&self.epoll, libc::EPOLL_CTL_ADD, fd.raw(), libc::EPOLLIN as u32, SIGNAL_TOKEN)
                    .map_err(io)?;
                self.signals.fd = Some(fd);
                Ok(())
            }
        }
    }

    /// Runs the callbacks of the signals received.
    pub(super) fn run_signals(&mut self) {
        while let Some(signo) = self.signals.fd.as_ref().and_then(sys::signalfd_read) {
            let handles = self.signals.watched.get(&signo).map(|w| w.handles.clone()).unwrap_or_default();
            for h in handles {
                if self.signal(h).map_or(true, |s| s.signum != signo) {
                    continue;
                }
                fn field(k: &mut Kind) -> Option<&mut Option<SignalCallback>> {
                    match k {
                        Kind::Signal(s) => Some(&mut s.cb),
                        _ => None,
                    }
                }
                self.call_back(h, field, |l, f| f(l, h, signo));
            }
        }
    }
}

/// Sends `signum` to this process (`kill(getpid(), signum)`); the error is
/// an errno value.
pub fn raise(signum: i32) -> std::result::Result<(), i32> {
    // SAFETY: kill takes plain integers; an invalid signal is an EINVAL.
    if unsafe { libc::kill(libc::getpid(), signum) } < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    Ok(())
}

/// Waits in the calling thread, without a loop, for one of the signals of
/// `mask` (bit n-1 for signal n), blocked meanwhile (`sigtimedwait`), until
/// `deadline` (monotonic ns; `None`: none). The signal that came, or `None`
/// at the deadline. The thread's signal mask is restored before it returns.
pub fn wait_in_thread(mask: u64, deadline: Option<u64>) -> Option<i32> {
    // SAFETY: `set` and `old` are valid sigset_t values, filled before use;
    // the timespec is a plain value; the old mask is restored below.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for n in (1..=64).filter(|n| mask & (1u64 << (n - 1)) != 0) {
            libc::sigaddset(&mut set, n);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let got = loop {
            let r = match deadline {
                None => libc::sigwaitinfo(&set, std::ptr::null_mut()),
                Some(d) => {
                    let left = d.saturating_sub(crate::time::monotonic_ns());
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
