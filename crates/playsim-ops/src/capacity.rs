//! `playsim capacity`: the most streams (or the highest frame rate) that play with no drop
//! over a window, found by doubling and then bisection, each candidate tried more than once.
//! This is SPECstorage VDA's STREAMS figure, for real playback with real decode.

use std::sync::Arc;
use std::time::Duration;

use playsim_core::{FrameRate, Pacing};
use playsim_engine::LiveCounters;
use playsim_report::{DropCauseName, Drops, Report};

pub use playsim_report::capacity::{Capacity, CapacityBy, FirstDrop, Trial};

use crate::{Error, PlayRequest};

/// Settings of a capacity search.
#[derive(Clone, Debug)]
pub struct CapacityRequest {
    /// The run to scale: its sources, rate and settings.
    pub play: PlayRequest,
    /// What to vary.
    pub by: CapacityBy,
    /// Playback time of each trial (at least 10 s for a result that means something).
    pub window: Duration,
    /// Trials per candidate; a candidate passes only when every trial has no drop.
    pub trials: u32,
    /// The largest candidate tried.
    pub max: u32,
}

/// What the search found, before what was searched is added to it.
#[derive(Debug)]
pub(crate) struct Found {
    best: u32,
    limit: Option<DropCauseName>,
    margin_ms: Option<f64>,
    first_drop: Option<FirstDrop>,
    trials: Vec<Trial>,
}

/// What watches each trial as it starts: the candidate and the trial's live counters (for a
/// progress line or a dashboard), called before its simulation runs.
pub type TrialWatch = Arc<dyn Fn(u32, Arc<LiveCounters>) + Send + Sync>;

/// Runs the search: candidates 1, 2, 4, ... until one fails (or `max` passes), then bisection
/// between the last pass and the first failure. Must run inside a tokio runtime.
pub async fn capacity(request: &CapacityRequest) -> Result<Capacity, Error> {
    capacity_watched(request, None, std::future::pending()).await
}

/// [`capacity`], with `watch` told of each trial as it starts, until `stop` gives a reason to
/// stop (Ctrl-C): the trial in progress is dropped, and the result is what the trials done
/// showed, with that reason ([`Capacity::interrupted`]): the largest candidate that passed,
/// a lower bound, and the cause of the smallest that failed.
pub async fn capacity_watched(
    request: &CapacityRequest,
    watch: Option<TrialWatch>,
    stop: impl std::future::Future<Output = String>,
) -> Result<Capacity, Error> {
    check(request)?;
    if request.by == CapacityBy::Clients {
        return Err(Error::Engine(
            "--by clients varies the clients of a run under mpirun: start it with mpirun, for \
             example mpirun -np 3 playsim capacity --by clients SOURCE"
                .into(),
        ));
    }
    let done: std::sync::Mutex<Vec<Trial>> = std::sync::Mutex::default();
    let searched = search(request.max, request.trials, |candidate| {
        let (done, watch) = (&done, watch.clone());
        async move {
            let trial = run_trial(request, candidate, watch).await?;
            done.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(trial.clone());
            Ok(trial)
        }
    });
    tokio::select! {
        found = searched => Ok(result(request, found?)),
        why = stop => {
            let trials = done.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
            Ok(Capacity { interrupted: Some(why), ..result(request, found_so_far(trials)) })
        }
    }
}

/// What a search stopped part way says: the largest candidate that passed every trial of it
/// (a lower bound of the answer), and the cause of the smallest that failed.
fn found_so_far(trials: Vec<Trial>) -> Found {
    let failed = |candidate: u32| trials.iter().any(|t| t.candidate == candidate && !t.passed);
    let best = trials.iter().filter(|t| !failed(t.candidate)).map(|t| t.candidate).max().unwrap_or(0);
    let first_failed = trials.iter().filter(|t| !t.passed).min_by_key(|t| t.candidate);
    let margin_ms = trials
        .iter()
        .filter(|t| t.candidate == best)
        .map(|t| t.worst_slack_ms)
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.min(s))));
    Found {
        best,
        limit: first_failed.map(|t| main_cause(&t.dropped)),
        margin_ms,
        first_drop: first_failed.and_then(|t| t.first_drop.clone()),
        trials,
    }
}

/// [`capacity`] over any trial: `trial(candidate)` plays the candidate and says how it went
/// (under mpirun, one round of every client). Must run inside a tokio runtime.
pub async fn capacity_with<F, Fut>(request: &CapacityRequest, trial: F) -> Result<Capacity, Error>
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<Trial, Error>>,
{
    check(request)?;
    let found = search(request.max, request.trials, trial).await?;
    Ok(result(request, found))
}

fn check(request: &CapacityRequest) -> Result<(), Error> {
    if request.window < Duration::from_secs(1) || request.trials == 0 || request.max == 0 {
        return Err(Error::Engine(
            "capacity needs a window of at least 1 s, 1 trial and a maximum of 1 or more \
             (for example --window 10s --trials 2 --max 64)"
                .into(),
        ));
    }
    Ok(())
}

/// The search's answer with what was searched: the model the renderers write.
fn result(request: &CapacityRequest, found: Found) -> Capacity {
    Capacity {
        sources: request.play.sources.iter().map(|s| s.to_string_lossy().into_owned()).collect(),
        by: request.by,
        fps: match request.by {
            CapacityBy::Streams => Some(request.play.engine.pacing.to_string()),
            CapacityBy::Fps => None,
            CapacityBy::Clients => Some(request.play.engine.pacing.to_string()),
        },
        window_s: request.window.as_secs_f64(),
        trials_per_candidate: request.trials,
        max: request.max,
        best: found.best,
        limit: found.limit,
        margin_ms: found.margin_ms,
        first_drop: found.first_drop,
        trials: found.trials,
        ..Capacity::new(env!("CARGO_PKG_VERSION"))
    }
}

/// A trial's outcome, as the search sees it.
pub(crate) trait Attempt: Clone {
    /// Whether the candidate held: nothing dropped.
    fn passed(&self) -> bool;
}

impl Attempt for Trial {
    fn passed(&self) -> bool {
        self.passed
    }
}

/// What [`search_by`] found: the largest candidate that passed (0 for none), the first that
/// failed with its failing trial, and every trial in the order run.
pub(crate) struct Searched<T> {
    pub best: u32,
    pub failed_at: Option<(u32, T)>,
    pub trials: Vec<(u32, T)>,
}

/// The search itself, over any trial: doubling from 1 until a candidate fails (or `max`
/// passes), then bisection between the last pass and the first failure. A candidate passes
/// when `trials_per` trials in a row pass.
pub(crate) async fn search_by<T, F, Fut>(
    max: u32,
    trials_per: u32,
    mut trial: F,
) -> Result<Searched<T>, Error>
where
    T: Attempt,
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let mut trials = Vec::new();
    let mut try_candidate = async |candidate: u32, trials: &mut Vec<(u32, T)>| -> Result<Option<T>, Error> {
        for _ in 0..trials_per {
            let result = trial(candidate).await?;
            let passed = result.passed();
            trials.push((candidate, result.clone()));
            if !passed {
                return Ok(Some(result));
            }
        }
        Ok(None)
    };
    let mut failed_at: Option<(u32, T)> = None;
    let mut passed = 0;
    let mut candidate = 1;
    loop {
        match try_candidate(candidate, &mut trials).await? {
            None => passed = candidate,
            Some(failed) => {
                failed_at = Some((candidate, failed));
                break;
            }
        }
        if candidate >= max {
            break;
        }
        candidate = (candidate * 2).min(max);
    }
    if let Some((mut high, mut high_failed)) = failed_at {
        let mut low = passed;
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            match try_candidate(middle, &mut trials).await? {
                None => low = middle,
                Some(failed) => {
                    high = middle;
                    high_failed = failed;
                }
            }
        }
        passed = low;
        failed_at = Some((high, high_failed));
    }
    Ok(Searched { best: passed, failed_at, trials })
}

/// The search over playback trials ([`search_by`]), with the margin of the answer and the
/// cause of the first failure.
pub(crate) async fn search<F, Fut>(max: u32, trials_per: u32, trial: F) -> Result<Found, Error>
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = Result<Trial, Error>>,
{
    let Searched { best, failed_at, trials } = search_by(max, trials_per, trial).await?;
    let trials: Vec<Trial> = trials.into_iter().map(|(_, t)| t).collect();
    let margin_ms = trials
        .iter()
        .filter(|t| t.candidate == best)
        .map(|t| t.worst_slack_ms)
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.min(s))));
    Ok(Found {
        best,
        limit: failed_at.as_ref().map(|(_, failed)| main_cause(&failed.dropped)),
        margin_ms,
        first_drop: failed_at.and_then(|(_, failed)| failed.first_drop),
        trials,
    })
}

/// The request one trial of `candidate` plays: the request's run over the window, looped,
/// with the candidate's streams or rate (with `--by clients`, the request as it is: the
/// candidate is how many clients play it).
pub fn trial_request(request: &CapacityRequest, candidate: u32) -> Result<PlayRequest, Error> {
    let mut play = request.play.clone();
    play.engine.duration = Some(request.window);
    play.engine.frames = None;
    play.engine.loop_playback = true;
    play.rate_from_source = false;
    match request.by {
        CapacityBy::Streams => play.streams_per_source = candidate,
        CapacityBy::Fps => {
            play.engine.pacing =
                Pacing::Rate(FrameRate::new(candidate, 1).map_err(|e| Error::Engine(e.to_string()))?)
        }
        CapacityBy::Clients => {}
    }
    Ok(play)
}

/// Plays one trial of `candidate`, telling `watch` as it starts.
pub(crate) async fn run_trial(
    request: &CapacityRequest,
    candidate: u32,
    watch: Option<TrialWatch>,
) -> Result<Trial, Error> {
    let play = trial_request(request, candidate)?;
    let simulation = crate::prepare(&play).await?;
    if let Some(watch) = watch {
        watch(candidate, simulation.live());
    }
    let report = simulation.run().await;
    if let Some(error) = report.error.as_ref().filter(|_| report.status == playsim_report::RunStatus::Failed)
    {
        return Err(Error::Engine(format!("a trial of {candidate} failed: {error}")));
    }
    Ok(trial_of(candidate, &report))
}

/// A trial's figures from its report (a merged one under mpirun, which also names the
/// client that dropped first).
pub fn trial_of(candidate: u32, report: &Report) -> Trial {
    Trial {
        first_drop: FirstDrop::of(report),
        ..Trial::new(
            candidate,
            report.totals.dropped,
            report.totals.frames_due,
            report.streams.iter().map(|s| s.latency.slack.min_ms).fold(f64::INFINITY, f64::min),
            report.totals.mb_per_s,
        )
    }
}

/// The cause with the most drops, a tie going to the later stage. A trial that failed with no
/// drop had no frame fall due, none read: it is put down to unreadable frames.
fn main_cause(drops: &Drops) -> DropCauseName {
    drops.main_cause().unwrap_or(DropCauseName::Unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trial that passes up to `limit` and drops for decode above it.
    fn fake(limit: u32) -> impl FnMut(u32) -> std::future::Ready<Result<Trial, Error>> {
        move |candidate| {
            let dropped = Drops { decode: u64::from(candidate > limit) * 3, ..Drops::default() };
            std::future::ready(Ok(Trial::new(
                candidate,
                dropped,
                240,
                40.0 / f64::from(candidate),
                100.0 * f64::from(candidate),
            )))
        }
    }

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .map(|rt| rt.block_on(f))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_search_stopped_part_way_gives_the_largest_pass_and_the_smallest_failure() {
        let mut trial = fake(5);
        let mut trials = |candidates: &[u32]| -> Vec<Trial> {
            candidates.iter().map(|&c| run(trial(c)).unwrap_or_else(|e| panic!("{e}"))).collect()
        };
        // 1, 2 and 4 passed, 8 failed, then 6 failed too: at least 4, fewer than 6.
        let found = found_so_far(trials(&[1, 2, 4, 8, 6]));
        assert_eq!((found.best, found.limit), (4, Some(DropCauseName::Decode)));
        assert_eq!(found.margin_ms, Some(10.0));
        assert_eq!(found.trials.len(), 5);
        // A candidate that failed any of its trials is no pass.
        let mut mixed = trials(&[1, 2, 2]);
        mixed[2].passed = false;
        assert_eq!(found_so_far(mixed).best, 1);
        // Stopped in the first trial: nothing known.
        let none = found_so_far(Vec::new());
        assert_eq!((none.best, none.limit, none.margin_ms), (0, None, None));
    }

    #[test]
    fn doubles_then_bisects_to_the_largest_candidate_that_passes() {
        let found = run(search(64, 2, fake(5))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(found.best, 5);
        assert_eq!(found.limit, Some(DropCauseName::Decode));
        let order: Vec<u32> = found.trials.iter().map(|t| t.candidate).collect();
        // 1, 2, 4 pass twice each; 8 fails at once; bisection tries 6 (fails) then 5 (passes).
        assert_eq!(order, vec![1, 1, 2, 2, 4, 4, 8, 6, 5, 5]);
        assert_eq!(found.margin_ms, Some(8.0));
        let request = CapacityRequest {
            play: PlayRequest::new("shot"),
            by: CapacityBy::Streams,
            window: Duration::from_secs(10),
            trials: 2,
            max: 64,
        };
        let json = serde_json::to_value(result(&request, found)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((json["best"].as_u64(), json["limit"].as_str()), (Some(5), Some("decode")));
        assert_eq!(json["trials"].as_array().map(Vec::len), Some(10));
        assert_eq!(json["trials"][6]["candidate"], 8);
        assert_eq!(
            (json["trials"][6]["passed"].as_bool(), json["trials"][6]["dropped"]["decode"].as_u64()),
            (Some(false), Some(3))
        );
        assert_eq!(json["window_s"].as_f64(), Some(10.0));
    }

    #[test]
    fn the_maximum_passing_has_no_limit_and_nothing_passing_is_zero() {
        let all = run(search(4, 1, fake(100))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((all.best, all.limit), (4, None));
        let none = run(search(64, 1, fake(0))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((none.best, none.limit, none.margin_ms), (0, Some(DropCauseName::Decode), None));
    }
}
