//! Buffered streams: the file objects of `cothread.file` and the pipes of
//! `cothread.process`, one userdata type (metatable `cothread.file`) whose
//! methods mirror Lua's file handles (`read`, `write`, `lines`, `seek`,
//! `flush`, `close`).
//!
//! A stream's descriptor and read buffer (`Inner`) sit behind an
//! `Arc<Mutex<..>>`, so a job on the loop's thread pool owns what it touches:
//! a cothread unscheduled while its job runs leaves the job a valid stream
//! (the late completion resumes nobody; the descriptor closes when the last
//! owner lets go). The two kinds differ only in how they wait:
//! - a *file* (a blocking descriptor) fills its buffer, writes and seeks in
//!   pool jobs; a read answered from the buffer costs no job;
//! - a *pipe* (a non-blocking descriptor) reads and writes on the loop's
//!   thread and waits for readiness in the event loop, as sockets do.
//!
//! Outside a cothread, both run synchronously (files in the caller's thread,
//! pipes blocking in `poll(2)`). Misuse raises (`bad argument`, "attempt to
//! use a closed file"); failed I/O returns `nil, message, errno`.
//!
//! Each method that may wait (`read`, the `lines` iterator, `write`, `seek`)
//! is one engine operation, `StreamOp`: its step (in `read` and `write`)
//! answers what it can, then asks for a job (a file) or for readiness (a
//! pipe). Files: this one (the metatable), `object` (objects, the operation,
//! the jobs on a file), `read`, `write` (also `seek`).

mod object;
mod read;
mod write;

use object::{Stream, stream_close, stream_close_meta, stream_flush, stream_tostring};
pub use object::{open_at, push_stream};

use crate::lua::{Error, Lua, Reg};

// ===== the metatable =====

const METHODS: &[Reg] = &[
    (c"read", read::stream_read),
    (c"write", write::stream_write),
    (c"seek", write::stream_seek),
    (c"flush", stream_flush),
    (c"close", stream_close),
];

/// `[-0, +0, m]` Makes the metatable of streams (once per Lua state).
pub fn register(lua: &mut Lua) -> Result<(), Error> {
    lua.udata_metatable::<Stream>(|lua| {
        lua.push_functions(METHODS);
        read::add_lines(lua)?;
        lua.set_field(-2, c"__index");
        lua.push_fn(stream_close_meta);
        lua.set_field(-2, c"__close");
        lua.push_fn(stream_tostring);
        lua.set_field(-2, c"__tostring");
        Ok(())
    })?;
    lua.pop(1);
    Ok(())
}
