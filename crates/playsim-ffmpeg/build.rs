//! With the `ffmpeg` feature (on by default): checks with pkg-config that FFmpeg's libraries
//! are installed before ffmpeg-sys-next's build script looks for them, so that a machine
//! without them gets a message naming the Debian packages. The linking itself is
//! ffmpeg-sys-next's. Without the feature it does nothing.
//!
//! This script needs only pkg-config to build, while ffmpeg-sys-next's needs bindgen, so on
//! a fresh build it runs first; when both run, cargo prints both messages.

/// The libraries ffmpeg-next links with its `codec` and `format` features (pkg-config
/// names), and the Debian package of each.
#[cfg(feature = "ffmpeg")]
const LIBRARIES: &[(&str, &str)] =
    &[("libavcodec", "libavcodec-dev"), ("libavformat", "libavformat-dev"), ("libavutil", "libavutil-dev")];

fn main() {
    #[cfg(feature = "ffmpeg")]
    check_libraries();
}

/// Stops the build, naming the packages to install, when pkg-config cannot find one of
/// [`LIBRARIES`].
#[cfg(feature = "ffmpeg")]
fn check_libraries() {
    // ffmpeg-sys-next finds FFmpeg through FFMPEG_DIR or vcpkg before pkg-config: leave
    // those to it.
    println!("cargo:rerun-if-env-changed=FFMPEG_DIR");
    if std::env::var_os("FFMPEG_DIR").is_some() {
        return;
    }
    let missing: Vec<(&str, &str, String)> = LIBRARIES
        .iter()
        .filter_map(|&(library, package)| {
            let probe = pkg_config::Config::new().cargo_metadata(false).env_metadata(true).probe(library);
            probe.err().map(|e| (library, package, first_line(&e)))
        })
        .collect();
    if missing.is_empty() {
        return;
    }
    let packages: Vec<&str> = missing.iter().map(|(_, package, _)| *package).collect();
    let mut message = String::from(
        "error: playsim-ffmpeg's `ffmpeg` feature (video files) needs FFmpeg's libraries, and pkg-config \
         cannot find",
    );
    for (library, _, why) in &missing {
        message.push_str(&format!("\n  {library}: {why}"));
    }
    message.push_str(&format!(
        "\nInstall them: `apt-get install {}` (Debian/Ubuntu; ffmpeg-next also needs clang and \
         libclang-dev for its bindings), or run `cargo xtask deps`.\n\
         Or build without video files: `cargo build --no-default-features --features openexr,io-uring,nfs`.",
        packages.join(" ")
    ));
    eprintln!("{message}");
    std::process::exit(1);
}

/// pkg-config's reason in one line.
#[cfg(feature = "ffmpeg")]
fn first_line(e: &pkg_config::Error) -> String {
    let text = match e {
        pkg_config::Error::ProbeFailure { output, .. } => {
            String::from_utf8_lossy(&output.stderr).into_owned()
        }
        other => other.to_string(),
    };
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    lines.next().unwrap_or("pkg-config failed").to_owned()
}
