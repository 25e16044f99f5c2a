//! Long-GOP streams: packets fed in decode order to the stream's one decoder, pictures
//! waited for in presentation order.

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

impl StreamCtx {
    /// The task of frame `idx` of a long-GOP stream: read packet `idx`, feed it to the
    /// stream's decoder in turn, then wait for the `idx`-th picture and output it.
    ///
    /// The read and the feeding happen even if the frame is dropped meanwhile (later
    /// frames need the packet); only the wait for its own picture stops.
    pub(super) async fn frame_task_in_order(self: Arc<Self>, idx: u64, slot: OwnedSemaphorePermit) {
        let Some(decoder) = self.in_order.clone() else { return self.retire(idx, slot) };
        let cancel = Arc::clone(&self.lock().entry(idx).cancel);
        let at = self.locate(idx);
        let unreadable = |detail: String| at.unreadable(&detail);
        let end_of_stream = at.src_idx + 1 == self.source_len || self.n_frames.is_some_and(|n| idx + 1 == n);

        // Read: always, even for a dropped frame.
        let Ok(io) = Arc::clone(&self.io_slots).acquire_owned().await else { return self.retire(idx, slot) };
        let t = self.now_ns();
        self.mark(idx, Phase::Reading, |e| e.read_start_ns = Some(t));
        let mut encoded = self.encoded_pool.get();
        let read = self.read_frame(&at.extent, &mut encoded).await;
        drop(io);
        let encoded = match read {
            Ok(bytes) => {
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

        // Feed the decoder, in decode order, while the pictures out stay within the prefetch.
        if !self.wait_for_turn(idx).await {
            return self.retire(idx, slot);
        }
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
            pool: self.decoded_pool.clone(),
            pictures: Vec::new(),
        };
        let job = self.decode.decode_in_order(job).await;
        drop(permit);
        let end = self.now();
        {
            let mut st = self.lock();
            st.hist.decode.record(end.saturating_sub(start));
            st.busy.decode += end.saturating_sub(start);
        }
        let pictures = match job {
            Some(job) => job.pictures,
            None => vec![Err("the decoder failed without a result (it panicked)".to_owned())],
        };
        self.take_pictures(idx, pictures, end_of_stream);

        // Wait, still in the decode stage, for this frame's own picture.
        let Some((picture, token)) = self.wait_for_picture(idx, &cancel).await else {
            return self.retire(idx, slot);
        };
        let decoded = match picture {
            Ok(decoded) => decoded,
            Err(detail) => return self.fail(idx, slot, unreadable(detail)),
        };
        self.note_geometry(&decoded);
        let t = duration_ns(self.now());
        // Long-GOP pictures stay within the picture budget (the prefetch), not the decoded slots.
        match self.output_stage(idx, &cancel, (decoded, None), t).await {
            Ok(held) => self.ready_holding(idx, slot, duration_ns(self.now()), held, Some(token)),
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
        }
        self.changed.notify_waiters();
    }

    /// Waits until packet `idx` is the decoder's next and the pictures held are fewer
    /// than the prefetch; false if the run is cancelled first.
    pub(super) async fn wait_for_turn(&self, idx: u64) -> bool {
        let prefetch = self.cfg.prefetch as usize;
        loop {
            let (changed, freed) = (self.changed.notified(), self.pictures.freed.notified());
            tokio::pin!(changed, freed);
            changed.as_mut().enable();
            freed.as_mut().enable();
            if self.lock().next_packet == idx && self.pictures.held.load(Ordering::Acquire) < prefetch {
                return true;
            }
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return false,
                _ = &mut changed => {}
                _ = &mut freed => {}
            }
        }
    }

    /// Waits for frame `idx`'s picture; `None` if the frame is dropped or the run cancelled first.
    pub(super) async fn wait_for_picture(
        &self,
        idx: u64,
        dropped: &Notify,
    ) -> Option<(Picture, PictureToken)> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.lock();
                if let Some(picture) = st.pictures.remove(&idx) {
                    return (st.entry(idx).verdict == Verdict::Pending).then_some(picture);
                }
                if st.entry(idx).verdict != Verdict::Pending {
                    return None;
                }
            }
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return None,
                _ = dropped.notified() => {}
                _ = &mut notified => {}
            }
        }
    }
}
