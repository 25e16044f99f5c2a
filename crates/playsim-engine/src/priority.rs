//! The presentation thread's scheduling priority: the one place the engine calls the OS
//! scheduler directly (FFI).

/// The real-time priority asked for: low among real-time threads (1..=99), so that the
/// kernel's own real-time threads still come first, yet above every normal thread.
const PRESENT_RT_PRIORITY: i32 = 10;
/// The fallback when real-time scheduling is refused: a nice value.
const PRESENT_NICE: i32 = -10;

/// How the presentation thread is scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PresentPriority {
    /// SCHED_FIFO at [`PRESENT_RT_PRIORITY`]: it preempts any normal thread the moment it wakes.
    RealTime,
    /// SCHED_OTHER at nice [`PRESENT_NICE`]: favoured, but it can wait behind busy threads.
    Nice,
    /// Neither was allowed (no root, no CAP_SYS_NICE, no RLIMIT_RTPRIO): the normal priority.
    Normal,
}

impl PresentPriority {
    /// Its name in the report: "real-time", "nice -10" or "normal".
    pub fn name(self) -> &'static str {
        match self {
            PresentPriority::RealTime => "real-time",
            PresentPriority::Nice => "nice -10",
            PresentPriority::Normal => "normal",
        }
    }
}

/// Raises the calling thread's priority as far as the system allows, and says how far.
///
/// The thread only sleeps, spins at most `PreciseClock`'s spin window (150 µs) before a
/// deadline, and decides a frame, so a real-time priority cannot starve the machine.
pub fn raise_presentation_thread() -> PresentPriority {
    let param = libc::sched_param { sched_priority: PRESENT_RT_PRIORITY };
    // SAFETY: `param` is a valid, initialised sched_param that outlives the call; pid 0 names
    // the calling thread, and the call reads nothing else.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        return PresentPriority::RealTime;
    }
    match rustix::process::setpriority_process(Some(rustix::thread::gettid()), PRESENT_NICE) {
        Ok(()) => PresentPriority::Nice,
        Err(_) => PresentPriority::Normal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's scheduling policy.
    fn policy() -> i32 {
        // SAFETY: sched_getscheduler only reads the policy of the calling thread (pid 0).
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn a_thread_gets_the_priority_it_reports_and_no_other_thread_does() {
        let (priority, raised_policy) =
            std::thread::spawn(|| (raise_presentation_thread(), policy())).join().expect("the thread ran");
        let expected =
            if priority == PresentPriority::RealTime { libc::SCHED_FIFO } else { libc::SCHED_OTHER };
        assert_eq!(raised_policy, expected, "{priority:?}");
        assert_eq!(policy(), libc::SCHED_OTHER, "only the spawned thread was raised");
    }
}
