//! The verbs and connection-manager calls playsim makes, through rdma-mummy-sys, which loads
//! libibverbs and librdmacm when first called (on a host without them every call fails with
//! EOPNOTSUPP or ENOSYS instead of the binary failing to start). Every `unsafe` block of the
//! crate is in this module; each owner type frees its object once, in `Drop`, after the
//! objects that depend on it (an [`Arc`] to the parent keeps it alive).

use std::ffi::CStr;
use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::{BorrowedFd, RawFd};
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::time::Duration;

use rdma_mummy_sys as sys;

/// The RDMA devices the verbs library sees, by name (`rxe0`, `mlx5_0`): what `ibv_devices`
/// lists. An error when the library or the kernel's RDMA support is missing.
pub(crate) fn device_names() -> io::Result<Vec<String>> {
    let mut n: i32 = 0;
    // SAFETY: `n` is a valid out-pointer; the list, when not null, holds `n` device pointers
    // and is freed below with ibv_free_device_list, after the names are copied out.
    let list = unsafe { sys::ibv_get_device_list(&mut n) };
    if list.is_null() {
        return Err(io::Error::last_os_error());
    }
    let mut names = Vec::new();
    for i in 0..usize::try_from(n).unwrap_or(0) {
        // SAFETY: `i < n`, so the entry is one of the list's device pointers.
        let device = unsafe { *list.add(i) };
        if device.is_null() {
            continue;
        }
        // SAFETY: ibv_get_device_name returns a NUL-terminated string owned by the device,
        // valid while the list is; it is copied before the list is freed.
        let name = unsafe { sys::ibv_get_device_name(device) };
        if !name.is_null() {
            // SAFETY: not null, NUL-terminated (above).
            names.push(unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned());
        }
    }
    // SAFETY: `list` came from ibv_get_device_list and is freed once.
    unsafe { sys::ibv_free_device_list(list) };
    Ok(names)
}

/// An error from a verbs call that returns -1 or a null pointer and sets errno, or returns
/// the errno itself.
fn os_error(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn status_error(what: &str, status: i32) -> io::Error {
    let e = if status > 0 { io::Error::from_raw_os_error(status) } else { io::Error::last_os_error() };
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// A connection manager's event channel: rdma_cm's events for the ids made on it.
pub(crate) struct EventChannel(NonNull<sys::rdma_event_channel>);

// SAFETY: an event channel is a file descriptor and librdmacm's calls on it are thread-safe;
// playsim reads its events from one thread at a time (the connection's poller, or the
// connecting thread before the poller starts).
unsafe impl Send for EventChannel {}
// SAFETY: as above.
unsafe impl Sync for EventChannel {}

impl EventChannel {
    pub fn new() -> io::Result<Arc<EventChannel>> {
        // SAFETY: no arguments; a null result sets errno.
        let raw = unsafe { sys::rdma_create_event_channel() };
        NonNull::new(raw)
            .map(|p| Arc::new(EventChannel(p)))
            .ok_or_else(|| os_error("rdma_create_event_channel"))
    }

    pub fn fd(&self) -> RawFd {
        // SAFETY: the channel is alive while `self` is.
        unsafe { self.0.as_ref().fd }
    }

    /// Waits up to `timeout` for the next event. `Ok(None)` when none came in time.
    pub fn next_event(&self, timeout: Duration) -> io::Result<Option<CmEvent>> {
        if !wait_readable(self.fd(), timeout)? {
            return Ok(None);
        }
        let mut event: *mut sys::rdma_cm_event = ptr::null_mut();
        // SAFETY: the channel is alive; `event` is a valid out-pointer. The fd was readable,
        // so the call does not block (and the channel is made non-blocking anyway).
        let status = unsafe { sys::rdma_get_cm_event(self.0.as_ptr(), &mut event) };
        if status != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(io::Error::new(e.kind(), format!("rdma_get_cm_event: {e}")));
        }
        // SAFETY: rdma_get_cm_event succeeded, so `event` points at an event that stays valid
        // until it is acknowledged; the fields are copied out, then it is acknowledged once.
        let copied = unsafe {
            let e = &*event;
            let private = if e.param.conn.private_data.is_null() || e.param.conn.private_data_len == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(
                    e.param.conn.private_data.cast::<u8>(),
                    e.param.conn.private_data_len.into(),
                )
                .to_vec()
            };
            let copied = CmEvent { kind: e.event, status: e.status, id: e.id as usize, private };
            sys::rdma_ack_cm_event(event);
            copied
        };
        Ok(Some(copied))
    }

    pub fn set_nonblocking(&self) -> io::Result<()> {
        set_nonblocking(self.fd())
    }
}

impl Drop for EventChannel {
    fn drop(&mut self) {
        // SAFETY: every id made on the channel holds an Arc to it, so none is left; destroyed once.
        unsafe { sys::rdma_destroy_event_channel(self.0.as_ptr()) }
    }
}

/// A connection-manager event, copied out of librdmacm's.
#[derive(Debug)]
pub(crate) struct CmEvent {
    pub kind: sys::rdma_cm_event_type::Type,
    pub status: i32,
    /// The id the event is for, as an address (for comparison only).
    pub id: usize,
    /// The peer's private data (an ESTABLISHED or REJECTED event's).
    pub private: Vec<u8>,
}

impl CmEvent {
    /// librdmacm's name of the event kind (`RDMA_CM_EVENT_REJECTED`).
    pub fn name(&self) -> String {
        // SAFETY: rdma_event_str returns a static NUL-terminated string for any value.
        let name = unsafe { sys::rdma_event_str(self.kind) };
        if name.is_null() {
            return format!("event {}", self.kind);
        }
        // SAFETY: not null, static, NUL-terminated.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    }
}

/// A connection-manager id: one connection's address, route and queue pair.
pub(crate) struct CmId {
    raw: NonNull<sys::rdma_cm_id>,
    has_qp: bool,
    _channel: Arc<EventChannel>,
}

// SAFETY: librdmacm's and libibverbs' calls on an id and its QP are thread-safe (posting
// work requests from several threads is allowed by the verbs API); the id is destroyed
// once, in Drop, when no thread uses it any more.
unsafe impl Send for CmId {}
// SAFETY: as above.
unsafe impl Sync for CmId {}

impl CmId {
    pub fn new(channel: &Arc<EventChannel>) -> io::Result<CmId> {
        let mut raw: *mut sys::rdma_cm_id = ptr::null_mut();
        // SAFETY: the channel is alive; `raw` is a valid out-pointer.
        let status = unsafe {
            sys::rdma_create_id(
                channel.0.as_ptr(),
                &mut raw,
                ptr::null_mut(),
                sys::rdma_port_space::RDMA_PS_TCP,
            )
        };
        if status != 0 {
            return Err(os_error("rdma_create_id"));
        }
        let raw = NonNull::new(raw).ok_or_else(|| io::Error::other("rdma_create_id returned no id"))?;
        Ok(CmId { raw, has_qp: false, _channel: Arc::clone(channel) })
    }

    /// The address of the id, as events name it.
    pub fn address(&self) -> usize {
        self.raw.as_ptr() as usize
    }

    pub fn resolve_addr(&self, peer: SocketAddr, timeout: Duration) -> io::Result<()> {
        let SocketAddr::V4(v4) = peer else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "RDMA to an IPv6 address is not supported yet",
            ));
        };
        let mut addr = sockaddr_in(v4);
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: the id is alive; `addr` is a valid sockaddr_in for the call's duration
        // (librdmacm copies it).
        let status = unsafe {
            sys::rdma_resolve_addr(
                self.raw.as_ptr(),
                ptr::null_mut(),
                (&mut addr as *mut libc::sockaddr_in).cast(),
                ms,
            )
        };
        if status != 0 {
            return Err(os_error("rdma_resolve_addr"));
        }
        Ok(())
    }

    pub fn resolve_route(&self, timeout: Duration) -> io::Result<()> {
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: the id is alive.
        if unsafe { sys::rdma_resolve_route(self.raw.as_ptr(), ms) } != 0 {
            return Err(os_error("rdma_resolve_route"));
        }
        Ok(())
    }

    /// The device context the resolved route goes through (null before resolution).
    pub fn context(&self) -> *mut sys::ibv_context {
        // SAFETY: the id is alive; reading a field.
        unsafe { self.raw.as_ref().verbs }
    }

    /// The name of the device the route goes through.
    pub fn device_name(&self) -> String {
        let context = self.context();
        if context.is_null() {
            return "unknown".into();
        }
        // SAFETY: a resolved id's context is a live device context; its device pointer and
        // name live as long as the context.
        let name = unsafe { sys::ibv_get_device_name((*context).device) };
        if name.is_null() {
            return "unknown".into();
        }
        // SAFETY: not null, NUL-terminated.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    }

    /// Creates the id's reliable-connected queue pair on `pd`, completing on `cq`.
    pub fn create_qp(
        &mut self,
        pd: &ProtectionDomain,
        cq: &CompletionQueue,
        send: u32,
        recv: u32,
    ) -> io::Result<()> {
        let mut attr = sys::ibv_qp_init_attr {
            qp_context: ptr::null_mut(),
            send_cq: cq.raw.as_ptr(),
            recv_cq: cq.raw.as_ptr(),
            srq: ptr::null_mut(),
            cap: sys::ibv_qp_cap {
                max_send_wr: send,
                max_recv_wr: recv,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            qp_type: sys::ibv_qp_type::IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: the id, PD and CQ are alive (the connection keeps them until the id is
        // dropped, which destroys the QP first); `attr` is valid for the call.
        if unsafe { sys::rdma_create_qp(self.raw.as_ptr(), pd.raw.as_ptr(), &mut attr) } != 0 {
            return Err(os_error("rdma_create_qp"));
        }
        self.has_qp = true;
        Ok(())
    }

    /// Connects, sending `private` as the connection's private data (RFC 8797).
    pub fn connect(&self, private: &[u8], depth: u8) -> io::Result<()> {
        let mut param = sys::rdma_conn_param {
            private_data: private.as_ptr().cast(),
            private_data_len: u8::try_from(private.len()).unwrap_or(0),
            responder_resources: depth,
            initiator_depth: depth,
            flow_control: 1,
            retry_count: 7,
            rnr_retry_count: 7,
            srq: 0,
            qp_num: 0,
        };
        // SAFETY: the id (with its QP) is alive; `param` and `private` are valid for the call
        // (librdmacm copies the private data into the request).
        if unsafe { sys::rdma_connect(self.raw.as_ptr(), &mut param) } != 0 {
            return Err(os_error("rdma_connect"));
        }
        Ok(())
    }

    /// Starts the disconnection: the QP goes to the error state, so the server can no longer
    /// write into any registered buffer through it, and every posted request completes
    /// flushed.
    pub fn disconnect(&self) {
        // SAFETY: the id is alive. A second call, or one on an id never connected, fails
        // harmlessly.
        unsafe { sys::rdma_disconnect(self.raw.as_ptr()) };
        if self.has_qp {
            let mut attr: sys::ibv_qp_attr = unsafe_zeroed_qp_attr();
            attr.qp_state = sys::ibv_qp_state::IBV_QPS_ERR;
            // SAFETY: the id's QP exists (has_qp) and lives until Drop; moving it to ERR is
            // always allowed and stops all remote access through it.
            unsafe { sys::ibv_modify_qp(self.qp(), &mut attr, sys::ibv_qp_attr_mask::IBV_QP_STATE.0 as i32) };
        }
    }

    fn qp(&self) -> *mut sys::ibv_qp {
        // SAFETY: the id is alive; reading a field.
        unsafe { self.raw.as_ref().qp }
    }

    /// Posts one receive of `len` bytes at `addr` (inside `region`), tagged `wr_id`.
    pub fn post_recv(&self, region: &MemoryRegion, offset: usize, len: u32, wr_id: u64) -> io::Result<()> {
        if offset + len as usize > region.len {
            return Err(io::Error::other("a receive outside its region"));
        }
        let mut sge = sys::ibv_sge { addr: (region.addr + offset) as u64, length: len, lkey: region.lkey() };
        let mut wr = sys::ibv_recv_wr { wr_id, next: ptr::null_mut(), sg_list: &mut sge, num_sge: 1 };
        let mut bad: *mut sys::ibv_recv_wr = ptr::null_mut();
        // SAFETY: the QP is alive; the SGE lies inside the registered region (checked
        // above), which outlives the QP's use of it (the connection drops the id first).
        let status = unsafe { sys::ibv_post_recv(self.qp(), &mut wr, &mut bad) };
        if status != 0 {
            return Err(status_error("ibv_post_recv", status));
        }
        Ok(())
    }

    /// Posts one signaled SEND of `len` bytes at `offset` in `region`, tagged `wr_id`.
    pub fn post_send(&self, region: &MemoryRegion, offset: usize, len: u32, wr_id: u64) -> io::Result<()> {
        if offset + len as usize > region.len {
            return Err(io::Error::other("a send outside its region"));
        }
        let mut sge = sys::ibv_sge { addr: (region.addr + offset) as u64, length: len, lkey: region.lkey() };
        // SAFETY: an all-zero ibv_send_wr is a valid value (null pointers, zero counts);
        // the fields used are set below.
        let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        wr.wr_id = wr_id;
        wr.sg_list = &mut sge;
        wr.num_sge = 1;
        wr.opcode = sys::ibv_wr_opcode::IBV_WR_SEND;
        wr.send_flags = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
        let mut bad: *mut sys::ibv_send_wr = ptr::null_mut();
        // SAFETY: the QP is alive; the SGE lies inside the registered region (checked
        // above), which the connection keeps until the send completes.
        let status = unsafe { sys::ibv_post_send(self.qp(), &mut wr, &mut bad) };
        if status != 0 {
            return Err(status_error("ibv_post_send", status));
        }
        Ok(())
    }
}

fn unsafe_zeroed_qp_attr() -> sys::ibv_qp_attr {
    // SAFETY: ibv_qp_attr is plain data (integers and nested plain structs); all-zero is valid.
    unsafe { std::mem::zeroed() }
}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: the QP, if any, is destroyed before the id; both exactly once. The CQ and
        // PD it used are still alive (the connection drops them after the id).
        unsafe {
            if self.has_qp {
                sys::rdma_destroy_qp(self.raw.as_ptr());
            }
            sys::rdma_destroy_id(self.raw.as_ptr());
        }
    }
}

/// A protection domain on a device: the scope of memory registrations and queue pairs.
pub(crate) struct ProtectionDomain {
    raw: NonNull<sys::ibv_pd>,
    context: usize,
}

// SAFETY: a PD is used only through thread-safe verbs calls (registration, QP creation).
unsafe impl Send for ProtectionDomain {}
// SAFETY: as above.
unsafe impl Sync for ProtectionDomain {}

impl ProtectionDomain {
    pub fn new(context: *mut sys::ibv_context) -> io::Result<Arc<ProtectionDomain>> {
        if context.is_null() {
            return Err(io::Error::other("no device context: the route was not resolved"));
        }
        // SAFETY: `context` is a live device context (librdmacm keeps its devices open for
        // the life of the process).
        let raw = unsafe { sys::ibv_alloc_pd(context) };
        let raw = NonNull::new(raw).ok_or_else(|| os_error("ibv_alloc_pd"))?;
        Ok(Arc::new(ProtectionDomain { raw, context: context as usize }))
    }

    /// True when the PD is on `context`'s device.
    pub fn is_on(&self, context: *mut sys::ibv_context) -> bool {
        self.context == context as usize
    }

    /// Registers `len` bytes at `addr` for local writes and for what `remote` lets the peer
    /// do: nothing, RDMA Write into it (a write or reply chunk) or RDMA Read from it (a read
    /// chunk).
    ///
    /// # Safety
    /// `addr..addr + len` must stay allocated while the region is registered and while any
    /// operation that may touch it (a posted receive, a READ whose write chunk names it, a
    /// WRITE whose read chunk names it) is outstanding.
    pub unsafe fn register(
        self: &Arc<Self>,
        addr: usize,
        len: usize,
        remote: RemoteAccess,
    ) -> io::Result<MemoryRegion> {
        let mut access = sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE;
        match remote {
            RemoteAccess::None => {}
            RemoteAccess::Write => access |= sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE,
            RemoteAccess::Read => access |= sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ,
        }
        // SAFETY: the PD is alive; the memory's lifetime is the caller's promise (above).
        let raw =
            unsafe { sys::ibv_reg_mr(self.raw.as_ptr(), addr as *mut libc::c_void, len, access.0 as i32) };
        let raw = NonNull::new(raw).ok_or_else(|| os_error("ibv_reg_mr"))?;
        Ok(MemoryRegion { raw, addr, len, _pd: Arc::clone(self) })
    }
}

impl Drop for ProtectionDomain {
    fn drop(&mut self) {
        // SAFETY: every MR and QP on the PD holds an Arc to it, so none is left.
        unsafe { sys::ibv_dealloc_pd(self.raw.as_ptr()) };
    }
}

/// What the peer may do with a registered region through the connection's queue pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RemoteAccess {
    /// Nothing: the client's own send and receive buffers.
    None,
    /// RDMA Write into it: a READ's write chunk, a reply chunk.
    Write,
    /// RDMA Read from it: a WRITE's read chunk.
    Read,
}

/// A registered memory region.
pub(crate) struct MemoryRegion {
    raw: NonNull<sys::ibv_mr>,
    addr: usize,
    len: usize,
    _pd: Arc<ProtectionDomain>,
}

// SAFETY: an MR's keys are plain values; deregistration happens once, in Drop.
unsafe impl Send for MemoryRegion {}
// SAFETY: as above.
unsafe impl Sync for MemoryRegion {}

impl MemoryRegion {
    pub fn lkey(&self) -> u32 {
        // SAFETY: the MR is alive while `self` is.
        unsafe { self.raw.as_ref().lkey }
    }

    pub fn rkey(&self) -> u32 {
        // SAFETY: as above.
        unsafe { self.raw.as_ref().rkey }
    }

    pub fn addr(&self) -> usize {
        self.addr
    }

    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: deregistered once; the owner drops a region only when nothing posted
        // refers to it.
        unsafe { sys::ibv_dereg_mr(self.raw.as_ptr()) };
    }
}

/// A completion channel: a file descriptor that becomes readable when an armed CQ has a
/// completion.
pub(crate) struct CompletionChannel(NonNull<sys::ibv_comp_channel>);

// SAFETY: used by one poller thread at a time; destroyed once, after its CQ.
unsafe impl Send for CompletionChannel {}
// SAFETY: as above.
unsafe impl Sync for CompletionChannel {}

impl CompletionChannel {
    pub fn new(context: *mut sys::ibv_context) -> io::Result<Arc<CompletionChannel>> {
        // SAFETY: `context` is a live device context.
        let raw = unsafe { sys::ibv_create_comp_channel(context) };
        let channel =
            NonNull::new(raw).map(CompletionChannel).ok_or_else(|| os_error("ibv_create_comp_channel"))?;
        set_nonblocking(channel.fd())?;
        Ok(Arc::new(channel))
    }

    pub fn fd(&self) -> RawFd {
        // SAFETY: alive while `self` is.
        unsafe { self.0.as_ref().fd }
    }
}

impl Drop for CompletionChannel {
    fn drop(&mut self) {
        // SAFETY: its CQ holds an Arc to it, so the CQ is gone; destroyed once.
        unsafe { sys::ibv_destroy_comp_channel(self.0.as_ptr()) };
    }
}

/// A completion queue, armed through its channel.
pub(crate) struct CompletionQueue {
    raw: NonNull<sys::ibv_cq>,
    channel: Arc<CompletionChannel>,
    unacked: std::sync::atomic::AtomicU32,
}

// SAFETY: polled by one thread (the connection's poller); other threads only read `raw` to
// name it in a QP's creation.
unsafe impl Send for CompletionQueue {}
// SAFETY: as above.
unsafe impl Sync for CompletionQueue {}

/// One work completion, copied out.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Completion {
    pub wr_id: u64,
    pub status: u32,
    pub opcode: u32,
    pub byte_len: u32,
}

impl Completion {
    pub fn is_success(&self) -> bool {
        self.status == sys::ibv_wc_status::IBV_WC_SUCCESS
    }

    pub fn is_receive(&self) -> bool {
        self.opcode & sys::ibv_wc_opcode::IBV_WC_RECV != 0
    }

    /// libibverbs' name of the status (`transport retry counter exceeded`).
    pub fn status_text(&self) -> String {
        // SAFETY: ibv_wc_status_str returns a static NUL-terminated string for any value.
        let text = unsafe { sys::ibv_wc_status_str(self.status) };
        if text.is_null() {
            return format!("status {}", self.status);
        }
        // SAFETY: not null, static.
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    }
}

impl CompletionQueue {
    pub fn new(
        context: *mut sys::ibv_context,
        entries: i32,
        channel: &Arc<CompletionChannel>,
    ) -> io::Result<CompletionQueue> {
        // SAFETY: `context` and the channel are alive; the channel outlives the CQ (Arc).
        let raw = unsafe { sys::ibv_create_cq(context, entries, ptr::null_mut(), channel.0.as_ptr(), 0) };
        let raw = NonNull::new(raw).ok_or_else(|| os_error("ibv_create_cq"))?;
        let cq = CompletionQueue { raw, channel: Arc::clone(channel), unacked: 0.into() };
        cq.arm()?;
        Ok(cq)
    }

    /// Asks for an event on the channel at the next completion.
    pub fn arm(&self) -> io::Result<()> {
        // SAFETY: the CQ is alive.
        let status = unsafe { sys::ibv_req_notify_cq(self.raw.as_ptr(), 0) };
        if status != 0 {
            return Err(status_error("ibv_req_notify_cq", status));
        }
        Ok(())
    }

    /// Waits up to `timeout` for the channel's event, consumes it and re-arms the CQ.
    /// Returns whether an event came.
    pub fn wait(&self, timeout: Duration) -> io::Result<bool> {
        if !wait_readable(self.channel.fd(), timeout)? {
            return Ok(false);
        }
        let mut cq: *mut sys::ibv_cq = ptr::null_mut();
        let mut context: *mut libc::c_void = ptr::null_mut();
        // SAFETY: the channel is alive and non-blocking; the out-pointers are valid.
        let status = unsafe { sys::ibv_get_cq_event(self.channel.0.as_ptr(), &mut cq, &mut context) };
        if status != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(false);
            }
            return Err(io::Error::new(e.kind(), format!("ibv_get_cq_event: {e}")));
        }
        let unacked = self.unacked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if unacked >= 64 {
            self.ack();
        }
        self.arm()?;
        Ok(true)
    }

    fn ack(&self) {
        let n = self.unacked.swap(0, std::sync::atomic::Ordering::Relaxed);
        if n > 0 {
            // SAFETY: acknowledges events this CQ got from its channel, exactly once each.
            unsafe { sys::ibv_ack_cq_events(self.raw.as_ptr(), n) };
        }
    }

    /// Takes up to `out.capacity()` completions into `out` (cleared first).
    pub fn poll(&self, out: &mut Vec<Completion>, max: usize) -> io::Result<()> {
        out.clear();
        // SAFETY: an all-zero ibv_wc is a valid value; the array is filled by ibv_poll_cq.
        let mut wcs: [sys::ibv_wc; 32] = unsafe { std::mem::zeroed() };
        let want = max.min(wcs.len()) as i32;
        // SAFETY: the CQ is alive; `wcs` has room for `want` entries.
        let n = unsafe { sys::ibv_poll_cq(self.raw.as_ptr(), want, wcs.as_mut_ptr()) };
        if n < 0 {
            return Err(io::Error::other(format!("ibv_poll_cq failed ({n})")));
        }
        for wc in &wcs[..n as usize] {
            out.push(Completion {
                wr_id: wc.wr_id,
                status: wc.status,
                opcode: wc.opcode,
                byte_len: wc.byte_len,
            });
        }
        Ok(())
    }
}

impl Drop for CompletionQueue {
    fn drop(&mut self) {
        self.ack();
        // SAFETY: the QP using the CQ was destroyed first (the connection drops its id before
        // its CQ); destroyed once.
        unsafe { sys::ibv_destroy_cq(self.raw.as_ptr()) };
    }
}

fn sockaddr_in(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(*addr.ip()).to_be() },
        sin_zero: [0; 8],
    }
}

fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is a descriptor owned by a live verbs object for the call's duration.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let flags = rustix::fs::fcntl_getfl(fd)?;
    rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK)?;
    Ok(())
}

/// Waits until `fd` is readable or `timeout` passes; true when readable.
fn wait_readable(fd: RawFd, timeout: Duration) -> io::Result<bool> {
    // SAFETY: `fd` belongs to a live verbs object for the call's duration.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut fds = [rustix::event::PollFd::new(&fd, rustix::event::PollFlags::IN)];
    let timeout = rustix::event::Timespec::try_from(timeout)
        .unwrap_or(rustix::event::Timespec { tv_sec: 1, tv_nsec: 0 });
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
