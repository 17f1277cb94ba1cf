//! A randomized comparison of the scheduler against a plain reference
//! model, and its invariants checked after every step, combined signals
//! included.

use super::arena::Role;
use super::tests::{A, B, C, ready, sched, tasks, waiters};
use super::*;
use crate::util::rng::Rng;
use std::collections::VecDeque;

/// The reference: plain vectors, with every operation done the obvious way.
#[derive(Default)]
struct Model {
    ready: VecDeque<usize>,
    signals: Vec<(usize, Vec<usize>)>,
    postponed: Vec<(u64, u64, Vec<usize>)>,
    seq: u64,
}

impl Model {
    fn signal(&mut self, key: usize) -> &mut Vec<usize> {
        if let Some(i) = self.signals.iter().position(|(k, _)| *k == key) {
            return &mut self.signals[i].1;
        }
        self.signals.push((key, Vec::new()));
        &mut self.signals.last_mut().unwrap().1
    }

    fn place(&mut self, ids: Vec<usize>, when: When, now: u64) {
        match when {
            When::Next => ids.into_iter().rev().for_each(|i| self.ready.push_front(i)),
            When::Later => self.ready.extend(ids),
            When::Wait(k) => self.signal(k).extend(ids),
            When::Postpone(t) | When::Delay(t) => {
                let at = if let When::Delay(_) = when { now + t } else { t };
                self.seq += 1;
                self.postponed.push((at, self.seq, ids));
            }
        }
    }

    fn remove(&mut self, id: usize) -> bool {
        if let Some(p) = self.ready.iter().position(|&x| x == id) {
            self.ready.remove(p);
            return true;
        }
        let queues = self.signals.iter_mut().map(|(_, q)| q).chain(self.postponed.iter_mut().map(|(_, _, q)| q));
        for q in queues {
            if let Some(p) = q.iter().position(|&x| x == id) {
                q.remove(p);
                return true;
            }
        }
        false
    }

    fn scheduled(&self, id: usize) -> bool {
        self.ready.contains(&id)
            || self.signals.iter().any(|(_, q)| q.contains(&id))
            || self.postponed.iter().any(|(_, _, q)| q.contains(&id))
    }

    fn take_due(&mut self, now: u64) {
        self.postponed.retain(|(_, _, q)| !q.is_empty());
        self.postponed.sort_by_key(|&(t, s, _)| (t, s));
        let n = self.postponed.iter().take_while(|(t, _, _)| *t <= now).count();
        for (_, _, q) in self.postponed.drain(..n) {
            self.ready.extend(q);
        }
    }
}

fn random_when(r: &mut Rng, keys: &[usize]) -> When {
    match r.below(5) {
        0 => When::Next,
        1 => When::Later,
        2 => When::Wait(keys[r.below(keys.len() as u64) as usize]),
        3 => When::Postpone(r.below(200)),
        _ => When::Delay(r.below(100)),
    }
}

#[test]
fn randomized_against_a_reference_model() {
    let keys = [A, B, C, 0xd0];
    for seed in 1..=20u64 {
        let (mut s, now) = sched();
        now.set(0);
        let mut m = Model::default();
        let mut r = Rng::new(seed);
        let t = tasks(&mut s, 24);
        for step in 0..5_000 {
            let id = r.below(t.len() as u64) as usize;
            match r.below(10) {
                0..=2 => {
                    let when = random_when(&mut r, &keys);
                    let expect = !m.scheduled(id);
                    assert_eq!(s.schedule(t[id], when).unwrap(), expect, "seed {seed} step {step}");
                    if expect {
                        m.place(vec![id], when, now.get());
                    }
                }
                3 => assert_eq!(s.unschedule(t[id]).unwrap(), m.remove(id)),
                4..=5 => {
                    let key = keys[r.below(keys.len() as u64) as usize];
                    let when = random_when(&mut r, &keys);
                    let ids = std::mem::take(m.signal(key));
                    assert_eq!(s.notify(key, when).unwrap(), !ids.is_empty());
                    if !ids.is_empty() {
                        m.place(ids, when, now.get());
                    }
                }
                6 => {
                    now.set(now.get() + r.below(40));
                    s.take_due();
                    m.take_due(now.get());
                }
                7 => {
                    // Run the head: take it out, put it back somewhere.
                    if let Some(h) = s.ready_head() {
                        let id = s.data(h).unwrap();
                        assert_eq!(m.ready.pop_front(), Some(id));
                        s.unschedule(h).unwrap();
                        let when = random_when(&mut r, &keys);
                        s.schedule(h, when).unwrap();
                        m.place(vec![id], when, now.get());
                    }
                }
                _ => assert_eq!(s.is_scheduled(t[id]).unwrap(), m.scheduled(id)),
            }
            assert_eq!(ready(&s), Vec::from(m.ready.clone()), "seed {seed} step {step}");
            for &k in &keys {
                let expect = m.signals.iter().find(|(key, _)| *key == k).map_or(vec![], |(_, q)| q.clone());
                assert_eq!(waiters(&s, k), expect, "seed {seed} step {step} key {k:x}");
            }
            m.postponed.retain(|(_, _, q)| !q.is_empty());
            assert_eq!(s.postponed_groups(), m.postponed.len());
            assert_eq!(s.next_wake(), m.postponed.iter().map(|&(t, _, _)| t).min());
        }
    }
}

/// Panics unless the queues are consistent: rings well linked, each linked
/// task in exactly one ring, no stale signal entry, one live timer per group.
fn check_invariants(s: &Sched) {
    let mut seen = std::collections::HashSet::new();
    let mut walk = |head: u32| {
        let mut i = s.arena.node(head).next;
        while i != head {
            let n = s.arena.node(i);
            assert_eq!(n.role, Role::Task);
            assert_eq!(s.arena.node(n.next).prev, i, "broken back link");
            assert!(seen.insert(i), "task {i} in two queues");
            i = n.next;
        }
    };
    walk(s.ready);
    for (&key, sig) in &s.signals {
        assert!(sig.queue != NIL || !sig.watchers.is_empty() || sig.combo.is_some(), "stale entry {key:x}");
        if sig.queue != NIL {
            let n = s.arena.node(sig.queue);
            assert!(n.role == Role::Signal && n.data == key && !s.arena.is_empty(sig.queue));
            walk(sig.queue);
        }
    }
    let mut groups = 0;
    for i in 0..s.arena.capacity() as u32 {
        if s.arena.node(i).role == Role::Timer {
            assert!(!s.arena.is_empty(i), "empty postponed group");
            groups += 1;
            walk(i);
        }
    }
    assert_eq!(groups, s.timers.len());
    let linked =
        (0..s.arena.capacity() as u32).filter(|&i| s.arena.node(i).role == Role::Task && s.arena.is_linked(i)).count();
    assert_eq!(linked, seen.len(), "a linked task outside every queue");
    s.check_combined();
}

#[test]
fn randomized_with_combined_signals_keeps_every_invariant() {
    let plain = [A, B, C];
    for seed in 1..=20u64 {
        let (mut s, now) = sched();
        let mut r = Rng::new(seed);
        let inner_any = s.onany(&[A, B]).unwrap();
        let inner_all = s.onall(&[B, C]).unwrap();
        let outer = s.onall(&[inner_any, inner_all, A]).unwrap();
        let keys = [A, B, C, inner_any, inner_all, outer];
        let t = tasks(&mut s, 16);
        for _ in 0..4_000 {
            let task = t[r.below(t.len() as u64) as usize];
            let key = keys[r.below(keys.len() as u64) as usize];
            match r.below(8) {
                0..=2 => {
                    let when = match r.below(3) {
                        0 => When::Wait(keys[r.below(keys.len() as u64) as usize]),
                        _ => random_when(&mut r, &keys),
                    };
                    s.schedule(task, when).unwrap();
                }
                3 => {
                    s.unschedule(task).unwrap();
                }
                4 => {
                    let key = if r.below(2) == 0 { plain[r.below(3) as usize] } else { key };
                    s.notify(key, random_when(&mut r, &keys)).unwrap();
                }
                5 => {
                    s.reset(keys[3 + r.below(3) as usize]).unwrap();
                }
                6 => {
                    now.set(now.get() + r.below(50));
                    s.take_due();
                }
                _ => {
                    if let Some(h) = s.ready_head() {
                        s.unschedule(h).unwrap();
                        s.schedule(h, random_when(&mut r, &keys)).unwrap();
                    }
                }
            }
            check_invariants(&s);
        }
        for &k in &[outer, inner_any, inner_all] {
            for w in s.waiters(k).collect::<Vec<_>>() {
                s.unschedule(w).unwrap();
            }
            s.free_combined(k).unwrap();
        }
        check_invariants(&s);
    }
}
