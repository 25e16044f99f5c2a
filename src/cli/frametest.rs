//! `playsim frametest`: frametest's command line (`-w 2k -n 2000 -t 20 DIR`, `-r ...`),
//! mapped onto playsim by [`playsim::frametest`]; prints frametest's summary.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use playsim::frametest::{header_bytes_of_kb, prepare_frametest, FrameSize, FrametestMode, FrametestRequest};
use playsim::report::frametest;
use playsim::report::renderer::{self, Renderers};
use playsim::settings::Settings;
use playsim::PlayOrder;
pub use playsim_args::frametest::FrametestArgs;

const EXAMPLE: &str = "for example playsim frametest -w 2k -n 24 -t 2 /tmp/ft";

/// Runs `playsim frametest`.
pub fn run(args: FrametestArgs) -> anyhow::Result<ExitCode> {
    let (csv, json, html) = (args.csv.clone(), args.json.clone(), args.html.clone());
    let outputs = [("-x", &csv), ("--json", &json), ("--html", &html)];
    if let Some(code) = super::refuse_unwritable_outputs(
        outputs.into_iter().filter_map(|(flag, path)| Some((flag, path.as_deref()?))),
    ) {
        return Ok(code);
    }
    let request = request_of(args)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    let prepared = runtime.block_on(prepare_frametest(&request))?;
    let cancel = prepared.canceller();
    let ctrl_c = runtime.spawn(async move {
        if let Some(why) = super::StopSignals::new().next().await {
            eprintln!("\nplaysim: {why}; finishing the frames in flight");
            cancel.cancel();
        }
    });
    let result = runtime.block_on(prepared.run());
    ctrl_c.abort();
    print!("{}", frametest::summary(&result));
    let mut renderers = Renderers::new();
    frametest::register_frametest_renderers(&mut renderers);
    for (path, format, what) in
        [(&csv, "csv", "frame times"), (&json, "json", "result"), (&html, "html", "result as HTML")]
    {
        if let Some(path) = path {
            renderer::write_atomic(renderers.by_name(format)?, &result, path)?;
            eprintln!("playsim: {what} written to {}", path.display());
        }
    }
    Ok(if result.run.failure.is_some() {
        ExitCode::FAILURE
    } else if result.run.interrupted {
        ExitCode::from(crate::EXIT_INTERRUPTED)
    } else if result.n_failed() > 0 {
        eprintln!("playsim: {} frames failed", result.n_failed());
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The library's request for the flags. `-w`'s and `-r`'s value is optional, so a lone
/// value that is not a size is the directory: `-r /tmp/ft` reads /tmp/ft.
fn request_of(args: FrametestArgs) -> anyhow::Result<FrametestRequest> {
    let header = header_bytes_of_kb(args.header_kb).map_err(anyhow::Error::msg)?;
    let (write, value) = match (args.write, args.read) {
        (Some(value), None) => (true, value),
        (None, Some(value)) => (false, value),
        (None, None) => bail!("give -w SIZE to write frames or -r to read them, {EXAMPLE}"),
        (Some(_), Some(_)) => {
            bail!("give -w to write or -r to read, not both: write first, then read, {EXAMPLE}")
        }
    };
    let (value, dir) = match (value, args.dir) {
        (Some(v), None) if FrameSize::parse(&v, header).is_err() => (None, Some(PathBuf::from(v))),
        (value, dir) => (value, dir),
    };
    let Some(dir) = dir else {
        bail!("give the directory of the frames, {EXAMPLE}");
    };
    let size = match (value, args.size_kb) {
        (Some(text), None) => Some(FrameSize::parse(&text, header).map_err(anyhow::Error::msg)?),
        (None, Some(kb)) => Some(FrameSize::custom_kb(kb, header).map_err(anyhow::Error::msg)?),
        (None, None) => None,
        (Some(text), Some(kb)) => {
            bail!("give the frame size once: -w {text} or -z {kb}, not both (for example -w 2k, or -w -z 12512)")
        }
    };
    let mode = if write {
        let Some(size) = size else {
            bail!("-w needs a frame size: sd, hd, 2k, 4k, or -z KB ({EXAMPLE})");
        };
        refuse_more_than_memory(&size, args.threads)?;
        FrametestMode::Write { size }
    } else {
        FrametestMode::Read { expect: size }
    };
    let mut settings =
        Settings { seed: args.seed, decode_threads: args.decode_threads, ..Settings::default() };
    args.local.apply(&mut settings);
    args.transport.apply(&mut settings);
    let order = match (args.reverse, args.random) {
        (true, true) => {
            bail!("-v (reverse) and -m (random) are two orders: give one, for example -m --seed 3")
        }
        (true, false) => PlayOrder::Reverse,
        (false, true) => PlayOrder::Random { seed: settings.seed() },
        (false, false) => PlayOrder::Forward,
    };
    let mut request = FrametestRequest::new(mode, dir);
    request.n_frames = args.frames;
    request.threads = args.threads;
    request.rate = args.fps;
    request.queue = args.queue;
    request.preroll = args.preroll;
    request.loop_files = args.loop_files;
    request.order = order;
    request.name = args.name;
    request.decode = args.decode;
    request.decode_threads = settings.decode_threads();
    request.direct = settings.direct();
    request.io_engine = settings.io_engine();
    request.block_size = settings.block_size();
    request.cold = args.cold;
    request.fsync = args.fsync;
    request.transport = settings.transport_options();
    Ok(request)
}

/// Refuses a write whose frames in flight (one per thread, each held whole in memory) need
/// more memory than the machine has available, naming both and what to lower.
fn refuse_more_than_memory(size: &playsim::report::frametest::FrameSize, threads: u32) -> anyhow::Result<()> {
    let Some(available) = playsim::engine::probe::meminfo_bytes("MemAvailable") else { return Ok(()) };
    let need = size.file_bytes.saturating_mul(u64::from(threads));
    if need > available {
        bail!(
            "-t {threads} frames of {} MB in flight need {} MB, more than the {} MB this machine has \
             available: lower -t or the frame size (for example -t 4 -w 4k)",
            size.file_bytes >> 20,
            need >> 20,
            available >> 20
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;
    use playsim::storage::nfs::NfsOptions;
    use playsim::storage::IoEngine;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: FrametestArgs,
    }

    fn request(flags: &[&str]) -> FrametestRequest {
        playsim::transports();
        let cli = Cli::try_parse_from(["frametest"].iter().chain(flags)).unwrap_or_else(|e| panic!("{e}"));
        request_of(cli.args).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_shared_knobs_come_from_the_settings_list() {
        let r = request(&[
            "-r",
            "-m",
            "--seed",
            "7",
            "--decode-threads",
            "3",
            "--direct",
            "--io-engine",
            "io-uring",
            "--block-size",
            "512K",
            "--nconnect",
            "4",
            "--rsize",
            "256K",
            "--nfs-timeout",
            "5s",
            "nfs://host/export/ft",
        ]);
        assert_eq!(r.order, PlayOrder::Random { seed: 7 });
        assert_eq!(
            (r.decode_threads, r.direct, r.io_engine, r.block_size),
            (3, true, IoEngine::IoUring, 512 << 10)
        );
        let nfs = r.transport.get::<NfsOptions>();
        assert_eq!((nfs.nconnect, nfs.rsize, nfs.timeout), (4, 256 << 10, Duration::from_secs(5)));
    }

    #[test]
    fn the_shared_knobs_default_as_play_does() {
        let (r, play) = (request(&["-r", "-m", "/tmp/ft"]), Settings::default());
        assert_eq!(r.order, PlayOrder::Random { seed: play.seed() });
        assert_eq!(
            (r.decode_threads, r.direct, r.io_engine),
            (play.decode_threads(), false, play.io_engine())
        );
        let nfs = play.transport_options().get::<NfsOptions>();
        assert_eq!(r.block_size, play.block_size());
        let r_nfs = r.transport.get::<NfsOptions>();
        assert_eq!((r_nfs.nconnect, r_nfs.rsize, r_nfs.timeout), (nfs.nconnect, nfs.rsize, nfs.timeout));
    }
}
