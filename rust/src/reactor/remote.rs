//! Posts: a function run on a loop, sent from any thread through a
//! [`Remote`], the loop's address that other threads hold. A post goes
//! into the loop's inbox (`inbox.rs`) and runs once, on the loop's thread,
//! in the iteration that takes it: in the order of its sender's posts, after
//! those put before it. A post put while the loop runs posts (from one of
//! them, too) runs in the next iteration, so a post that posts to its own
//! loop does not starve it.
//!
//! A pending post keeps the loop alive (`run` takes it) and its poll from
//! blocking. Once the loop is dropped, `post` fails with `Error::Pipe` and
//! drops the function without running it, as the loop drops the posts still
//! queued. A loop that must lose no post it took closes its posts before
//! it goes ([`Loop::close_posts`]): later posts fail, queued ones run.

use std::sync::Arc;

use super::{Inbox, Loop};
use crate::error::Result;

/// A function to run on a loop, sent from any thread: a closure, or a plain
/// function with two words to call it with, which needs no allocation (the
/// C face's posts are such calls).
pub enum Post {
    /// A closure.
    Boxed(Box<dyn FnOnce(&mut Loop) + Send>),
    /// `f(loop, args)`.
    Call(fn(&mut Loop, [usize; 2]), [usize; 2]),
}

impl Post {
    pub(super) fn run(self, l: &mut Loop) {
        match self {
            Post::Boxed(f) => f(l),
            Post::Call(f, args) => f(l, args),
        }
    }
}

/// A loop's address for other threads: [`Remote::post`] runs a function on
/// it. Cheap to clone; it does not keep the loop alive.
#[derive(Clone)]
pub struct Remote {
    pub(super) inbox: Arc<Inbox>,
}

impl Remote {
    /// Runs `f` on the loop, once, from its next iteration on (see the
    /// module documentation). `Error::Pipe` if the loop was dropped: `f` is
    /// dropped here, never run.
    pub fn post(&self, f: impl FnOnce(&mut Loop) + Send + 'static) -> Result<()> {
        self.send(Post::Boxed(Box::new(f)))
    }

    /// Runs `f(loop, args)` on the loop, as [`Remote::post`] does a closure,
    /// without allocating.
    pub fn post_call(&self, f: fn(&mut Loop, [usize; 2]), args: [usize; 2]) -> Result<()> {
        self.send(Post::Call(f, args))
    }

    /// Sends a post made already (as [`Remote::post`]).
    pub fn send(&self, p: Post) -> Result<()> {
        self.inbox.post(p)
    }
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").finish_non_exhaustive()
    }
}

impl Loop {
    /// This loop's address for other threads, to post functions to it.
    pub fn remote(&self) -> Remote {
        Remote { inbox: self.inbox.clone() }
    }

    /// Refuses posts from now on (`Error::Pipe`, as after the loop's drop;
    /// async sends fail and late work completions are ignored the same way)
    /// and runs, now, the posts already queued: every post `post` accepted
    /// runs once. The loop's last step before it is dropped.
    pub fn close_posts(&mut self) {
        let queue = self.inbox.close();
        for post in queue.posts {
            post.run(self);
        }
    }
}
