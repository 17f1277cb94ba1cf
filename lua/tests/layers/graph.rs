//! A directed graph of modules and the circles in it.

use std::collections::{BTreeSet, VecDeque};

/// Nodes by index; `edges[a]` holds every `b` with an edge `a -> b`.
pub struct Graph {
    pub names: Vec<String>,
    pub edges: Vec<BTreeSet<usize>>,
}

impl Graph {
    /// The circles that cover every edge lying on one: for each such edge
    /// `a -> b`, the shortest way back from `b` to `a`. Each circle starts at its
    /// smallest node and is listed once, sorted.
    pub fn circles(&self) -> Vec<Vec<usize>> {
        let component = components(&self.edges);
        let mut found = BTreeSet::new();
        for (a, outs) in self.edges.iter().enumerate() {
            for &b in outs {
                if a == b || component[a] != component[b] {
                    continue;
                }
                if let Some(back) = self.shortest(b, a, |n| component[n] == component[a]) {
                    let mut circle = vec![a];
                    circle.extend(&back[..back.len() - 1]);
                    found.insert(rotated(circle));
                }
            }
        }
        found.into_iter().collect()
    }

    /// `a -> b -> a`, by name.
    pub fn show(&self, circle: &[usize]) -> String {
        let mut names: Vec<&str> = circle.iter().map(|&n| self.names[n].as_str()).collect();
        names.push(names[0]);
        names.join(" -> ")
    }

    /// The nodes of a shortest path `from` ... `to`, through nodes `inside` allows.
    fn shortest(&self, from: usize, to: usize, inside: impl Fn(usize) -> bool) -> Option<Vec<usize>> {
        let mut came_from = vec![usize::MAX; self.names.len()];
        came_from[from] = from;
        let mut queue = VecDeque::from([from]);
        while let Some(n) = queue.pop_front() {
            if n == to {
                let mut path = vec![to];
                while *path.last()? != from {
                    path.push(came_from[*path.last()?]);
                }
                path.reverse();
                return Some(path);
            }
            for &m in &self.edges[n] {
                if came_from[m] == usize::MAX && inside(m) {
                    came_from[m] = n;
                    queue.push_back(m);
                }
            }
        }
        None
    }
}

/// The circle turned to start at its smallest node.
fn rotated(mut circle: Vec<usize>) -> Vec<usize> {
    let start = (0..circle.len()).min_by_key(|&i| circle[i]).unwrap_or(0);
    circle.rotate_left(start);
    circle
}

/// Strongly connected components (Tarjan's algorithm): a component number
/// per node; two nodes share one when each reaches the other.
fn components(edges: &[BTreeSet<usize>]) -> Vec<usize> {
    struct Walk<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<usize>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        component: Vec<usize>,
        components: usize,
    }
    impl Walk<'_> {
        fn visit(&mut self, n: usize) {
            self.index[n] = self.next;
            self.low[n] = self.next;
            self.next += 1;
            self.stack.push(n);
            self.on_stack[n] = true;
            for &m in self.edges[n].iter() {
                if self.index[m] == usize::MAX {
                    self.visit(m);
                    self.low[n] = self.low[n].min(self.low[m]);
                } else if self.on_stack[m] {
                    self.low[n] = self.low[n].min(self.index[m]);
                }
            }
            if self.low[n] == self.index[n] {
                while let Some(m) = self.stack.pop() {
                    self.on_stack[m] = false;
                    self.component[m] = self.components;
                    if m == n {
                        break;
                    }
                }
                self.components += 1;
            }
        }
    }
    let count = edges.len();
    let mut walk = Walk {
        edges,
        index: vec![usize::MAX; count],
        low: vec![0; count],
        on_stack: vec![false; count],
        stack: Vec::new(),
        next: 0,
        component: vec![0; count],
        components: 0,
    };
    for n in 0..count {
        if walk.index[n] == usize::MAX {
            walk.visit(n);
        }
    }
    walk.component
}
