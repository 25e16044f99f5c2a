//! Labels and number formats shared by the drawn dashboard and its plain-text snapshot.

use std::time::Duration;

use playsim_core::DropCause;

use crate::view::DashboardView;

/// The drop columns: Flame's name for each counter, then playsim's cause (blank where they agree).
pub(crate) fn drop_columns() -> [(&'static str, &'static str); 4] {
    DropCause::ALL.map(|cause| {
        let (flame, word) = (cause.flame_counter(), cause.word());
        (flame, if flame == word { "" } else { word })
    })
}

/// The key hint at the bottom of the dashboard.
pub(crate) const KEY_HINT: &str = "q hides the dashboard, Ctrl-C stops the run";

/// A name as it may be shown on a terminal: control characters (an escape sequence in a file
/// name, a newline) become `?` so that they cannot move the cursor or restyle the screen, and tabs
/// become a space.
pub(crate) fn printable(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' => ' ',
            c if c.is_control() => '?',
            c => c,
        })
        .collect()
}

/// `m:ss`, or `h:mm:ss` from an hour on.
pub(crate) fn clock(d: Duration) -> String {
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// A rate with one decimal, or `-` when it is not a number.
pub(crate) fn one_decimal(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.1}")
    } else {
        "-".to_owned()
    }
}

/// A signed number of milliseconds, `+12.3 ms` or `-0.4 ms`.
pub(crate) fn signed_ms(x: f64) -> String {
    if x.is_finite() {
        format!("{x:+.1} ms")
    } else {
        "- ms".to_owned()
    }
}

/// The header's time line: elapsed, and against the planned length when it is known.
pub(crate) fn progress_label(view: &DashboardView) -> String {
    match view.planned {
        Some(planned) if !planned.is_zero() => {
            let left = planned.saturating_sub(view.elapsed);
            format!(
                "elapsed {} of {} ({:.0} %), {} left",
                clock(view.elapsed),
                clock(planned),
                progress_ratio(view) * 100.0,
                clock(left)
            )
        }
        _ => format!("elapsed {}", clock(view.elapsed)),
    }
}

/// How far through its planned length the run is, from 0 to 1 (0 when the length is unknown).
pub(crate) fn progress_ratio(view: &DashboardView) -> f64 {
    match view.planned {
        Some(planned) if !planned.is_zero() => {
            (view.elapsed.as_secs_f64() / planned.as_secs_f64()).clamp(0.0, 1.0)
        }
        _ => 0.0,
    }
}

/// A stream's recent slack in one line: the newest value, the smallest, and how many were late.
pub(crate) fn slack_summary(slack_ms: &[f64]) -> String {
    let finite: Vec<f64> = slack_ms.iter().copied().filter(|x| x.is_finite()).collect();
    let Some(&last) = finite.last() else {
        return "no frames yet".to_owned();
    };
    let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let late = finite.iter().filter(|&&x| x < 0.0).count();
    format!("last {}, min {}, {late} of {} late", signed_ms(last), signed_ms(min), finite.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_cannot_reach_the_terminal() {
        assert_eq!(printable("a\x1b[2Jb\nc\td"), "a?[2Jb?c d");
        assert_eq!(printable("Ünïcødé 日本"), "Ünïcødé 日本");
    }

    #[test]
    fn clocks_show_hours_only_when_there_are_some() {
        assert_eq!(clock(Duration::from_secs(0)), "0:00");
        assert_eq!(clock(Duration::from_millis(83_900)), "1:23");
        assert_eq!(clock(Duration::from_secs(3600 + 2 * 60 + 3)), "1:02:03");
    }

    #[test]
    fn progress_is_clamped_and_needs_a_plan() {
        let mut view = DashboardView { elapsed: Duration::from_secs(30), ..Default::default() };
        assert_eq!(progress_label(&view), "elapsed 0:30");
        view.planned = Some(Duration::from_secs(120));
        assert_eq!(progress_label(&view), "elapsed 0:30 of 2:00 (25 %), 1:30 left");
        view.elapsed = Duration::from_secs(200);
        assert_eq!(progress_ratio(&view), 1.0);
        assert!(progress_label(&view).ends_with("0:00 left"));
        view.planned = Some(Duration::ZERO);
        assert_eq!(progress_ratio(&view), 0.0);
    }

    #[test]
    fn slack_summary_counts_late_frames_and_skips_nan() {
        assert_eq!(slack_summary(&[]), "no frames yet");
        assert_eq!(slack_summary(&[10.0, -2.5, f64::NAN, 4.0]), "last +4.0 ms, min -2.5 ms, 1 of 3 late");
        assert_eq!(one_decimal(f64::INFINITY), "-");
    }
}
