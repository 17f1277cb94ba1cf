//! The slot state machine (`rust/src/op`) against its model: four tasks
//! await, get callbacks and close callbacks, are resumed from outside and
//! leave, in the order the input chooses; the model panics when a callback
//! fires twice, a task is resumed twice or memory is released early or leaks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cothread::op::fuzz_slots(data));
