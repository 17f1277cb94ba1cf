//! The C API as a hostile caller uses it: random sequences of loop, timer,
//! async, scheduler, task and signal calls on two loops and a scheduler, with
//! live handles, handles already closed or freed, handles of the other loop
//! and made-up values. Every call must return (an error where the handle is
//! bad), never crash or corrupt memory (AddressSanitizer watches); at the end
//! everything closes and frees cleanly. Raw object pointers (`cot_loop *`,
//! `cot_sched *`) stay valid throughout: their misuse is the caller's duty
//! (the header says so), not something a call can check.
#![no_main]

use std::ffi::c_void;
use std::ptr::null_mut;

use cothread::ffi::*;

/// The fuzzer's bytes, read as choices; zeros once used up.
struct Tape<'a>(&'a [u8]);

impl Tape<'_> {
    fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn below(&mut self, n: usize) -> usize {
        self.byte() as usize % n
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, _| v << 8 | u64::from(self.byte()))
    }
}

unsafe extern "C" fn on_handle(_: *mut cot_loop, _: cot_handle, _: *mut c_void) {}

/// Handles ever made, live or not; each pick may also be a made-up value.
#[derive(Default)]
struct Handles(Vec<cot_handle>);

impl Handles {
    fn pick(&self, t: &mut Tape) -> cot_handle {
        match t.below(8) {
            0 => t.u64(),
            1 => 0,
            _ if self.0.is_empty() => t.u64(),
            _ => self.0[t.below(self.0.len())],
        }
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut t = Tape(data);
    let loops = [cot_loop_new(), cot_loop_new()];
    let sched = cot_sched_new();
    assert!(!loops[0].is_null() && !loops[1].is_null() && !sched.is_null());
    let mut handles = [Handles::default(), Handles::default()];
    let mut tasks = Handles::default();
    let signals = [1usize as *const c_void, 2 as _, 3 as _];
    let mut combined: Vec<*const c_void> = Vec::new();
    // SAFETY: every pointer passed is one of the live objects above (or a
    // signal key, which the scheduler only compares); handles are values the
    // API checks, which is what this target tests.
    unsafe {
        while !t.0.is_empty() {
            let i = t.below(2);
            let (l, other) = (loops[i], loops[1 - i]);
            // A handle of this loop, or of the other one (a foreign handle).
            let h = if t.below(4) == 0 { handles[1 - i].pick(&mut t) } else { handles[i].pick(&mut t) };
            match t.below(16) {
                0 => {
                    let mut out = 0;
                    if cot_timer_init(l, null_mut(), &mut out) == 0 {
                        handles[i].0.push(out);
                    }
                }
                1 => _ = cot_timer_start(l, h, Some(on_handle), t.below(3) as u64, t.below(2) as u64),
                2 => _ = cot_timer_stop(l, h),
                3 => _ = cot_timer_again(l, h),
                4 => {
                    let mut out = 0;
                    if cot_async_init(l, Some(on_handle), null_mut(), &mut out) == 0 {
                        handles[i].0.push(out);
                    }
                }
                5 => _ = cot_async_send(l, h),
                6 => _ = cot_close(l, h, if t.below(2) == 0 { Some(on_handle) } else { None }),
                7 => {
                    let mut d = null_mut();
                    _ = cot_handle_data(l, h, &mut d);
                    _ = cot_handle_set_data(l, h, 1 as *mut c_void);
                    _ = cot_handle_is_active(l, h);
                }
                8 => _ = cot_loop_run(if t.below(2) == 0 { l } else { other }, COT_RUN_NOWAIT),
                9 => {
                    let mut out = 0;
                    if cot_task_new(sched, null_mut(), &mut out) == 0 {
                        tasks.0.push(out);
                    }
                }
                10 => _ = cot_task_free(sched, tasks.pick(&mut t)),
                11 => _ = cot_sched_schedule(sched, tasks.pick(&mut t), t.below(3) as i32 - 1),
                12 => _ = cot_sched_unschedule(sched, tasks.pick(&mut t)),
                13 => {
                    let sig = if !combined.is_empty() && t.below(2) == 0 {
                        combined[t.below(combined.len())]
                    } else {
                        signals[t.below(3)]
                    };
                    _ = cot_sched_wait(sched, tasks.pick(&mut t), sig);
                    _ = cot_sched_notify(sched, signals[t.below(3)], t.below(2) as i32);
                }
                14 => {
                    let parts = [signals[t.below(3)], signals[t.below(3)]];
                    let mut out: *const c_void = std::ptr::null();
                    let made = if t.below(2) == 0 {
                        cot_sched_onany(sched, parts.as_ptr(), parts.len(), &mut out)
                    } else {
                        cot_sched_onall(sched, parts.as_ptr(), parts.len(), &mut out)
                    };
                    if made == 0 {
                        combined.push(out);
                    }
                }
                _ => {
                    // Steps the scheduler as a face would: take what is ready.
                    _ = cot_sched_take_due(sched);
                    let head = cot_sched_ready_head(sched);
                    _ = cot_sched_unschedule(sched, head);
                }
            }
        }
        // Everything closes and frees.
        for i in 0..2 {
            for &h in &handles[i].0 {
                _ = cot_close(loops[i], h, None);
            }
            while cot_loop_close(loops[i]) != 0 {
                assert_eq!(cot_loop_run(loops[i], COT_RUN_NOWAIT) >= 0, true, "a loop that cannot close");
            }
        }
        assert_eq!(cot_sched_free(sched), 0);
    }
});
