//! `record --source`: frames read through any transport and decoded ahead of the clock, fed to
//! the record runner ([`FrameFeed`]) as a capture card's input or an ingest's read side would
//! give them. A frame not decoded when it is due is an `input` drop.
//!
//! One task reads and decodes in order, `window` frames ahead of the frame due next at most
//! (the frames decoded and not yet taken are held in memory); a frame taken is moved out, its
//! buffer handed back. Long-GOP video (H.264, HEVC) goes through one stateful decoder, every
//! packet in decode order, the pictures coming out in presentation order. The run starts once the window is full (a preroll, as `play`'s). Frame
//! k of the run is the source's frame k, looping over the source when the run is longer. A frame
//! that cannot be read or decoded is said (its file and frame) and is an input drop.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use playsim_core::{DecodedFrame, InOrderDecoder, IoBuf, Source, Storage};
use playsim_engine::record::FrameFeed;

use crate::events::Events;

/// The feed: frames decoded ahead, by position, and the position due next.
pub(crate) struct SourceFeed {
    /// Where a frame it could not read or decode is said.
    events: Events,
    state: Mutex<FeedState>,
    /// Wakes the reader when the window has room.
    room: tokio::sync::Notify,
    /// Wakes the preroll when a frame is in, or the reader is done.
    filled: tokio::sync::Notify,
    window: u64,
    cpu_ns: AtomicU64,
    /// Positions the reader has dealt with (decoded, or failed and said), from 0.
    handled: AtomicU64,
    done: AtomicBool,
}

#[derive(Default)]
struct FeedState {
    ready: BTreeMap<u64, DecodedFrame>,
    /// The position due next: earlier ones are taken or dropped.
    due: u64,
    /// Buffers of frames taken, for the reader to decode into again.
    spare: Vec<DecodedFrame>,
}

impl SourceFeed {
    fn state(&self) -> std::sync::MutexGuard<'_, FeedState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts reading `n_frames` frames of `source` (looping over it) from `storage`, `window`
    /// ahead of the frame due next. Must run inside a tokio runtime.
    pub(crate) fn start(
        source: Arc<dyn Source>,
        storage: Arc<dyn Storage>,
        n_frames: u64,
        window: u64,
        events: Events,
    ) -> Arc<SourceFeed> {
        let feed = Arc::new(SourceFeed {
            events,
            state: Mutex::default(),
            room: tokio::sync::Notify::new(),
            filled: tokio::sync::Notify::new(),
            window: window.max(1),
            cpu_ns: AtomicU64::new(0),
            handled: AtomicU64::new(0),
            done: AtomicBool::new(false),
        });
        match source.decoder().in_order() {
            Some(decoder) => {
                tokio::spawn(Arc::clone(&feed).read_in_order(source, storage, decoder, n_frames))
            }
            None => tokio::spawn(Arc::clone(&feed).read(source, storage, n_frames)),
        };
        feed
    }

    /// Waits until `position` may be decoded: no more than `window` frames ahead of the one
    /// due.
    async fn room_for(&self, position: u64) {
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            let due = self.state().due;
            if position < due + self.window {
                return;
            }
            room.await;
        }
    }

    /// Keeps `frame` as `position`'s, or gives its buffer back when that is already due.
    fn keep(&self, position: u64, frame: DecodedFrame) {
        let mut state = self.state();
        if position >= state.due {
            state.ready.insert(position, frame);
        } else {
            state.spare.push(frame);
        }
    }

    /// The long-GOP reader (H.264, HEVC): every packet, in decode order, through one stateful
    /// decoder on the blocking pool; the pictures come out in presentation order, position by
    /// position. A packet that cannot be read is one picture lost, as `decode` counts it; at the
    /// source's end the decoder is drained and reset, and the source starts again.
    async fn read_in_order(
        self: Arc<Self>,
        source: Arc<dyn Source>,
        storage: Arc<dyn Storage>,
        mut decoder: Box<dyn InOrderDecoder>,
        n_frames: u64,
    ) {
        let n_source = source.n_frames().max(1);
        let mut encoded = IoBuf::default();
        let (mut position, mut packet) = (0u64, 0u64);
        while position < n_frames {
            self.room_for(position).await;
            let at_end = packet >= n_source;
            let extent = source.extent(packet.min(n_source - 1));
            if !at_end {
                if let Err(e) = crate::decode::read_extent(storage.as_ref(), &extent, &mut encoded).await {
                    self.events.warn(format!(
                        "source frame {} ({}): {e}",
                        source.frame_number(packet),
                        extent_name(&extent)
                    ));
                    self.handled(position);
                    position += 1;
                    packet += 1;
                    continue;
                }
            }
            // Buffers for the pictures this packet may let out: the decoder's delay and one.
            let spares: Vec<DecodedFrame> = {
                let mut state = self.state();
                let keep = state.spare.len().saturating_sub(decoder.max_delay() as usize + 1);
                state.spare.split_off(keep)
            };
            let bytes = std::mem::take(&mut encoded);
            let done = tokio::task::spawn_blocking(move || {
                let start = playsim_engine::probe::thread_cpu_now();
                let mut spares = spares;
                let sent = decoder.send(if at_end { None } else { Some(&bytes) }).map_err(|e| e.to_string());
                let mut pictures: Vec<Result<DecodedFrame, String>> = Vec::new();
                if let Err(e) = sent {
                    pictures.push(Err(e));
                }
                loop {
                    let mut frame = spares.pop().unwrap_or_default();
                    match decoder.receive(&mut frame) {
                        Ok(true) => pictures.push(Ok(frame)),
                        Ok(false) => {
                            spares.push(frame);
                            break;
                        }
                        Err(e) => {
                            pictures.push(Err(e.to_string()));
                            break;
                        }
                    }
                }
                if at_end {
                    decoder.reset();
                }
                let cpu = playsim_engine::probe::thread_cpu_now().saturating_sub(start);
                (decoder, pictures, spares, bytes, cpu)
            })
            .await;
            let Ok((back, pictures, spares, bytes, cpu)) = done else { break };
            decoder = back;
            encoded = bytes;
            self.state().spare.extend(spares);
            self.cpu_ns.fetch_add(u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
            for picture in pictures {
                if position >= n_frames {
                    break;
                }
                match picture {
                    Ok(frame) => self.keep(position, frame),
                    Err(e) => self.events.warn(format!(
                        "source picture {} (decoding {}): {e}",
                        position % n_source,
                        extent_name(&extent)
                    )),
                }
                self.handled(position);
                position += 1;
            }
            packet = if at_end { 0 } else { packet + 1 };
        }
        self.done.store(true, Ordering::Release);
        self.filled.notify_waiters();
    }

    /// Waits until the reader has dealt with the whole window (a frame it could not read
    /// counts: it is said, and will be an input drop), or with the whole source.
    pub(crate) async fn preroll(&self) {
        loop {
            let filled = self.filled.notified();
            tokio::pin!(filled);
            filled.as_mut().enable();
            if self.done.load(Ordering::Acquire) || self.handled.load(Ordering::Acquire) >= self.window {
                return;
            }
            filled.await;
        }
    }

    /// Notes that the reader has dealt with `position`.
    fn handled(&self, position: u64) {
        self.handled.store(position + 1, Ordering::Release);
        self.filled.notify_waiters();
    }

    async fn read(self: Arc<Self>, source: Arc<dyn Source>, storage: Arc<dyn Storage>, n_frames: u64) {
        let n_source = source.n_frames().max(1);
        let decoder = source.decoder();
        let mut encoded = IoBuf::default();
        for position in 0..n_frames {
            self.room_for(position).await;
            if position < self.state().due {
                self.handled(position); // already due and dropped: not worth decoding
                continue;
            }
            let idx = position % n_source;
            let extent = source.extent(idx);
            if let Err(e) = crate::decode::read_extent(storage.as_ref(), &extent, &mut encoded).await {
                self.events.warn(format!(
                    "source frame {} ({}): {e}",
                    source.frame_number(idx),
                    extent_name(&extent)
                ));
                self.handled(position);
                continue;
            }
            let mut frame = self.state().spare.pop().unwrap_or_default();
            let bytes = std::mem::take(&mut encoded);
            let decoder = Arc::clone(&decoder);
            let decoded = tokio::task::spawn_blocking(move || {
                let start = playsim_engine::probe::thread_cpu_now();
                let result = decoder.decode(&bytes, &mut frame).map_err(|e| e.to_string());
                let cpu = playsim_engine::probe::thread_cpu_now().saturating_sub(start);
                (result, frame, bytes, cpu)
            })
            .await;
            let Ok((result, frame, bytes, cpu)) = decoded else { break };
            encoded = bytes;
            self.cpu_ns.fetch_add(u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
            match result {
                Ok(()) => self.keep(position, frame),
                Err(e) => {
                    self.events.warn(format!(
                        "source frame {} ({}): {e}",
                        source.frame_number(idx),
                        extent_name(&extent)
                    ));
                }
            }
            self.handled(position);
        }
        self.done.store(true, Ordering::Release);
        self.filled.notify_waiters();
    }
}

fn extent_name(extent: &playsim_core::FrameExtent) -> String {
    match extent {
        playsim_core::FrameExtent::File { path } | playsim_core::FrameExtent::Range { path, .. } => {
            path.display().to_string()
        }
        playsim_core::FrameExtent::Missing { expected } => expected.display().to_string(),
    }
}

impl FrameFeed for SourceFeed {
    fn take(&self, position: u64, into: &mut DecodedFrame) -> bool {
        let taken = {
            let mut state = self.state();
            state.due = state.due.max(position + 1);
            // Frames before this one were not asked for in time: their buffers go back.
            let late: Vec<u64> = state.ready.range(..position).map(|(k, _)| *k).collect();
            for k in late {
                if let Some(frame) = state.ready.remove(&k) {
                    state.spare.push(frame);
                }
            }
            match state.ready.remove(&position) {
                Some(mut frame) => {
                    std::mem::swap(into, &mut frame);
                    state.spare.push(frame);
                    true
                }
                None => false,
            }
        };
        self.room.notify_waiters();
        taken
    }

    fn wait_for(&self, position: u64) -> playsim_engine::frametest::IoFuture<'_, ()> {
        Box::pin(async move {
            loop {
                let filled = self.filled.notified();
                tokio::pin!(filled);
                filled.as_mut().enable();
                let handled = self.handled.load(Ordering::Acquire) > position;
                if handled || self.done.load(Ordering::Acquire) || self.state().ready.contains_key(&position)
                {
                    return;
                }
                filled.await;
            }
        })
    }

    fn cpu_time(&self) -> Duration {
        Duration::from_nanos(self.cpu_ns.load(Ordering::Relaxed))
    }
}
