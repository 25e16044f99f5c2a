//! Helpers every drawn or marked-up format shares: text made safe for XML and HTML, and a
//! colour written as CSS writes it.

use plotters::style::RGBColor;

/// Text made safe for XML (and HTML) content and attributes.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML; a name read from a file may hold one.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `#d62728`.
pub(crate) fn hex(RGBColor(r, g, b): RGBColor) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}
