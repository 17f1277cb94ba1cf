//! Processors: how many this thread may run on, and pinning a thread to
//! one of them.

/// The processors the calling thread may run on (its affinity mask), in
/// ascending order; empty if the system does not say.
pub fn allowed() -> Vec<usize> {
    // SAFETY: `cpu_set_t` is plain bits, valid all zero.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable `cpu_set_t` of the size passed; 0 is the
    // calling thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Vec::new();
    }
    // SAFETY: every index is below `CPU_SETSIZE`, the set's bit count.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins the calling thread to processor `cpu`: `Err(errno)` if the system
/// refuses (`EINVAL` for a processor it may not use).
pub fn pin(cpu: usize) -> Result<(), i32> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(libc::EINVAL);
    }
    // SAFETY: as in `allowed`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below `CPU_SETSIZE` (checked), the set's bit count.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a readable `cpu_set_t` of the size passed.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_pinned_runs_on_that_processor_alone() {
        let cpus = allowed();
        assert!(!cpus.is_empty());
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin(last).unwrap();
            assert_eq!(allowed(), vec![last]);
            // SAFETY: no argument; returns the processor or -1.
            assert_eq!(unsafe { libc::sched_getcpu() }, last as i32);
        })
        .join()
        .unwrap();
        assert_eq!(allowed(), cpus, "only that thread was pinned");
        assert_eq!(pin(libc::CPU_SETSIZE as usize), Err(libc::EINVAL));
    }
}
