//! Long-GOP streams: packets fed in decode order to the stream's one decoder, pictures
//! waited for in presentation order.
//!
//! The window of such a stream is the prefetch plus the decoder's largest delay (frame threads +
//! 16, H.264's deepest reorder), so a frame waiting for its picture never holds the packets it
//! needs out of the window; the decoder is fed only while fewer than `--prefetch` of its pictures
//! wait. A frame waiting on the decoder is blamed on the stage of the packet the decoder needs
//! next. A rejected packet is one `unreadable` frame; at the end (and before each `--loop`) the
//! decoder is drained, and a frame still without a picture is `unreadable`.
//!
//! **The skip unit is the GOP.** When the decoder is ready for packet k but frame k's picture could
//! not be out by its deadline (the packets from the decoder's position to frame k's picture, its
//! delay included, at the typical time per packet, plus the typical output), the stream goes on
//! from the next keyframe (`Source::is_keyframe`) whose picture a restarted decoder could still
//! give in time. The frames between are neither read nor fed, and are dropped as `decode`, early
//! (`decode_skipped`; `gops_skipped` counts the skips). The keyframe's job first drains the
//! decoder, then resets it (`InOrderJob::restart`). A decoder on time but short of it skips at the
//! last frame that still keeps the next keyframe on time. Non-reference frames are not skipped
//! within a GOP: the index does not say which frames are references. On simulated cores (GOP 12)
//! this presents 1.00 to 0.93 of S at k = 1.1 to 3; before, a decoder that fell behind stayed
//! behind (0.08 of S at k = 1.1).

use super::*;

/// A picture out of a long-GOP decoder, or why its frame has none.
pub(super) type Picture = Result<PooledBuf<DecodedFrame>, String>;

/// Long-GOP streams: pictures out of the decoder whose frame is not yet presented or
/// dropped. The decoder is fed only while they are fewer than the prefetch, so a long-GOP
/// stream holds no more decoded frames than an intra one.
#[derive(Default)]
pub(super) struct PictureBudget {
    held: AtomicUsize,
    freed: Notify,
}

/// One picture's place in the [`PictureBudget`], given back when dropped.
pub(super) struct PictureToken(Arc<PictureBudget>);

impl PictureToken {
    pub(super) fn new(budget: &Arc<PictureBudget>) -> PictureToken {
        budget.held.fetch_add(1, Ordering::AcqRel);
        PictureToken(Arc::clone(budget))
    }
}

impl Drop for PictureToken {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::AcqRel);
        self.0.freed.notify_waiters();
    }
}

/// How far ahead of the packet it is on a late decoder looks for a keyframe to restart at.
const GOP_SEARCH: u64 = 1024;

/// What a long-GOP frame's wait for its turn at the decoder ended with.
pub(super) enum Turn {
    /// The decoder's next packet is this frame's.
    Mine,
    /// The decoder skipped past it, to a later keyframe.
    Passed,
    Cancelled,
}

/// What a long-GOP frame's wait for its picture ended with.
pub(super) enum PictureWait {
    Got(Picture, PictureToken),
    /// The frame was dropped, or the run cancelled.
    Gone,
    /// The decoder restarted past the frame without giving its picture.
    Passed,
}

impl StreamCtx {
    /// The task of frame `idx` of a long-GOP stream: read packet `idx`, feed it to the
    /// stream's decoder in turn, then wait for the `idx`-th picture and output it.
    ///
    /// The read and the feeding happen even if the frame is dropped meanwhile (later
    /// frames need the packet); only the wait for its own picture stops. When the decoder is
    /// too late for the frame, the stream skips the rest of its GOP (see
    /// [`StreamCtx::gop_skip_target`]): the frames up to the next keyframe it can reach in
    /// time are not fed, and are dropped as `decode`.
    pub(super) async fn frame_task_in_order(self: Arc<Self>, idx: u64, slot: OwnedSemaphorePermit) {
        let Some(decoder) = self.in_order.clone() else { return self.retire(idx, slot) };
        let cancel = Arc::clone(&self.lock().entry(idx).cancel);
        let at = self.locate(idx);
        let unreadable = |detail: String| at.unreadable(&detail);
        let end_of_stream = at.src_idx + 1 == self.source_len || self.n_frames.is_some_and(|n| idx + 1 == n);

        // Read: always, even for a dropped frame, unless the decoder skipped past it.
        let Ok(io) = Arc::clone(&self.io_slots).acquire_owned().await else { return self.retire(idx, slot) };
        if self.lock().next_packet > idx {
            return self.skip(idx, slot, Phase::Skipped(DropCause::Decode));
        }
        let t = self.now_ns();
        self.mark(idx, Phase::Reading, |e| e.read_start_ns = Some(t));
        // Not within `--max-buffer`: packets go to the decoder in order, so a packet waiting
        // for bytes held by later packets (waiting for it) would never be read. Long-GOP
        // packets are small, and the window bounds them in number.
        let read = self.read_frame(&at.extent, None).await.map(|read| (read.bytes, read.buf));
        drop(io);
        let encoded = match read {
            Ok((bytes, encoded)) => {
                self.live.bytes(bytes);
                let t = self.now_ns();
                self.mark(idx, Phase::DecodeQueued, |e| {
                    e.read_done_ns = Some(t);
                    e.bytes = bytes;
                });
                self.lock().bytes_read += bytes;
                Ok(encoded)
            }
            Err(detail) => {
                self.mark(idx, Phase::DecodeQueued, |_| {});
                Err(detail)
            }
        };

        // Feed the decoder, in decode order, while the pictures out stay within the prefetch;
        // or skip the rest of the GOP when the decoder is too late for this frame.
        match self.wait_for_turn(idx).await {
            Turn::Mine => {}
            Turn::Cancelled => return self.retire(idx, slot),
            Turn::Passed => return self.skip(idx, slot, Phase::Skipped(DropCause::Decode)),
        }
        if let Some(keyframe) = self.gop_skip_target(idx) {
            {
                let mut st = self.lock();
                st.next_packet = keyframe;
                st.gop_restart = Some(keyframe);
                st.gops_skipped += 1;
            }
            self.changed.notify_waiters();
            return self.skip(idx, slot, Phase::Skipped(DropCause::Decode));
        }
        let restart = self.lock().gop_restart.take_if(|k| *k == idx).is_some();
        let key = self.deadline_key(&self.lock(), idx);
        let permit = self.decode_slots.acquire(key).await;
        self.lock().decodes_started += 1;
        let start = self.now();
        self.mark(idx, Phase::Decoding, |_| {});
        let job = InOrderJob {
            frame_idx: idx,
            decoder,
            encoded,
            end_of_stream,
            restart,
            drained: Vec::new(),
            pool: self.decoded_pool.clone(),
            pictures: Vec::new(),
        };
        let job = self.decode.decode_in_order(job).await;
        drop(permit);
        let end = self.now();
        self.note_decode_time(end.saturating_sub(start));
        let (drained, pictures) = match job {
            Some(job) => (job.drained, job.pictures),
            None => (Vec::new(), vec![Err("the decoder failed without a result (it panicked)".to_owned())]),
        };
        if restart {
            self.restart_pictures_at(idx, drained);
        }
        self.take_pictures(idx, pictures, end_of_stream);

        // Wait, still in the decode stage, for this frame's own picture.
        let (picture, token) = match self.wait_for_picture(idx, &cancel).await {
            PictureWait::Got(picture, token) => (picture, token),
            PictureWait::Gone => return self.retire(idx, slot),
            // Fed before a skip, and the drain gave no picture for it.
            PictureWait::Passed => return self.skip(idx, slot, Phase::Skipped(DropCause::Decode)),
        };
        let decoded = match picture {
            Ok(decoded) => decoded,
            Err(detail) => return self.fail(idx, slot, unreadable(detail)),
        };
        self.note_geometry(&decoded);
        let t = duration_ns(self.now());
        // Long-GOP pictures stay within the picture budget (the prefetch), not the decoded slots.
        match self.output_stage(idx, &cancel, (decoded, None), t).await {
            Ok(held) => self.ready_holding(idx, slot, duration_ns(self.now()), (held, None), Some(token)),
            Err(OutputEnd::Dropped) => self.retire(idx, slot),
            Err(OutputEnd::Skipped(cause)) => self.skip(idx, slot, Phase::OutputSkipped(cause)),
            Err(OutputEnd::Failed(detail)) => self.fail(idx, slot, unreadable(detail)),
        }
    }

    /// Sets frame `idx`'s phase whatever its verdict (a long-GOP frame's work goes on after a
    /// drop, and its phase still tells the oldest-slot blame where the backlog is).
    pub(super) fn mark(&self, idx: u64, phase: Phase, update: impl FnOnce(&mut FrameEntry)) {
        let mut st = self.lock();
        let e = st.entry(idx);
        update(e);
        e.phase = phase;
    }

    /// Files the pictures packet `idx` gave, in order, under the frames they belong to;
    /// a dropped frame's picture is discarded. At the end of the stream, every frame up
    /// to `idx` that got no picture gets an error instead.
    pub(super) fn take_pictures(&self, idx: u64, pictures: Vec<Picture>, end: bool) {
        {
            let mut st = self.lock();
            let missing =
                if end { (idx + 1).saturating_sub(st.next_picture + pictures.len() as u64) } else { 0 };
            let no_picture = || Err("the decoder gave no picture for this frame".to_owned());
            for picture in
                pictures.into_iter().chain(std::iter::repeat_with(no_picture).take(missing as usize))
            {
                let k = st.next_picture;
                st.next_picture += 1;
                if st.entry(k).verdict == Verdict::Pending {
                    st.pictures.insert(k, (picture, PictureToken::new(&self.pictures)));
                }
            }
            st.next_packet = idx + 1;
            // Packets in the decoder with no picture out yet: its delay.
            st.decoder_delay = st.next_packet.saturating_sub(st.next_picture);
        }
        self.changed.notify_waiters();
    }

    /// Files the pictures the drain before a restart at keyframe `idx` gave under the frames
    /// fed before the skip, then moves the picture count to `idx`: the frames skipped get none
    /// (and a frame fed before the skip that the drain gave none is passed, see
    /// [`PictureWait::Passed`]).
    fn restart_pictures_at(&self, idx: u64, drained: Vec<Picture>) {
        {
            let mut st = self.lock();
            for picture in drained {
                let k = st.next_picture;
                if k >= idx {
                    break;
                }
                st.next_picture += 1;
                if st.entry(k).verdict == Verdict::Pending {
                    st.pictures.insert(k, (picture, PictureToken::new(&self.pictures)));
                }
            }
            st.next_picture = idx;
        }
        self.changed.notify_waiters();
    }

    /// Where the decoder should go on from when it is too late for frame `idx`, its next
    /// packet: the next keyframe whose picture could still be out in time, or `None` when frame
    /// `idx` can make it (or nothing is decided early: `--no-drop`, `--fps max`, before t0).
    ///
    /// A long-GOP decoder cannot skip a packet within a GOP: later frames reference it. So the
    /// skip unit is the GOP: the decoder drops the rest of the one it is in and restarts at a
    /// keyframe (drained, reset, fed from there). Frame `idx`'s picture is out after the packets
    /// from the one it is on to `idx`'s picture, the decoder's current delay included; at the
    /// stream's typical (median) decode time per packet, plus the typical output, a frame that
    /// would be out after its deadline makes the decoder skip. The keyframe chosen is the first
    /// whose picture, with the same delay, would be out before its own.
    pub(super) fn gop_skip_target(&self, idx: u64) -> Option<u64> {
        let st = self.lock();
        let due_of = |k: u64| self.skippable_due(&st, k);
        let due = due_of(idx)?;
        let decode = st.recent_decode.typical()?;
        let output = if self.output.is_some() {
            st.recent_output.typical().unwrap_or_default()
        } else {
            Duration::ZERO
        };
        let now = self.now();
        let ready = |packets: u64| now + decode * u32::try_from(packets).unwrap_or(u32::MAX) + output;
        // A restarted decoder holds its delay's worth of packets before the first picture.
        let restarted = st.decoder_delay + 1;
        let packets = if st.gop_restart == Some(idx) {
            restarted
        } else {
            (idx + 1).saturating_sub(st.next_picture).max(1)
        };
        let last = self.n_frames.unwrap_or(u64::MAX);
        let len = self.source_len.max(1);
        let mut keyframes =
            (idx + 1..last.min(idx + GOP_SEARCH)).filter(|&k| self.source.is_keyframe(k % len));
        if ready(packets) <= due {
            // On time, but a decoder that is short of time should give up the tail of this
            // GOP rather than the whole of the next: when going on to the next keyframe would
            // bring its picture out late, skip to it at the last frame that still lets it be
            // on time, so that as much of this GOP as can be is presented. Reacting only once
            // late lost a GOP at each catch-up (H.264, 24-frame GOPs: 0.77 of S at 1.25 × S).
            let next = keyframes.next()?;
            let due_next = due_of(next)?;
            let going_on_late = ready((next - idx) + packets - 1 + restarted) > due_next;
            let last_chance = ready(packets + restarted) > due_next && ready(restarted) <= due_next;
            return (going_on_late && last_chance).then_some(next);
        }
        keyframes.find(|&k| due_of(k).is_some_and(|due| ready(restarted) <= due))
    }

    /// Waits until packet `idx` is the decoder's next and the pictures held are fewer than
    /// the prefetch ([`Turn::Mine`]), the decoder skipped past it ([`Turn::Passed`]), or the
    /// run is cancelled.
    pub(super) async fn wait_for_turn(&self, idx: u64) -> Turn {
        let prefetch = self.cfg.prefetch as usize;
        loop {
            let (changed, freed) = (self.changed.notified(), self.pictures.freed.notified());
            tokio::pin!(changed, freed);
            changed.as_mut().enable();
            freed.as_mut().enable();
            {
                let next = self.lock().next_packet;
                if next > idx {
                    return Turn::Passed;
                }
                if next == idx && self.pictures.held.load(Ordering::Acquire) < prefetch {
                    return Turn::Mine;
                }
            }
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Turn::Cancelled,
                _ = &mut changed => {}
                _ = &mut freed => {}
            }
        }
    }

    /// Waits for frame `idx`'s picture.
    pub(super) async fn wait_for_picture(&self, idx: u64, dropped: &Notify) -> PictureWait {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.lock();
                if let Some((picture, token)) = st.pictures.remove(&idx) {
                    if st.entry(idx).verdict != Verdict::Pending {
                        return PictureWait::Gone;
                    }
                    return PictureWait::Got(picture, token);
                }
                if st.entry(idx).verdict != Verdict::Pending {
                    return PictureWait::Gone;
                }
                if st.next_picture > idx {
                    return PictureWait::Passed;
                }
            }
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return PictureWait::Gone,
                _ = dropped.notified() => {}
                _ = &mut notified => {}
            }
        }
    }
}
