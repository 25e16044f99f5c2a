//! Which buffers hold a slot of a ring's registered-buffer table: keyed by the buffer's
//! allocation identity ([`playsim_core::IoBuf::id`]), never by its address, so that a
//! buffer freed and another allocated at the same address are two buffers.
//!
//! The engine recycles a small set of frame buffers, so each is registered once, when it
//! first comes in, and read through its slot from then on. A slot whose buffer has not
//! come back for [`STALE_AFTER`] reads is taken to be a freed (or grown) buffer's and may
//! be emptied to make room. Registration pins memory, which counts against
//! RLIMIT_MEMLOCK without CAP_IPC_LOCK: when the kernel refuses (ENOMEM), or a buffer would
//! pass the cap set in [`super::UringOptions::max_registered_bytes`], the buffer is read
//! unregistered, and [`Registry::summary`] says so and why.

use std::collections::HashMap;

use super::sys::MAX_FIXED_BYTES;

/// Reads after which a slot whose buffer has not come back is taken for a stale one.
pub(super) const STALE_AFTER: u64 = 64;

/// Slots in a ring's table: far more than the buffers a stream cycles through.
pub(super) const TABLE_SLOTS: u16 = 256;

/// The registered-buffer table as this side sees it.
#[derive(Debug)]
pub(super) struct Registry {
    slots: Vec<Option<Slot>>,
    by_id: HashMap<u64, u16>,
    /// Bytes registered now.
    bytes: u64,
    /// The most bytes that may be registered at once, when capped.
    cap: Option<u64>,
    /// Frame reads seen: the clock of `Slot::last_use`.
    uses: u64,
    /// Why no buffer is registered any more (or ever): set once, kept.
    off: Option<String>,
    /// Why the last buffer that could not be registered was not; cleared by none.
    shortfall: Option<String>,
    /// False when registration was not asked for.
    asked: bool,
    /// Buffers read unregistered while registration was wanted.
    n_unregistered: u64,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    id: u64,
    bytes: u64,
    last_use: u64,
    /// Frame reads using the slot now.
    users: u32,
}

/// What to do for a buffer that comes in.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Choice {
    /// Read through this slot: the buffer is registered there.
    Use(u16),
    /// Empty the `evict` slots, then register the buffer in `slot` and read through it.
    Register { slot: u16, evict: Vec<u16> },
    /// Read into the buffer unregistered.
    Plain,
}

impl Registry {
    /// A table of `slots` empty slots; `cap` bounds the bytes registered at once.
    pub fn new(slots: u16, cap: Option<u64>) -> Registry {
        Registry {
            slots: vec![None; usize::from(slots)],
            by_id: HashMap::new(),
            bytes: 0,
            cap,
            uses: 0,
            off: None,
            shortfall: None,
            asked: true,
            n_unregistered: 0,
        }
    }

    /// A table that registers nothing, because registration was not asked for.
    pub fn not_asked() -> Registry {
        let mut registry = Registry::disabled("not asked for".to_owned());
        registry.asked = false;
        registry
    }

    /// A table that registers nothing, for `why`.
    pub fn disabled(why: String) -> Registry {
        let mut registry = Registry::new(0, None);
        registry.off = Some(why);
        registry
    }

    /// What to do for buffer `id` of `bytes` bytes, about to be read into. A
    /// [`Choice::Use`] counts the buffer as in use until [`Registry::done`].
    pub fn choose(&mut self, id: u64, bytes: usize) -> Choice {
        self.uses += 1;
        if let Some(&slot) = self.by_id.get(&id) {
            if let Some(entry) = self.slots.get_mut(usize::from(slot)).and_then(Option::as_mut) {
                entry.last_use = self.uses;
                entry.users += 1;
                return Choice::Use(slot);
            }
        }
        if self.off.is_some() {
            return self.plain(None);
        }
        if bytes > MAX_FIXED_BYTES {
            return self.plain(Some(format!(
                "a buffer of {} is larger than the 1 GiB io_uring can register",
                mb(bytes as u64)
            )));
        }
        let bytes = bytes as u64;
        let mut evict = Vec::new();
        let mut registered = self.bytes;
        if let Some(cap) = self.cap {
            // Make room by emptying stale slots only: emptying live ones would register and
            // unregister a buffer on every read, which costs more than it saves.
            for slot in self.stale_idle() {
                if registered + bytes <= cap {
                    break;
                }
                registered -= self.slots[usize::from(slot)].map_or(0, |s| s.bytes);
                evict.push(slot);
            }
            if registered + bytes > cap {
                return self.plain(Some(format!(
                    "registering a {} buffer would pass the cap of {} on registered memory \
                     (max_registered_bytes; {} registered already)",
                    mb(bytes),
                    mb(cap),
                    mb(self.bytes)
                )));
            }
        }
        let empty = self.slots.iter().position(Option::is_none).and_then(|i| u16::try_from(i).ok());
        let slot = match (empty, evict.first().copied()) {
            (Some(slot), _) | (None, Some(slot)) => slot,
            (None, None) => match self.lru_idle().first().copied() {
                Some(slot) => {
                    evict.push(slot);
                    slot
                }
                None => {
                    return self.plain(Some(format!(
                        "all {} slots of the table hold buffers being read into",
                        self.slots.len()
                    )))
                }
            },
        };
        Choice::Register { slot, evict }
    }

    /// `slot` was emptied.
    pub fn evicted(&mut self, slot: u16) {
        if let Some(entry) = self.slots.get_mut(usize::from(slot)).and_then(Option::take) {
            self.by_id.remove(&entry.id);
            self.bytes -= entry.bytes;
        }
    }

    /// Buffer `id` of `bytes` bytes was registered in `slot`, and is in use.
    pub fn registered(&mut self, slot: u16, id: u64, bytes: usize) {
        self.evicted(slot);
        if let Some(entry) = self.slots.get_mut(usize::from(slot)) {
            *entry = Some(Slot { id, bytes: bytes as u64, last_use: self.uses, users: 1 });
            self.by_id.insert(id, slot);
            self.bytes += bytes as u64;
        }
    }

    /// Registering the buffer failed for `why`: it is read unregistered, and so are the
    /// buffers after it (another attempt would pin and unpin its pages for nothing).
    pub fn refused(&mut self, why: String) {
        self.n_unregistered += 1;
        self.off.get_or_insert(why);
    }

    /// A frame read through `slot` is over.
    pub fn done(&mut self, slot: u16) {
        if let Some(entry) = self.slots.get_mut(usize::from(slot)).and_then(Option::as_mut) {
            entry.users = entry.users.saturating_sub(1);
        }
    }

    /// Slots not in use whose buffer has not come back for [`STALE_AFTER`] reads, oldest first.
    pub fn stale_idle(&self) -> Vec<u16> {
        self.lru_idle()
            .into_iter()
            .filter(|&slot| {
                self.slots[usize::from(slot)]
                    .is_some_and(|s| self.uses.saturating_sub(s.last_use) >= STALE_AFTER)
            })
            .collect()
    }

    /// What the table did, for the report: `yes: ...`, `partly: ...`, `no: ...`.
    pub fn summary(&self) -> String {
        if !self.asked {
            return "off".to_owned();
        }
        let n = self.slots.iter().flatten().count();
        let why = self.off.as_ref().or(self.shortfall.as_ref());
        match why {
            None if n == 0 => "yes: none yet".to_owned(),
            None => format!("yes: {}, {}", buffers(n), mb(self.bytes)),
            Some(why) if n == 0 => format!("no: {why}"),
            Some(why) => format!(
                "partly: {} ({}) registered, {} reads into unregistered buffers: {why}",
                buffers(n),
                mb(self.bytes),
                self.n_unregistered
            ),
        }
    }

    /// Slots not in use, least recently used first.
    fn lru_idle(&self) -> Vec<u16> {
        let mut idle: Vec<(u64, u16)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let s = s.as_ref()?;
                (s.users == 0).then_some((s.last_use, u16::try_from(i).ok()?))
            })
            .collect();
        idle.sort_unstable();
        idle.into_iter().map(|(_, slot)| slot).collect()
    }

    fn plain(&mut self, why: Option<String>) -> Choice {
        self.n_unregistered += 1;
        if let Some(why) = why {
            self.shortfall = Some(why);
        }
        Choice::Plain
    }
}

/// "1 buffer", "2 buffers".
fn buffers(n: usize) -> String {
    if n == 1 {
        "1 buffer".to_owned()
    } else {
        format!("{n} buffers")
    }
}

/// `bytes` in MB (10^6 bytes), with one decimal.
pub(super) fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Registers `id` as the registry chooses, as the ring would when the kernel agrees.
    fn take(registry: &mut Registry, id: u64, bytes: usize) -> u16 {
        match registry.choose(id, bytes) {
            Choice::Register { slot, evict } => {
                for old in evict {
                    registry.evicted(old);
                }
                registry.registered(slot, id, bytes);
                slot
            }
            other => panic!("buffer {id}: {other:?}"),
        }
    }

    #[test]
    fn a_buffer_is_registered_once_and_used_after() {
        let mut registry = Registry::new(4, None);
        let slot = take(&mut registry, 7, 1 << 20);
        registry.done(slot);
        for _ in 0..3 {
            assert_eq!(registry.choose(7, 1 << 20), Choice::Use(slot));
            registry.done(slot);
        }
        assert_eq!(registry.summary(), "yes: 1 buffer, 1.0 MB");
    }

    #[test]
    fn the_identity_decides_not_the_address() {
        // Two allocations that might share an address are two buffers, in two slots.
        let mut registry = Registry::new(4, None);
        let a = take(&mut registry, 1, 4096);
        registry.done(a);
        let b = take(&mut registry, 2, 4096);
        assert_ne!(a, b);
        assert_eq!(registry.summary(), "yes: 2 buffers, 0.0 MB");
    }

    #[test]
    fn a_full_table_empties_the_least_recently_used_idle_slot() {
        let mut registry = Registry::new(2, None);
        let a = take(&mut registry, 1, 4096);
        let b = take(&mut registry, 2, 4096);
        // Both in use: a third buffer is read unregistered, and registration goes on.
        assert_eq!(registry.choose(3, 4096), Choice::Plain);
        registry.done(b);
        registry.done(a);
        assert_eq!(registry.choose(1, 4096), Choice::Use(a));
        registry.done(a);
        // b is the least recently used.
        assert_eq!(registry.choose(3, 4096), Choice::Register { slot: b, evict: vec![b] });
    }

    #[test]
    fn the_cap_makes_room_only_from_stale_slots() {
        let mut registry = Registry::new(8, Some(3 << 20));
        let a = take(&mut registry, 1, 1 << 20);
        registry.done(a);
        let b = take(&mut registry, 2, 1 << 20);
        registry.done(b);
        let c = take(&mut registry, 3, 1 << 20);
        registry.done(c);
        // Full to the cap, every slot fresh: the fourth buffer is read unregistered.
        assert_eq!(registry.choose(4, 1 << 20), Choice::Plain);
        let summary = registry.summary();
        assert!(
            summary.starts_with("partly: 3 buffers (3.1 MB) registered, 1 reads into unregistered"),
            "{summary}"
        );
        assert!(summary.contains("cap of 3.1 MB"), "{summary}");
        // Buffers 2 and 3 keep coming back; buffer 1 does not (freed): it goes stale.
        for _ in 0..STALE_AFTER {
            for (id, slot) in [(2, b), (3, c)] {
                assert_eq!(registry.choose(id, 1 << 20), Choice::Use(slot));
                registry.done(slot);
            }
        }
        // Buffer 1's slot is emptied to make room under the cap.
        let Choice::Register { evict, .. } = registry.choose(4, 1 << 20) else { panic!("not registered") };
        assert_eq!(evict, [a]);
    }

    #[test]
    fn a_buffer_over_the_cap_or_one_gib_is_read_unregistered() {
        let mut registry = Registry::new(8, Some(1 << 20));
        assert_eq!(registry.choose(1, 2 << 20), Choice::Plain);
        assert!(registry
            .summary()
            .starts_with("no: registering a 2.1 MB buffer would pass the cap of 1.0 MB"));
        let mut registry = Registry::new(8, None);
        assert_eq!(registry.choose(1, MAX_FIXED_BYTES + 4096), Choice::Plain);
        assert!(registry.summary().contains("larger than the 1 GiB"), "{}", registry.summary());
    }

    #[test]
    fn a_refusal_stops_registration_and_is_reported() {
        let mut registry = Registry::new(8, None);
        let a = take(&mut registry, 1, 4096);
        registry.done(a);
        assert!(matches!(registry.choose(2, 4096), Choice::Register { .. }));
        registry.refused("registering failed with ENOMEM".into());
        assert_eq!(registry.choose(3, 4096), Choice::Plain);
        // Registered buffers stay usable.
        assert_eq!(registry.choose(1, 4096), Choice::Use(a));
        assert_eq!(
            registry.summary(),
            "partly: 1 buffer (0.0 MB) registered, 2 reads into unregistered buffers: registering failed with ENOMEM"
        );
        assert_eq!(Registry::disabled("no table".into()).summary(), "no: no table");
        assert_eq!(Registry::not_asked().summary(), "off");
    }
}
