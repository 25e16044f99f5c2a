//! The dashboard as plain text: the snapshot printed to the normal screen when the dashboard
//! stops, so that the last counters it showed stay in the terminal's scrollback.

use ratatui::text::Span;

use crate::fmt::{drop_columns, one_decimal, printable, progress_label, slack_summary};
use crate::view::{DashboardView, Drops};

/// The view as lines of plain text (no colour, no escape sequences), ending in a newline:
/// the same counters as the dashboard, as aligned tables.
///
/// ```
/// use playsim_dashboard::{plain_text, DashboardView, Drops, StreamView};
///
/// let view = DashboardView {
///     title: "playsim play /media/seq".into(),
///     streams: vec![StreamView {
///         name: "A".into(),
///         presented: 240,
///         dropped: Drops { storage: 3, ..Drops::default() },
///         ..StreamView::default()
///     }],
///     ..DashboardView::default()
/// };
/// let text = plain_text(&view);
/// assert!(text.starts_with("playsim play /media/seq\n"));
/// assert!(text.contains("video disk"));
/// ```
pub fn plain_text(view: &DashboardView) -> String {
    plain_text_within(view, usize::MAX)
}

/// [`plain_text`] with the tables' lines kept within `width` cells where cutting the names'
/// column (down to 8 cells, ending in `…`) is enough: the snapshot a dashboard prints on its
/// terminal.
pub(crate) fn plain_text_within(view: &DashboardView, width: usize) -> String {
    let mut out = String::new();
    out.push_str(&printable(&view.title));
    out.push('\n');
    out.push_str(&progress_label(view));
    out.push('\n');

    if !view.streams.is_empty() {
        let mut head = vec!["stream".to_owned(), "presented".to_owned()];
        let mut causes = vec![String::new(), String::new()];
        for (flame, cause) in drop_columns() {
            head.push(flame.to_owned());
            causes.push(cause.to_owned());
        }
        head.extend(["MB/s".to_owned(), "fps".to_owned()]);
        causes.extend([String::new(), String::new()]);
        let mut rows: Vec<Vec<String>> = view
            .streams
            .iter()
            .map(|s| counters(printable(&s.name), s.presented, &s.dropped, s.mb_per_s, s.fps))
            .collect();
        if view.streams.len() > 1 {
            let s = &view.streams;
            let dropped: Drops = s.iter().map(|s| s.dropped).sum();
            let presented = s.iter().map(|s| s.presented).fold(0, u64::saturating_add);
            let mb = s.iter().map(|s| s.mb_per_s).sum();
            let fps = s.iter().map(|s| s.fps).sum();
            rows.push(counters("all".to_owned(), presented, &dropped, mb, fps));
        }
        out.push('\n');
        table(&mut out, &[head, causes], &rows, &[], width);

        out.push('\n');
        let buffers: Vec<Vec<String>> = view
            .streams
            .iter()
            .map(|s| {
                vec![printable(&s.name), format!("{}/{}", s.buffered, s.window), slack_summary(&s.slack_ms)]
            })
            .collect();
        let head = ["stream", "buffered", "slack to deadline"].map(str::to_owned).to_vec();
        table(&mut out, &[head], &buffers, &[2], width);
    }

    if !view.stages.is_empty() {
        let head = ["stage", "CPU %", "p99 ms"].map(str::to_owned).to_vec();
        let rows: Vec<Vec<String>> = view
            .stages
            .iter()
            .map(|s| {
                vec![
                    printable(&s.name),
                    one_decimal(s.cpu_percent),
                    s.p99_ms.map_or_else(|| "-".to_owned(), one_decimal),
                ]
            })
            .collect();
        out.push('\n');
        table(&mut out, &[head], &rows, &[], width);
    }

    if !view.clients.is_empty() {
        let mut head = vec!["rank host".to_owned(), "presented".to_owned()];
        head.extend(drop_columns().map(|(flame, _)| flame.to_owned()));
        head.extend(["MB/s".to_owned(), "fps".to_owned()]);
        let rows: Vec<Vec<String>> = view
            .clients
            .iter()
            .map(|c| {
                let name = format!("{:>4} {}", c.rank, printable(&c.host));
                counters(name, c.presented, &c.dropped, c.mb_per_s, c.fps)
            })
            .collect();
        out.push('\n');
        table(&mut out, &[head], &rows, &[], width);
    }

    if let Some(status) = &view.status {
        out.push('\n');
        out.push_str(&printable(status));
        out.push('\n');
    }
    out
}

fn counters(name: String, presented: u64, dropped: &Drops, mb: f64, fps: f64) -> Vec<String> {
    let mut row = vec![name, presented.to_string()];
    row.extend(dropped.by_cause().iter().map(u64::to_string));
    row.extend([one_decimal(mb), one_decimal(fps)]);
    row
}

/// Appends an aligned table: the first column and the `text` columns on the left, the others
/// (numbers) on the right, two spaces between columns, widths measured in terminal cells (a CJK
/// name takes two a character). The first column is cut to keep the lines within `max_width`
/// when it can be, down to 8 cells.
fn table(out: &mut String, head: &[Vec<String>], rows: &[Vec<String>], text: &[usize], max_width: usize) {
    let all = || head.iter().chain(rows);
    let n_columns = all().map(Vec::len).max().unwrap_or(0);
    let mut widths: Vec<usize> =
        (0..n_columns).map(|i| all().filter_map(|r| r.get(i)).map(|s| width(s)).max().unwrap_or(0)).collect();
    let total = widths.iter().sum::<usize>() + 2 * n_columns.saturating_sub(1);
    if let Some(first) = widths.first_mut() {
        let over = total.saturating_sub(max_width);
        *first = first.saturating_sub(over).max((*first).min(8));
    }
    for row in all() {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            let cell = if i == 0 { cut(cell, *w) } else { cell.clone() };
            let pad = " ".repeat(w.saturating_sub(width(&cell)));
            if i > 0 {
                line.push_str("  ");
            }
            if i == 0 || text.contains(&i) {
                line.push_str(&cell);
                line.push_str(&pad);
            } else {
                line.push_str(&pad);
                line.push_str(&cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// Terminal cells taken by `s`.
fn width(s: &str) -> usize {
    Span::raw(s).width()
}

/// `s` cut to `max` cells, the cut marked with `…`.
fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let mut kept = String::new();
    for c in s.chars() {
        let mut next = kept.clone();
        next.push(c);
        if width(&next) + 1 > max {
            break;
        }
        kept = next;
    }
    kept.push('…');
    kept
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::testutil::sample_view;
    use crate::view::ClientView;

    #[test]
    fn the_snapshot_has_every_counter_aligned_under_its_heading() {
        let text = plain_text(&sample_view());
        let expected = "\
playsim play nfs://host/export/seq  DPX 4K 24 fps  2 streams
elapsed 1:23 of 5:00 (28 %), 3:37 left

stream  presented  video disk  CPU/GPU  broadcast  unreadable    MB/s   fps
                      storage   decode     output
A            1992           3        0          1           0  1185.2  24.0
B            1990           0        7          0           2  1190.4  23.9
all          3982           3        7          1           2  2375.6  47.9

stream  buffered  slack to deadline
A            6/8  last +12.0 ms, min -3.5 ms, 1 of 5 late
B            1/8  last +2.0 ms, min +2.0 ms, 0 of 3 late

stage   CPU %  p99 ms
read     12.5     8.1
decode  180.0    35.2
output    4.0       -

matrix: dpx-4k @ 24 fps, trial 3 of 41, 2 streams
";
        assert_eq!(text, expected);
    }

    #[test]
    fn clients_appear_only_when_there_are_some() {
        let mut view = sample_view();
        assert!(!plain_text(&view).contains("rank host"));
        view.clients = vec![
            ClientView {
                rank: 0,
                host: "node-a".into(),
                presented: 100,
                dropped: Drops { storage: 4, ..Drops::default() },
                fps: 24.0,
                mb_per_s: 1200.0,
            },
            ClientView { rank: 1, host: "node-b".into(), presented: 90, ..ClientView::default() },
        ];
        let text = plain_text(&view);
        assert!(text.contains("\nrank host    presented  video disk"), "{text}");
        assert!(text.contains("\n   0 node-a        100           4"), "{text}");
        assert!(text.contains("\n   1 node-b         90           0"), "{text}");
    }

    #[test]
    fn an_empty_view_still_says_how_long_it_ran_and_odd_names_are_made_printable() {
        let view = DashboardView {
            title: "t\x1b[2J".into(),
            elapsed: Duration::from_secs(5),
            ..DashboardView::default()
        };
        assert_eq!(plain_text(&view), "t?[2J\nelapsed 0:05\n");
        let mut view = sample_view();
        view.streams[0].name = "日本\x07".into();
        let text = plain_text(&view);
        assert!(!text.contains('\x07'));
        // Two cells a character: the columns still line up.
        assert!(text.contains("\n日本?        1992"), "{text}");
    }

    #[test]
    fn long_names_are_cut_to_fit_a_terminal_and_numbers_never_are() {
        let mut view = sample_view();
        view.streams[0].name = "A /mnt/nfs/seq/frame.%07d.dpx".into();
        view.streams[1].name = "B 日本語のクリップ/frame.%07d.dpx".into();
        let text = plain_text_within(&view, 80);
        let table = text.lines().skip(3).take(5).collect::<Vec<_>>();
        assert_eq!(
            table,
            [
                "stream       presented  video disk  CPU/GPU  broadcast  unreadable    MB/s   fps",
                "                           storage   decode     output",
                "A /mnt/nfs…       1992           3        0          1           0  1185.2  24.0",
                "B 日本語の…       1990           0        7          0           2  1190.4  23.9",
                "all               3982           3        7          1           2  2375.6  47.9",
            ]
        );
        assert!(table.iter().all(|l| width(l) <= 80));
        assert!(plain_text(&view).contains("\nA /mnt/nfs/seq/frame.%07d.dpx  "), "uncut by default");
        // Too narrow even with the names at 8 cells: the numbers stay whole.
        let narrow = plain_text_within(&view, 20);
        assert!(narrow.contains("\nA /mnt/…       1992           3"), "{narrow}");
    }
}
