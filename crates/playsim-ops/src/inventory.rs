//! `playsim list`: what this build has, read from the registries themselves (transports,
//! formats, decoders, renderers) and the cargo features the caller was built with.

use std::fmt::Write as _;

use playsim_media::FormatKind;
use playsim_report::renderer::Renderers;

/// What this build has, one section each: the transports (enabled, and those a feature would
/// add), the formats, the decoders, the renderers of each report, and `features` (each cargo
/// feature of the binary, and whether it is on).
pub fn inventory(features: &[(&str, bool)]) -> String {
    let mut out = String::new();
    let registry = crate::transports();
    out.push_str("transports:\n");
    let mut enabled: Vec<_> = registry.enabled().collect();
    enabled.reverse();
    for transport in enabled {
        let schemes: Vec<String> = transport.schemes().iter().map(|s| format!("{s}://")).collect();
        let knobs: Vec<String> = transport
            .knobs()
            .map_or(Vec::new(), |g| g.knobs.iter().map(|k| format!("--{}", k.flag)).collect());
        let _ = writeln!(
            out,
            "  {:<9} {:<11} for example {}{}",
            transport.name(),
            if schemes.is_empty() { "paths".to_owned() } else { schemes.join(" ") },
            transport.example(),
            if knobs.is_empty() { String::new() } else { format!("; {}", knobs.join(" ")) }
        );
    }
    for (scheme, feature) in registry.disabled() {
        let _ = writeln!(
            out,
            "  {scheme:<9} {:<11} not in this build (the `{feature}` feature)",
            format!("{scheme}://")
        );
    }
    out.push_str("formats:\n");
    for format in playsim_media::formats() {
        let kind = match format.kind {
            FormatKind::Sequence { .. } => "a sequence of files".to_owned(),
            FormatKind::Container { .. } => "one file (FFmpeg)".to_owned(),
            FormatKind::NeedsFeature { feature, .. } => {
                format!("not in this build (the `{feature}` feature)")
            }
        };
        let writes = if format.writer.is_some() { ", generated and recorded" } else { "" };
        let _ = writeln!(out, "  {:<9} .{:<22} {kind}{writes}", format.name, format.extensions.join(" ."));
    }
    out.push_str("decoders:\n");
    let backends: Vec<&str> = playsim_exr::Backend::available().iter().map(|b| b.name()).collect();
    let _ = writeln!(
        out,
        "  dpx       playsim's own\n  tiff      the tiff crate\n  exr       {} (default {})",
        backends.join(", "),
        playsim_exr::Backend::default_available().name()
    );
    #[cfg(feature = "ffmpeg")]
    let _ = writeln!(out, "  video     FFmpeg ({})", playsim_ffmpeg::ffmpeg_version());
    out.push_str("renderers:\n");
    let names = |list: Vec<&str>| list.join(", ");
    let _ = writeln!(out, "  play      {}", names(Renderers::enabled().iter().map(|r| r.name()).collect()));
    let _ = writeln!(out, "  record    {}", names(Renderers::record().iter().map(|r| r.name()).collect()));
    let _ = writeln!(out, "  matrix    {}", names(Renderers::matrix().iter().map(|r| r.name()).collect()));
    out.push_str("features:\n");
    for (feature, on) in features {
        let _ = writeln!(out, "  {feature:<9} {}", if *on { "on" } else { "off" });
    }
    out
}
