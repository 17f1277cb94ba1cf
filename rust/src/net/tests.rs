//! Tests of sockets on a loop, over loopback and socket pairs: how each
//! operation ends (data, end of stream, timeout, cancel, close, error), that
//! it ends once and never inside the call that caused it, partial writes,
//! and the deadline rule.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::*;
use crate::error::Error;
use crate::reactor::{Loop, RunMode};

const MS: u64 = 1_000_000;

/// Where a completion leaves its result.
type Got<T> = Rc<RefCell<Option<T>>>;

fn got<T>() -> Got<T> {
    Rc::new(RefCell::new(None))
}

/// A completion that stores its result, and fails the test if called twice.
fn catch<T: 'static>(g: &Got<Result<T, Fail>>) -> Done<T> {
    let g = g.clone();
    Box::new(move |_, r| assert!(g.borrow_mut().replace(r).is_none(), "a completion ran twice"))
}

fn catch_write(g: &Got<(usize, Result<(), Fail>)>) -> WriteDone {
    let g = g.clone();
    Box::new(move |_, n, r| assert!(g.borrow_mut().replace((n, r)).is_none(), "a completion ran twice"))
}

/// Runs the loop one turn at a time until `g` holds a result (at most 5 s).
fn run_until<T>(lp: &mut Loop, g: &Got<T>) {
    let limit = Instant::now() + Duration::from_secs(5);
    while g.borrow().is_none() {
        assert!(Instant::now() < limit, "no result after 5 s");
        lp.run(RunMode::Once).unwrap();
    }
}

fn take<T>(g: &Got<T>) -> T {
    g.borrow_mut().take().expect("a result")
}

/// A connected pair of local stream sockets.
fn pair() -> (Socket, Socket) {
    let (a, b) = sys::socketpair().unwrap();
    (Socket::from_fd(a), Socket::from_fd(b))
}

fn loopback(port: u16) -> Addr {
    Addr::new(SocketAddr::from(([127, 0, 0, 1], port)))
}

/// A TCP socket listening on a free loopback port, and its address.
fn listener() -> (Socket, Addr) {
    let s = Socket::new(libc::AF_INET, libc::SOCK_STREAM).unwrap();
    s.bind(&loopback(0)).unwrap();
    s.listen(16).unwrap();
    let a = s.local_addr().unwrap();
    (s, a)
}

fn deadline(lp: &mut Loop, ms: u64) -> Option<u64> {
    Some(lp.wait_start() + ms * MS)
}

#[test]
fn recv_without_room_grows_the_buffer_only_by_what_came() {
    let (a, b) = sys::socketpair().unwrap();
    assert_eq!(sys::send(a, b"abc").unwrap(), 3);
    let mut buf = b"xy".to_vec();
    buf.shrink_to_fit();
    assert_eq!(sys::recv(b, &mut buf, 64 * 1024).unwrap(), 3);
    assert_eq!(buf, b"xyabc");
    assert!(buf.capacity() < 1024, "a pending partial message keeps a small buffer: {}", buf.capacity());
    // With room for `max`, it reads straight into the spare capacity.
    let mut roomy = Vec::with_capacity(64 * 1024);
    assert_eq!(sys::send(a, b"de").unwrap(), 2);
    assert_eq!(sys::recv(b, &mut roomy, 64 * 1024).unwrap(), 2);
    assert_eq!(roomy, b"de");
    sys::close(a);
    sys::close(b);
}

#[test]
fn try_read_into_takes_the_buffer_first_then_the_socket() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let mut out = [0u8; 8];
    assert!(b.try_read_into(&mut out).is_none(), "empty: it would block");
    assert!(b.drained(), "an empty socket is remembered as drained");
    // A line read leaves the rest buffered; the try hands that out first.
    assert_eq!(a.try_write(b"one\ntwo").unwrap(), 7);
    let g = got();
    b.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g).unwrap(), b"one");
    assert!(!b.drained(), "the recv was short, but a read finds the buffered bytes");
    assert_eq!(a.try_write(b"three").unwrap(), 5);
    assert_eq!(b.try_read_into(&mut out[..2]).unwrap().unwrap(), 2);
    assert_eq!(&out[..2], b"tw");
    assert_eq!(b.try_read_into(&mut out).unwrap().unwrap(), 1, "the buffer's last byte, alone");
    assert_eq!(b.buffered(), 0);
    assert!(b.drained(), "the buffer is empty and no readiness was seen");
    assert_eq!(b.try_read_into(&mut out).unwrap().unwrap(), 5, "a hint only: the try still reads");
    assert_eq!(&out[..5], b"three");
    a.close(None).unwrap();
    assert_eq!(b.try_read_into(&mut out).unwrap().unwrap(), 0, "the end of the stream");
    b.close(Some(&mut lp)).unwrap();
    assert!(matches!(b.try_read_into(&mut out), Some(Err(Fail::Closed))));
}

#[test]
fn try_recvfrom_into_cuts_the_datagram_and_names_its_sender() {
    let a = Socket::new(libc::AF_INET, libc::SOCK_DGRAM).unwrap();
    let b = Socket::new(libc::AF_INET, libc::SOCK_DGRAM).unwrap();
    a.bind(&loopback(0)).unwrap();
    b.bind(&loopback(0)).unwrap();
    let mut out = [0u8; 3];
    assert!(b.try_recvfrom_into(&mut out).is_none());
    let to = b.local_addr().unwrap();
    assert_eq!(a.try_sendto(b"hello", Some(&to)).unwrap(), 5);
    let deadline = Instant::now() + Duration::from_secs(5);
    let (n, from) = loop {
        if let Some(r) = b.try_recvfrom_into(&mut out) {
            break r.unwrap();
        }
        assert!(Instant::now() < deadline, "the datagram never came");
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!((n, &out), (3, b"hel"));
    assert_eq!(from.as_bytes(), a.local_addr().unwrap().as_bytes());
    assert!(b.try_recvfrom_into(&mut out).is_none(), "the rest was dropped");
}

#[test]
fn a_read_ends_with_its_line_and_keeps_the_rest() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let g = got();
    b.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
    assert!(b.waiting(Dir::Read));
    a.try_write(b"hel").unwrap();
    lp.run(RunMode::Once).unwrap();
    assert!(g.borrow().is_none(), "half a line: still waiting");
    a.try_write(b"lo\r\nrest").unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(b"hello".to_vec()));
    assert!(!b.waiting(Dir::Read));
    assert_eq!(b.buffered(), 4, "the rest stays buffered");
    assert!(!lp.alive(), "nothing waits: the paused poll keeps nothing going");
    b.close(Some(&mut lp)).unwrap();
    a.close(None).unwrap();
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(lp.check_close(), Ok(()), "every handle of the socket is gone");
}

#[test]
fn a_read_the_buffer_answers_ends_at_the_next_turn_without_readiness() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    a.try_write(b"one\ntwo\n").unwrap();
    assert_eq!(b.try_read(Pattern::Line), Some(Ok(b"one".to_vec())));
    let g = got();
    b.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
    assert!(g.borrow().is_none(), "never inside the call");
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(take(&g), Ok(b"two".to_vec()));
    b.close(Some(&mut lp)).unwrap();
}

#[test]
fn a_read_times_out_and_leaves_its_partial_bytes() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    a.try_write(b"par").unwrap();
    let g = got();
    let start = Instant::now();
    let d = deadline(&mut lp, 20);
    b.read(&mut lp, Pattern::Line, d, catch(&g)).unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Err(Fail::Timeout));
    assert!(start.elapsed() >= Duration::from_millis(20));
    assert_eq!(b.take_partial(Pattern::Line), b"par");
    // A deadline already passed still tries once: the bytes there win.
    a.try_write(b"now\n").unwrap();
    let past = Some(lp.now_fresh());
    b.read(&mut lp, Pattern::Line, past, catch(&g)).unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(b"now".to_vec()));
    b.close(Some(&mut lp)).unwrap();
}

#[test]
fn a_deadline_in_the_same_turn_as_readiness_delivers_the_bytes() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let g = got();
    let d = deadline(&mut lp, 5);
    b.read(&mut lp, Pattern::Line, d, catch(&g)).unwrap();
    a.try_write(b"in time\n").unwrap();
    std::thread::sleep(Duration::from_millis(20)); // both are due when the loop turns
    lp.run(RunMode::Once).unwrap();
    assert_eq!(take(&g), Ok(b"in time".to_vec()), "the timer ran first, and tried once more");

    // Not enough bytes by the deadline: the timeout wins, the bytes stay.
    let d = deadline(&mut lp, 5);
    b.read(&mut lp, Pattern::Count(10), d, catch(&g)).unwrap();
    a.try_write(b"short").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    lp.run(RunMode::Once).unwrap();
    assert_eq!(take(&g), Err(Fail::Timeout));
    assert_eq!(b.buffered(), 5);
    b.close(Some(&mut lp)).unwrap();
}

#[test]
fn a_ready_read_moves_no_byte_and_ends_at_data_eof_or_its_deadline() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let g = got();
    let mut out = [0u8; 16];
    // Data: the read ends with nothing taken; the bytes wait in the socket.
    b.read(&mut lp, Pattern::Ready, None, catch(&g)).unwrap();
    a.try_write(b"hello").unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(Vec::new()));
    assert_eq!(b.buffered(), 0, "nothing moved to the read buffer");
    assert_eq!(b.try_read_into(&mut out).unwrap().unwrap(), 5);
    assert_eq!(&out[..5], b"hello");

    // Bytes already buffered answer it at the next turn, and stay buffered.
    a.try_write(b"x\nyz").unwrap();
    assert_eq!(b.try_read(Pattern::Line), Some(Ok(b"x".to_vec())));
    b.read(&mut lp, Pattern::Ready, None, catch(&g)).unwrap();
    assert!(g.borrow().is_none(), "never inside the call");
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(take(&g), Ok(Vec::new()));
    assert_eq!(b.buffered(), 2);
    assert_eq!(b.try_read_into(&mut out).unwrap().unwrap(), 2);

    // Nothing by the deadline: a timeout.
    let d = deadline(&mut lp, 5);
    b.read(&mut lp, Pattern::Ready, d, catch(&g)).unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Err(Fail::Timeout));

    // Bytes in the same turn as the deadline win; the timer peeks, moving
    // nothing.
    let d = deadline(&mut lp, 5);
    b.read(&mut lp, Pattern::Ready, d, catch(&g)).unwrap();
    a.try_write(b"late").unwrap();
    std::thread::sleep(Duration::from_millis(20)); // both are due when the loop turns
    lp.run(RunMode::Once).unwrap();
    assert_eq!(take(&g), Ok(Vec::new()), "the deadline tried once more");
    assert_eq!(b.buffered(), 0);
    assert_eq!(b.try_read_into(&mut out).unwrap().unwrap(), 4);

    // The end of the stream ends it too; the read after it gets 0.
    b.read(&mut lp, Pattern::Ready, None, catch(&g)).unwrap();
    a.close(None).unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(Vec::new()));
    assert_eq!(b.try_read_into(&mut out).unwrap().unwrap(), 0);
    // At the end, with nothing buffered, a try answers at once (a peek).
    assert_eq!(b.try_read(Pattern::Ready), Some(Ok(Vec::new())));
    b.close(Some(&mut lp)).unwrap();
}

#[test]
fn a_ready_read_ends_at_a_reset_which_the_next_read_reports() {
    let mut lp = Loop::new().unwrap();
    let (s, addr) = listener();
    let c = Socket::new(libc::AF_INET, libc::SOCK_STREAM).unwrap();
    let _ = c.connect_start(&addr);
    let limit = Instant::now() + Duration::from_secs(5);
    let peer = loop {
        if let Some(r) = s.try_accept() {
            break r.unwrap();
        }
        assert!(Instant::now() < limit, "no connection");
        std::thread::sleep(Duration::from_millis(1));
    };
    // The peer resets: a linger of 0 makes its close send RST.
    let lin = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: `lin` is a valid linger for its size.
    let r = unsafe {
        libc::setsockopt(
            peer.fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&lin as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0);
    let g = got();
    c.read(&mut lp, Pattern::Ready, None, catch(&g)).unwrap();
    peer.close(None).unwrap();
    run_until(&mut lp, &g);
    // Readiness seen: it ends without a system call; the read after it
    // gets the reset.
    assert_eq!(take(&g), Ok(Vec::new()));
    let mut out = [0u8; 4];
    assert_eq!(c.try_read_into(&mut out), Some(Err(Fail::Sys(libc::ECONNRESET))));
    c.close(Some(&mut lp)).unwrap();
    s.close(None).unwrap();
}

#[test]
fn the_peer_closing_ends_a_read_with_eof_or_with_all() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let (line, all) = (got(), got());
    b.read(&mut lp, Pattern::Line, None, catch(&line)).unwrap();
    a.try_write(b"abc").unwrap();
    a.close(None).unwrap();
    run_until(&mut lp, &line);
    assert_eq!(take(&line), Err(Fail::Eof));
    assert_eq!(Fail::Eof.message().to_str().unwrap(), "closed");
    b.read(&mut lp, Pattern::All, None, catch(&all)).unwrap();
    run_until(&mut lp, &all);
    assert_eq!(take(&all), Ok(b"abc".to_vec()), "all: what came before the end");
    b.read(&mut lp, Pattern::All, None, catch(&all)).unwrap();
    run_until(&mut lp, &all);
    assert_eq!(take(&all), Err(Fail::Eof), "all with nothing left fails");
    b.close(Some(&mut lp)).unwrap();
}

#[test]
fn cancel_ends_an_operation_once_at_the_next_turn() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let g = got();
    b.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
    assert_eq!(b.cancel(&mut lp, Dir::Read), Ok(true));
    assert!(g.borrow().is_none(), "never inside cancel");
    assert_eq!(b.cancel(&mut lp, Dir::Read), Ok(false), "cancelled already");
    assert_eq!(b.cancel(&mut lp, Dir::Write), Ok(false), "nothing waits there");
    a.try_write(b"late\n").unwrap(); // readiness after the cancel resumes nothing
    lp.run(RunMode::Once).unwrap();
    assert_eq!(take(&g), Err(Fail::Cancelled));
    lp.run(RunMode::NoWait).unwrap();
    assert!(g.borrow().is_none(), "once");
    assert_eq!(b.try_read(Pattern::Line), Some(Ok(b"late".to_vec())), "the bytes were left for the next read");
    b.close(Some(&mut lp)).unwrap();
}

#[test]
fn close_ends_the_waiting_operations_with_closed_later() {
    let mut lp = Loop::new().unwrap();
    let (_a, b) = pair();
    let (r, w) = (got(), got());
    b.read(&mut lp, Pattern::All, None, catch(&r)).unwrap();
    // Fill the send buffer so that a write waits too.
    b.write(&mut lp, vec![7; 8 << 20], None, catch_write(&w)).unwrap();
    lp.run(RunMode::NoWait).unwrap();
    assert!(b.waiting(Dir::Read) && b.waiting(Dir::Write), "both directions at once");
    b.close(Some(&mut lp)).unwrap();
    assert_eq!(b.fd(), -1);
    assert!(r.borrow().is_none() && w.borrow().is_none(), "never inside close");
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(take(&r), Err(Fail::Closed));
    let (sent, end) = take(&w);
    assert_eq!(end, Err(Fail::Closed));
    assert!(sent > 0 && sent < 8 << 20, "{sent} bytes went before the close");
    assert_eq!(lp.check_close(), Ok(()));
    assert_eq!(b.close(Some(&mut lp)), Ok(()), "twice is fine");
}

#[test]
fn a_cancelled_operation_closed_before_its_turn_stays_cancelled() {
    let mut lp = Loop::new().unwrap();
    let (_a, b) = pair();
    let g = got();
    b.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
    b.cancel(&mut lp, Dir::Read).unwrap();
    b.close(Some(&mut lp)).unwrap();
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(take(&g), Err(Fail::Cancelled));
}

#[test]
fn a_completion_may_close_the_socket_the_other_direction_waits_on() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let (r, w) = (got(), got());
    let b2 = b.clone();
    let r2 = r.clone();
    b.read(
        &mut lp,
        Pattern::Line,
        None,
        Box::new(move |lp, res| {
            *r2.borrow_mut() = Some(res);
            b2.close(Some(lp)).unwrap();
        }),
    )
    .unwrap();
    b.write(&mut lp, vec![1; 8 << 20], None, catch_write(&w)).unwrap();
    a.try_write(b"bye\n").unwrap();
    run_until(&mut lp, &w);
    assert_eq!(take(&r), Ok(b"bye".to_vec()));
    assert_eq!(take(&w).1, Err(Fail::Closed));
}

#[test]
fn writes_go_whole_or_report_how_much_went() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let big: Vec<u8> = (0..8u32 << 20).map(|i| i as u8).collect();
    // Nobody reads: the write fills the socket and times out part way.
    let w = got();
    let d = deadline(&mut lp, 30);
    a.write(&mut lp, big.clone(), d, catch_write(&w)).unwrap();
    run_until(&mut lp, &w);
    let (sent, end) = take(&w);
    assert_eq!(end, Err(Fail::Timeout));
    assert!(sent > 0 && sent < big.len(), "a partial write: {sent}");
    // The reader takes those bytes and the whole of a second write.
    let r = got();
    b.read(&mut lp, Pattern::Count(sent + big.len()), None, catch(&r)).unwrap();
    a.write(&mut lp, big.clone(), None, catch_write(&w)).unwrap();
    run_until(&mut lp, &w);
    assert_eq!(take(&w), (big.len(), Ok(())));
    run_until(&mut lp, &r);
    let data = take(&r).unwrap();
    assert_eq!(&data[..sent], &big[..sent]);
    assert_eq!(&data[sent..], &big[..]);
    assert_eq!(a.try_write(b""), Ok(0));
    a.close(Some(&mut lp)).unwrap();
    b.close(Some(&mut lp)).unwrap();
}

#[test]
fn a_write_to_a_closed_peer_fails_with_its_errno() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    b.close(None).unwrap();
    assert_eq!(a.try_write(b"x"), Err(Fail::Sys(libc::EPIPE)));
    let w = got();
    a.write(&mut lp, b"x".to_vec(), None, catch_write(&w)).unwrap();
    run_until(&mut lp, &w);
    assert_eq!(take(&w), (0, Err(Fail::Sys(libc::EPIPE))));
    assert_eq!(Fail::Sys(libc::EPIPE).message().to_str().unwrap(), "closed");
    a.close(Some(&mut lp)).unwrap();
}

#[test]
fn accept_and_connect_meet_on_loopback() {
    let mut lp = Loop::new().unwrap();
    let (srv, addr) = listener();
    assert!(srv.try_accept().is_none(), "nobody yet");
    let (acc, con) = (got(), got());
    srv.accept(&mut lp, None, catch(&acc)).unwrap();
    let c = Socket::new(libc::AF_INET, libc::SOCK_STREAM).unwrap();
    if !c.connect_start(&addr).unwrap() {
        let d = deadline(&mut lp, 5000);
        c.connect(&mut lp, d, catch(&con)).unwrap();
        run_until(&mut lp, &con);
        assert_eq!(take(&con), Ok(()));
    }
    run_until(&mut lp, &acc);
    let s = take(&acc).unwrap();
    assert_eq!(s.peer_addr().unwrap().to_socket_addr(), c.local_addr().unwrap().to_socket_addr());
    // The accepted socket works on the same loop.
    let g = got();
    s.read(&mut lp, Pattern::Count(2), None, catch(&g)).unwrap();
    c.try_write(b"ok").unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(b"ok".to_vec()));
    // Nobody else connects: the accept times out.
    let d = deadline(&mut lp, 10);
    srv.accept(&mut lp, d, catch(&acc)).unwrap();
    run_until(&mut lp, &acc);
    assert!(matches!(take(&acc), Err(Fail::Timeout)));
    for sock in [srv, c, s] {
        sock.close(Some(&mut lp)).unwrap();
    }
}

#[test]
fn a_refused_connection_ends_with_its_errno() {
    let mut lp = Loop::new().unwrap();
    let (srv, addr) = listener();
    srv.close(None).unwrap(); // nobody listens there now
    let c = Socket::new(libc::AF_INET, libc::SOCK_STREAM).unwrap();
    match c.connect_start(&addr) {
        Err(f) => assert_eq!(f, Fail::Sys(libc::ECONNREFUSED)),
        Ok(true) => panic!("connected to a closed port"),
        Ok(false) => {
            let g = got();
            c.connect(&mut lp, None, catch(&g)).unwrap();
            run_until(&mut lp, &g);
            assert_eq!(take(&g), Err(Fail::Sys(libc::ECONNREFUSED)));
            assert_eq!(Fail::Sys(libc::ECONNREFUSED).message().to_str().unwrap(), "connection refused");
        }
    }
    c.close(Some(&mut lp)).unwrap();
    assert_eq!(c.connect_start(&addr), Err(Fail::Closed));
}

#[test]
fn recvfrom_gets_a_datagram_and_its_sender_or_times_out() {
    let mut lp = Loop::new().unwrap();
    let u1 = Socket::new(libc::AF_INET, libc::SOCK_DGRAM).unwrap();
    let u2 = Socket::new(libc::AF_INET, libc::SOCK_DGRAM).unwrap();
    u1.bind(&loopback(0)).unwrap();
    u2.bind(&loopback(0)).unwrap();
    let g = got();
    let d = deadline(&mut lp, 10);
    u2.recvfrom(&mut lp, 100, d, catch(&g)).unwrap();
    run_until(&mut lp, &g);
    assert!(matches!(take(&g), Err(Fail::Timeout)));
    u2.recvfrom(&mut lp, 100, None, catch(&g)).unwrap();
    let to = u2.local_addr().unwrap();
    assert_eq!(u1.try_sendto(b"ping", Some(&to)), Ok(4));
    run_until(&mut lp, &g);
    let (data, from) = take(&g).unwrap();
    assert_eq!(data, b"ping");
    assert_eq!(from.to_socket_addr(), u1.local_addr().unwrap().to_socket_addr());
    assert!(u2.try_recvfrom(100).is_none(), "no other datagram");
    u1.close(None).unwrap();
    u2.close(Some(&mut lp)).unwrap();
    assert_eq!(u1.try_sendto(b"x", Some(&to)), Err(Fail::Closed));
}

#[test]
fn sendto_sends_whole_datagrams_and_one_at_a_time() {
    let mut lp = Loop::new().unwrap();
    let u1 = Socket::new(libc::AF_INET, libc::SOCK_DGRAM).unwrap();
    let u2 = Socket::new(libc::AF_INET, libc::SOCK_DGRAM).unwrap();
    u2.bind(&loopback(0)).unwrap();
    let to = u2.local_addr().unwrap();
    let sent = got();
    u1.sendto(&mut lp, b"ping".to_vec(), Some(to), None, catch(&sent)).unwrap();
    let never = |_: &mut Loop, _: Result<usize, Fail>| panic!("a failed start called its completion");
    assert_eq!(u1.sendto(&mut lp, vec![1], Some(to), None, Box::new(never)), Err(Error::Busy), "one send at a time");
    assert!(sent.borrow().is_none(), "never inside the start");
    run_until(&mut lp, &sent);
    assert_eq!(take(&sent), Ok(4));
    let g = got();
    u2.recvfrom(&mut lp, 100, None, catch(&g)).unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g).unwrap().0, b"ping");
    u1.sendto(&mut lp, b"x".to_vec(), None, None, catch(&sent)).unwrap();
    run_until(&mut lp, &sent);
    assert_eq!(take(&sent), Err(Fail::Sys(libc::EDESTADDRREQ)), "no peer to send to");
    u1.close(Some(&mut lp)).unwrap();
    u2.close(Some(&mut lp)).unwrap();
}

#[test]
fn starts_that_fail_change_nothing_and_call_nothing() {
    let mut lp = Loop::new().unwrap();
    let mut other = Loop::new().unwrap();
    let (_a, b) = pair();
    let g = got();
    b.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
    let never = |_: &mut Loop, _: Result<Vec<u8>, Fail>| panic!("a failed start called its completion");
    assert_eq!(b.read(&mut lp, Pattern::All, None, Box::new(never)), Err(Error::Busy), "one read at a time");
    assert_eq!(b.recvfrom(&mut lp, 9, None, Box::new(|_, _| panic!("called"))), Err(Error::Busy));
    assert_eq!(b.write(&mut other, vec![1], None, Box::new(|_, _, _| panic!("called"))), Err(Error::Inval));
    assert_eq!(b.cancel(&mut other, Dir::Read), Err(Error::Inval), "another loop");
    assert_eq!(b.detach(&mut other), Err(Error::Inval));
    assert_eq!(b.close(None), Err(Error::Inval), "attached: close needs its loop");
    assert!(b.fd() >= 0, "still open");
    b.close(Some(&mut lp)).unwrap();
    assert_eq!(b.read(&mut lp, Pattern::All, None, Box::new(never)), Err(Error::BadF), "closed");
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(take(&g), Err(Fail::Closed), "the first read ended by the close");
    assert_eq!(b.try_read(Pattern::Line), Some(Err(Fail::Closed)));
    assert_eq!(b.try_write(b"x"), Err(Fail::Closed));
    assert!(matches!(b.try_accept(), Some(Err(Fail::Closed))));
    assert_eq!(b.local_addr().err(), Some(libc::EBADF));
    // A descriptor epoll refuses: the start fails, nothing waits.
    let file = std::fs::File::open("/proc/self/exe").unwrap();
    let f = Socket::from_fd(std::os::fd::IntoRawFd::into_raw_fd(file));
    assert_eq!(f.read(&mut lp, Pattern::All, None, Box::new(never)), Err(Error::Perm));
    assert!(!f.waiting(Dir::Read));
    f.close(Some(&mut lp)).unwrap();
}

#[test]
fn a_socket_lives_while_an_operation_waits_on_it() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let g = got();
    b.read(&mut lp, Pattern::Count(3), None, catch(&g)).unwrap();
    drop(b); // the face let go; the read still holds the socket
    a.try_write(b"xyz").unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(b"xyz".to_vec()));
    a.close(None).unwrap();
}

#[test]
fn the_loop_runs_until_the_operations_end() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let (r, t) = (got(), got());
    b.read(&mut lp, Pattern::Line, None, catch(&r)).unwrap();
    let d = deadline(&mut lp, 10);
    a.read(&mut lp, Pattern::Line, d, catch(&t)).unwrap();
    // Two timers write, after the deadline of `a`'s read.
    for (ms, from, text) in [(20, b.clone(), b"x\n"), (30, a.clone(), b"y\n")] {
        let timer = lp.timer_init(0);
        lp.timer_start(
            timer,
            ms * MS,
            0,
            Box::new(move |_, _| {
                let _ = from.try_write(text);
            }),
        )
        .unwrap();
    }
    assert!(!lp.run(RunMode::Default).unwrap(), "nothing left alive once both ended");
    assert_eq!(take(&t), Err(Fail::Timeout));
    assert_eq!(take(&r), Ok(b"y".to_vec()));
    assert_eq!(a.try_read(Pattern::Line), Some(Ok(b"x".to_vec())));
}

#[test]
fn a_detached_socket_waits_on_another_loop() {
    let mut one = Loop::new().unwrap();
    let mut two = Loop::new().unwrap();
    let (a, b) = pair();
    let g = got();
    b.read(&mut one, Pattern::Line, None, catch(&g)).unwrap();
    b.detach(&mut one).unwrap();
    one.run(RunMode::NoWait).unwrap();
    assert_eq!(take(&g), Err(Fail::Closed));
    assert!(b.fd() >= 0, "detached, not closed");
    b.read(&mut two, Pattern::Line, None, catch(&g)).unwrap();
    a.try_write(b"there\n").unwrap();
    run_until(&mut two, &g);
    assert_eq!(take(&g), Ok(b"there".to_vec()));
    b.close(Some(&mut two)).unwrap();
    two.run(RunMode::NoWait).unwrap();
    assert_eq!((one.check_close(), two.check_close()), (Ok(()), Ok(())));
}

#[test]
fn lines_split_at_every_position_arrive_whole() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let stream = b"first\r\nsecond\nthird\n";
    for cut in 0..=stream.len() {
        let mut lines = Vec::new();
        a.try_write(&stream[..cut]).unwrap();
        let mut rest = &stream[cut..];
        while lines.len() < 3 {
            let g = got();
            b.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
            lp.run(RunMode::NoWait).unwrap();
            if g.borrow().is_none() {
                a.try_write(rest).unwrap();
                rest = b"";
                run_until(&mut lp, &g);
            }
            lines.push(take(&g).unwrap());
        }
        assert_eq!(lines, [&b"first"[..], b"second", b"third"], "split at {cut}");
    }
    b.close(Some(&mut lp)).unwrap();
}

#[test]
fn a_socket_whose_loop_was_dropped_forgets_it_and_its_operations() {
    struct Guard(Rc<RefCell<bool>>);
    impl Drop for Guard {
        fn drop(&mut self) {
            *self.0.borrow_mut() = true;
        }
    }
    let mut lp = Loop::new().unwrap();
    let (_a, b) = pair();
    let dropped = Rc::new(RefCell::new(false));
    let guard = Guard(dropped.clone());
    b.read(&mut lp, Pattern::Line, None, Box::new(move |_, _| drop(guard))).unwrap();
    drop(lp);
    assert_eq!(b.close(None), Err(Error::Inval), "still attached");
    assert!(!*dropped.borrow());
    b.forget_loop();
    assert!(*dropped.borrow(), "the completion went with its operation");
    assert!(!b.waiting(Dir::Read));
    assert_eq!(b.close(None), Ok(()));
    assert_eq!(b.fd(), -1);
}

#[test]
fn release_gives_the_descriptor_back_open_and_out_of_epoll() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    let g = got();
    b.read(&mut lp, Pattern::Count(1), None, catch(&g)).unwrap();
    a.try_write(b"1").unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(b"1".to_vec()));
    // Attached (it waited once) and idle: released.
    let fd = b.release(Some(&mut lp)).unwrap();
    assert_eq!(b.fd(), -1, "the socket forgot it");
    assert_eq!(b.release(Some(&mut lp)), Err(Error::BadF), "twice");
    // Out of this loop's epoll at once: the same loop watches it anew
    // (epoll refuses a second registration with EEXIST).
    let c = Socket::from_fd(fd);
    c.read(&mut lp, Pattern::Count(1), None, catch(&g)).unwrap();
    b.close(Some(&mut lp)).unwrap(); // closes nothing now
    drop(b);
    a.try_write(b"2").unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(b"2".to_vec()), "open after the close and the drop");
    c.close(Some(&mut lp)).unwrap();
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(lp.check_close(), Ok(()), "the released socket's handles are gone");
}

#[test]
fn release_is_refused_while_an_operation_waits_or_bytes_are_buffered() {
    let mut lp = Loop::new().unwrap();
    let mut other = Loop::new().unwrap();
    let (a, b) = pair();
    let g = got();
    b.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
    assert_eq!(b.release(Some(&mut lp)), Err(Error::Busy), "a read waits");
    assert_eq!(b.cancel(&mut lp, Dir::Read), Ok(true));
    assert_eq!(b.release(Some(&mut lp)), Err(Error::Busy), "its cancel has not ended it yet");
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(take(&g), Err(Fail::Cancelled));
    assert_eq!(b.release(Some(&mut other)), Err(Error::Inval), "another loop");
    assert_eq!(b.release(None), Err(Error::Inval), "attached: release needs its loop");
    // Two lines in one recv: the second waits in the buffer.
    a.try_write(b"one\ntwo\n").unwrap();
    assert_eq!(b.try_read(Pattern::Line), Some(Ok(b"one".to_vec())));
    assert_eq!(b.release(Some(&mut lp)), Err(Error::Busy), "bytes buffered");
    assert!(b.fd() >= 0, "refusals change nothing");
    assert_eq!(b.try_read(Pattern::Line), Some(Ok(b"two".to_vec())));
    let fd = b.release(Some(&mut lp)).unwrap();
    sys::close(fd);
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(lp.check_close(), Ok(()));
}

#[test]
fn export_takes_the_buffered_bytes_and_import_reads_them_first() {
    let mut lp = Loop::new().unwrap();
    let (a, b) = pair();
    // Attached (a read waited), then a line read leaves the rest buffered.
    let g = got();
    b.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
    a.try_write(b"one\ntwo\nthr").unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(b"one".to_vec()));
    assert_eq!(b.buffered(), 7);
    let ex = b.export(Some(&mut lp)).unwrap();
    assert_eq!(ex.buffered(), b"two\nthr");
    assert_eq!(b.fd(), -1, "the exporting handle is closed");
    assert_eq!(b.buffered(), 0, "the bytes went with it");
    assert!(matches!(b.export(Some(&mut lp)), Err(Error::BadF)), "twice");
    // Imported on another thread's loop: the buffered bytes first, in order,
    // then what the descriptor holds.
    a.try_write(b"ee\n").unwrap();
    let far = std::thread::spawn(move || {
        let mut lp = Loop::new().unwrap();
        let s = Socket::import(ex);
        assert!(!s.drained(), "an import tries its first read");
        let mut lines = Vec::new();
        for _ in 0..2 {
            let g = got();
            s.read(&mut lp, Pattern::Line, None, catch(&g)).unwrap();
            run_until(&mut lp, &g);
            lines.push(take(&g).unwrap());
        }
        s.close(Some(&mut lp)).unwrap();
        lp.run(RunMode::NoWait).unwrap();
        assert_eq!(lp.check_close(), Ok(()));
        lines
    });
    assert_eq!(far.join().unwrap(), [b"two".to_vec(), b"three".to_vec()]);
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(lp.check_close(), Ok(()), "the exported socket's handles are gone");
}

#[test]
fn export_is_refused_while_an_operation_waits_and_changes_nothing() {
    let mut lp = Loop::new().unwrap();
    let mut other = Loop::new().unwrap();
    let (a, b) = pair();
    let g = got();
    b.read(&mut lp, Pattern::Count(3), None, catch(&g)).unwrap();
    assert!(matches!(b.export(Some(&mut lp)), Err(Error::Busy)), "a read waits");
    a.try_write(b"abc").unwrap();
    run_until(&mut lp, &g);
    assert_eq!(take(&g), Ok(b"abc".to_vec()), "the refused export left the read alone");
    assert!(matches!(b.export(Some(&mut other)), Err(Error::Inval)), "another loop");
    assert!(matches!(b.export(None), Err(Error::Inval)), "attached: export needs its loop");
    assert!(b.fd() >= 0);
    let ex = b.export(Some(&mut lp)).unwrap();
    assert!(ex.fd() >= 0 && ex.buffered().is_empty());
    drop(ex);
    let mut out = [0u8; 4];
    assert_eq!(a.try_read_into(&mut out), Some(Ok(0)), "a dropped export closed the descriptor: the peer sees the end");
    lp.run(RunMode::NoWait).unwrap();
    assert_eq!(lp.check_close(), Ok(()));
}
