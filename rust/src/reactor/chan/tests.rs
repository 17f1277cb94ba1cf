use std::cell::Cell;
use std::rc::Rc;

use super::*;
use crate::reactor::RunMode;

fn send(c: &Chan, l: &mut Loop, v: u32) -> Result<bool> {
    c.try_send(Some(l), &v.to_ne_bytes())
}

fn recv(c: &Chan, l: &mut Loop) -> Result<Option<u32>> {
    let mut b = [0u8; 4];
    Ok(c.try_recv(Some(l), &mut b)?.then(|| u32::from_ne_bytes(b)))
}

#[test]
fn bad_sizes_are_refused() {
    assert_eq!(Chan::new(0, 4).err(), Some(Error::Inval));
    assert_eq!(Chan::new(2, usize::MAX).err(), Some(Error::Inval));
    let mut l = Loop::new().unwrap();
    let c = Chan::new(4, 1).unwrap();
    assert_eq!(c.try_send(Some(&mut l), &[1, 2, 3]), Err(Error::Inval));
    assert_eq!(c.try_recv(None, &mut [0; 5]), Err(Error::Inval));
    assert_eq!(c.send_or_park(&mut l, &[1], Parked::No), Err(Error::Inval));
    assert!(c.is_empty() && !c.is_waited());
}

#[test]
fn bounded_refuses_past_its_capacity_and_keeps_order_across_the_ring() {
    let mut l = Loop::new().unwrap();
    let c = Chan::new(4, 3).unwrap();
    let mut next = 0;
    for round in 0..10 {
        while send(&c, &mut l, next).unwrap() {
            next += 1;
        }
        assert_eq!(c.len(), 3, "round {round}");
        for k in 0..2 {
            assert_eq!(recv(&c, &mut l).unwrap(), Some(next - 3 + k));
        }
    }
    assert_eq!(c.0.state.lock().ring.slots(), 3, "the ring never grows past the capacity");
}

#[test]
fn unbounded_grows_and_keeps_order() {
    let mut l = Loop::new().unwrap();
    let c = Chan::new(4, 0).unwrap();
    for v in 0..3 {
        send(&c, &mut l, v).unwrap();
    }
    assert_eq!(recv(&c, &mut l).unwrap(), Some(0)); // head moves off slot 0
    for v in 3..1000 {
        assert!(send(&c, &mut l, v).unwrap());
    }
    assert_eq!(c.len(), 999);
    for v in 1..1000 {
        assert_eq!(recv(&c, &mut l).unwrap(), Some(v));
    }
    assert_eq!(recv(&c, &mut l).unwrap(), None);
}

#[test]
fn close_lets_receivers_drain_then_fails() {
    let mut l = Loop::new().unwrap();
    let c = Chan::new(4, 0).unwrap();
    send(&c, &mut l, 7).unwrap();
    assert!(c.close(Some(&mut l)).unwrap());
    assert!(!c.close(None).unwrap(), "once");
    assert!(c.is_closed());
    assert_eq!(send(&c, &mut l, 8), Err(Error::Pipe));
    assert_eq!(recv(&c, &mut l).unwrap(), Some(7));
    assert_eq!(recv(&c, &mut l), Err(Error::Pipe));
}

/// A loop task of `l` that waits on `c`'s `side` as a coroutine would: it
/// tries (parking when it must), and counts its runs and items.
struct Waiter {
    runs: Rc<Cell<u32>>,
    got: Rc<Cell<Option<u32>>>,
}

fn waiter(l: &mut Loop, c: &Chan, side: Side) -> Waiter {
    let (runs, got) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(None)));
    let (r, g, ch) = (runs.clone(), got.clone(), c.clone());
    let t = l.task_init(
        0,
        Box::new(move |l, h, _| {
            r.set(r.get() + 1);
            let parked = if r.get() > 1 { Parked::Again } else { Parked::No };
            let mut b = [0u8; 4];
            let done = match side {
                Side::Recv => ch.recv_or_park(l, &mut b, parked),
                Side::Send => ch.send_or_park(l, &9u32.to_ne_bytes(), parked),
            };
            match done {
                Ok(false) => drop(l.task_schedule(h, When::Wait(ch.key(side)))),
                Ok(true) => g.set(Some(u32::from_ne_bytes(b))),
                Err(_) => g.set(Some(u32::MAX)),
            }
        }),
    );
    l.task_schedule(t, When::Later).unwrap();
    Waiter { runs, got }
}

#[test]
fn each_side_wakes_the_other_and_close_wakes_both() {
    let mut l = Loop::new().unwrap();
    let c = Chan::new(4, 1).unwrap();
    let rx = waiter(&mut l, &c, Side::Recv);
    l.run(RunMode::NoWait).unwrap();
    assert_eq!((rx.runs.get(), rx.got.get()), (1, None), "parked until an item comes");
    assert!(c.is_waited());
    send(&c, &mut l, 1).unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert_eq!((rx.runs.get(), rx.got.get()), (2, Some(1)));
    assert!(!c.is_waited());
    send(&c, &mut l, 2).unwrap();
    let tx = waiter(&mut l, &c, Side::Send);
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(tx.got.get(), None, "parked until there is room");
    assert_eq!(recv(&c, &mut l), Ok(Some(2)));
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(tx.got.get(), Some(0), "sent");
    let (rx, tx) = (waiter(&mut l, &c, Side::Recv), waiter(&mut l, &c, Side::Send));
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(rx.got.get(), Some(9), "the item the last sender put");
    assert_eq!(tx.got.get(), Some(0), "then room for the next");
    let tx = waiter(&mut l, &c, Side::Send);
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(tx.got.get(), None, "full again");
    c.close(Some(&mut l)).unwrap();
    l.run(RunMode::NoWait).unwrap();
    assert_eq!(tx.got.get(), Some(u32::MAX), "the close woke it: Pipe");
    assert!(!c.is_waited());
}

#[test]
fn keys_are_distinct_nonzero_and_shared_by_clones() {
    let c = Chan::new(1, 0).unwrap();
    assert_ne!(c.recv_key(), c.send_key());
    assert_ne!(c.recv_key(), 0);
    let d = c.clone();
    assert_eq!((d.recv_key(), d.send_key()), (c.recv_key(), c.send_key()));
    assert_eq!(c.key(Side::Send), c.send_key());
}

/// Runs a loop on its own thread with one task that receives from `c`
/// until it is closed and drained (parking when empty); returns the items.
fn drain_on_a_loop(c: Chan) -> std::thread::JoinHandle<Vec<u32>> {
    std::thread::spawn(move || {
        let mut l = Loop::new().unwrap();
        let got = Rc::new(std::cell::RefCell::new(Vec::new()));
        let (g, parked) = (got.clone(), Cell::new(Parked::No));
        let t = l.task_init(
            0,
            Box::new(move |l, h, _| {
                let mut b = [0u8; 4];
                loop {
                    match c.recv_or_park(l, &mut b, parked.replace(Parked::No)) {
                        Ok(true) => g.borrow_mut().push(u32::from_ne_bytes(b)),
                        Ok(false) => {
                            parked.set(Parked::Again);
                            l.task_schedule(h, When::Wait(c.recv_key())).unwrap();
                            return;
                        }
                        Err(e) => return assert_eq!(e, Error::Pipe),
                    }
                }
            }),
        );
        l.task_schedule(t, When::Later).unwrap();
        // A parked task keeps the loop alive: the run ends with the close.
        assert!(!l.run(RunMode::Default).unwrap());
        got.take()
    })
}

/// Sends `items` from a loop task on a thread of its own, parking while
/// the channel is full, then closes it.
fn send_on_a_loop(c: Chan, items: u32) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut l = Loop::new().unwrap();
        let (next, parked) = (Cell::new(0u32), Cell::new(Parked::No));
        let t = l.task_init(
            0,
            Box::new(move |l, h, _| {
                while next.get() < items {
                    if !c.send_or_park(l, &next.get().to_ne_bytes(), parked.replace(Parked::No)).unwrap() {
                        parked.set(Parked::Again);
                        l.task_schedule(h, When::Wait(c.send_key())).unwrap();
                        return;
                    }
                    next.set(next.get() + 1);
                }
                assert!(c.close(Some(l)).unwrap());
            }),
        );
        l.task_schedule(t, When::Later).unwrap();
        assert!(!l.run(RunMode::Default).unwrap());
    })
}

#[test]
fn a_receiver_on_one_loop_gets_what_a_sender_on_another_sends() {
    for cap in [1, 3, 0] {
        let c = Chan::new(4, cap).unwrap();
        let rx = drain_on_a_loop(c.clone());
        send_on_a_loop(c.clone(), 20_000).join().unwrap();
        let got = rx.join().unwrap();
        assert!(got.iter().copied().eq(0..20_000), "cap {cap}: all, once, in order");
        assert!(!c.is_waited());
    }
}

#[test]
fn a_thread_with_no_loop_feeds_and_closes_a_parked_receiver() {
    let c = Chan::new(4, 0).unwrap();
    let rx = drain_on_a_loop(c.clone());
    for v in 0..1000u32 {
        assert!(c.try_send(None, &v.to_ne_bytes()).unwrap());
        if v % 100 == 0 {
            std::thread::yield_now(); // let it park again
        }
    }
    assert!(c.close(None).unwrap());
    assert!(rx.join().unwrap().iter().copied().eq(0..1000));
}

#[test]
fn a_post_to_a_dropped_loop_forgets_its_waiters() {
    let c = Chan::new(4, 0).unwrap();
    let mut l = Loop::new().unwrap();
    assert!(!c.recv_or_park(&mut l, &mut [0; 4], Parked::No).unwrap());
    assert!(c.is_waited() && l.alive(), "a parked task keeps its loop alive");
    drop(l);
    assert!(c.try_send(None, &[1; 4]).unwrap());
    assert!(!c.is_waited(), "the refused post forgot the gone loop");
}

#[test]
fn unpark_uncounts_once() {
    let c = Chan::new(4, 1).unwrap();
    let mut l = Loop::new().unwrap();
    assert!(!c.recv_or_park(&mut l, &mut [0; 4], Parked::No).unwrap());
    c.unpark(&mut l, Side::Recv);
    c.unpark(&mut l, Side::Recv);
    assert!(!c.is_waited() && !l.alive());
}

#[test]
fn a_retry_keeps_the_count_while_it_must_wait_and_drops_it_after() {
    let c = Chan::new(4, 1).unwrap();
    let mut l = Loop::new().unwrap();
    assert!(!c.recv_or_park(&mut l, &mut [0; 4], Parked::No).unwrap());
    assert!(!c.recv_or_park(&mut l, &mut [0; 4], Parked::Again).unwrap());
    assert_eq!(l.holds, 1, "counted once");
    c.try_send(None, &[1; 4]).unwrap();
    assert!(c.recv_or_park(&mut l, &mut [0; 4], Parked::Again).unwrap());
    assert!(!c.is_waited() && l.holds == 0);
    assert!(c.send_or_park(&mut l, &[2; 4], Parked::No).unwrap());
    assert!(!c.send_or_park(&mut l, &[3; 4], Parked::No).unwrap(), "full: counted");
    assert_eq!(l.holds, 1);
    c.close(Some(&mut l)).unwrap();
    assert_eq!(c.send_or_park(&mut l, &[4; 4], Parked::Again), Err(Error::Pipe));
    assert!(!c.is_waited() && l.holds == 0, "a retry that fails for good drops the count");
}
