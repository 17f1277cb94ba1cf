//! Intrusive chains of nodes owned by C: objects whose first member is
//! `void *next`, linked through it, and the pointer-sized atomic words that
//! hold them (a C++ `std::atomic<T*>`, the fields of a `cot_mutex`).
//!
//! This is the unsafe part of `sync`'s chains and mutex. The promises are made
//! once, by the `unsafe` constructors ([`Node::from_raw`], [`Stack::from_ptr`],
//! [`ListSlot::from_ptr`]); the methods built on them are safe:
//! - a [`Node`] is the core's exclusive right to a node's `next`, from
//!   `from_raw` until it is given back (`into_raw`, or stored in a word);
//! - a [`List`] owns NULL-terminated nodes;
//! - a [`Stack`] is a word holding NULL, a *marker* (an address that is no
//!   node's, e.g. "closed"), or a LIFO stack of nodes pushed onto NULL or a
//!   marker. Only the markers it was made with end a stack, so a word must
//!   never hold a marker its users do not name.
//!
//! Orderings: a push publishes the node with `Release`; reading the word is
//! `Acquire`, so whoever takes nodes (or finds a marker) sees what was
//! written before they were pushed (or before the marker was stored).

use std::ffi::c_void;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};

/// A node lent to the core: only the core reads or writes its `next` until it
/// gives the node back.
pub(crate) struct Node(NonNull<*mut c_void>);

// SAFETY: a `Node` is the unique right to one object's `next`; whoever made
// it (`from_raw`) allowed the core to use it from any thread.
unsafe impl Send for Node {}

impl Node {
    /// The node at `p`; `None` for NULL.
    ///
    /// # Safety
    /// `p` is NULL or points to a live object, aligned for a pointer, whose
    /// first member is a `void *next`. Until the core gives the node back
    /// (`into_raw`, or through a list or word handed to C), the object stays
    /// alive and nobody else accesses its `next`; other threads may be given
    /// the node meanwhile.
    #[inline]
    pub unsafe fn from_raw(p: *mut c_void) -> Option<Node> {
        NonNull::new(p.cast()).map(Node)
    }

    /// Gives the node back: its address.
    #[inline]
    pub fn into_raw(self) -> *mut c_void {
        self.0.as_ptr().cast()
    }

    #[inline]
    fn next(&self) -> *mut c_void {
        // SAFETY: the first member of a live node, ours alone (`from_raw`).
        unsafe { self.0.as_ptr().read() }
    }

    #[inline]
    fn set_next(&mut self, next: *mut c_void) {
        // SAFETY: as in `next`.
        unsafe { self.0.as_ptr().write(next) }
    }
}

/// Nodes linked through `next`, the last one's `next` NULL. The list owns
/// them: each `next` is NULL or another node of the list.
#[derive(Default)]
pub(crate) struct List {
    head: Option<Node>,
}

impl List {
    /// Whether the list has no node.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Puts `node` first.
    #[inline]
    pub fn push_front(&mut self, mut node: Node) {
        node.set_next(self.head.take().map_or(ptr::null_mut(), Node::into_raw));
        self.head = Some(node);
    }

    /// Takes the first node out (its `next` set to NULL).
    #[inline]
    pub fn pop_front(&mut self) -> Option<Node> {
        let mut n = self.head.take()?;
        // SAFETY: `next` of a listed node is NULL or another node the list
        // owns (the list's invariant).
        self.head = unsafe { Node::from_raw(n.next()) };
        n.set_next(ptr::null_mut());
        Some(n)
    }

    /// Gives the nodes back: the first one's address (NULL if empty).
    #[inline]
    pub fn into_raw(self) -> *mut c_void {
        self.head.map_or(ptr::null_mut(), Node::into_raw)
    }
}

/// A word holding NULL, a marker, or a LIFO stack of nodes whose last `next`
/// is NULL or a marker. `markers` are the values besides NULL that end a
/// stack: addresses that are no node's.
pub(crate) struct Stack<'a> {
    word: &'a AtomicPtr<c_void>,
    markers: [*const c_void; 2],
}

impl<'a> Stack<'a> {
    /// The stack in the word at `word`; `None` for NULL.
    ///
    /// # Safety
    /// `word` is NULL or points to a pointer-sized word, aligned for a
    /// pointer, live for `'a` and only accessed atomically meanwhile. Its
    /// value is, and stays while the stack exists (whoever writes it), NULL,
    /// one of `markers`, or the top of nodes pushed by [`Stack::try_push`]
    /// onto such a value; those nodes belong to the word ([`Node::from_raw`]'s
    /// promise holds for them), and no marker is the address of a node.
    #[inline]
    pub unsafe fn from_ptr(word: *mut *mut c_void, markers: [*const c_void; 2]) -> Option<Stack<'a>> {
        if word.is_null() {
            return None;
        }
        // SAFETY: non-null, aligned, live for 'a and only accessed atomically
        // (the caller's promise).
        Some(Stack { word: unsafe { AtomicPtr::from_ptr(word) }, markers })
    }

    #[inline]
    fn ends_stack(&self, p: *mut c_void) -> bool {
        p.is_null() || self.markers.contains(&p.cast_const())
    }

    /// The word's value (`Acquire`).
    #[inline]
    pub fn load(&self) -> *mut c_void {
        self.word.load(Ordering::Acquire)
    }

    /// One attempt to push `node` onto `head`, the value last read: its
    /// `next` becomes `head` and the word `node` (`Release`). On failure the
    /// node comes back as it was, with the value found instead (`Acquire`).
    #[inline]
    pub fn try_push(&self, head: *mut c_void, mut node: Node) -> Result<(), (*mut c_void, Node)> {
        let old = node.next();
        node.set_next(head);
        match self.word.compare_exchange_weak(head, node.0.as_ptr().cast(), Ordering::Release, Ordering::Acquire) {
            // The word owns the node now.
            Ok(_) => Ok(()),
            Err(actual) => {
                node.set_next(old);
                Err((actual, node))
            }
        }
    }

    /// Changes the word from `current` to `value`, NULL or one of the
    /// markers (ordering `success`; a failure reads with `Acquire` and
    /// returns the value found). Nodes the word held are dropped from it, so
    /// callers replace only NULL or markers.
    #[inline]
    pub fn try_set(&self, current: *mut c_void, value: *const c_void, success: Ordering) -> Result<(), *mut c_void> {
        assert!(self.ends_stack(value.cast_mut()), "only NULL or a marker replaces a stack");
        self.word.compare_exchange(current, value.cast_mut(), success, Ordering::Acquire).map(drop)
    }

    /// Swaps `value` (NULL or one of the markers) into the word (ordering
    /// `order`) and returns the nodes it held in push order (oldest first),
    /// with the value they were pushed on (NULL or a marker).
    pub fn take(&self, value: *const c_void, order: Ordering) -> (List, *mut c_void) {
        assert!(self.ends_stack(value.cast_mut()), "only NULL or a marker replaces a stack");
        let mut p = self.word.swap(value.cast_mut(), order);
        let mut list = List::default();
        while !self.ends_stack(p) {
            // SAFETY: a value of the word that is neither NULL nor a marker is
            // a node it owns (`from_ptr`), and the swap made it ours.
            let Some(n) = (unsafe { Node::from_raw(p) }) else { break };
            p = n.next();
            // Walking from the newest node, pushing each in front reverses
            // the stack into push order.
            list.push_front(n);
        }
        (list, p)
    }
}

/// A word holding a [`List`]: NULL or its first node.
pub(crate) struct ListSlot<'a>(&'a AtomicPtr<c_void>);

impl<'a> ListSlot<'a> {
    /// The list slot at `word`; `None` for NULL.
    ///
    /// # Safety
    /// `word` is NULL or points to a pointer-sized word, aligned for a
    /// pointer, live for `'a`, only accessed atomically meanwhile, whose value
    /// is NULL or the first node of a list stored by [`ListSlot::put`] (nodes
    /// for which [`Node::from_raw`]'s promise holds).
    #[inline]
    pub unsafe fn from_ptr(word: *mut *mut c_void) -> Option<ListSlot<'a>> {
        if word.is_null() {
            return None;
        }
        // SAFETY: non-null, aligned, live for 'a and only accessed atomically
        // (the caller's promise).
        Some(ListSlot(unsafe { AtomicPtr::from_ptr(word) }))
    }

    /// Takes the list out, leaving NULL. `Relaxed`: the word belongs to one
    /// thread at a time, handed over by other means.
    #[inline]
    pub fn take(&self) -> List {
        let p = self.0.swap(ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: the word holds NULL or a list's first node (`from_ptr`); the
        // swap made it ours.
        List { head: unsafe { Node::from_raw(p) } }
    }

    /// Stores `list`; returns the list it replaces.
    #[inline]
    pub fn put(&self, list: List) -> List {
        let p = self.0.swap(list.into_raw(), Ordering::Relaxed);
        // SAFETY: as in `take`.
        List { head: unsafe { Node::from_raw(p) } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    struct N {
        next: *mut c_void,
        id: usize,
    }

    fn ids(mut l: List) -> Vec<usize> {
        let mut out = vec![];
        while let Some(n) = l.pop_front() {
            // SAFETY: every node in these tests is an `N` of `nodes`, alive.
            out.push(unsafe { (*n.into_raw().cast::<N>()).id });
        }
        out
    }

    #[test]
    fn stack_takes_in_push_order_and_stops_at_markers() {
        let mut nodes: Vec<N> = (0..4).map(|id| N { next: 7 as *mut c_void, id }).collect();
        let marker = 0x10 as *const c_void;
        let mut word: *mut c_void = marker.cast_mut();
        // SAFETY: `word` is a local pointer used only through this stack; the
        // nodes outlive it and are only touched through it.
        let s = unsafe { Stack::from_ptr(&mut word, [marker, marker]) }.unwrap();
        for n in nodes.iter_mut() {
            // SAFETY: a live `N`, whose first member is `next`.
            let mut node = unsafe { Node::from_raw((n as *mut N).cast()) }.unwrap();
            let mut head = s.load();
            while let Err((h, back)) = s.try_push(head, node) {
                (head, node) = (h, back);
            }
        }
        let (list, bottom) = s.take(ptr::null(), Ordering::AcqRel);
        assert_eq!(bottom, marker.cast_mut(), "the stack was pushed on the marker");
        assert_eq!(s.load(), ptr::null_mut());
        assert_eq!(ids(list), [0, 1, 2, 3]);
        assert!(nodes.iter().all(|n| n.next.is_null()), "popped nodes end in NULL");
        assert_eq!(s.try_set(ptr::null_mut(), marker, Ordering::Release), Ok(()));
        assert_eq!(s.try_set(ptr::null_mut(), marker, Ordering::Release), Err(marker.cast_mut()));
        let (list, bottom) = s.take(marker, Ordering::AcqRel);
        assert!(list.is_empty());
        assert_eq!(bottom, marker.cast_mut());
    }

    #[test]
    fn a_failed_push_leaves_the_node_as_it_was() {
        let mut n = N { next: 5 as *mut c_void, id: 0 };
        let mut word: *mut c_void = ptr::null_mut();
        // SAFETY: `word` lives on this frame for the whole test, aligned as a `usize`.
        let s = unsafe { Stack::from_ptr(&mut word, [ptr::null(), ptr::null()]) }.unwrap();
        // SAFETY: a live `N`.
        let node = unsafe { Node::from_raw((&mut n as *mut N).cast()) }.unwrap();
        let Err((found, node)) = s.try_push(std::ptr::dangling_mut(), node) else { panic!("the head was not 1") };
        assert_eq!(found, ptr::null_mut());
        assert_eq!(node.into_raw(), (&mut n as *mut N).cast());
        assert_eq!(n.next, 5 as *mut c_void);
    }

    #[test]
    fn list_slot_keeps_a_list() {
        let mut nodes: Vec<N> = (0..3).map(|id| N { next: ptr::null_mut(), id }).collect();
        let mut word: *mut c_void = ptr::null_mut();
        // SAFETY: a local word used only through this slot.
        let slot = unsafe { ListSlot::from_ptr(&mut word) }.unwrap();
        let mut l = List::default();
        for n in nodes.iter_mut().rev() {
            // SAFETY: a live `N`.
            l.push_front(unsafe { Node::from_raw((n as *mut N).cast()) }.unwrap());
        }
        assert!(slot.put(l).is_empty());
        assert_eq!(ids(slot.take()), [0, 1, 2]);
        assert!(slot.take().is_empty());
        // SAFETY: NULL is refused.
        assert!(unsafe { ListSlot::from_ptr(ptr::null_mut()) }.is_none());
    }
}
