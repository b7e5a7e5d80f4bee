//! One thread's span counts: a table for spans of up to [`SHORT`] bytes packed in one `u128`,
//! one for longer spans ([`LongTable`]), and the open addressing both use.

use std::hash::BuildHasher;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::long::LongTable;

mod join;
pub(super) use join::join;
use super::Batch;
use crate::{Error, Splitter};

/// One thread's counts. Spans of up to 15 bytes, most of them, are keys packed in one `u128`
/// (see [`short_key`]) in a [`ShortTable`]: hashing and comparing them reads no memory besides
/// the table. Spans of one byte, a fifth of all spans in English text, are counted in an array
/// while a batch is counted; longer spans than 15 bytes go to a [`LongTable`].
#[derive(Debug, Clone)]
pub(super) struct Table {
    /// Spans of one byte, while a batch is counted (then added to `short`).
    single: Box<[u64; 256]>,
    short: ShortTable,
    long: LongTable,
}

impl Default for Table {
    fn default() -> Self {
        Self { single: Box::new([0; 256]), short: ShortTable::default(), long: LongTable::default() }
    }
}

/// A slot of a [`ShortTable`]: a key (0 if the slot is free: a key holds the span's length,
/// which is at least 1), as 16 bytes, and its count as 32 bits: 20 bytes. The tables are most
/// of counting's memory on text with many distinct spans. *Why* bytes and not a `u128` field:
/// that would align the slot to 16 and pad it to 32 (a slot that straddles two cache lines
/// costs a second prefetch, see [`ShortTable::prefetch`]). A count that reaches `u32::MAX` is
/// kept in the table's side map instead ([`ShortTable::large`]).
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    key: [u8; 16],
    count: u32,
}

impl Slot {
    #[inline(always)]
    fn new(key: u128) -> Self {
        Slot { key: key.to_le_bytes(), count: 0 }
    }

    #[inline(always)]
    fn key(&self) -> u128 {
        u128::from_le_bytes(self.key)
    }

    #[inline(always)]
    fn is_free(&self) -> bool {
        self.key() == 0
    }

    /// The count of a held slot, `large` the side map of its table ([`ShortTable::large`]).
    #[inline(always)]
    fn count_in(&self, large: &std::collections::HashMap<u128, u64>) -> u64 {
        match self.count {
            u32::MAX => large[&self.key()],
            count => u64::from(count),
        }
    }
}

/// Counts of spans of up to [`SHORT`] bytes by [`short_key`]: open addressing with linear
/// probing in a power-of-two array of slots, so that where a key's lookup will start is known
/// from its hash alone, and can be fetched ahead of the lookup ([`ShortTable::prefetch`]).
#[derive(Debug, Clone)]
struct ShortTable {
    slots: Vec<Slot>,
    len: usize,
    seeds: (u64, u64),
    /// The counts of the keys whose slot's count is `u32::MAX` (spans seen 4 billion times or
    /// more: a few, on corpora of many gigabytes).
    large: std::collections::HashMap<u128, u64>,
    /// Set when the slots could not grow: no key is added from then on (so that probes still
    /// end at a free slot), and counting gives up with this error.
    out_of_memory: Option<Error>,
}

impl Default for ShortTable {
    fn default() -> Self {
        ShortTable { slots: vec![Slot::default(); 1 << 10], len: 0, seeds: short_seeds(), large: Default::default(), out_of_memory: None }
    }
}

/// What the counting tables are doing when they run out of memory.
pub(super) const COUNTING: &str = "counting spans";

impl ShortTable {
    #[inline(always)]
    fn hash(&self, key: u128) -> u64 {
        hash_short(key, self.seeds)
    }

    #[inline(always)]
    fn start(&self, hash: u64) -> usize {
        hash as usize & (self.slots.len() - 1)
    }

    /// Asks for the cache lines where the lookup of a key of this hash starts (a slot may
    /// straddle two).
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        let slot = self.slots.as_ptr().wrapping_add(self.start(hash));
        crate::memory::prefetch(slot);
        crate::memory::prefetch(slot.cast::<u8>().wrapping_add(std::mem::size_of::<Slot>() - 1));
    }

    /// Adds `n` to the count of `key`, whose hash is `hash`.
    #[inline(always)]
    fn add(&mut self, key: u128, hash: u64, n: u64) {
        match probe(&self.slots, hash, |s| s.key() == key, Slot::is_free) {
            Ok(i) => self.add_at(i, n),
            Err(_) if self.out_of_memory.is_some() => {}
            Err(i) => {
                self.slots[i] = Slot::new(key);
                self.add_at(i, n);
                self.len += 1;
                if over_full(self.len, self.slots.len()) {
                    self.grow();
                }
            }
        }
    }

    /// Adds `n` to the count in slot `i` (saturating at `u64::MAX`).
    #[inline(always)]
    fn add_at(&mut self, i: usize, n: u64) {
        let slot = &mut self.slots[i];
        match u32::try_from(n).ok().and_then(|n| slot.count.checked_add(n)) {
            Some(count) if count < u32::MAX => slot.count = count,
            _ => self.add_large(i, n),
        }
    }

    /// [`ShortTable::add_at`] where the count reaches `u32::MAX`: it goes to the side map.
    #[cold]
    fn add_large(&mut self, i: usize, n: u64) {
        let count = self.count(&self.slots[i]).saturating_add(n);
        self.slots[i].count = u32::MAX;
        self.large.insert(self.slots[i].key(), count);
    }

    /// The count of a held slot.
    #[inline(always)]
    fn count(&self, slot: &Slot) -> u64 {
        slot.count_in(&self.large)
    }

    #[cold]
    fn grow(&mut self) {
        let seeds = self.seeds;
        if let Err(e) = regrow(&mut self.slots, |s| hash_short(s.key(), seeds), Slot::is_free) {
            self.out_of_memory = Some(e);
        }
    }

    fn get(&self, key: u128) -> Option<u64> {
        self.get_hashed(key, self.hash(key))
    }

    /// [`ShortTable::get`] for a key whose hash is `hash`.
    #[inline]
    fn get_hashed(&self, key: u128, hash: u64) -> Option<u64> {
        probe(&self.slots, hash, |s| s.key() == key, Slot::is_free).ok().map(|i| self.count(&self.slots[i]))
    }

    fn len(&self) -> usize {
        self.len
    }

    /// The keys and counts held in part `part` of `parts` (`part < parts`) of the slots.
    fn iter_part(&self, part: usize, parts: usize) -> impl Iterator<Item = (u128, u64)> + '_ {
        self.slots[slice_part(self.slots.len(), part, parts)].iter().filter(|s| !s.is_free()).map(|s| (s.key(), self.count(s)))
    }
}

/// Linear probing in a power-of-two array of slots, from where `hash` puts a key: the first
/// slot that holds the key (`Ok`) or is free (`Err`), whichever comes first. The tables keep a
/// free slot (see [`over_full`]), so the probe ends.
#[inline(always)]
pub(super) fn probe<S>(slots: &[S], hash: u64, holds_key: impl Fn(&S) -> bool, free: impl Fn(&S) -> bool) -> Result<usize, usize> {
    let mask = slots.len() - 1;
    let mut i = hash as usize & mask;
    loop {
        let slot = &slots[i];
        if holds_key(slot) {
            return Ok(i);
        }
        if free(slot) {
            return Err(i);
        }
        i = (i + 1) & mask;
    }
}

/// Doubles a table's slots in place, putting each held slot where [`probe`] will look for it
/// (`hash` gives a held slot's hash, `free` tells a free slot, and a default slot is free).
///
/// The array grows at its end (a mapped block grows by a remap: only the new half is new
/// memory, the old half is not held twice), and the held slots are put again where they
/// belong. A key's home was `hash & (n - 1)` and is now that or that plus `n` (`n` the old
/// length). Why this keeps every key found by linear probing:
/// - the keys from slot 0 up to the first free slot (all of them if none is free), whose
///   probes may have wrapped round the old end, are taken out first (a few, into a small
///   `Vec`), so each key left sits at or after its home, with every slot from its home to it
///   held;
/// - then the old half is visited in increasing order: each key is taken out and probed for
///   again from its new home. A key whose home stays lands at or before its old place (now
///   free), passing only slots already visited, which nothing frees again; a key whose home
///   moves up lands in the upper half, which holds only keys from visited slots, and its probe
///   never wraps round the new end: a run of held slots reaching the end from `n + s` would
///   hold more keys with homes in `n + s..2n` than the `n - s` old slots `s..n` held;
/// - the keys taken out first are added last, to a table where every other key is found.
///
/// A table that cannot get the memory is left as it was, with [`Error::OutOfMemory`].
pub(super) fn regrow<S: Clone + Default>(slots: &mut Vec<S>, hash: impl Fn(&S) -> u64, free: impl Fn(&S) -> bool) -> Result<(), Error> {
    let old = slots.len();
    crate::memory::try_reserve_exact(slots, old, COUNTING)?;
    crate::memory::prefer_huge_pages(slots); // written whole just below (see the memory module)
    slots.resize(2 * old, S::default());
    let first_free = slots[..old].iter().position(&free).unwrap_or(old);
    let wrapped: Vec<S> = slots[..first_free].iter_mut().map(std::mem::take).collect();
    let put = |slots: &mut Vec<S>, slot: S| {
        let (Ok(i) | Err(i)) = probe(slots, hash(&slot), |_| false, &free);
        slots[i] = slot;
    };
    for i in first_free + 1..old {
        if !free(&slots[i]) {
            let slot = std::mem::take(&mut slots[i]);
            put(slots, slot);
        }
    }
    for slot in wrapped {
        put(slots, slot);
    }
    Ok(())
}

/// Part `part` of `parts` equal parts (but for rounding) of `0..len`.
pub(super) fn slice_part(len: usize, part: usize, parts: usize) -> std::ops::Range<usize> {
    len * part / parts..len * (part + 1) / parts
}

/// Whether a table of `slots` slots holding `len` keys must grow: at most 3/4 full, so that
/// probes stay short.
#[inline(always)]
pub(super) fn over_full(len: usize, slots: usize) -> bool {
    len * 4 > slots * 3
}

/// Spans up to this many bytes are packed in a [`short_key`].
pub(super) const SHORT: usize = 15;

impl Table {
    #[inline]
    pub(super) fn add(&mut self, span: &[u8], n: u64) {
        if span.len() <= SHORT {
            let key = short_key(span);
            self.short.add(key, self.short.hash(key), n);
        } else {
            self.long.add(span, n);
        }
    }

    /// Splits texts `range` of `batch` and adds their spans, giving up between two texts once
    /// `stop` is set. Spans of one byte are counted apart, until [`Table::settle`].
    pub(super) fn count(&mut self, batch: &Batch, range: std::ops::Range<usize>, splitter: &Splitter, stop: &AtomicBool) -> Result<(), Error> {
        self.count_in(batch.text().as_bytes(), range.map(|i| batch.get(i)), splitter, stop)
    }

    /// Splits `texts`, which all lie in `all`, and adds their spans.
    pub(super) fn count_in<'a>(
        &mut self,
        all: &[u8],
        texts: impl Iterator<Item = &'a str>,
        splitter: &Splitter,
        stop: &AtomicBool,
    ) -> Result<(), Error> {
        // Short spans wait `AHEAD` spans between their hash (when their slot is prefetched)
        // and their lookup, so that lookups do not wait for memory one after the other.
        const AHEAD: usize = 16;
        let mut waiting = [(0u128, 0u64); AHEAD];
        let mut next = 0;
        for text in texts {
            if stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            splitter.for_each_span(text, |span| match *span.as_bytes() {
                [b] => self.single[usize::from(b)] += 1,
                ref span if span.len() <= SHORT => {
                    // The span's key from the 16 bytes where it starts in `all`, in one load:
                    // short_key's branches on the length, which varies at random from span to
                    // span, cost more. (Within 16 bytes of the end of `all`: short_key.)
                    let at = (span.as_ptr() as usize).wrapping_sub(all.as_ptr() as usize);
                    let key = match all.get(at..).and_then(<[u8]>::first_chunk::<16>) {
                        Some(chunk) => short_key_at(chunk, span.len()),
                        None => short_key(span),
                    };
                    debug_assert_eq!(key, short_key(span));
                    let hash = self.short.hash(key);
                    self.short.prefetch(hash);
                    let (key, hash) = std::mem::replace(&mut waiting[next], (key, hash));
                    next = (next + 1) % AHEAD;
                    if key != 0 {
                        self.short.add(key, hash, 1);
                    }
                }
                ref span => self.add(span, 1),
            })?;
            self.check_memory()?;
        }
        for (key, hash) in waiting {
            if key != 0 {
                self.short.add(key, hash, 1);
            }
        }
        Ok(())
    }

    /// The error of a table that could not grow (it then took no more spans).
    pub(super) fn check_memory(&self) -> Result<(), Error> {
        match self.short.out_of_memory.as_ref().or(self.long.out_of_memory()) {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Adds the spans of one byte counted apart to the others.
    pub(super) fn settle(&mut self) {
        for b in 0..=255u8 {
            let n = std::mem::take(&mut self.single[usize::from(b)]);
            if n > 0 {
                self.add(&[b], n);
            }
        }
    }

    pub(super) fn get(&self, span: &[u8]) -> u64 {
        let found = if span.len() <= SHORT { self.short.get(short_key(span)) } else { self.long.get(span) };
        found.unwrap_or(0)
    }

    pub(super) fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }

    /// The count of `span`, whose hash (in its kind of table) is `hash`, if this table holds it.
    fn get_hashed(&self, span: ShortOrLong<'_>, hash: u64) -> Option<u64> {
        match span {
            ShortOrLong::Short(key) => self.short.get_hashed(key, hash),
            ShortOrLong::Long(bytes) => self.long.get_hashed(bytes, hash),
        }
    }

    /// Calls `f(span, hash, count)` for each span in part `part` of `parts` of this table (by
    /// where it sits in it) that none of the `earlier` tables holds: of the spans several tables
    /// hold, the first table's is the one visited.
    /// `f` returning `ControlFlow::Break` stops the visit, which then returns it.
    pub(super) fn for_each_first(
        &self,
        earlier: &[Table],
        (part, parts): (usize, usize),
        mut f: impl FnMut(ShortOrLong<'_>, u64, u64) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let short = self.short.iter_part(part, parts).map(|(key, n)| (ShortOrLong::Short(key), self.short.hash(key), n));
        let long = self.long.iter_part(part, parts).map(|(bytes, hash, n)| (ShortOrLong::Long(bytes), hash, n));
        for (span, hash, n) in short.chain(long) {
            if !earlier.iter().any(|t| t.get_hashed(span, hash).is_some()) {
                f(span, hash, n)?;
            }
        }
        ControlFlow::Continue(())
    }
}

/// A span as a [`Table`] holds it.
#[derive(Clone, Copy)]
pub(super) enum ShortOrLong<'a> {
    Short(u128),
    Long(&'a [u8]),
}

/// Packs a span of at most 15 bytes into a `u128`: byte `i` of the span in byte `i` (little
/// endian), the length in the top byte, so different spans get different keys. It reads the
/// span with at most two loads that overlap in the middle, whatever its length.
#[inline]
fn short_key(span: &[u8]) -> u128 {
    let len = span.len();
    let bytes = match (span.first_chunk::<8>(), span.last_chunk::<8>(), span.first_chunk::<4>(), span.last_chunk::<4>()) {
        (Some(head), Some(tail), _, _) => {
            // 8..=15 bytes: bytes 0..8, then bytes len-8..len placed at len-8 (the overlap
            // holds the same bytes twice, so or-ing them is exact).
            u128::from(u64::from_le_bytes(*head)) | (u128::from(u64::from_le_bytes(*tail)) << (8 * (len - 8)))
        }
        (_, _, Some(head), Some(tail)) => {
            u128::from(u32::from_le_bytes(*head)) | (u128::from(u32::from_le_bytes(*tail)) << (8 * (len - 4)))
        }
        _ => match *span {
            [] => 0,
            [a] => u128::from(a),
            [a, b] => u128::from(a) | (u128::from(b) << 8),
            [a, b, c, ..] => u128::from(a) | (u128::from(b) << 8) | (u128::from(c) << 16),
        },
    };
    bytes | ((len as u128) << 120)
}

/// The [`short_key`] of the first `len` bytes of `chunk` (the bytes after them are masked off):
/// one load, no branch on the length.
#[inline(always)]
fn short_key_at(chunk: &[u8; 16], len: usize) -> u128 {
    debug_assert!(len <= SHORT);
    (u128::from_le_bytes(*chunk) & ((1u128 << (8 * len)) - 1)) | ((len as u128) << 120)
}

/// The length of the span a [`short_key`] packs.
pub(super) fn short_len(key: u128) -> usize {
    ((key >> 120) as usize).min(SHORT)
}

/// The span a [`short_key`] packs.
#[cfg(test)]
fn short_bytes(key: &u128) -> Vec<u8> {
    key.to_le_bytes()[..short_len(*key)].to_vec()
}

/// The hash of a short key: one folded multiply of its two halves, each mixed with a seed (as
/// foldhash does), so every bit of the key reaches the bits a hash table uses.
#[inline]
fn hash_short(key: u128, seeds: (u64, u64)) -> u64 {
    let product = u128::from(key as u64 ^ seeds.0).wrapping_mul(u128::from((key >> 64) as u64 ^ seeds.1));
    (product as u64) ^ ((product >> 64) as u64)
}

/// The seeds of [`hash_short`], drawn once per process at random: spans are the user's data
/// (and `train_from_counts` takes any bytes), so no input may be chosen to make them collide.
/// The seeds change only the tables' inner order, never a result.
fn short_seeds() -> (u64, u64) {
    static SEEDS: OnceLock<(u64, u64)> = OnceLock::new();
    *SEEDS.get_or_init(|| {
        let random = std::collections::hash_map::RandomState::new();
        (random.hash_one(1u8), random.hash_one(2u8))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_table_holds_every_key_through_growth() {
        let mut table = ShortTable::default();
        let mut model = std::collections::HashMap::new();
        let mut state = 5u64;
        for _ in 0..200_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Keys of few distinct values at first, then many; n up to u64::MAX saturates.
            let len = 1 + (state >> 60) as usize % SHORT;
            let span: Vec<u8> = (0..len).map(|i| (state >> (8 * (i % 8))) as u8 % 7).collect();
            let n = if state % 1000 == 0 { u64::MAX } else { 1 + (state >> 40) % 5 };
            let key = short_key(&span);
            table.add(key, table.hash(key), n);
            let c = model.entry(key).or_insert(0u64);
            *c = c.saturating_add(n);
        }
        assert!(table.slots.len() > 1 << 12, "the table must have grown");
        assert_eq!(table.len(), model.len());
        assert_eq!(table.iter_part(0, 1).collect::<std::collections::HashMap<_, _>>(), model);
        for (&key, &n) in &model {
            assert_eq!(table.get(key), Some(n));
        }
        assert_eq!(table.get(short_key(b"not there at all")), None);
    }

    /// Seeds chosen so that most keys' homes crowd the last slots (a run that wraps round the
    /// end, growing with the table), among keys spread at random, against a map.
    #[test]
    fn short_table_holds_keys_crowding_the_end() {
        // A 4-byte span's high half is 4 << 56: with these seeds its hash is `!low half`, near
        // the last slot for spans starting with a small byte and a zero.
        let mut table = ShortTable { seeds: (u64::MAX, (4u64 << 56) ^ 1), ..ShortTable::default() };
        let mut model = std::collections::HashMap::new();
        let mut state = 9u64;
        for _ in 0..20_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = (state >> 24) as u32;
            let span = if state % 3 == 0 { r.to_le_bytes()[..3].to_vec() } else { vec![r as u8 % 8, 0, (r >> 8) as u8, (r >> 16) as u8 % 4] };
            let key = short_key(&span);
            table.add(key, table.hash(key), 1);
            *model.entry(key).or_insert(0u64) += 1;
        }
        let crowded = model.keys().filter(|&&k| table.hash(k) as u16 >= u16::MAX - 8).count();
        assert!(crowded > 5_000 && table.slots.len() >= 1 << 15, "{crowded} keys crowd {} slots", table.slots.len());
        assert_eq!(table.iter_part(0, 1).collect::<std::collections::HashMap<_, _>>(), model);
        for (&key, &n) in &model {
            assert_eq!(table.get(key), Some(n));
        }
    }

    /// Counts around `u32::MAX` (where a slot's count gives way to the side map) and past it,
    /// up to saturation, against a map, through growth.
    #[test]
    fn short_table_counts_past_32_bits() {
        let big = u64::from(u32::MAX);
        let amounts = [1, 2, big - 2, big - 1, big, big + 1, 2 * big, u64::MAX / 3, u64::MAX];
        let mut table = ShortTable::default();
        let mut model = std::collections::HashMap::new();
        let mut state = 3u64;
        for _ in 0..60_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let key = short_key(&((state >> 33) % 10_000).to_le_bytes()[..4]);
            // Mostly ones, among amounts around the boundary, past it and up to saturation.
            let n = if state % 8 == 0 { amounts[(state >> 20) as usize % amounts.len()] } else { 1 };
            table.add(key, table.hash(key), n);
            let c = model.entry(key).or_insert(0u64);
            *c = c.saturating_add(n);
        }
        // Keys held one below the boundary, then crossing it by one.
        for k in 0..3u8 {
            let key = short_key(&[k, 200, 201]);
            table.add(key, table.hash(key), big - 1);
            table.add(key, table.hash(key), u64::from(k));
            model.insert(key, big - 1 + u64::from(k));
        }
        assert!(table.slots.len() > 1 << 12, "the table must have grown");
        assert!(!table.large.is_empty() && model.values().any(|&n| n == u64::MAX));
        assert_eq!(table.iter_part(0, 1).collect::<std::collections::HashMap<_, _>>(), model);
        for (&key, &n) in &model {
            assert_eq!(table.get(key), Some(n));
        }
    }

    /// A slot for testing [`regrow`] with hashes chosen to collide: a key (0 when free), the
    /// hash it is given, and a count.
    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    struct TestSlot {
        key: u64,
        hash: u64,
        count: u64,
    }

    /// Every held slot is where [`probe`] finds it: the slots from its home to it all held.
    fn assert_found(slots: &[TestSlot], model: &std::collections::HashMap<u64, (u64, u64)>) {
        let held: Vec<_> = slots.iter().filter(|s| s.key != 0).collect();
        assert_eq!(held.len(), model.len(), "a key lost or held twice");
        for (&key, &(hash, count)) in model {
            let found = probe(slots, hash, |s| s.key == key, |s| s.key == 0);
            assert_eq!(found.map(|i| slots[i].count), Ok(count), "key {key} of hash {hash:#x} in {} slots", slots.len());
        }
    }

    /// Growing in place keeps every key found with its count, against a map, through many
    /// doublings, with hashes that spread the keys, that collide on a few homes, that crowd
    /// the last slots (so runs wrap round the end, before and after a doubling), and that
    /// differ only in the bit a doubling adds.
    #[test]
    fn regrow_keeps_every_key_found() {
        let kinds: [(&str, fn(u64, u64) -> u64); 5] = [
            ("spread", |r, _| r),
            ("few homes", |r, _| r % 5),
            ("the last slots", |r, _| u64::MAX - r % 40),
            ("last slots and spread", |r, k| if k % 3 == 0 { r } else { (1u64 << 40) - 1 - r % 9 }),
            ("one bit apart", |r, _| ((r % 2) << 12) | ((r % 2) << 20) | 0xff0),
        ];
        for (name, hash_of) in kinds {
            let mut slots = vec![TestSlot::default(); 4];
            let mut model = std::collections::HashMap::new();
            let (mut len, mut doublings) = (0, 0);
            let mut state = 11u64;
            for _ in 0..30_000 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // Keys repeat (a key's hash is a function of it), so counts add up.
                let key = 1 + (state >> 33) % 20_000;
                let hash = hash_of(key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7, key);
                let n = 1 + state % 3;
                match probe(&slots, hash, |s| s.key == key, |s| s.key == 0) {
                    Ok(i) => slots[i].count += n,
                    Err(i) => {
                        slots[i] = TestSlot { key, hash, count: n };
                        len += 1;
                    }
                }
                model.entry(key).or_insert((hash, 0)).1 += n;
                if over_full(len, slots.len()) {
                    regrow(&mut slots, |s| s.hash, |s| s.key == 0).unwrap();
                    doublings += 1;
                    assert_found(&slots, &model);
                }
            }
            assert!(doublings >= 10, "{name}: {doublings} doublings");
            assert_found(&slots, &model);
        }
    }

    /// Every table of 8 slots holding 6 keys whose hashes are among a few near both ends
    /// (runs wrapping round the end, homes that stay and that move up), grown twice: every key
    /// is found.
    #[test]
    fn regrow_of_every_small_table() {
        const HASHES: [u64; 7] = [0, 1, 6, 7, 8, 14, 15];
        for mut code in 0..HASHES.len().pow(6) {
            let mut slots = vec![TestSlot::default(); 8];
            let mut model = std::collections::HashMap::new();
            for key in 1..=6 {
                let hash = HASHES[code % HASHES.len()];
                code /= HASHES.len();
                let (Ok(i) | Err(i)) = probe(&slots, hash, |_| false, |s| s.key == 0);
                slots[i] = TestSlot { key, hash, count: key * 10 };
                model.insert(key, (hash, key * 10));
            }
            assert_found(&slots, &model);
            for len in [16, 32] {
                regrow(&mut slots, |s| s.hash, |s| s.key == 0).unwrap();
                assert_eq!(slots.len(), len);
                assert_found(&slots, &model);
            }
        }
    }

    #[test]
    fn short_keys_round_trip_and_differ() {
        let mut seen = std::collections::HashMap::new();
        let mut state = 7u64;
        for len in 0..=SHORT {
            for _ in 0..200 {
                let span: Vec<u8> = (0..len)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        // Mostly a tiny alphabet with zero bytes, so that collisions would show.
                        [0u8, b'a', 0xff][(state >> 60) as usize % 3]
                    })
                    .collect();
                let key = short_key(&span);
                assert_eq!(short_bytes(&key), span);
                // Whatever bytes follow the span, read with it in one chunk.
                let mut chunk = [0xffu8 ^ (state as u8); 16];
                chunk[..len].copy_from_slice(&span);
                assert_eq!(short_key_at(&chunk, len), key);
                if let Some(other) = seen.insert(key, span.clone()) {
                    assert_eq!(other, span, "two spans share a key");
                }
            }
        }
    }
}
