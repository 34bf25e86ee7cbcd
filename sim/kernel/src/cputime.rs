//! Per-thread CPU time, the kernel's unit of measured work.
//!
//! The calibration machine has fewer cores than the configurations it emulates (a 4-worker,
//! 4-PS job with 2 cores each needs 16 cores). Wall-clock time on an oversubscribed machine
//! measures the OS scheduler, not the job, so each part is measured as the CPU time of the
//! thread(s) doing it (`CLOCK_THREAD_CPUTIME_ID`): the time it would take on a dedicated core.

/// CPU time consumed by the calling thread so far, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and the clock id is a constant supported by
    // Linux and the BSDs; the call writes only into `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// Runs `f` and returns its result with the CPU nanoseconds the calling thread spent in it.
pub fn cpu_timed<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let start = thread_cpu_ns();
    let out = f();
    (out, thread_cpu_ns().saturating_sub(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_takes_cpu_time_and_sleep_does_not() {
        let (_, busy) = cpu_timed(|| (0..2_000_000u64).fold(0u64, |a, b| a.wrapping_add(b * b)));
        let (_, slept) = cpu_timed(|| std::thread::sleep(std::time::Duration::from_millis(20)));
        assert!(busy > 0);
        assert!(slept < 10_000_000, "sleeping used {slept} ns of CPU");
    }
}
