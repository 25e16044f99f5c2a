//! Placeholder, filled in by issue 8's work.

use anyhow::Result;

use crate::bench::{Bench, BenchRow};

pub fn run(_bench: &Bench) -> Result<Vec<BenchRow>> {
    Ok(Vec::new())
}
