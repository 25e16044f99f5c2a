//! Draws one [`DashboardView`] into a ratatui frame: header, streams, buffers and slack, stages,
//! clients, status and key hint, fitted to whatever size the terminal has.
//!
//! The layout is computed by hand, top to bottom in order of importance, so that a small terminal
//! loses the least useful lines first (the clients, then the stages, then the buffers) instead of
//! having every section squeezed by a constraint solver: a section without room for its header
//! and a row or two is left out, and a table with more rows than room ends in a `+N more` row.
//! Narrow terminals lose whole columns, the drop counters last, rather than show numbers cut
//! short (a right-aligned `1185.2` cut to `85.2` would be a wrong number, not a short one).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{
    Block, Borders, Cell, LineGauge, Paragraph, Row, Sparkline, SparklineBar, Table, Widget,
};
use ratatui::Frame;

use crate::fmt::{
    drop_columns, one_decimal, printable, progress_label, progress_ratio, signed_ms, slack_summary, KEY_HINT,
};
use crate::view::{ClientView, DashboardView, Drops, StageView, StreamView};

/// Draws `view` over the whole of `frame`.
///
/// Any size works: what does not fit is cut, from the least important section up, and nothing
/// panics, down to a terminal of one cell (or none).
pub fn draw(frame: &mut Frame, view: &DashboardView) {
    let area = frame.area();
    render(view, area, frame.buffer_mut());
}

/// Draws `view` into `area` of `buf`: [`draw`] without a [`Frame`], for a caller that lays out a
/// screen of its own.
pub fn render(view: &DashboardView, area: Rect, buf: &mut Buffer) {
    let mut rest = area.intersection(buf.area);
    if rest.is_empty() {
        return;
    }
    let title = take_top(&mut rest, 1);
    let hint = take_bottom(&mut rest, 1);
    let status = view.status.as_ref().map(|s| (s, take_bottom(&mut rest, 1)));
    let progress = take_top(&mut rest, 1);

    Paragraph::new(printable(&view.title))
        .style(Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED))
        .render(title, buf);
    Paragraph::new(view.key_hint.as_deref().map_or(KEY_HINT.into(), printable))
        .style(dim())
        .render(hint, buf);
    if let Some((text, area)) = status {
        Paragraph::new(printable(text)).style(Style::new().fg(Color::Yellow)).render(area, buf);
    }
    render_progress(view, progress, buf);

    // The sections, most important first; each takes what it wants of what is left.
    let streams = &view.streams;
    // A rule and the two-line header, then a row a stream (or one to say there is none yet) and
    // a total when there are several.
    let n_rows = streams.len().max(1) + usize::from(streams.len() > 1);
    let n_buffers = usize::from(!streams.is_empty()) + streams.len();
    let n_stages = if view.stages.is_empty() { 0 } else { 2 + view.stages.len() };
    let n_clients = if view.clients.is_empty() { 0 } else { 2 + view.clients.len() };
    // Lines left over once every section has all its rows make the sparklines taller, up to
    // three lines (24 steps rather than 8).
    let spare = usize::from(rest.height).saturating_sub(3 + n_rows + n_buffers + n_stages + n_clients);
    let spark_height = (1 + spare / streams.len().max(1)).min(3);
    if let Some(area) = take_section(&mut rest, 3, n_rows) {
        render_streams(streams, area, buf);
    }
    if !streams.is_empty() {
        if let Some(area) = take_section(&mut rest, 1, streams.len() * spark_height) {
            render_buffers(streams, spark_height as u16, area, buf);
        }
    }
    if !view.stages.is_empty() {
        if let Some(area) = take_section(&mut rest, 2, view.stages.len()) {
            render_stages(&view.stages, area, buf);
        }
    }
    if !view.clients.is_empty() {
        if let Some(area) = take_section(&mut rest, 2, view.clients.len()) {
            render_clients(&view.clients, area, buf);
        }
    }
}

/// The widest a names' column grows.
const MAX_NAME_WIDTH: usize = 40;

/// The counter columns after the name: presented, the four drop causes (as wide as Flame's
/// labels), MB/s and fps.
const COUNTER_WIDTHS: [u16; 7] = [9, 10, 7, 9, 10, 7, 5];
/// The order in which a narrow terminal keeps them: the drops first, then presented, fps, MB/s.
const COUNTER_PRIORITY: [usize; 7] = [1, 2, 3, 4, 0, 6, 5];

/// The elapsed time, and a gauge of the planned length when there is one.
fn render_progress(view: &DashboardView, area: Rect, buf: &mut Buffer) {
    let label = progress_label(view);
    if view.planned.is_some_and(|p| !p.is_zero()) {
        LineGauge::default()
            .ratio(progress_ratio(view))
            .label(label)
            .filled_symbol("█")
            .unfilled_symbol("░")
            .filled_style(Style::new().fg(Color::Cyan))
            .unfilled_style(Style::new().fg(Color::DarkGray))
            .render(area, buf);
    } else {
        Paragraph::new(label).render(area, buf);
    }
}

/// The per-stream counters: presented, Flame's four drop counters, data and frame rate.
fn render_streams(streams: &[StreamView], area: Rect, buf: &mut Buffer) {
    let inner = rule(" streams ", area, buf);
    let names: Vec<String> = streams.iter().map(|s| printable(&s.name)).collect();
    let columns = Columns::fit(&names, "stream", &COUNTER_WIDTHS, &COUNTER_PRIORITY, inner.width);

    let mut header = vec![Cell::from("stream"), right_cell(vec!["presented"])];
    for (flame, cause) in drop_columns() {
        header.push(right_cell(vec![flame, cause]));
    }
    header.extend([right_cell(vec!["MB/s"]), right_cell(vec!["fps"])]);
    let header = columns.row(header).height(2).style(bold());

    let room = usize::from(inner.height.saturating_sub(2));
    let with_total = streams.len() > 1;
    let room_for_streams = room.saturating_sub(usize::from(with_total));
    let (shown, more) = fit(streams.len(), room_for_streams);
    let mut rows: Vec<Row> = streams
        .iter()
        .zip(&names)
        .take(shown)
        .map(|(s, name)| columns.row(counter_cells(name.clone(), s.presented, &s.dropped, s.mb_per_s, s.fps)))
        .collect();
    // With one line for the streams and the total, the total is the one worth having.
    if more > 0 && room_for_streams > 0 {
        rows.push(columns.more_row(more, "streams"));
    }
    if streams.is_empty() {
        rows.push(Row::new([Cell::from("no streams yet").style(dim())]));
    }
    if with_total && room > 0 {
        let dropped: Drops = streams.iter().map(|s| s.dropped).sum();
        let presented = streams.iter().map(|s| s.presented).fold(0, u64::saturating_add);
        let mb = streams.iter().map(|s| s.mb_per_s).sum();
        let fps = streams.iter().map(|s| s.fps).sum();
        let total = counter_cells("all".to_owned(), presented, &dropped, mb, fps);
        rows.push(columns.row(total).style(bold()));
    }
    columns.table(rows, header).render(inner, buf);
}

/// A line (or `height` lines) a stream: its read-ahead buffer against the window, and its
/// recent slack.
fn render_buffers(streams: &[StreamView], height: u16, area: Rect, buf: &mut Buffer) {
    const MIN_SPARK: usize = 16;
    let inner = rule(" buffered / window · slack to deadline, newest right, ! late ", area, buf);
    let height = height.max(1);
    let (shown, more) = fit(streams.len(), usize::from(inner.height / height));
    let widest = streams.iter().map(|s| Span::raw(printable(&s.name)).width()).max();
    // A quarter of the width at most, the rest is for the sparklines.
    let most = usize::from(inner.width / 4).max(12);
    let name_width = widest.unwrap_or(0).clamp(6, MAX_NAME_WIDTH).min(most) as u16;
    let digits = streams.iter().map(|s| s.window.max(s.buffered).to_string().len()).max();
    let digits = digits.unwrap_or(1);
    let gauge_width = (2 * digits + 1 + 1 + 12) as u16;
    // The same summary for every stream, the longest that leaves the sparklines some room, so
    // that the sparklines line up.
    let summaries: Vec<[String; 2]> =
        streams.iter().map(|s| [slack_summary(&s.slack_ms), short_summary(&s.slack_ms)]).collect();
    let for_slack = usize::from(inner.width.saturating_sub(name_width + 1 + gauge_width + 2));
    let widest = |kind: usize| summaries.iter().map(|s| Span::raw(s[kind].as_str()).width()).max();
    let kind = (0..2).find(|&kind| for_slack >= MIN_SPARK + 1 + widest(kind).unwrap_or(0));
    let summary_width = kind.and_then(widest).unwrap_or(0) as u16;
    for (i, stream) in streams.iter().take(shown).enumerate() {
        let mut block = Rect { y: inner.y + i as u16 * height, height, ..inner };
        let mut line = |width: u16| Rect { height: 1, ..take_left(&mut block, width) };
        Paragraph::new(printable(&stream.name)).render(line(name_width), buf);
        line(1);
        let label = format!("{:>digits$}/{:<digits$}", stream.buffered, stream.window);
        buffer_gauge(stream, label).render(line(gauge_width), buf);
        line(2);
        if let Some(kind) = kind {
            let text = Rect { height: 1, ..take_right(&mut block, summary_width) };
            take_right(&mut block, 1);
            let late = stream.slack_ms.iter().any(|&x| x < 0.0);
            let style = if late { Style::new().fg(Color::Red) } else { Style::new() };
            Paragraph::new(summaries[i][kind].as_str()).style(style).render(text, buf);
        }
        slack_sparkline(&stream.slack_ms, usize::from(block.width)).render(block, buf);
    }
    if more > 0 {
        let y = inner.y + shown as u16 * height;
        Paragraph::new(format!("+{more} more streams"))
            .style(dim())
            .render(Rect { y, height: 1, ..inner }, buf);
    }
}

/// The buffer gauge, green when comfortably full, yellow then red as it drains.
fn buffer_gauge(stream: &StreamView, label: String) -> LineGauge<'static> {
    let ratio = if stream.window == 0 {
        0.0
    } else {
        (f64::from(stream.buffered) / f64::from(stream.window)).clamp(0.0, 1.0)
    };
    let colour = if ratio >= 0.5 {
        Color::Green
    } else if ratio >= 0.25 {
        Color::Yellow
    } else {
        Color::Red
    };
    LineGauge::default()
        .ratio(ratio)
        .label(label)
        .filled_symbol("█")
        .unfilled_symbol("░")
        .filled_style(Style::new().fg(colour))
        .unfilled_style(Style::new().fg(Color::DarkGray))
}

/// The slack summary for a narrow terminal: the newest value and the late frames.
fn short_summary(slack_ms: &[f64]) -> String {
    match slack_ms.iter().rev().find(|x| x.is_finite()) {
        Some(&last) => {
            let late = slack_ms.iter().filter(|&&x| x < 0.0).count();
            format!("{}, {late} late", signed_ms(last))
        }
        None => "no frames yet".to_owned(),
    }
}

/// The newest `width` slack values as a sparkline (see [`slack_bars`]).
fn slack_sparkline(slack_ms: &[f64], width: usize) -> Sparkline<'static> {
    let (bars, max) = slack_bars(slack_ms, width);
    Sparkline::default()
        .data(bars)
        .max(max)
        .style(Style::new().fg(Color::Green))
        .absent_value_symbol("!")
        .absent_value_style(Style::new().fg(Color::Red).add_modifier(Modifier::BOLD))
}

/// The bars of a slack sparkline: the newest `width` values, scaled to the largest slack among
/// them, and the value of a full bar.
///
/// Sparkline bars are unsigned, so slack is drawn as headroom: the frame with the most slack is
/// a full bar, a frame just in time the lowest visible bar, and a late frame (negative slack) is
/// no bar but the sparkline's mark for an absent value, a red `!`, so that it stands out on a
/// terminal without colour too. A value that is not a number is an empty bar.
pub(crate) fn slack_bars(slack_ms: &[f64], width: usize) -> (Vec<SparklineBar>, u64) {
    const FULL: u64 = 1000;
    // The lowest of the eight bar heights on a one-line sparkline: on-time frames never vanish.
    const LOWEST_VISIBLE: u64 = FULL / 8;
    let recent = &slack_ms[slack_ms.len().saturating_sub(width)..];
    let top = recent.iter().copied().filter(|x| x.is_finite() && *x > 0.0).fold(0.0, f64::max);
    let bars = recent
        .iter()
        .map(|&ms| {
            if ms.is_nan() {
                SparklineBar::from(0)
            } else if ms < 0.0 {
                SparklineBar::from(None)
            } else {
                let scaled = if top > 0.0 { (ms.min(top) / top * FULL as f64).round() } else { 0.0 };
                SparklineBar::from((scaled as u64).clamp(LOWEST_VISIBLE, FULL))
            }
        })
        .collect();
    (bars, FULL)
}

/// The stages' CPU use and p99 latency.
fn render_stages(stages: &[StageView], area: Rect, buf: &mut Buffer) {
    let inner = rule(" stages ", area, buf);
    let names: Vec<String> = stages.iter().map(|s| printable(&s.name)).collect();
    let columns = Columns::fit(&names, "stage", &[7, 8], &[0, 1], inner.width);
    let header = vec![Cell::from("stage"), right_cell(vec!["CPU %"]), right_cell(vec!["p99 ms"])];
    let header = columns.row(header).style(bold());
    let (shown, more) = fit(stages.len(), usize::from(inner.height.saturating_sub(1)));
    let mut rows: Vec<Row> = stages
        .iter()
        .zip(names)
        .take(shown)
        .map(|(s, name)| {
            let p99 = s.p99_ms.map_or_else(|| "-".to_owned(), one_decimal);
            let cpu = one_decimal(s.cpu_percent);
            columns.row(vec![Cell::from(name), right_cell(vec![cpu]), right_cell(vec![p99])])
        })
        .collect();
    if more > 0 {
        rows.push(columns.more_row(more, "stages"));
    }
    columns.table(rows, header).render(inner, buf);
}

/// A row a client (MPI rank), with the same counters as the streams.
fn render_clients(clients: &[ClientView], area: Rect, buf: &mut Buffer) {
    let title = format!(" clients: {} ranks ", clients.len());
    let inner = rule(&title, area, buf);
    let names: Vec<String> =
        clients.iter().map(|c| format!("{:>4} {}", c.rank, printable(&c.host))).collect();
    let columns = Columns::fit(&names, "rank host", &COUNTER_WIDTHS, &COUNTER_PRIORITY, inner.width);
    let mut header = vec![Cell::from("rank host"), right_cell(vec!["presented"])];
    header.extend(drop_columns().map(|(flame, _)| right_cell(vec![flame])));
    header.extend([right_cell(vec!["MB/s"]), right_cell(vec!["fps"])]);
    let header = columns.row(header).style(bold());
    let (shown, more) = fit(clients.len(), usize::from(inner.height.saturating_sub(1)));
    let mut rows: Vec<Row> = clients
        .iter()
        .zip(names)
        .take(shown)
        .map(|(c, name)| columns.row(counter_cells(name, c.presented, &c.dropped, c.mb_per_s, c.fps)))
        .collect();
    if more > 0 {
        rows.push(columns.more_row(more, "ranks"));
    }
    columns.table(rows, header).render(inner, buf);
}

/// A row's cells of counters: name, presented, the four drop causes, MB/s and fps.
fn counter_cells(name: String, presented: u64, dropped: &Drops, mb: f64, fps: f64) -> Vec<Cell<'static>> {
    let mut cells = vec![Cell::from(name), right_cell(vec![presented.to_string()])];
    for n in dropped.by_cause() {
        let cell = right_cell(vec![n.to_string()]);
        // A drop is what the dashboard is for: any non-zero count stands out.
        cells.push(if n > 0 {
            cell.style(Style::new().fg(Color::Red).add_modifier(Modifier::BOLD))
        } else {
            cell
        });
    }
    cells.push(right_cell(vec![one_decimal(mb)]));
    cells.push(right_cell(vec![one_decimal(fps)]));
    cells
}

/// A cell of right-aligned lines, as numbers are.
fn right_cell<S: Into<String>>(lines: Vec<S>) -> Cell<'static> {
    let lines: Vec<Line> = lines.into_iter().map(|l| Line::from(l.into()).right_aligned()).collect();
    Cell::from(Text::from(lines))
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// Draws a section's rule (a line with the title in it) on the first line of `area` and returns
/// the rest.
fn rule(title: &str, mut area: Rect, buf: &mut Buffer) -> Rect {
    let line = take_top(&mut area, 1);
    Block::new()
        .borders(Borders::TOP)
        .border_style(dim())
        .title(Span::styled(title.to_owned(), bold()))
        .render(line, buf);
    area
}

/// The columns of a table that fit a width: the first (names) and the fixed-width ones kept.
struct Columns {
    first: u16,
    fixed: Vec<u16>,
    kept: Vec<bool>,
    spacing: u16,
}

impl Columns {
    /// Fits the columns to `width`: the names' column as wide as its widest entry (6 to 40
    /// cells), the others at their `widths`, two cells apart. When that is too wide: one cell
    /// apart, then a names' column down to 8 cells, then the fixed columns that fit, taken in
    /// `priority` order, with the names' column given back what is left.
    fn fit(names: &[String], heading: &str, widths: &[u16], priority: &[usize], width: u16) -> Self {
        let widest = names.iter().map(|n| Span::raw(n.as_str()).width()).max().unwrap_or(0);
        let natural = widest.max(heading.len()).clamp(6, MAX_NAME_WIDTH) as u16;
        let n = widths.len() as u16;
        let all: u16 = widths.iter().sum();
        let fixed = widths.to_vec();
        let columns = |first: u16, kept: Vec<bool>, spacing: u16| Columns {
            first,
            fixed: fixed.clone(),
            kept,
            spacing,
        };
        if natural + all + 2 * n <= width {
            return columns(natural, vec![true; widths.len()], 2);
        }
        let narrowest = natural.min(8);
        if narrowest + all + n <= width {
            return columns(natural.min(width - all - n), vec![true; widths.len()], 1);
        }
        let mut kept = vec![false; widths.len()];
        let mut used = narrowest;
        for &i in priority {
            if let Some(&w) = widths.get(i) {
                if used + 1 + w <= width {
                    kept[i] = true;
                    used += 1 + w;
                }
            }
        }
        let first = (narrowest + width.saturating_sub(used)).min(natural);
        columns(first, kept, 1)
    }

    /// A row of the kept cells; `cells` has one for every column.
    fn row<'a>(&self, cells: Vec<Cell<'a>>) -> Row<'a> {
        let mut kept = std::iter::once(true).chain(self.kept.iter().copied());
        Row::new(cells.into_iter().filter(|_| kept.next().unwrap_or(false)))
    }

    /// The last row of a table that was cut: how many rows did not fit, across the columns.
    fn more_row(&self, more: usize, what: &str) -> Row<'static> {
        let span = 1 + self.kept.iter().filter(|k| **k).count() as u16;
        Row::new([Cell::from(format!("+{more} more {what}")).style(dim()).column_span(span)])
    }

    fn table<'a>(&self, rows: Vec<Row<'a>>, header: Row<'a>) -> Table<'a> {
        let kept = self.fixed.iter().zip(&self.kept).filter(|(_, k)| **k).map(|(w, _)| *w);
        let widths: Vec<Constraint> =
            std::iter::once(self.first).chain(kept).map(Constraint::Length).collect();
        Table::new(rows, widths).header(header).column_spacing(self.spacing)
    }
}

/// How many of `n` rows to show in `room` lines, and how many to count in a `+N more` row.
fn fit(n: usize, room: usize) -> (usize, usize) {
    if n <= room {
        (n, 0)
    } else {
        let shown = room.saturating_sub(1);
        (shown, n - shown)
    }
}

/// A section of `fixed` lines (a rule, headers) and `n_rows` rows, or of what is left: `None`
/// when that is not enough for all the rows or two of them (a lone `+N more` says little).
fn take_section(rest: &mut Rect, fixed: usize, n_rows: usize) -> Option<Rect> {
    let avail = usize::from(rest.height);
    if avail < fixed + n_rows.min(2) {
        return None;
    }
    Some(take_top(rest, (fixed + n_rows).min(avail) as u16))
}

fn take_top(rest: &mut Rect, height: u16) -> Rect {
    let height = height.min(rest.height);
    let taken = Rect { height, ..*rest };
    rest.y += height;
    rest.height -= height;
    taken
}

fn take_bottom(rest: &mut Rect, height: u16) -> Rect {
    let height = height.min(rest.height);
    rest.height -= height;
    Rect { y: rest.y + rest.height, height, ..*rest }
}

fn take_left(rest: &mut Rect, width: u16) -> Rect {
    let width = width.min(rest.width);
    let taken = Rect { width, ..*rest };
    rest.x += width;
    rest.width -= width;
    taken
}

fn take_right(rest: &mut Rect, width: u16) -> Rect {
    let width = width.min(rest.width);
    rest.width -= width;
    Rect { x: rest.x + rest.width, width, ..*rest }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::*;
    use crate::testutil::sample_view;

    /// The screen's lines as text, as a terminal shows them, trailing blanks trimmed.
    fn screen(view: &DashboardView, width: u16, height: u16) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
        terminal.draw(|frame| draw(frame, view)).expect("draw");
        let buffer = terminal.backend().buffer();
        (0..buffer.area.height)
            .map(|y| {
                let mut line = String::new();
                let mut x = 0;
                while x < buffer.area.width {
                    let symbol = buffer[(x, y)].symbol();
                    line.push_str(symbol);
                    // A wide character covers the next cell too.
                    x += (Span::raw(symbol).width() as u16).max(1);
                }
                line.trim_end().to_owned()
            })
            .collect()
    }

    fn with_clients(n: u32) -> DashboardView {
        let mut view = sample_view();
        view.clients = (0..n)
            .map(|rank| ClientView {
                rank,
                host: format!("node-{rank}"),
                presented: 1000 + u64::from(rank),
                dropped: Drops { decode: u64::from(rank % 2), ..Drops::default() },
                fps: 24.0,
                mb_per_s: 1190.0,
            })
            .collect();
        view
    }

    #[test]
    fn the_counters_appear_under_flame_labels_at_80x24() {
        let lines = screen(&sample_view(), 80, 24);
        assert_eq!(lines[0], "playsim play nfs://host/export/seq  DPX 4K 24 fps  2 streams");
        assert!(lines[1].starts_with("elapsed 1:23 of 5:00 (28 %), 3:37 left ███"), "{lines:#?}");
        assert!(lines[2].starts_with(" streams ───"));
        assert_eq!(
            lines[3..8],
            [
                "stream  presented  video disk  CPU/GPU  broadcast  unreadable     MB/s    fps",
                "                      storage   decode     output",
                "A            1992           3        0          1           0   1185.2   24.0",
                "B            1990           0        7          0           2   1190.4   23.9",
                "all          3982           3        7          1           2   2375.6   47.9",
            ]
        );
        // Buffers as gauges, slack as sparklines with the late frame marked, three lines tall
        // with the lines to spare.
        assert_eq!(
            lines[9..15],
            [
                "A      6/8 █████████░░░   !█▂                                   +12.0 ms, 1 late",
                "                         ▄!██▆",
                "                         █!███",
                "B      1/8 █░░░░░░░░░░░  █                                      +2.0 ms, 0 late",
                "                         █▆▁",
                "                         ███",
            ]
        );
        assert_eq!(
            lines[16..20],
            [
                "stage     CPU %    p99 ms",
                "read       12.5       8.1",
                "decode    180.0      35.2",
                "output      4.0         -"
            ]
        );
        assert_eq!(lines[22], "matrix: dpx-4k @ 24 fps, trial 3 of 41, 2 streams");
        assert_eq!(lines[23], "q hides the dashboard, Ctrl-C stops the run");
    }

    #[test]
    fn client_rows_appear_only_with_clients() {
        let without = screen(&sample_view(), 80, 24);
        assert!(!without.iter().any(|l| l.contains("clients") || l.contains("rank host")));

        let with = screen(&with_clients(4), 80, 24);
        let at = with.iter().position(|l| l.starts_with(" clients: 4 ranks ─")).expect("rule");
        assert_eq!(
            with[at + 1..at + 6],
            [
                "rank host   presented video disk CPU/GPU broadcast unreadable    MB/s   fps",
                "   0 node-0      1000          0       0         0          0  1190.0  24.0",
                "   1 node-1      1001          0       1         0          0  1190.0  24.0",
                "   2 node-2      1002          0       0         0          0  1190.0  24.0",
                "   3 node-3      1003          0       1         0          0  1190.0  24.0",
            ]
        );
    }

    #[test]
    fn a_short_terminal_drops_the_clients_then_cuts_rows_with_a_count_and_keeps_the_total() {
        let mut view = with_clients(40);
        let streams = (0..30).map(|i| StreamView { name: format!("s{i}"), ..view.streams[0].clone() });
        view.streams = streams.collect();
        let lines = screen(&view, 80, 24);
        assert!(lines.iter().any(|l| l.starts_with("+15 more streams")), "{lines:#?}");
        assert!(lines.iter().any(|l| l.starts_with("all ")), "{lines:#?}");
        assert!(!lines.iter().any(|l| l.contains("clients")), "{lines:#?}");
        assert_eq!(lines[23], "q hides the dashboard, Ctrl-C stops the run");

        let lines = screen(&with_clients(40), 80, 24);
        assert_eq!(
            lines[17..22],
            [
                "rank host    presented video disk CPU/GPU broadcast unreadable    MB/s   fps",
                "   0 node-0       1000          0       0         0          0  1190.0  24.0",
                "   1 node-1       1001          0       1         0          0  1190.0  24.0",
                "   2 node-2       1002          0       0         0          0  1190.0  24.0",
                "+37 more ranks",
            ]
        );
    }

    #[test]
    fn a_narrow_terminal_loses_columns_not_digits() {
        let lines = screen(&sample_view(), 40, 12);
        assert_eq!(
            lines[3..8],
            [
                "stream video disk CPU/GPU broadcast",
                "          storage  decode    output",
                "A               3       0         1",
                "B               0       7         0",
                "all             3       7         1",
            ]
        );
        assert!(!lines.iter().any(|l| l.contains("85.2")), "{lines:#?}");
    }

    #[test]
    fn every_size_draws_without_panicking() {
        let mut odd = with_clients(3);
        odd.streams[0].slack_ms = vec![f64::NAN, f64::NEG_INFINITY, f64::INFINITY, -0.0, 1e300];
        odd.streams[0].mb_per_s = f64::NAN;
        odd.streams[1].window = 0;
        odd.streams[1].buffered = u32::MAX;
        odd.stages[0].cpu_percent = f64::INFINITY;
        odd.elapsed = Duration::from_secs(u64::MAX / 2);
        let views = [DashboardView::default(), sample_view(), with_clients(5), odd];
        for view in &views {
            // Every small width, where cutting happens, and a sample of the rest.
            for width in (0..=24).chain((25..=100).step_by(5)) {
                for height in 0..=30 {
                    screen(view, width, height);
                }
            }
            screen(view, 400, 150);
        }
        assert_eq!(screen(&sample_view(), 10, 3), ["playsim pl", "matrix: dp", "q hides th"]);
    }

    #[test]
    fn odd_stream_names_cannot_move_the_cursor_and_wide_ones_fit() {
        let mut view = sample_view();
        view.streams[0].name = "\x1b[2J\x1b[31mred\nline\ttab".into();
        view.streams[1].name = "日本語のクリップ 🎬 with a very long name that goes on and on".into();
        view.title = "title\r\x07".into();
        let lines = screen(&view, 80, 24);
        let all = lines.join("\n");
        assert!(!all.contains('\x1b') && !all.contains('\x07') && !all.contains('\r'));
        assert_eq!(lines[0], "title??");
        assert!(lines[5].starts_with("?[2J?[31mred?lin "), "{lines:#?}");
        assert!(lines[6].starts_with("日本語のクリップ "), "{lines:#?}");
        assert!(lines[9].starts_with("?[2J?[31mred?line ta 6/8 ███"), "{lines:#?}");
        // The names' column gives way (one cell between columns, names cut at 16) so that every
        // counter keeps its place.
        assert!(lines[5].ends_with(" 1992          3       0         1          0  1185.2  24.0"));
        assert!(lines[6].ends_with(" 1990          0       7         0          2  1190.4  23.9"));
    }

    #[test]
    fn without_a_plan_the_header_shows_elapsed_time_alone() {
        let mut view = sample_view();
        view.planned = None;
        view.streams.truncate(1);
        view.streams[0].slack_ms.clear();
        view.status = None;
        let lines = screen(&view, 80, 24);
        assert_eq!(lines[1], "elapsed 1:23");
        assert!(!lines.iter().any(|l| l.starts_with("all ")), "one stream needs no total");
        assert!(lines.iter().any(|l| l.ends_with("no frames yet")), "{lines:#?}");
        assert_eq!(lines[23], "q hides the dashboard, Ctrl-C stops the run");
        assert_eq!(lines[22], "", "no status line");
    }

    #[test]
    fn slack_is_headroom_and_late_frames_are_absent_bars() {
        let (bars, full) = slack_bars(&[99.0, 10.0, -3.5, 20.0, f64::NAN, 0.0, 5.0], 6);
        assert_eq!(full, 1000);
        let expected = [
            SparklineBar::from(500),
            SparklineBar::from(None),
            SparklineBar::from(1000),
            SparklineBar::from(0),
            SparklineBar::from(125),
            SparklineBar::from(250),
        ];
        assert_eq!(bars, expected, "the newest six, scaled to the largest of them");
        let (bars, _) = slack_bars(&[-1.0, -2.0], 10);
        assert_eq!(bars, [SparklineBar::from(None), SparklineBar::from(None)]);
        assert!(slack_bars(&[1.0], 0).0.is_empty());
    }
}
