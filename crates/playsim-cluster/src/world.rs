//! The MPI thread: the one thread that calls MPI (initialised as `MPI_THREAD_FUNNELED`), and
//! the client's and rank 0's halves of the protocol. The rest of the process talks to it
//! through a command channel and shared state.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mpi::request::{Request, StaticScope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Threading;
use playsim_core::Clock;
use tokio::sync::oneshot;

use crate::clock_sync::{self, ClockOffset, RoundTrip};
use crate::protocol::{Message, TAG};
use crate::{wall_ns, ClusterError, Finished, PeerRecord, PeerSnapshot, LOST_AFTER, START_MARGIN};

/// How long the MPI thread waits for a command between looks for messages, when no round
/// trip is under way (then it spins): small next to a frame, and a thread that wakes 200
/// times a second costs a client next to nothing (the bench's `mpi` rows measure it).
const IDLE_POLL: Duration = Duration::from_millis(5);

/// Round trips per client to measure its clock offset.
const ROUND_TRIPS: u32 = 16;
/// How long rank 0 waits for one answer to a ping.
const PONG_TIMEOUT: Duration = Duration::from_secs(2);
/// How long, once terminated, rank 0 still waits for the clients' reports.
const PATIENCE_WHEN_TERMINATED: Duration = Duration::from_millis(300);
/// The largest report a client may send (a long run's timeline): bigger ones are refused,
/// and the client's snapshot stands in.
const MAX_REPORT_BYTES: usize = 512 << 20;

enum Command {
    Ready { error: Option<String>, reply: oneshot::Sender<Result<u64, String>> },
    Snapshot(String),
    Finish { report: String, reply: oneshot::Sender<Finished> },
    Done(u8, String),
}

/// What the MPI thread shares with the process.
struct Shared {
    clock: Arc<dyn Clock>,
    terminated: AtomicBool,
    /// The common start on this client's clock, ns since the epoch; 0 until it is given.
    start_wall_ns: AtomicU64,
    /// Rank 0: every client's record, by rank. A client: its own clock offset in slot 0.
    peers: Mutex<Vec<PeerRecord>>,
}

impl Shared {
    fn peers(&self) -> std::sync::MutexGuard<'_, Vec<PeerRecord>> {
        self.peers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub(crate) struct World {
    pub rank: u32,
    pub size: u32,
    pub host: String,
    pub library: String,
    shared: Arc<Shared>,
    commands: Sender<Command>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl World {
    pub fn start(clock: Arc<dyn Clock>) -> Result<World, ClusterError> {
        let (commands, receiver) = mpsc::channel();
        let (started, up) = mpsc::channel();
        let shared = Arc::new(Shared {
            clock: Arc::clone(&clock),
            terminated: AtomicBool::new(false),
            start_wall_ns: AtomicU64::new(0),
            peers: Mutex::default(),
        });
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("playsim-mpi".into())
            .spawn(move || mpi_thread(thread_shared, receiver, started))
            .map_err(|e| ClusterError::Init(format!("cannot start the MPI thread: {e}")))?;
        let (rank, size, host, library) = up
            .recv()
            .map_err(|_| ClusterError::Init("the MPI thread ended before MPI_Init returned".into()))??;
        Ok(World { rank, size, host, library, shared, commands, thread: Some(thread) })
    }

    pub async fn ready(&self, error: Option<String>) -> Result<u64, String> {
        let (reply, answer) = oneshot::channel();
        self.commands.send(Command::Ready { error, reply }).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    pub fn clock_offset(&self) -> ClockOffset {
        let peers = self.shared.peers();
        let slot = if self.rank == 0 { 0 } else { self.rank as usize };
        peers.get(slot).map(|p| p.clock).unwrap_or_default()
    }

    pub fn start_wall_ns(&self) -> Option<u64> {
        Some(self.shared.start_wall_ns.load(Ordering::SeqCst)).filter(|&ns| ns > 0)
    }

    pub fn send_snapshot(&self, json: String) {
        let _ = self.commands.send(Command::Snapshot(json));
    }

    pub fn peers(&self) -> Vec<PeerRecord> {
        self.shared.peers().clone()
    }

    pub fn snapshots(&self) -> Vec<PeerSnapshot> {
        let peers = self.shared.peers();
        peers
            .iter()
            .map(|p| PeerSnapshot { rank: p.rank, host: p.host.clone(), snapshot: p.snapshot.clone() })
            .collect()
    }

    pub async fn finish(&self, report: String) -> Finished {
        let (reply, answer) = oneshot::channel();
        if self.commands.send(Command::Finish { report, reply }).is_err() {
            return if self.rank == 0 { Finished::Root(self.peers()) } else { Finished::Client(None) };
        }
        match answer.await {
            Ok(finished) => finished,
            Err(_) if self.rank == 0 => Finished::Root(self.peers()),
            Err(_) => Finished::Client(None),
        }
    }

    pub fn done(&self, exit_code: u8, payload: String) {
        let _ = self.commands.send(Command::Done(exit_code, payload));
    }

    pub fn terminate(&self) {
        self.shared.terminated.store(true, Ordering::SeqCst);
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // Closing the channel ends the thread, which finalises MPI unless terminated; the
        // process must not exit before MPI_Finalize returns, or mpirun counts the rank failed.
        let (commands, _) = mpsc::channel();
        drop(std::mem::replace(&mut self.commands, commands));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn gone() -> String {
    "the MPI thread has stopped".to_owned()
}

type Started = Result<(u32, u32, String, String), ClusterError>;

fn mpi_thread(shared: Arc<Shared>, commands: Receiver<Command>, started: Sender<Started>) {
    let Some((universe, _threading)) = mpi::initialize_with_threading(Threading::Funneled) else {
        let _ = started.send(Err(ClusterError::Init("MPI was initialised already".into())));
        return;
    };
    let world = universe.world();
    let rank = u32::try_from(world.rank()).unwrap_or(0);
    let size = u32::try_from(world.size()).unwrap_or(1);
    let host = mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into());
    let library = mpi::environment::library_version()
        .map(|v| v.split(',').next().unwrap_or_default().trim().to_owned())
        .unwrap_or_else(|_| "MPI".into());
    {
        let mut peers = shared.peers();
        *peers = (0..size).map(|r| PeerRecord { rank: r, ..PeerRecord::default() }).collect();
        if let Some(me) = peers.get_mut(rank as usize) {
            me.host = host.clone();
        }
    }
    let _ = started.send(Ok((rank, size, host.clone(), library)));
    let clean = if rank == 0 {
        Root::new(&world, &shared, size).run(&commands)
    } else {
        Client::new(&world, &shared, rank, host).run(&commands)
    };
    if !clean || shared.terminated.load(Ordering::SeqCst) {
        // A peer may be dead: MPI_Finalize would wait for it. The process exits without it.
        std::mem::forget(universe);
    }
}

/// Receives every message waiting, without blocking.
fn receive_waiting(world: &SimpleCommunicator) -> Vec<(u32, Message)> {
    let mut received = Vec::new();
    while let Some((message, status)) = world.any_process().immediate_matched_probe_with_tag(TAG) {
        let from = u32::try_from(status.source_rank()).unwrap_or(u32::MAX);
        // Received whatever its size, or the probe would find it again forever.
        let (bytes, _) = (message, status).matched_receive_vec::<u8>();
        if bytes.len() > MAX_REPORT_BYTES {
            eprintln!("playsim: ignoring a {} B message from rank {from}, above the limit", bytes.len());
            continue;
        }
        match Message::decode(&bytes) {
            Ok(m) => received.push((from, m)),
            Err(e) => eprintln!("playsim: ignoring a message from rank {from} that does not parse: {e}"),
        }
    }
    received
}

fn send(world: &SimpleCommunicator, to: u32, message: &Message) {
    let bytes = message.encode();
    world.process_at_rank(i32::try_from(to).unwrap_or(0)).send_with_tag(&bytes[..], TAG);
}

/// Waits for the next command, or `idle` at most; `Err` when the process has let go.
fn next_command(commands: &Receiver<Command>, idle: Duration) -> Result<Option<Command>, ()> {
    match commands.recv_timeout(idle) {
        Ok(c) => Ok(Some(c)),
        Err(RecvTimeoutError::Timeout) => Ok(None),
        Err(RecvTimeoutError::Disconnected) => Err(()),
    }
}

/// A large message on its way: the report, sent without blocking on a peer that may die.
struct Outgoing(Option<Request<'static, [u8], StaticScope>>);

impl Outgoing {
    fn start(world: &SimpleCommunicator, to: u32, message: &Message) -> Outgoing {
        // Leaked once a run: the request must own its buffer for as long as MPI may read it,
        // and an abandoned request (a dead rank 0) may hold it to the end of the process.
        let bytes: &'static [u8] = Box::leak(message.encode().into_boxed_slice());
        let to = world.process_at_rank(i32::try_from(to).unwrap_or(0));
        Outgoing(Some(to.immediate_send_with_tag(StaticScope, bytes, TAG)))
    }

    /// Whether it has gone.
    fn test(&mut self) -> bool {
        match self.0.take() {
            None => true,
            Some(request) => match request.test() {
                Ok(_) => true,
                Err(request) => {
                    self.0 = Some(request);
                    false
                }
            },
        }
    }
}

impl Drop for Outgoing {
    fn drop(&mut self) {
        // An unfinished request must not be dropped (rsmpi panics): abandon it.
        if let Some(request) = self.0.take() {
            std::mem::forget(request);
        }
    }
}

struct Client<'w> {
    world: &'w SimpleCommunicator,
    shared: &'w Shared,
    rank: u32,
    host: String,
    ready_reply: Option<oneshot::Sender<Result<u64, String>>>,
    /// A start or abort that came before this client asked (an abort can come early).
    answer: Option<Result<u64, String>>,
    syncing: bool,
    report: Option<Outgoing>,
    finish_reply: Option<oneshot::Sender<Finished>>,
    /// Rank 0's word that this round is over: its exit code and payload.
    done: Option<(u8, String)>,
    /// The round under way, from 0.
    round: u32,
    /// Whether the last round ended with rank 0's word.
    clean: bool,
    /// When this client first saw it was terminated, on the run's clock.
    terminated_at: Option<Duration>,
}

impl<'w> Client<'w> {
    fn since_terminated(&mut self) -> Duration {
        let now = self.shared.clock.now();
        now.saturating_sub(*self.terminated_at.get_or_insert(now))
    }

    fn new(world: &'w SimpleCommunicator, shared: &'w Shared, rank: u32, host: String) -> Self {
        Client {
            world,
            shared,
            rank,
            host,
            ready_reply: None,
            answer: None,
            syncing: false,
            report: None,
            finish_reply: None,
            done: None,
            round: 0,
            clean: true,
            terminated_at: None,
        }
    }

    /// Returns whether it ended cleanly (rank 0 said done to the last round).
    fn run(mut self, commands: &Receiver<Command>) -> bool {
        loop {
            // Spin while rank 0 measures the clock, so that its pings are answered at once.
            let idle = if self.syncing { Duration::ZERO } else { IDLE_POLL };
            match next_command(commands, idle) {
                Err(()) => return self.clean && self.finish_reply.is_none(),
                Ok(Some(command)) => self.command(command),
                Ok(None) => {}
            }
            for (from, message) in receive_waiting(self.world) {
                self.message(from, message);
            }
            if let Some(answer) = self.answer.take() {
                match self.ready_reply.take() {
                    Some(reply) => drop(reply.send(answer)),
                    None => self.answer = Some(answer),
                }
            }
            let sent = self.report.as_mut().is_none_or(Outgoing::test);
            let terminated = self.shared.terminated.load(Ordering::SeqCst);
            if let Some(reply) = self.finish_reply.take() {
                if sent && self.done.is_some() {
                    // The round is over: the next one starts afresh.
                    let _ = reply.send(Finished::Client(self.done.take()));
                    self.report = None;
                    self.answer = None;
                    self.round += 1;
                    self.clean = true;
                } else if terminated && (sent || self.since_terminated() > PATIENCE_WHEN_TERMINATED) {
                    // Stopped: the report had a moment to reach rank 0; rank 0's word will not come.
                    self.clean = false;
                    let _ = reply.send(Finished::Client(None));
                } else {
                    self.finish_reply = Some(reply);
                }
            }
            if terminated {
                if let Some(reply) = self.ready_reply.take() {
                    let _ = reply.send(Err("stopped before the start (terminated)".into()));
                }
            }
            if self.syncing {
                std::thread::yield_now();
            }
        }
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Ready { error, reply } => {
                self.clean = false;
                send(self.world, 0, &Message::Ready { round: self.round, host: self.host.clone(), error });
                self.ready_reply = Some(reply);
            }
            Command::Snapshot(json) => send(self.world, 0, &Message::Snapshot { round: self.round, json }),
            Command::Finish { report, reply } => {
                self.clean = false;
                let last = Message::Final { round: self.round, json: report };
                self.report = Some(Outgoing::start(self.world, 0, &last));
                self.finish_reply = Some(reply);
            }
            Command::Done(..) => {}
        }
    }

    fn message(&mut self, from: u32, message: Message) {
        if from != 0 {
            return;
        }
        let round = self.round;
        match message {
            Message::Ping { seq } => {
                self.syncing = true;
                send(self.world, 0, &Message::Pong { seq, wall_ns: wall_ns(self.shared.clock.as_ref()) });
            }
            Message::Start { round: r, start_wall_ns, offset_ns, rtt_ns } if r == round => {
                self.syncing = false;
                if let Some(me) = self.shared.peers().get_mut(self.rank as usize) {
                    me.clock = ClockOffset { offset_ns, rtt_ns };
                }
                let start = clock_sync::to_client_clock(start_wall_ns, offset_ns);
                self.shared.start_wall_ns.store(start, Ordering::SeqCst);
                self.answer = Some(Ok(start));
            }
            Message::Abort { round: r, reason } if r == round => {
                self.syncing = false;
                self.answer = Some(Err(reason));
            }
            Message::Done { round: r, exit_code, payload } if r == round => {
                self.done = Some((exit_code, payload))
            }
            _ => {}
        }
    }
}

struct Root<'w> {
    world: &'w SimpleCommunicator,
    shared: &'w Shared,
    size: u32,
    /// Readiness by rank: `Some(None)` ready, `Some(Some(e))` could not open.
    ready: Vec<Option<Option<String>>>,
    ready_reply: Option<oneshot::Sender<Result<u64, String>>>,
    /// Set once the run is started or called off.
    decided: Option<Result<u64, String>>,
    pongs: Vec<(u32, u32, u64, u64)>,
    finish: Option<(oneshot::Sender<Finished>, u64)>,
    /// The round under way, from 0.
    round: u32,
    /// Whether the last round ended with the clients told.
    clean: bool,
}

impl<'w> Root<'w> {
    fn new(world: &'w SimpleCommunicator, shared: &'w Shared, size: u32) -> Self {
        Root {
            world,
            shared,
            size,
            ready: vec![None; size as usize],
            ready_reply: None,
            decided: None,
            pongs: Vec::new(),
            finish: None,
            round: 0,
            clean: true,
        }
    }

    fn now(&self) -> u64 {
        wall_ns(self.shared.clock.as_ref())
    }

    fn run(mut self, commands: &Receiver<Command>) -> bool {
        loop {
            match next_command(commands, IDLE_POLL) {
                Err(()) => return self.clean,
                Ok(Some(command)) => self.command(command),
                Ok(None) => {}
            }
            self.pump();
            self.decide_start();
            self.mark_lost();
            self.maybe_finish();
        }
    }

    fn pump(&mut self) {
        let now = self.now();
        let round = self.round;
        for (from, message) in receive_waiting(self.world) {
            {
                let mut peers = self.shared.peers();
                if let Some(peer) = peers.get_mut(from as usize) {
                    peer.last_heard_wall_ns = Some(now);
                    peer.lost = false;
                }
            }
            match message {
                Message::Ready { round: r, host, error } if r == round => {
                    if let Some(peer) = self.shared.peers().get_mut(from as usize) {
                        peer.host = host;
                        peer.open_error = error.clone();
                    }
                    if let Some(slot) = self.ready.get_mut(from as usize) {
                        *slot = Some(error);
                    }
                }
                Message::Pong { seq, wall_ns } => self.pongs.push((from, seq, wall_ns, now)),
                Message::Snapshot { round: r, json } if r == round => {
                    if let Some(peer) = self.shared.peers().get_mut(from as usize) {
                        peer.snapshot = Some(json);
                    }
                }
                Message::Final { round: r, json } if r == round => {
                    if let Some(peer) = self.shared.peers().get_mut(from as usize) {
                        peer.report = Some(json);
                    }
                }
                _ => {}
            }
        }
    }

    fn command(&mut self, command: Command) {
        let now = self.now();
        match command {
            Command::Ready { error, reply } => {
                self.clean = false;
                if let Some(me) = self.shared.peers().get_mut(0) {
                    me.open_error = error.clone();
                    me.last_heard_wall_ns = Some(now);
                }
                self.ready[0] = Some(error);
                self.ready_reply = Some(reply);
            }
            Command::Snapshot(json) => {
                if let Some(me) = self.shared.peers().get_mut(0) {
                    me.snapshot = Some(json);
                    me.last_heard_wall_ns = Some(now);
                }
            }
            Command::Finish { report, reply } => {
                if let Some(me) = self.shared.peers().get_mut(0) {
                    me.report = Some(report);
                    me.last_heard_wall_ns = Some(now);
                }
                self.finish = Some((reply, now));
            }
            Command::Done(exit_code, payload) => {
                let round = self.round;
                let mut peers = self.shared.peers();
                for peer in peers.iter().skip(1).filter(|p| !p.lost) {
                    send(
                        self.world,
                        peer.rank,
                        &Message::Done { round, exit_code, payload: payload.clone() },
                    );
                }
                // The next round starts afresh; what is known of the hosts and clocks stays.
                for peer in peers.iter_mut() {
                    peer.open_error = None;
                    peer.snapshot = None;
                    peer.report = None;
                }
                drop(peers);
                self.ready = vec![None; self.size as usize];
                self.decided = None;
                self.finish = None;
                self.round += 1;
                self.clean = true;
            }
        }
    }

    /// Once every client has answered: the start, or the abort.
    fn decide_start(&mut self) {
        if self.decided.is_none() {
            let failed = self.ready.iter().enumerate().find_map(|(rank, r)| match r {
                Some(Some(error)) => Some((rank, error.clone())),
                _ => None,
            });
            if let Some((rank, error)) = failed {
                let host = self.shared.peers().get(rank).map(|p| p.host.clone()).unwrap_or_default();
                let reason = format!("client {rank} ({host}) could not open its source: {error}");
                for peer in 1..self.size {
                    send(self.world, peer, &Message::Abort { round: self.round, reason: reason.clone() });
                }
                self.decided = Some(Err(reason));
            } else if self.ready.iter().all(Option::is_some) {
                self.decided = Some(self.start());
            }
        }
        if let (Some(decided), Some(_)) = (&self.decided, &self.ready_reply) {
            if let Some(reply) = self.ready_reply.take() {
                let _ = reply.send(decided.clone());
            }
        }
        if self.shared.terminated.load(Ordering::SeqCst) {
            if let Some(reply) = self.ready_reply.take() {
                let _ = reply.send(Err("stopped before the start (terminated)".into()));
            }
        }
    }

    /// Measures every client's clock, and sends each the start on its own clock.
    fn start(&mut self) -> Result<u64, String> {
        let mut offsets = vec![ClockOffset::default(); self.size as usize];
        for peer in 1..self.size {
            let mut trips = Vec::new();
            for seq in 0..ROUND_TRIPS {
                let sent_ns = self.now();
                send(self.world, peer, &Message::Ping { seq });
                let deadline = sent_ns + PONG_TIMEOUT.as_nanos() as u64;
                loop {
                    self.pump();
                    if let Some(i) = self.pongs.iter().position(|p| p.0 == peer && p.1 == seq) {
                        let (_, _, peer_ns, received_ns) = self.pongs.swap_remove(i);
                        trips.push(RoundTrip { sent_ns, peer_ns, received_ns });
                        break;
                    }
                    if self.now() > deadline || self.shared.terminated.load(Ordering::SeqCst) {
                        break;
                    }
                    std::hint::spin_loop();
                }
            }
            self.pongs.clear();
            match clock_sync::estimate(&trips) {
                Some(offset) => offsets[peer as usize] = offset,
                None => {
                    let reason = format!("client {peer} did not answer rank 0's clock round trips");
                    for p in 1..self.size {
                        send(self.world, p, &Message::Abort { round: self.round, reason: reason.clone() });
                    }
                    return Err(reason);
                }
            }
        }
        let start_wall_ns = self.now() + START_MARGIN.as_nanos() as u64;
        self.shared.start_wall_ns.store(start_wall_ns, Ordering::SeqCst);
        {
            let mut peers = self.shared.peers();
            for (peer, offset) in peers.iter_mut().zip(&offsets) {
                peer.clock = *offset;
            }
        }
        for peer in 1..self.size {
            let o = offsets[peer as usize];
            let start =
                Message::Start { round: self.round, start_wall_ns, offset_ns: o.offset_ns, rtt_ns: o.rtt_ns };
            send(self.world, peer, &start);
        }
        Ok(start_wall_ns)
    }

    fn mark_lost(&mut self) {
        let now = self.now();
        let lost_after = LOST_AFTER.as_nanos() as u64;
        let mut peers = self.shared.peers();
        for peer in peers.iter_mut().skip(1) {
            if peer.report.is_none() {
                if let Some(heard) = peer.last_heard_wall_ns {
                    peer.lost = now.saturating_sub(heard) > lost_after;
                }
            }
        }
    }

    fn maybe_finish(&mut self) {
        let Some((_, asked_at)) = &self.finish else { return };
        let now = self.now();
        let terminated = self.shared.terminated.load(Ordering::SeqCst);
        let waited = now.saturating_sub(*asked_at);
        let all_in = self.shared.peers().iter().all(|p| p.report.is_some() || p.lost);
        let out_of_patience = terminated && waited > PATIENCE_WHEN_TERMINATED.as_nanos() as u64;
        // A client never heard from at all cannot be timed out by `mark_lost`.
        let never_heard = waited > LOST_AFTER.as_nanos() as u64;
        if all_in || out_of_patience || never_heard {
            // Whether a client without a report is lost is the caller's to judge, from when
            // each was last heard (see `PeerRecord::last_heard_wall_ns`).
            let peers = self.shared.peers().clone();
            if let Some((reply, _)) = self.finish.take() {
                let _ = reply.send(Finished::Root(peers));
            }
        }
    }
}
