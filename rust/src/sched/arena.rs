//! The node arena and its intrusive circular doubly linked lists.
//!
//! Every queue is a ring of node indices through one *sentinel* node; a task
//! node is in at most one ring. Indices instead of pointers keep this safe
//! code: splicing a whole ring into another is four link updates, whatever its
//! length, and unlinking a node tells whether its ring became empty (its two
//! neighbours are then the same node: the sentinel).
//!
//! Freed slots form a free list through `next`, and their generation is bumped
//! so stale [`Task`](super::Task) handles are recognised.

/// "No node": the links of a task that is in no queue.
pub(crate) const NIL: u32 = u32::MAX;

/// What a node is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    Free,
    Task,
    /// Sentinel of the ready queue.
    Ready,
    /// Sentinel of a signal queue; `data` is the signal key.
    Signal,
    /// Sentinel of a postponed group (its heap entry checks the generation).
    Timer,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub prev: u32,
    pub next: u32,
    pub generation: u32,
    pub role: Role,
    /// Role-specific: a task's user value, a signal sentinel's key.
    pub data: usize,
}

#[derive(Debug)]
pub(crate) struct Arena {
    nodes: Vec<Node>,
    free: u32,
    seed: u32,
}

impl Arena {
    /// `seed` varies the first generation of each slot between schedulers, so a
    /// handle of one scheduler is almost never valid in another.
    pub fn new(seed: u32) -> Arena {
        Arena { nodes: Vec::new(), free: NIL, seed }
    }

    /// Slots ever allocated (live and free).
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.nodes.len()
    }

    #[inline]
    pub fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    #[inline]
    pub fn node_mut(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    /// The node at `i` if it exists and has this role and generation.
    #[inline]
    pub fn lookup(&self, i: u32, role: Role, generation: u32) -> Option<&Node> {
        self.nodes.get(i as usize).filter(|n| n.role == role && n.generation == generation)
    }

    /// A new node: a sentinel starts as an empty ring, a task unlinked.
    pub fn alloc(&mut self, role: Role, data: usize) -> u32 {
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.node(i).next;
            i
        } else {
            let i = u32::try_from(self.nodes.len()).ok().filter(|&i| i != NIL).expect("too many nodes");
            let generation = first_generation(self.seed, i);
            self.nodes.push(Node { prev: NIL, next: NIL, generation, role: Role::Free, data: 0 });
            i
        };
        let ring = if role == Role::Task { NIL } else { i };
        let n = self.node_mut(i);
        *n = Node { prev: ring, next: ring, role, data, ..*n };
        i
    }

    /// Frees an unlinked node (or an empty sentinel).
    pub fn release(&mut self, i: u32) {
        let free = self.free;
        let n = self.node_mut(i);
        n.generation = next_generation(n.generation);
        *n = Node { prev: NIL, next: free, role: Role::Free, data: 0, ..*n };
        self.free = i;
    }

    #[inline]
    pub fn is_linked(&self, i: u32) -> bool {
        self.node(i).next != NIL
    }

    /// Is this sentinel's ring empty?
    #[inline]
    pub fn is_empty(&self, head: u32) -> bool {
        self.node(head).next == head
    }

    /// Inserts `i` between `prev` and `next`.
    #[inline]
    fn link_between(&mut self, i: u32, prev: u32, next: u32) {
        *self.node_mut(i) = Node { prev, next, ..*self.node(i) };
        self.node_mut(prev).next = i;
        self.node_mut(next).prev = i;
    }

    /// Appends `i` at the tail of the ring of `head`.
    #[inline]
    pub fn push_back(&mut self, head: u32, i: u32) {
        let last = self.node(head).prev;
        self.link_between(i, last, head);
    }

    /// Inserts `i` at the front of the ring of `head`.
    #[inline]
    pub fn push_front(&mut self, head: u32, i: u32) {
        let first = self.node(head).next;
        self.link_between(i, head, first);
    }

    /// Unlinks `i` from its ring. Returns the ring's sentinel if the ring is
    /// now empty.
    #[inline]
    pub fn unlink(&mut self, i: u32) -> Option<u32> {
        let Node { prev, next, .. } = *self.node(i);
        self.node_mut(prev).next = next;
        self.node_mut(next).prev = prev;
        let n = self.node_mut(i);
        n.prev = NIL;
        n.next = NIL;
        (prev == next).then_some(prev)
    }

    /// Moves every node of the ring of `src` to the tail (`front == false`) or
    /// the front of the ring of `dst`, keeping their order. `src` ends empty.
    pub fn splice(&mut self, dst: u32, src: u32, front: bool) {
        if self.is_empty(src) {
            return;
        }
        let first = self.node(src).next;
        let last = self.node(src).prev;
        let (before, after) = if front { (dst, self.node(dst).next) } else { (self.node(dst).prev, dst) };
        self.node_mut(before).next = first;
        self.node_mut(first).prev = before;
        self.node_mut(last).next = after;
        self.node_mut(after).prev = last;
        let s = self.node_mut(src);
        s.next = src;
        s.prev = src;
    }
}

fn first_generation(seed: u32, i: u32) -> u32 {
    let g = seed ^ i.wrapping_mul(0x9e37_79b9);
    if g == 0 { 1 } else { g }
}

fn next_generation(g: u32) -> u32 {
    match g.wrapping_add(1) {
        0 => 1,
        g => g,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(a: &Arena, head: u32) -> Vec<u32> {
        let mut out = vec![];
        let mut i = a.node(head).next;
        while i != head {
            assert_eq!(a.node(a.node(i).next).prev, i, "broken back link");
            out.push(i);
            i = a.node(i).next;
        }
        out
    }

    #[test]
    fn push_unlink_splice_keep_order() {
        let mut a = Arena::new(7);
        let h1 = a.alloc(Role::Ready, 0);
        let h2 = a.alloc(Role::Signal, 1);
        let t: Vec<u32> = (0..6).map(|k| a.alloc(Role::Task, k)).collect();
        assert!(a.is_empty(h1) && !a.is_linked(t[0]));
        a.push_back(h1, t[0]);
        a.push_back(h1, t[1]);
        a.push_front(h1, t[2]);
        assert_eq!(ring(&a, h1), vec![t[2], t[0], t[1]]);
        a.push_back(h2, t[3]);
        a.push_back(h2, t[4]);
        a.splice(h1, h2, true);
        assert_eq!(ring(&a, h1), vec![t[3], t[4], t[2], t[0], t[1]]);
        assert!(a.is_empty(h2));
        a.push_back(h2, t[5]);
        a.splice(h1, h2, false);
        assert_eq!(ring(&a, h1), vec![t[3], t[4], t[2], t[0], t[1], t[5]]);
        assert_eq!(a.unlink(t[2]), None);
        for &i in &[t[3], t[4], t[0], t[1]] {
            assert_eq!(a.unlink(i), None);
        }
        assert_eq!(a.unlink(t[5]), Some(h1));
        assert!(a.is_empty(h1));
        a.splice(h1, h2, false); // empty source: no-op
        assert!(a.is_empty(h1));
    }

    #[test]
    fn released_slots_are_reused_with_a_new_generation() {
        let mut a = Arena::new(0);
        let i = a.alloc(Role::Task, 5);
        let g = a.node(i).generation;
        assert_ne!(g, 0);
        a.release(i);
        assert!(a.lookup(i, Role::Task, g).is_none());
        let j = a.alloc(Role::Task, 6);
        assert_eq!(i, j);
        assert_ne!(a.node(j).generation, g);
        assert_eq!(next_generation(u32::MAX), 1);
    }
}
