//! A ratatui backend for the terminal the dashboard opened: crossterm's escape sequences, with
//! the size and cursor position kept here rather than asked of the terminal.
//!
//! ratatui's `CrosstermBackend` asks crossterm for both, and crossterm asks standard input or
//! `/dev/tty` (the cursor position by writing a query and reading the answer among the keys),
//! which need not be the terminal drawn on. Clearing is also only queued here, so that the
//! periodic full repaint (a clear, then every cell) reaches the terminal in one write with the
//! frame and does not flicker.

use std::io::{self, Write};

use crossterm::cursor::MoveTo;
use crossterm::queue;
use crossterm::terminal::{self, Clear};
use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};

/// See the module's documentation.
pub(crate) struct TtyBackend<W: Write> {
    inner: CrosstermBackend<W>,
    /// The terminal's size, set by the drawing thread before each frame.
    pub(crate) size: Size,
    cursor: Position,
}

impl<W: Write> TtyBackend<W> {
    pub(crate) fn new(writer: W, size: Size) -> TtyBackend<W> {
        TtyBackend { inner: CrosstermBackend::new(writer), size, cursor: Position::ORIGIN }
    }
}

impl<W: Write> Backend for TtyBackend<W> {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        Ok(self.cursor)
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let position = position.into();
        queue!(self.inner, MoveTo(position.x, position.y))?;
        self.cursor = position;
        Ok(())
    }

    fn clear(&mut self) -> io::Result<()> {
        self.clear_region(ClearType::All)
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        let clear_type = match clear_type {
            ClearType::All => terminal::ClearType::All,
            ClearType::AfterCursor => terminal::ClearType::FromCursorDown,
            ClearType::BeforeCursor => terminal::ClearType::FromCursorUp,
            ClearType::CurrentLine => terminal::ClearType::CurrentLine,
            ClearType::UntilNewLine => terminal::ClearType::UntilNewLine,
        };
        queue!(self.inner, Clear(clear_type))
    }

    fn size(&self) -> io::Result<Size> {
        Ok(self.size)
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        Ok(WindowSize { columns_rows: self.size, pixels: Size::default() })
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }

    fn scroll_region_up(&mut self, region: std::ops::Range<u16>, n: u16) -> io::Result<()> {
        self.inner.scroll_region_up(region, n)
    }

    fn scroll_region_down(&mut self, region: std::ops::Range<u16>, n: u16) -> io::Result<()> {
        self.inner.scroll_region_down(region, n)
    }
}
