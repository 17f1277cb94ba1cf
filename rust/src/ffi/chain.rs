//! Lock-free chains of nodes (awaiter lists).

use std::ffi::c_void;
use std::ptr;

use crate::sync::chain;
use crate::util::chain::{Node, Stack};

/// Pushes `node` onto the lock-free chain `*chain` unless the chain holds
/// `closed` (pass NULL to never refuse). A node is any object whose first
/// member is `void *next`; a chain is one pointer-sized word accessed
/// atomically (a C++ `std::atomic<T*>` passed as `void **`), NULL when empty.
/// Lock-free (a CAS loop); the push publishes the node with release order.
///
/// Returns true if the node was pushed: it belongs to the chain until
/// `cot_chain_take` returns it. Returns false if the chain holds `closed`:
/// the node is untouched and the caller has acquired what the closer wrote
/// before storing `closed` (so it may go on at once). NULL `chain` or `node`:
/// false. Safe from any thread.
///
/// # Safety
/// `chain` is NULL or points to a pointer-aligned word that lives during the
/// call and is only accessed atomically (by these functions or C/C++ atomics).
/// Its value is NULL, a *marker* (an address that is no node's; at most the
/// `closed` and `replacement` values its users pass), or the top of nodes
/// pushed with `cot_chain_push`. `node` is NULL or a pointer-aligned object
/// starting with `void *next`, not in any chain, that lives until it is taken
/// out again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chain_push(chain: *mut *mut c_void, node: *mut c_void, closed: *const c_void) -> bool {
    // SAFETY: the caller's contract above is the one of both constructors:
    // the word's markers are `closed` (and NULL), the node is lent to it.
    let (Some(stack), Some(node)) =
        (unsafe { Stack::from_ptr(chain, [closed, closed]) }, unsafe { Node::from_raw(node) })
    else {
        return false;
    };
    match chain::push(&stack, node, closed) {
        Ok(()) => true,
        Err(node) => {
            let _ = node.into_raw(); // the caller's again
            false
        }
    }
}

/// Atomically swaps `replacement` into the chain `*chain` (NULL to empty it,
/// or a closed marker to close it; acquire-release order) and returns the
/// nodes the chain held in push order, oldest first, linked through their
/// `next`, the last one's `next` NULL. The nodes are the caller's again.
/// Returns NULL if the chain held NULL, `closed` or `replacement` (e.g. it was
/// closed already; pass the marker as both to close a chain). NULL `chain`:
/// NULL. O(number of nodes). Safe from any thread.
///
/// # Safety
/// As for `cot_chain_push`; `closed` and `replacement` are NULL or markers
/// (never a node's address).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chain_take(
    chain: *mut *mut c_void,
    replacement: *const c_void,
    closed: *const c_void,
) -> *mut c_void {
    // SAFETY: the caller's contract; the word's markers are `closed` and
    // `replacement`.
    let Some(stack) = (unsafe { Stack::from_ptr(chain, [closed, replacement]) }) else {
        return ptr::null_mut();
    };
    chain::take(&stack, replacement).into_raw()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    #[repr(C)]
    struct Node {
        next: *mut c_void,
        thread: usize,
        seq: usize,
    }

    /// The nodes of a taken list, as (thread, seq), checking their `next`.
    fn walk(mut p: *mut c_void) -> Vec<(usize, usize)> {
        let mut out = vec![];
        while !p.is_null() {
            // SAFETY: a node of these tests, alive and ours after the take.
            let n = unsafe { &*p.cast::<Node>() };
            out.push((n.thread, n.seq));
            p = n.next;
        }
        out
    }

    fn raw(n: &mut Node) -> *mut c_void {
        (n as *mut Node).cast()
    }

    #[test]
    fn nodes_come_out_in_push_order_and_a_closed_chain_refuses() {
        static CLOSED: u8 = 0;
        let closed = (&CLOSED as *const u8).cast::<c_void>();
        let mut nodes: Vec<Node> = (0..5).map(|i| Node { next: ptr::null_mut(), thread: 0, seq: i }).collect();
        let mut chain: *mut c_void = ptr::null_mut();
        // SAFETY: (every call) `chain` is a local word, the nodes outlive it.
        unsafe {
            for n in nodes.iter_mut().take(3) {
                assert!(cot_chain_push(&mut chain, raw(n), closed));
            }
            assert_eq!(walk(cot_chain_take(&mut chain, ptr::null(), closed)), [(0, 0), (0, 1), (0, 2)]);
            assert!(chain.is_null());
            assert!(cot_chain_take(&mut chain, ptr::null(), closed).is_null(), "empty");
            assert!(cot_chain_push(&mut chain, raw(&mut nodes[3]), closed));
            assert_eq!(walk(cot_chain_take(&mut chain, closed, closed)), [(0, 3)], "closed now");
            assert_eq!(chain.cast_const(), closed);
            nodes[4].next = 77 as *mut c_void;
            assert!(!cot_chain_push(&mut chain, raw(&mut nodes[4]), closed));
            assert_eq!(nodes[4].next, 77 as *mut c_void, "a refused node is untouched");
            assert!(cot_chain_take(&mut chain, closed, closed).is_null(), "closed twice");
            assert!(cot_chain_take(&mut chain, ptr::null(), closed).is_null(), "reopened");
            assert!(chain.is_null());
            assert!(cot_chain_push(&mut chain, raw(&mut nodes[4]), ptr::null()), "NULL never refuses");
            assert_eq!(walk(cot_chain_take(&mut chain, ptr::null(), ptr::null())), [(0, 4)]);
            assert!(!cot_chain_push(ptr::null_mut(), raw(&mut nodes[0]), closed));
            assert!(!cot_chain_push(&mut chain, ptr::null_mut(), closed));
            assert!(cot_chain_take(ptr::null_mut(), ptr::null(), closed).is_null());
        }
    }

    /// Frees the boxed nodes of a taken list; returns them as (thread, seq).
    fn free(p: *mut c_void) -> Vec<(usize, usize)> {
        let out = walk(p);
        let mut p = p;
        while !p.is_null() {
            // SAFETY: every node of the threaded test is a `Box<Node>`,
            // taken once.
            let n = unsafe { Box::from_raw(p.cast::<Node>()) };
            p = n.next;
        }
        out
    }

    #[test]
    fn pushes_from_four_threads_are_all_taken_each_thread_in_order() {
        const PER_THREAD: usize = 5000;
        static CLOSED: u8 = 0;
        let closed = || (&CLOSED as *const u8).cast::<c_void>();
        let chain = AtomicPtr::<c_void>::new(ptr::null_mut());
        let refused = AtomicUsize::new(0);
        let mut taken = vec![];
        std::thread::scope(|s| {
            for t in 0..4 {
                let (chain, refused) = (&chain, &refused);
                s.spawn(move || {
                    for seq in 0..PER_THREAD {
                        let n = Box::into_raw(Box::new(Node { next: ptr::null_mut(), thread: t, seq }));
                        // SAFETY: the word is only accessed atomically; the
                        // node lives until its taker frees it.
                        if !unsafe { cot_chain_push(chain.as_ptr(), n.cast(), closed()) } {
                            // SAFETY: refused, so still ours.
                            drop(unsafe { Box::from_raw(n) });
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            // Take concurrently with the pushes, then close the chain.
            for round in 0..50 {
                let replacement = if round == 49 { closed() } else { ptr::null() };
                // SAFETY: `chain` lives for the whole test, and taking leaves `replacement` as
                // the new head word, a plain value.
                let list = unsafe { cot_chain_take(chain.as_ptr(), replacement, closed()) };
                taken.push(free(list));
                std::thread::yield_now();
            }
        });
        // SAFETY: the threads are joined, so this take of the live `chain` races nothing.
        assert!(unsafe { cot_chain_take(chain.as_ptr(), ptr::null(), closed()) }.is_null(), "closed: nothing pushed");
        let count: usize = taken.iter().map(Vec::len).sum();
        assert_eq!(count + refused.load(Ordering::Relaxed), 4 * PER_THREAD, "nothing lost");
        // Nodes come out oldest first: each thread's in the order it pushed.
        let mut last = [None::<usize>; 4];
        for &(t, seq) in taken.iter().flatten() {
            assert!(last[t].is_none_or(|l| l < seq), "thread {t}: {seq} after {:?}", last[t]);
            last[t] = Some(seq);
        }
    }
}
