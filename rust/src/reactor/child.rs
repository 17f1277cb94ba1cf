//! Child handles: a callback when a child process ends (it is reaped then).
//! Built on a pidfd, so no SIGCHLD handler is involved.

use super::handle::Kind;
use super::sys::{self, Exit};
use super::{Handle, Loop};
use crate::error::{Error, Result};

/// A child callback: the handle and how the child ended, or the error met
/// reaping it (e.g. someone else reaped it first).
pub type ChildCallback = Box<dyn FnMut(&mut Loop, Handle, Result<Exit>)>;

pub(crate) struct Child {
    pid: i32,
    fd: sys::Fd,
    cb: Option<ChildCallback>,
    registered: bool,
}

impl Loop {
    /// A new, stopped handle for child process `pid`, carrying `data`.
    /// `Error::Inval` for a pid <= 0, `Error::Srch` for a pid that does not
    /// exist, `Error::Child` for a process that is not a child of this one
    /// (or was reaped already): the loop could never reap it.
    pub fn child_init(&mut self, pid: i32, data: usize) -> Result<Handle> {
        if pid <= 0 {
            return Err(Error::Inval);
        }
        let fd = sys::pidfd_open(pid).map_err(|e| Error::from_io(&e))?;
        if !sys::is_child(pid).map_err(|e| Error::from_io(&e))? {
            return Err(Error::Child);
        }
        Ok(self.insert(Kind::Child(Child { pid, fd, cb: None, registered: false }), data))
    }

    fn child(&mut self, h: Handle) -> Result<&mut Child> {
        match &mut self.slot_mut(h)?.kind {
            Kind::Child(c) => Ok(c),
            _ => Err(Error::Inval),
        }
    }

    /// Waits for the child to end: `cb` runs once, after it was reaped; the
    /// handle is stopped then.
    pub fn child_start(&mut self, h: Handle, cb: ChildCallback) -> Result<()> {
        let c = self.child(h)?;
        let (registered, fd) = (c.registered, c.fd.raw());
        if !registered {
            sys::epoll_ctl(&self.epoll, libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, h.to_raw())
                .map_err(|e| Error::from_io(&e))?;
        }
        let c = self.child(h)?;
        c.registered = true;
        c.cb = Some(cb);
        self.set_active(h, true);
        Ok(())
    }

    /// Stops waiting (stopping a stopped handle is fine).
    pub fn child_stop(&mut self, h: Handle) -> Result<()> {
        let c = self.child(h)?;
        if std::mem::replace(&mut c.registered, false) {
            let fd = c.fd.raw();
            let _ = sys::epoll_ctl(&self.epoll, libc::EPOLL_CTL_DEL, fd, 0, 0);
        }
        self.set_active(h, false);
        Ok(())
    }

    /// The pidfd of child handle `h` became readable: reap and call back.
    pub(super) fn dispatch_child(&mut self, h: Handle) {
        let Ok(c) = self.child(h) else { return };
        let exit = match sys::reap(c.pid) {
            Ok(None) => return, // not yet (spurious wakeup)
            Ok(Some(exit)) => Ok(exit),
            Err(e) => Err(Error::from_io(&e)),
        };
        let _ = self.child_stop(h);
        fn field(k: &mut Kind) -> Option<&mut Option<ChildCallback>> {
            match k {
                Kind::Child(c) => Some(&mut c.cb),
                _ => None,
            }
        }
        self.call_back(h, field, |l, f| f(l, h, exit));
    }
}
