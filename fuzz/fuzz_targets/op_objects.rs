//! The object state machine (`rust/src/op`, a socket's read or a listener's
//! accept) against its model: three tasks and two objects, awaits, callbacks,
//! closes, outside resumes and tasks leaving, in the order the input chooses.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cothread::op::fuzz_objects(data));
