//! A line on stderr as each step of a long xtask command starts (`bench`'s sections, `fuzz`'s
//! targets): which step of how many, the time so far, and the time left where it can be
//! known: from the steps' fixed lengths (fuzz), or from how long each step took the last time
//! on this machine, kept in a small JSON file (bench).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Steps of one command, announced as they start.
pub struct Progress {
    what: &'static str,
    steps: Vec<String>,
    /// Each step's expected length, where known.
    expected: BTreeMap<String, f64>,
    /// Where each step's length is kept for the next run, when it is.
    history: Option<PathBuf>,
    taken: BTreeMap<String, f64>,
    started: Instant,
    current: Option<(usize, Instant)>,
}

impl Progress {
    /// Progress over `steps`, each expected to take `each` when it is fixed.
    pub fn fixed(what: &'static str, steps: Vec<String>, each: Option<Duration>) -> Progress {
        let expected = match each {
            Some(each) => steps.iter().map(|s| (s.clone(), each.as_secs_f64())).collect(),
            None => BTreeMap::new(),
        };
        Progress {
            what,
            steps,
            expected,
            history: None,
            taken: BTreeMap::new(),
            started: Instant::now(),
            current: None,
        }
    }

    /// Progress over `steps`, expecting each to take what it took last time, as `history`
    /// (a JSON object of seconds by step) says; the lengths of this run are written there.
    pub fn remembered(what: &'static str, steps: Vec<String>, history: PathBuf) -> Progress {
        let expected = std::fs::read_to_string(&history)
            .ok()
            .and_then(|text| serde_json::from_str::<BTreeMap<String, f64>>(&text).ok())
            .unwrap_or_default();
        Progress { history: Some(history), ..Progress::fixed(what, steps, None) }.with_expected(expected)
    }

    fn with_expected(mut self, expected: BTreeMap<String, f64>) -> Progress {
        self.expected = expected;
        self
    }

    /// Step `name` starts: says so, with the time left where it is known.
    pub fn start(&mut self, name: &str) {
        self.finish_current();
        let k = self.steps.iter().position(|s| s == name).unwrap_or(self.steps.len());
        let left: Option<f64> =
            self.steps[k.min(self.steps.len())..].iter().map(|s| self.expected.get(s).copied()).sum();
        let left = match left {
            Some(s) => format!("; about {} left", human(s)),
            None if k > 0 => "; no time left known for every step yet".to_owned(),
            None => String::new(),
        };
        eprintln!(
            "{}: [{}/{}] {name}: starting, {} in{left}",
            self.what,
            k + 1,
            self.steps.len(),
            human(self.started.elapsed().as_secs_f64())
        );
        self.current = Some((k, Instant::now()));
    }

    fn finish_current(&mut self) {
        if let Some((k, since)) = self.current.take() {
            if let Some(name) = self.steps.get(k) {
                self.taken.insert(name.clone(), since.elapsed().as_secs_f64());
            }
        }
    }

    /// The last step ended: keeps every step's length for the next run, where asked.
    pub fn done(&mut self) {
        self.finish_current();
        eprintln!(
            "{}: {} steps in {}",
            self.what,
            self.taken.len(),
            human(self.started.elapsed().as_secs_f64())
        );
        let Some(path) = &self.history else { return };
        let mut kept = self.expected.clone();
        kept.extend(self.taken.clone());
        if let Ok(text) = serde_json::to_string_pretty(&kept) {
            // Losing the history costs the next run its estimate, nothing more.
            let _ = std::fs::write(path, text);
        }
    }
}

/// `95s` as `1m35s`.
fn human(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_known_only_when_every_step_left_is() {
        let dir = tempfile::tempdir().unwrap();
        let history = dir.path().join("times.json");
        std::fs::write(&history, r#"{"a": 10, "b": 20}"#).unwrap();
        let steps = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let mut progress = Progress::remembered("bench", steps, history.clone());
        let left = |p: &Progress, from: usize| -> Option<f64> {
            p.steps[from..].iter().map(|s| p.expected.get(s).copied()).sum()
        };
        assert_eq!(left(&progress, 0), None, "c was never timed");
        assert_eq!(left(&progress, 1), None);
        progress.start("a");
        progress.start("b");
        progress.start("c");
        progress.done();
        let kept: BTreeMap<String, f64> =
            serde_json::from_str(&std::fs::read_to_string(&history).unwrap()).unwrap();
        assert_eq!(kept.keys().collect::<Vec<_>>(), ["a", "b", "c"], "every step's length is kept");
        assert!(kept["a"] < 10.0, "this run's length replaces the last: {kept:?}");
        assert_eq!(human(95.0), "1m35s");
    }
}
