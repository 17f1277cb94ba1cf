//! Reading, writing and seeking plain descriptors (files and pipes). Every
//! call retries on `EINTR`; errors are errno values.

use std::os::fd::RawFd;

/// An errno value.
pub type Errno = i32;

fn errno() -> Errno {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Reads at most `max` bytes from `fd`, appended to `buf`: how many (0 at
/// the end of the stream), or the errno (`EAGAIN` for a non-blocking
/// descriptor with nothing to read).
pub fn read_into(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> Result<usize, Errno> {
    buf.reserve(max);
    let len = buf.len();
    loop {
        // SAFETY: the spare capacity holds at least `max` writable bytes;
        // `read` writes at most that many, and the length grows only by what
        // it wrote.
        let r = unsafe { libc::read(fd, buf.as_mut_ptr().add(len).cast(), max) };
        if r >= 0 {
            // SAFETY: `read` initialised `r` bytes past `len`.
            unsafe { buf.set_len(len + r as usize) };
            return Ok(r as usize);
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// Writes all of `data` to the blocking descriptor `fd`.
pub fn write_all(fd: RawFd, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        // SAFETY: `data` is a valid slice of `data.len()` bytes.
        let r = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if r < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        data = &data[r as usize..];
    }
    Ok(())
}

/// One write to the pipe `fd`: how many bytes went (`EAGAIN` if it would
/// block). A closed reader gives `EPIPE`, never a SIGPIPE: the signal is
/// blocked around the write, and one it raised is taken away unless it was
/// pending before.
pub fn write_pipe(fd: RawFd, data: &[u8]) -> Result<usize, Errno> {
    // SAFETY: valid sigset_t values, filled before use; `data` is a valid
    // slice; the thread's signal mask is restored before returning.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old);
        let r = loop {
            let r = libc::write(fd, data.as_ptr().cast(), data.len());
            if r >= 0 {
                break Ok(r as usize);
            }
            let e = errno();
            if e != libc::EINTR {
                break Err(e);
            }
        };
        if r == Err(libc::EPIPE) && libc::sigismember(&old, libc::SIGPIPE) == 0 {
            let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            libc::sigtimedwait(&pipe, std::ptr::null_mut(), &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        r
    }
}

/// Moves the offset of `fd` (`whence`: `SEEK_SET`, `SEEK_CUR`, `SEEK_END`);
/// the new offset from the start.
pub fn seek(fd: RawFd, off: i64, whence: i32) -> Result<u64, Errno> {
    // SAFETY: lseek takes plain integers; the result is checked.
    let r = unsafe { libc::lseek(fd, off as libc::off_t, whence) };
    if r < 0 { Err(errno()) } else { Ok(r as u64) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe() -> (RawFd, RawFd) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) }, 0);
        (fds[0], fds[1])
    }

    fn close(fd: RawFd) {
        // SAFETY: the test owns `fd`.
        unsafe { libc::close(fd) };
    }

    #[test]
    fn a_pipe_carries_what_is_written_and_says_when_it_would_block() {
        let (r, w) = pipe();
        let mut buf = b"old".to_vec();
        assert_eq!(read_into(r, &mut buf, 16), Err(libc::EAGAIN), "nothing written yet");
        assert_eq!(write_pipe(w, b"hello"), Ok(5));
        assert_eq!(read_into(r, &mut buf, 16), Ok(5));
        assert_eq!(buf, b"oldhello", "appended after what was there");
        close(w);
        assert_eq!(read_into(r, &mut buf, 16), Ok(0), "the end");
        close(r);
    }

    #[test]
    fn a_pipe_without_a_reader_is_an_error_not_a_signal() {
        let (r, w) = pipe();
        close(r);
        assert_eq!(write_pipe(w, b"x"), Err(libc::EPIPE), "the process is still alive to see it");
        close(w);
    }

    #[test]
    fn a_file_is_written_whole_and_seeks_report_positions() {
        let path = std::env::temp_dir().join(format!("cothread-fd-{}", std::process::id()));
        let file = std::fs::File::create(&path).expect("a temporary file");
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        assert_eq!(write_all(fd, &[7u8; 100_000]), Ok(()));
        assert_eq!(seek(fd, 0, libc::SEEK_CUR), Ok(100_000));
        assert_eq!(seek(fd, -10, libc::SEEK_END), Ok(99_990));
        assert_eq!(seek(fd, -1, libc::SEEK_SET), Err(libc::EINVAL));
        assert_eq!(write_all(-1, b"x"), Err(libc::EBADF));
        drop(file);
        std::fs::remove_file(path).expect("removed");
    }
}
