//! Per-thread CPU time, the kernel's unit of measured work.
//!
//! The calibration machine has fewer cores than the configurations it emulates (a 4-worker,
//! 4-PS job with 2 cores each needs 16 cores). Wall-clock time on an oversubscribed machine
//! measures the OS scheduler, not the job, so each part is measured as the CPU time of the
//! thread(s) doing it (`CLOCK_THREAD_CPUTIME_ID`): the time it would take on a dedicated core.
use std::sync::{Arc, Mutex};

/// Optional process-wide token serialising measured sections.
///
/// Two threads running at once on SMT siblings or sharing a cache inflate each other's CPU
/// time. With an exclusive token, every measured section (a compute chunk, a PS handler)
/// holds it while running, so sections never overlap and each one's CPU time is what it would
/// take alone on a core. Threads, queues and message passing stay real; only overlap of the
/// measured work is removed. Sections holding it must not block on other sections.
#[derive(Debug, Clone, Default)]
pub struct MeasureToken(Option<Arc<Mutex<()>>>);

impl MeasureToken {
    /// Sections run concurrently (normal training).
    pub fn shared() -> Self {
        MeasureToken(None)
    }

    /// Sections run one at a time (calibration).
    pub fn exclusive() -> Self {
        MeasureToken(Some(Arc::new(Mutex::new(()))))
    }

    /// Runs `f` (holding the token if exclusive) and returns its result and CPU nanoseconds.
    pub fn timed<T>(&self, f: impl FnOnce() -> T) -> (T, u64) {
        let _guard = self
            .0
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
        cpu_timed(f)
    }
}

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
