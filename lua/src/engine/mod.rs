//! The waiting engine: every blocking call of the module (sockets, UDP,
//! `select`, `sleep`, channels, pool jobs, pipes, processes, OS signals,
//! futures, loop signals) is an *operation* that the event loop drives to its
//! end; the cothread is then resumed once, with the call's results already on
//! its stack. No C continuation is involved: a parked C function yields with
//! a plain `lua_yield(l, 0)` and, when resumed, returns the values it is
//! resumed with, which are the operation's results.
//!
//! # One operation, from the call to its results
//! A C function builds the operation (a plain struct implementing
//! [`Operation`]) over its frame (its stack slots) and steps it
//! (`park::drive`). If the step cannot finish and the caller is a cothread,
//! [`park`] records it here (attaches its sources, starts its timer, job or
//! outside event), pushes a *sentinel* (a light userdata: the operation's
//! id) on top of the frame, and the function yields; the resume loop puts
//! the task in the private queue `key`, which no `notify` reaches.
//!
//! The loop's callbacks only queue [`Event`]s. `poll` runs the loop and
//! turns them into *due* operations (`mark`): the event's `Why` is kept in
//! the record and the task goes to the ready tail with `OPERATION_BIT` set in
//! its user value. When the resume loop takes it, it calls [`finish`]: the
//! step runs there, on the stack of the thread in `run` or `step` (the
//! *runner*: the frame moves there from the cothread, so a step that raises,
//! a memory error, never touches the suspended cothread). `Done(n)` moves the
//! `n` results onto the cothread's stack in place of the frame and the
//! cothread is resumed with them; a step that must wait again (a spurious
//! readiness, a read that needs more) moves the frame back and the task goes
//! back to the private queue without being resumed.
//!
//! # The states of an operation
//! | state    | where                                        | its task                              |
//! |----------|----------------------------------------------|---------------------------------------|
//! | Waiting  | in `records`, on its sources, its timer      | in the private queue `key`            |
//! | Due      | Waiting, with `why` and `queued`             | in the ready queue, `OPERATION_BIT`   |
//! | Stepping | `stepping`; its operation lent, frame out    | at the ready head, being resumed      |
//! | (ended)  | gone from `records`                          | resumed with its results              |
//!
//! A Waiting operation whose step answered `Next::Sleep` (an accept out of
//! descriptors) is `asleep`: listed on none of its sources, it waits for its
//! timer only; its next `Wait` lists it on them again (`follow_sources`).
//!
//! Who moves it:
//! - `park` (the C function): Waiting; or, for a cothread over its budget
//!   (`park::within_budget`, doc/lua.md "Fairness"), Due at once with
//!   `Start`, listed on nothing, its cothread going to the ready tail: the
//!   operation begins when the cothread is taken.
//! - `mark`, from `poll` (readiness of a source, its deadline, its job or
//!   outside event done), `detach` (a source closed or collected: `Closed`)
//!   or `fire` (a channel got a value or closed): Due. More events before
//!   the step merge (`Why::merge`): a cancel wins, a deadline loses to what
//!   became ready in the same turn.
//! - `finish` (the resume loop): Stepping, then ended (`deliver`), or
//!   Waiting again.
//! - `cancel` (its cothread unregistered: `unschedule`, a plugin's yield)
//!   and `abandon_all` (its scheduler collected): it leaves at once, its
//!   operation moved into a ticket on the cothread's stack (`ticket`).
//! - Events that come while it is Stepping (a finalizer run by the step's
//!   allocations closes its socket, or unschedules its cothread) are kept in
//!   `deferred` and stepped right after.
//!
//! How it ends exactly once: the record leaves `records` in `deliver`,
//! `drop_op` or `ticket::make` and nowhere else, none of them while it is
//! Stepping. Every event names the operation by its id (a slot and its
//! generation: not given again while a late event could come); a late
//! event finds no record and resumes nobody.
//!
//! # Who holds what
//! The engine owns its records (`slots`), reached by id; a record's
//! cothread is a `lua::Thread`, used through layer 1's checked methods.
//! While a step runs (Lua code, whose finalizers may close a source or
//! send on a channel and so reach the engine again), nothing of the engine
//! is borrowed, and the step reaches its operation by address: lent, it
//! stays its record's (`link::Lent`), so a step that raises leaks nothing.
//! The other addresses the engine follows are its scheduler's core and a
//! host's loop (`link`).
//!
//! If the cothread left its yield some other way (resumed by
//! `coroutine.resume`, closed), the sentinel is gone (`parked_here`): the
//! operation is dropped without results and the cothread resumed with none.
//!
//! # Why not the core's `op` machines
//! `cothread::op` keeps a task's request or handle alive until its libuv
//! callback gives the memory back, and lets one task at a time await an
//! object. Here no backend holds memory of ours: the reactor's handles are
//! generation-checked ids and a late callback finds no operation, so a
//! cancel ends an operation at once, with nothing to wait for. And one
//! operation waits on many things at once (a `select` on many sources, a
//! read and its deadline) while many operations wait on one source (a
//! reader and a writer; several `select`s), which neither `Slot` (one
//! request or handle per task) nor `Object` (one waiter) models.
//!
//! # Files, each using only those above it
//! | file        | what                                                         |
//! |-------------|--------------------------------------------------------------|
//! | `frame`     | what a step is told and answers, its frame, payloads, times  |
//! | `event`     | what the loop's callbacks report; `Fire`, `OnEnd`; ids       |
//! | `source`    | the object's side of a source; `Owner`, `detach`, `fire`     |
//! | `block`     | waiting outside cothreads (`poll(2)`, a job in this thread)  |
//! | `op`        | the `Operation` trait                                        |
//! | `guard`     | a step holding a payload, run in a protected call            |
//! | `link`      | the shared core, a host loop, a lent operation, the clock    |
//! | `lp`        | the loop (own or a host's), `Block`, the deadline timers     |
//! | `watch`     | the engine's table of attached sources                       |
//! | `slots`     | records by id: a slab with generations                       |
//! | `records`   | `Engine` and its records: arm, disarm, `mark`                |
//! | `ticket`    | what a cancelled operation leaves on its cothread's stack    |
//! | `step`      | park, step, deliver, poll, cancel                            |
//!
//! This file only declares them and re-exports what the module offers.

mod block;
mod event;
mod frame;
mod guard;
mod link;
mod lp;
mod op;
mod records;
mod slots;
mod source;
mod step;
#[cfg(test)]
mod tests;
mod ticket;
mod watch;

pub use block::poll as block_on;
pub use event::{Fire, OnEnd};
pub use frame::{
    Frame, Job, Next, Payload, STEP_SLOTS, Why, call_deadline, deadline_in, next_deadline, ns_of, payload_as,
};
pub use guard::step as step_guarded;
pub use link::{CoreRef, HostLoop};
pub use lp::{Block, LoopRef};
pub use op::{Operation, block_default};
pub use records::{Engine, OPERATION_BIT};
pub use source::{READ, Selectable, Source, SourceKind, WRITE, make_selectable, selectable_at};
pub use step::{Finish, cancel, drop_parked, finish, is_delivered, is_parked, park, poll};
pub use ticket::{abandon_all, settle};
