//! `Socket::accept` out of descriptors: it neither spins nor fails, it
//! retries on a timer (`net/accept.rs`) until a descriptor is free or its
//! deadline passes. Its own test binary: it lowers the process's descriptor
//! limit, which would break tests running beside it.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use cothread::net::{ACCEPT_RETRY_NS, Addr, Done, Fail, Socket};
use cothread::reactor::{Loop, RunMode};

const MS: u64 = 1_000_000;

type Got<T> = Rc<RefCell<Option<Result<T, Fail>>>>;

fn catch<T: 'static>(g: &Got<T>) -> Done<T> {
    let g = g.clone();
    Box::new(move |_, r| assert!(g.borrow_mut().replace(r).is_none(), "a completion ran twice"))
}

/// CPU time of this process, in seconds.
fn cpu() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write.
    assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) }, 0);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Runs `lp` one turn at a time (each blocks until something is due) for
/// `ms` milliseconds, or until `g` has a result: the CPU used per second of
/// wall time.
fn run_for<T>(lp: &mut Loop, g: &Got<T>, ms: u64) -> f64 {
    let (c0, t0) = (cpu(), Instant::now());
    while g.borrow().is_none() && t0.elapsed() < Duration::from_millis(ms) {
        lp.run(RunMode::Once).unwrap();
    }
    (cpu() - c0) / t0.elapsed().as_secs_f64()
}

/// The descriptor limit (soft, hard).
fn limit() -> libc::rlimit {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `r` is a valid rlimit to write.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
    r
}

fn set_limit(r: libc::rlimit) {
    // SAFETY: `r` is a valid rlimit to read.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) }, 0);
}

/// Takes every free descriptor below the limit: copies of `fd`.
fn exhaust(fd: RawFd) -> Vec<RawFd> {
    let mut taken = Vec::new();
    loop {
        // SAFETY: `fd` is open; a copy is ours to close.
        match unsafe { libc::dup(fd) } {
            -1 => {
                assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EMFILE));
                return taken;
            }
            d => taken.push(d),
        }
    }
}

fn close(fd: RawFd) {
    // SAFETY: `fd` is one of ours, closed once.
    unsafe { libc::close(fd) };
}

#[test]
fn accept_out_of_descriptors_retries_on_a_timer() {
    let mut lp = Loop::new().unwrap();
    let srv = Socket::new(libc::AF_INET, libc::SOCK_STREAM).unwrap();
    srv.bind(&Addr::new(SocketAddr::from(([127, 0, 0, 1], 0)))).unwrap();
    srv.listen(16).unwrap();
    let addr = srv.local_addr().unwrap();
    let clients: Vec<Socket> = (0..3)
        .map(|_| {
            let c = Socket::new(libc::AF_INET, libc::SOCK_STREAM).unwrap();
            c.connect_start(&addr).unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50)); // the handshakes end in the kernel

    let was = limit();
    let top = was.rlim_cur.min(1 << 16) as RawFd;
    // SAFETY: F_GETFD only reads a descriptor's flags, or fails.
    let highest = (0..top).rev().find(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0).unwrap();
    set_limit(libc::rlimit { rlim_cur: highest as libc::rlim_t + 8, ..was });
    let mut spare = exhaust(srv.fd());
    assert!(!spare.is_empty());

    // Out of descriptors, with connections queued: nothing now, and an
    // accept waits without spinning.
    assert!(srv.try_accept().is_none(), "try_accept says 'wait'");
    let g: Got<Socket> = Rc::default();
    srv.accept(&mut lp, None, catch(&g)).unwrap();
    let load = run_for(&mut lp, &g, 400);
    assert!(g.borrow().is_none(), "no descriptor, no connection");
    assert!(load < 0.2, "it spun: {:.0} % CPU", load * 100.0);

    // A descriptor frees up: the accept takes the connection at its next try.
    close(spare.pop().unwrap());
    let t = Instant::now();
    run_for(&mut lp, &g, 1000);
    let conn = g.borrow_mut().take().expect("accepted after a descriptor freed up").unwrap();
    let slack = Duration::from_millis(300); // a loaded machine
    assert!(t.elapsed() < Duration::from_nanos(ACCEPT_RETRY_NS) + slack, "{:?}", t.elapsed());

    // Out again (the new socket took the freed descriptor): an accept with a
    // deadline fails with a timeout at that deadline, as when nobody connects.
    let t = Instant::now();
    let deadline = lp.now_fresh() + 250 * MS;
    srv.accept(&mut lp, Some(deadline), catch(&g)).unwrap();
    run_for(&mut lp, &g, 2000);
    assert!(matches!(g.borrow_mut().take(), Some(Err(Fail::Timeout))));
    let waited = t.elapsed();
    assert!(waited >= Duration::from_millis(240) && waited < Duration::from_millis(600), "{waited:?}");

    // Cancelled while it waits for a descriptor.
    srv.accept(&mut lp, None, catch(&g)).unwrap();
    run_for(&mut lp, &g, 150);
    assert!(srv.cancel(&mut lp, cothread::net::Dir::Read).unwrap());
    run_for(&mut lp, &g, 1000);
    assert!(matches!(g.borrow_mut().take(), Some(Err(Fail::Cancelled))));

    // Closed while it waits: it ends with `Closed`.
    srv.accept(&mut lp, None, catch(&g)).unwrap();
    run_for(&mut lp, &g, 150);
    srv.detach(&mut lp).unwrap();
    run_for(&mut lp, &g, 1000);
    assert!(matches!(g.borrow_mut().take(), Some(Err(Fail::Closed))));

    for fd in spare {
        close(fd);
    }
    set_limit(was);
    conn.close(Some(&mut lp)).unwrap();
    for c in clients {
        c.close(Some(&mut lp)).unwrap();
    }
    srv.close(Some(&mut lp)).unwrap();
    while lp.run(RunMode::NoWait).unwrap() {}
}
