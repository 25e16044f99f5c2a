//! A criterion measurement of the process's CPU time (`CLOCK_PROCESS_CPUTIME_ID`), for rows
//! whose anchor is CPU time: on a shared machine wall time also counts the time other
//! processes held the core, and a library's worker threads run off the timing thread.

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use rustix::time::{clock_gettime, ClockId};

/// CPU time of every thread of the process, formatted as durations like [`WallTime`].
pub struct ProcessCpuTime {
    wall: WallTime,
}

impl Default for ProcessCpuTime {
    fn default() -> ProcessCpuTime {
        ProcessCpuTime { wall: WallTime }
    }
}

fn process_cpu() -> Duration {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

impl Measurement for ProcessCpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        process_cpu()
    }
    fn end(&self, start: Duration) -> Duration {
        process_cpu().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        self.wall.formatter()
    }
}
