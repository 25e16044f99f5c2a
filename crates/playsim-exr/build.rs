//! With the `openexr` feature (on by default): finds OpenEXR with pkg-config, builds the shim
//! against it and links it, or fails the build naming the Debian package to install. Without
//! the feature it does nothing, and the crate decodes EXR with exrs alone.

/// The oldest OpenEXR the shim is written for (the 3.x headers and `Imf::IStream`).
#[cfg(feature = "openexr")]
const MIN_VERSION: &str = "3.0";

fn main() {
    #[cfg(feature = "openexr")]
    build_shim();
}

/// Builds and links the shim, or stops the build with a message saying what to install.
#[cfg(feature = "openexr")]
fn build_shim() {
    println!("cargo:rerun-if-changed=shim/exr_shim.cpp");
    println!("cargo:rerun-if-changed=shim/exr_shim.h");

    // Link lines are printed after the shim is compiled, so that the linker sees
    // the static shim before the shared libraries it needs.
    let library = match pkg_config::Config::new()
        .atleast_version(MIN_VERSION)
        .cargo_metadata(false)
        .env_metadata(true)
        .probe("OpenEXR")
    {
        Ok(library) => library,
        Err(e) => {
            let why = reason(&e);
            eprintln!(
                "error: playsim-exr's `openexr` feature needs the OpenEXR C++ library >= {MIN_VERSION}, \
                 which pkg-config cannot find ({why}).\n\
                 Install it: `apt-get install libopenexr-dev` (Debian/Ubuntu; openexr-devel elsewhere), \
                 or run `cargo xtask deps`.\n\
                 Or build without it, decoding EXR with the pure-Rust exrs backend alone: \
                 `cargo build --no-default-features --features ffmpeg,io-uring,nfs`."
            );
            std::process::exit(1);
        }
    };

    let mut build = cc::Build::new();
    build.cpp(true).std("c++17").opt_level(2).warnings(true).file("shim/exr_shim.cpp");
    for path in &library.include_paths {
        build.include(path);
    }
    for (name, value) in &library.defines {
        build.define(name, value.as_deref());
    }
    build.compile("playsim_exr_shim");

    for path in &library.link_paths {
        println!("cargo:rustc-link-search=native={}", path.display());
    }
    for lib in &library.libs {
        println!("cargo:rustc-link-lib={lib}");
    }
}

/// One line saying why the probe failed: pkg-config's own last word when it ran
/// (package not found, version too old), else the first line of the error.
#[cfg(feature = "openexr")]
fn reason(e: &pkg_config::Error) -> String {
    let text = match e {
        pkg_config::Error::ProbeFailure { output, .. } => {
            String::from_utf8_lossy(&output.stderr).into_owned()
        }
        other => other.to_string(),
    };
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let line = match e {
        pkg_config::Error::ProbeFailure { .. } => lines.next_back(),
        _ => lines.next(),
    };
    line.unwrap_or("pkg-config failed").to_owned()
}
