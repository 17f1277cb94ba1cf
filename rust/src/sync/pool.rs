//! A pool of threads running jobs in submission order: plain jobs (C's
//! `cot_pool_submit`) and the work requests of loops that share it.
//!
//! Threads start lazily, one per job submitted while none is idle, up to the
//! pool's size. A job is called once: with `Ok` on a pool thread, or with
//! `Error::Canceled` when taken out before it started (`cancel`, `stop`; then
//! on the thread that took it out). `stop` refuses new jobs, cancels the
//! queued ones, waits for the running ones and joins the threads (all but
//! the calling one, when a job stops its own pool). Dropping the last
//! `Arc<Pool>` without `stop` lets the threads finish the queue, then end.
//!
//! A pool thread records which pool it serves in a thread-local, for
//! `is_current`.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// A job: called once, with `Ok` on a pool thread or `Err(Error::Canceled)`
/// if it was taken out before it started.
pub enum Job {
    /// A closure (one allocation).
    Boxed(Box<dyn FnOnce(Result<()>) + Send>),
    /// A function and the words it works on, stored in the queue itself: no
    /// allocation (C's jobs: a function pointer and its data, or a copy of
    /// a small object). The words must be safe to hand to another thread
    /// (the submitter's promise).
    Plain {
        /// Called as `call(a, &mut words, status)`.
        call: fn(usize, &mut Words, Result<()>),
        /// A word for `call` (C's function pointer).
        a: usize,
        /// The data, in the queue.
        words: Words,
    },
}

/// How many words a plain job carries in the queue.
pub const JOB_WORDS: usize = 6;

/// The words of a plain job.
pub type Words = [usize; JOB_WORDS];

impl Job {
    /// A job running `f`.
    pub fn new(f: impl FnOnce(Result<()>) + Send + 'static) -> Job {
        Job::Boxed(Box::new(f))
    }

    /// Calls it, once.
    pub fn run(self, status: Result<()>) {
        match self {
            Job::Boxed(f) => f(status),
            Job::Plain { call, a, mut words } => call(a, &mut words, status),
        }
    }
}

/// A job the pool refused, given back uncalled.
pub struct Rejected {
    /// `Error::Canceled` (the pool is stopped) or `Error::NoMem` (no thread
    /// could be started).
    pub error: Error,
    /// The job.
    pub job: Job,
}

#[derive(Default)]
struct Queue {
    /// Queued jobs with their tickets, in ticket order.
    jobs: VecDeque<(u64, Job)>,
    next_ticket: u64,
    /// Threads started and not ended.
    threads: usize,
    /// Threads waiting for a job.
    idle: usize,
    /// Wakeups sent to idle threads and not yet taken: a submit wakes a
    /// thread only if an idle one is left unwoken (std's notify is a futex
    /// syscall even when it wakes nobody).
    wakes: usize,
    /// Handles of the threads, for `stop` to join.
    handles: Vec<JoinHandle<()>>,
    /// The last `Pool` is gone: end once the queue is empty.
    closed: bool,
    /// `stop` was called: refuse jobs, end once the running ones returned.
    stopped: bool,
}

/// What the pool's threads share.
struct Shared {
    queue: Mutex<Queue>,
    /// A job was queued, or the pool closed or stopped.
    ready: Condvar,
    /// A thread ended.
    exited: Condvar,
    size: usize,
}

thread_local! {
    /// The `Shared` of the pool this thread serves (its address), or 0.
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// A pool of threads running jobs in submission order. See the [module
/// documentation](self).
pub struct Pool {
    shared: Arc<Shared>,
}

impl Pool {
    /// A pool of `size` threads (at least 1), started lazily.
    pub fn new(size: usize) -> Arc<Pool> {
        let shared = Shared {
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
            exited: Condvar::new(),
            size: size.max(1),
        };
        Arc::new(Pool { shared: Arc::new(shared) })
    }

    /// The default size: the number of cores (4 if unknown).
    pub fn default_size() -> usize {
        std::thread::available_parallelism().map_or(4, |n| n.get())
    }

    /// The number of threads it runs at most.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// Queues `job`; returns its ticket (for `cancel`). Refused once the pool
    /// is stopped, or if no thread runs and none can be started.
    pub fn submit(&self, job: Job) -> std::result::Result<u64, Rejected> {
        let sh = &self.shared;
        let mut q = sh.lock();
        if q.stopped {
            return Err(Rejected { error: Error::Canceled, job });
        }
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.jobs.push_back((ticket, job));
        if q.idle > q.wakes {
            q.wakes += 1;
            drop(q);
            sh.ready.notify_one();
            return Ok(ticket);
        }
        if q.idle > 0 || q.threads >= sh.size {
            // A woken thread or a busy one takes it: they empty the queue
            // before they wait.
            return Ok(ticket);
        }
        let worker = sh.clone();
        let spawned = std::thread::Builder::new().name("cothread-pool".into()).spawn(move || {
            // Signals go to the threads that want them: a loop watching one
            // blocks it in its own thread only, so a pool thread that did
            // not block it would receive it (and die of it).
            crate::util::os::block_all_signals();
            worker.work()
        });
        match spawned {
            Ok(h) => {
                q.threads += 1;
                q.handles.push(h);
                Ok(ticket)
            }
            // Another thread will run it.
            Err(_) if q.threads > 0 => Ok(ticket),
            Err(_) => {
                let (_, job) = q.jobs.pop_back().expect("the job just queued");
                Err(Rejected { error: Error::NoMem, job })
            }
        }
    }

    /// Takes the queued job `ticket` out if it has not started; the caller
    /// calls it with `Error::Canceled`.
    pub fn cancel(&self, ticket: u64) -> Option<Job> {
        let mut q = self.shared.lock();
        let at = q.jobs.binary_search_by_key(&ticket, |(t, _)| *t).ok()?;
        q.jobs.remove(at).map(|(_, job)| job)
    }

    /// Whether jobs wait to start.
    pub fn any_enqueued(&self) -> bool {
        !self.shared.lock().jobs.is_empty()
    }

    /// Whether the calling thread is one of this pool's.
    pub fn is_current(&self) -> bool {
        self.shared.is_current()
    }

    /// Stops the pool: refuses new jobs, calls each queued job with
    /// `Error::Canceled` (here, in order), waits for the running jobs and
    /// joins the threads. Called from one of the pool's threads (by a job), it
    /// does the same except joining that thread, which ends once its job
    /// returned. Calling it again waits for the threads again (not from a
    /// pool thread); it cancels nothing more.
    pub fn stop(&self) {
        let sh = &self.shared;
        let (jobs, handles) = {
            let mut q = sh.lock();
            q.stopped = true;
            (std::mem::take(&mut q.jobs), std::mem::take(&mut q.handles))
        };
        sh.ready.notify_all();
        for (_, job) in jobs {
            job.run(Err(Error::Canceled));
        }
        join_others(handles);
        if !sh.is_current() {
            let mut q = sh.lock();
            while q.threads > 0 {
                q = sh.exited.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

impl Drop for Pool {
    /// Lets the threads finish the queued jobs, then waits for them to end
    /// (unless dropped by a job on one of them): nothing of the pool runs
    /// after its last handle is gone, so thread-local state is freed before,
    /// say, the process exits.
    fn drop(&mut self) {
        let handles = {
            let mut q = self.shared.lock();
            q.closed = true;
            std::mem::take(&mut q.handles)
        };
        self.shared.ready.notify_all();
        if !self.shared.is_current() {
            join_others(handles);
        }
    }
}

/// Joins the threads of `handles` but the calling one (a job of the pool
/// stopping or dropping it: its thread ends once the job returned).
fn join_others(handles: Vec<JoinHandle<()>>) {
    let me = std::thread::current().id();
    for h in handles {
        if h.thread().id() != me {
            let _ = h.join(); // a panicking job ended its thread: nothing to do
        }
    }
}

/// Counts a pool thread out however it ends (a job may panic).
struct Exit<'a>(&'a Shared);

impl Drop for Exit<'_> {
    fn drop(&mut self) {
        self.0.lock().threads -= 1;
        self.0.exited.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves plain data behind: keep going.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_current(&self) -> bool {
        CURRENT.with(Cell::get) == self as *const Shared as usize
    }

    /// A pool thread: runs jobs until the pool is stopped, or closed and the
    /// queue empty.
    fn work(self: Arc<Shared>) {
        CURRENT.with(|c| c.set(Arc::as_ptr(&self) as usize));
        let _exit = Exit(&self);
        let mut q = self.lock();
        loop {
            if let Some((_, job)) = q.jobs.pop_front() {
                drop(q);
                job.run(Ok(()));
                q = self.lock();
            } else if q.closed || q.stopped {
                return;
            } else {
                q.idle += 1;
                loop {
                    q = self.ready.wait(q).unwrap_or_else(|e| e.into_inner());
                    if q.wakes > 0 {
                        q.wakes -= 1;
                        break;
                    }
                    // Spurious, or a job left for any thread, or the end.
                    if !q.jobs.is_empty() || q.closed || q.stopped {
                        break;
                    }
                }
                q.idle -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    #[test]
    fn jobs_from_several_threads_all_run_on_pool_threads() {
        let pool = Pool::new(3);
        let ran = Arc::new(AtomicUsize::new(0));
        let submitters: Vec<_> = (0..4)
            .map(|_| {
                let (pool, ran) = (pool.clone(), ran.clone());
                std::thread::spawn(move || {
                    for _ in 0..250 {
                        let (p, r) = (pool.clone(), ran.clone());
                        let job = Job::new(move |s| {
                            assert_eq!(s, Ok(()));
                            assert!(p.is_current());
                            r.fetch_add(1, Ordering::Relaxed);
                        });
                        assert!(pool.submit(job).is_ok());
                    }
                })
            })
            .collect();
        for t in submitters {
            t.join().unwrap();
        }
        assert!(!pool.is_current());
        while pool.any_enqueued() || ran.load(Ordering::Relaxed) < 1000 {
            std::thread::yield_now();
        }
        pool.stop();
        assert_eq!(ran.load(Ordering::Relaxed), 1000);
        assert_eq!(pool.shared.lock().threads, 0, "joined");
    }

    #[test]
    fn stop_cancels_queued_jobs_in_order_and_refuses_new_ones() {
        let pool = Pool::new(1);
        let (started_tx, started) = mpsc::channel();
        let (go, wait) = mpsc::channel::<()>();
        pool.submit(Job::new(move |s| {
            assert_eq!(s, Ok(()));
            started_tx.send(()).unwrap();
            wait.recv().unwrap();
        }))
        .ok()
        .unwrap();
        started.recv().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let tickets: Vec<u64> = (0..3)
            .map(|i| {
                let log = log.clone();
                pool.submit(Job::new(move |s| log.lock().unwrap().push((i, s)))).ok().unwrap()
            })
            .collect();
        assert!(pool.any_enqueued());
        let cancelled = pool.cancel(tickets[1]).expect("queued");
        assert!(pool.cancel(tickets[1]).is_none());
        cancelled.run(Err(Error::Canceled));
        let stopper = {
            let pool = pool.clone();
            std::thread::spawn(move || pool.stop())
        };
        while pool.any_enqueued() {
            std::thread::yield_now();
        }
        go.send(()).unwrap();
        stopper.join().unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(log, [(1, Err(Error::Canceled)), (0, Err(Error::Canceled)), (2, Err(Error::Canceled))]);
        let r = pool.submit(Job::new(|_| panic!("refused jobs are not called")));
        assert!(matches!(r, Err(Rejected { error: Error::Canceled, .. })));
        pool.stop(); // again: nothing to do
    }

    #[test]
    fn a_job_may_stop_its_own_pool() {
        let pool = Pool::new(2);
        let (done_tx, done) = mpsc::channel();
        let p = pool.clone();
        pool.submit(Job::new(move |_| {
            p.stop();
            done_tx.send(p.is_current()).unwrap();
        }))
        .ok()
        .unwrap();
        assert!(done.recv().unwrap());
        pool.stop(); // from outside: waits for the thread that stopped it
        assert_eq!(pool.shared.lock().threads, 0);
    }

    #[test]
    fn dropping_the_last_handle_finishes_the_queue() {
        let pool = Pool::new(1);
        let (tx, rx) = mpsc::channel();
        for i in 0..10 {
            let tx = tx.clone();
            pool.submit(Job::new(move |s| tx.send((i, s)).unwrap())).ok().unwrap();
        }
        drop(pool);
        let got: Vec<_> = (0..10).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(got, (0..10).map(|i| (i, Ok(()))).collect::<Vec<_>>(), "in submission order");
    }
}
