//! Builds the OpenEXR shim when the library is installed (found with pkg-config),
//! and sets `cfg(playsim_openexr)` so the `openexr` backend is compiled in; without
//! the library the crate builds with the `exrs` backend only, and says so.

use std::env;

/// The oldest OpenEXR the shim is written for (the 3.x headers and `Imf::IStream`).
const MIN_VERSION: &str = "3.0";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(playsim_openexr)");
    println!("cargo:rerun-if-changed=shim/exr_shim.cpp");
    println!("cargo:rerun-if-changed=shim/exr_shim.h");
    println!("cargo:rerun-if-env-changed=PLAYSIM_NO_OPENEXR");

    if env::var_os("PLAYSIM_NO_OPENEXR").is_some_and(|v| !v.is_empty() && v != "0") {
        println!("cargo:warning=the openexr backend is disabled: PLAYSIM_NO_OPENEXR is set (only exrs will decode EXR)");
        return;
    }

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
            // Re-probe when a library appears later (`cargo xtask deps` installs it after a
            // first build): cargo re-runs this script when a watched directory changes.
            for dir in pkg_config_search_path() {
                println!("cargo:rerun-if-changed={dir}");
            }
            let why = reason(&e);
            println!(
                "cargo:warning=the openexr backend is disabled: OpenEXR >= {MIN_VERSION} was not found with \
                 pkg-config ({why}); install libopenexr-dev (Debian/Ubuntu) or openexr-devel and rebuild, \
                 meanwhile only exrs will decode EXR"
            );
            return;
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
    println!("cargo:rustc-cfg=playsim_openexr");
}

/// One line saying why the probe failed: pkg-config's own last word when it ran
/// (package not found, version too old), else the first line of the error.
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

/// The directories pkg-config searches for `.pc` files, those that exist.
fn pkg_config_search_path() -> Vec<String> {
    let from_tool = std::process::Command::new("pkg-config")
        .args(["--variable", "pc_path", "pkg-config"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let from_env = std::env::var("PKG_CONFIG_PATH").unwrap_or_default();
    from_env
        .split(':')
        .chain(from_tool.split(':'))
        .filter(|d| !d.is_empty() && std::path::Path::new(d).is_dir())
        .map(str::to_owned)
        .collect()
}
