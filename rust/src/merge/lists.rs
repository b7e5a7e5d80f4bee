//! The span lists of all pairs, end to end in one arena of bytes, each coded as the deltas
//! between its increasing span ids.
//!
//! A pair's list is written once, when the pair is born, and only read or dropped after (see
//! `pairs.rs`): so lists are appended at the end, each as its size in bytes then its ids, and a
//! dropped list is simply no longer referred to (looking at it to count it would cost a cache
//! miss per dropped list). When the arena has grown by [`GROWTH`] since the last compaction, the
//! live lists slide down over the dropped ones ([`Lists::compact`]), in the order they were
//! written, which is the order of the pairs in the index. So the arena holds at most [`GROWTH`]
//! times what was live at the last compaction, and compactions cost O(1) per byte written
//! (`1 / (GROWTH - 1)` copies of each).
//!
//! A list's ids are written as the differences between consecutive ids (the first from 0), each
//! in 7-bit groups, low group first, the top bit of a byte set when another follows (LEB128).
//! The lists are most of the merge loop's memory on text with many distinct spans, and their
//! differences are small: a byte pair held by one span in a hundred or so at the start takes one
//! or two bytes per span instead of four. The size in front is coded the same way. Differences
//! are taken modulo 2^32, so any sequence of ids comes back as written (a list that is not
//! increasing, a bug the merge guards against, costs five bytes per id, no more). A merge
//! decodes its pair's list into a buffer of ids ([`Lists::decode`]): a pass over bytes it reads
//! anyway, small next to the merge's visit of each span. The codec is a few lines of our own:
//! the lists are filled in place by parts in parallel (`start.rs`), which needs the coded size
//! of each piece before writing it, and decoding runs straight into the merge's buffer.

/// Where a list starts in the arena (its size), or a short list itself (see [`INLINE`]).
/// [`EMPTY`] is the empty list.
pub(super) type ListAt = u64;

/// The empty list, which takes no room.
pub(super) const EMPTY: ListAt = u64::MAX;

/// A list whose ids code into at most 7 bytes is held in its [`ListAt`] rather than the arena:
/// the coded ids in the low 7 bytes, and in the top byte this bit with their size (so never
/// [`EMPTY`], and never a place in the arena, which is below 2^63). Most pairs born late in a
/// run hold a span or two, and their lists would otherwise take the arena a size and 4 or 5
/// bytes each, the place in the arena 8 more.
const INLINE: u64 = 0x80 << 56;

/// The most bytes of coded ids a list held in its [`ListAt`] has.
const INLINE_BYTES: usize = 7;

/// The arena is not compacted below this many bytes, so small runs never compact.
const MIN_COMPACT: usize = 4 << 20;

/// The arena is compacted once it holds this many times what was live at the last compaction
/// (as a fraction: 9/8). The lists are most of the merge loop's memory on text with many
/// distinct spans (one or two bytes per span and pair it holds at the start), so the arena's
/// slack is what its peak grows by; a smaller one costs more compactions, each a pass over the
/// live lists, which stays a small part of the loop's time (benches/README.md, span memory).
const GROWTH: (usize, usize) = (9, 8);

/// [`GROWTH`] times `bytes`.
fn grown(bytes: usize) -> usize {
    bytes / GROWTH.1 * GROWTH.0 + bytes % GROWTH.1 * GROWTH.0 / GROWTH.1
}

/// The bytes `value` takes coded.
#[inline(always)]
pub(super) fn coded_len(value: u64) -> usize {
    // 7 bits a byte: 1 byte up to 7 significant bits, 2 up to 14, ...
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// The bytes the id `id` takes after the id `previous` (0 before the first) in a list.
#[inline(always)]
pub(super) fn delta_len(previous: u32, id: u32) -> usize {
    coded_len(u64::from(id.wrapping_sub(previous)))
}

/// Writes `value` coded at the start of `out`, which must have room for it; returns the bytes
/// written ([`coded_len`]).
#[inline(always)]
pub(super) fn put(out: &mut [u8], mut value: u64) -> usize {
    let mut n = 0;
    while value >= 0x80 {
        out[n] = value as u8 | 0x80;
        value >>= 7;
        n += 1;
    }
    out[n] = value as u8;
    n + 1
}

/// Writes the id `id`, after the id `previous` (0 before the first) of a list, at the start of
/// `out`; returns the bytes written ([`delta_len`]).
#[inline(always)]
pub(super) fn put_delta(out: &mut [u8], previous: u32, id: u32) -> usize {
    put(out, u64::from(id.wrapping_sub(previous)))
}

/// The value coded at `at` in `bytes`, and where the next one starts.
#[inline(always)]
fn get(bytes: &[u8], mut at: usize) -> (u64, usize) {
    let (mut value, mut shift) = (0u64, 0);
    loop {
        let b = bytes[at];
        value |= u64::from(b & 0x7f) << shift;
        at += 1;
        if b < 0x80 {
            return (value, at);
        }
        shift += 7;
    }
}

pub(super) struct Lists {
    bytes: Vec<u8>,
    /// The size of the arena after the last compaction.
    compacted: usize,
    /// [`MIN_COMPACT`], lower in tests.
    min_compact: usize,
}

impl Default for Lists {
    fn default() -> Self {
        Self { bytes: Vec::new(), compacted: 0, min_compact: MIN_COMPACT }
    }
}

impl Lists {
    /// Makes room for `bytes` more bytes.
    pub(super) fn reserve(&mut self, bytes: usize, stage: &'static str) -> Result<(), crate::Error> {
        crate::memory::try_reserve_exact(&mut self.bytes, bytes, stage)
    }

    /// The bytes a list whose ids take `coded` bytes takes in the arena, its size included.
    pub(super) fn room(coded: usize) -> usize {
        if coded == 0 {
            0
        } else {
            coded_len(coded as u64) + coded
        }
    }

    /// Appends a list (or holds it in the [`ListAt`] returned, if short: see [`INLINE`]).
    pub(super) fn push(&mut self, ids: &[u32]) -> ListAt {
        let mut previous = 0;
        let coded = ids.iter().map(|&id| delta_len(std::mem::replace(&mut previous, id), id)).sum();
        if coded > 0 && coded <= INLINE_BYTES {
            let mut bytes = [0u8; 8];
            let (mut at, mut previous) = (0, 0);
            for &id in ids {
                at += put_delta(&mut bytes[at..], previous, id);
                previous = id;
            }
            return u64::from_le_bytes(bytes) | INLINE | (coded as u64) << 56;
        }
        let list = self.push_zeros(coded);
        if list != EMPTY {
            let mut at = self.ids_at(list);
            let mut previous = 0;
            for &id in ids {
                at += put_delta(&mut self.bytes[at..], previous, id);
                previous = id;
            }
        }
        list
    }

    /// Appends a list whose ids take `coded` bytes (see [`put_delta`]), all `0` for now, to be
    /// written in place (see [`Lists::ids_at`]); it is in the arena, however short.
    pub(super) fn push_zeros(&mut self, coded: usize) -> ListAt {
        if coded == 0 {
            return EMPTY;
        }
        let at = self.bytes.len();
        self.bytes.resize(at + Self::room(coded), 0);
        put(&mut self.bytes[at..], coded as u64);
        at as ListAt
    }

    /// Where the coded ids of `list` (pushed by [`Lists::push_zeros`], not [`EMPTY`]) start in
    /// [`Lists::bytes_mut`].
    pub(super) fn ids_at(&self, list: ListAt) -> usize {
        self.coded(list).0
    }

    /// The arena, to write lists pushed by [`Lists::push_zeros`] in place.
    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }

    /// Where the coded ids of `list` (in the arena) start and end in the arena.
    #[inline]
    fn coded(&self, list: ListAt) -> (usize, usize) {
        let (coded, from) = get(&self.bytes, list as usize);
        (from, from + coded as usize)
    }

    /// `f(bytes, from, to)`, `bytes[from..to]` being the coded ids of `list` (not [`EMPTY`]).
    #[inline(always)]
    fn with_coded<R>(&self, list: ListAt, f: impl FnOnce(&[u8], usize, usize) -> R) -> R {
        if in_arena(list) {
            let (from, to) = self.coded(list);
            f(&self.bytes[..to], from, to)
        } else {
            f(&list.to_le_bytes()[..INLINE_BYTES], 0, (list >> 56) as usize & 0x7f)
        }
    }

    /// Puts the ids in `list` in `out` (emptied first).
    pub(super) fn decode(&self, list: ListAt, out: &mut Vec<u32>) {
        out.clear();
        if list == EMPTY {
            return;
        }
        self.with_coded(list, |bytes, from, to| {
            // There are no more ids than bytes.
            out.reserve(to - from);
            let (mut at, mut id) = (from, 0u32);
            while at < to {
                let delta;
                (delta, at) = get(bytes, at);
                id = id.wrapping_add(delta as u32);
                out.push(id);
            }
        })
    }

    /// The first ids in `list`, as many as fit in `out` (or all of them if fewer).
    pub(super) fn first<'a>(&self, list: ListAt, out: &'a mut [u32]) -> &'a [u32] {
        if list == EMPTY {
            return &[];
        }
        let n = self.with_coded(list, |bytes, from, to| {
            let (mut at, mut id, mut n) = (from, 0u32, 0);
            while at < to && n < out.len() {
                let delta;
                (delta, at) = get(bytes, at);
                id = id.wrapping_add(delta as u32);
                out[n] = id;
                n += 1;
            }
            n
        });
        &out[..n]
    }

    /// Prefetches the start of `list`.
    #[inline]
    pub(super) fn prefetch(&self, list: ListAt) {
        if in_arena(list) {
            crate::memory::prefetch(self.bytes.as_ptr().wrapping_add(list as usize));
        }
    }

    /// Whether [`Lists::compact`] is due: the arena grew by [`GROWTH`] since the last one.
    pub(super) fn wants_compacting(&self) -> bool {
        self.bytes.len() >= self.min_compact.max(grown(self.compacted))
    }

    /// Slides the live lists down over the dropped ones. `live` must yield every live list exactly
    /// once, in the order they were pushed (which is increasing position), each as a place to
    /// write its new position.
    pub(super) fn compact<'a>(&mut self, live: impl Iterator<Item = &'a mut ListAt>) {
        let mut to = 0;
        for list in live {
            if !in_arena(*list) {
                continue;
            }
            let from = *list as usize;
            debug_assert!(from >= to, "lists are compacted in the order they were pushed");
            let end = self.coded(*list).1;
            self.bytes.copy_within(from..end, to);
            *list = to as ListAt;
            to += end - from;
        }
        self.bytes.truncate(to);
        // Keep the room the lists fill before the next compaction (which is due at GROWTH times
        // what is live): given back, it would only be faulted in again, a visible share of the
        // merge loop on text with many distinct spans (CJK: benches/shapes.py). Give back the
        // rest of the freed end: the arena's peak is what counts against memory.
        self.bytes.shrink_to(grown(to));
        self.compacted = to;
    }

    /// Bytes held (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// Whether `list` is in the arena (not [`EMPTY`], nor held in its [`ListAt`]).
#[inline(always)]
fn in_arena(list: ListAt) -> bool {
    list & INLINE == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random increasing ids, some lists with gaps near 2^32 and ids up to `u32::MAX`.
    fn random_ids(next: &mut impl FnMut(u64) -> u64) -> Vec<u32> {
        let len = next(40) as usize;
        let (mut id, gap): (u64, u64) = match next(4) {
            0 => (next(1 << 32), 1 << 31),
            1 => (0, 1 << 12),
            _ => (next(1 << 20), 300),
        };
        let mut ids = Vec::with_capacity(len);
        for _ in 0..len {
            if id > u64::from(u32::MAX) {
                break;
            }
            ids.push(id as u32);
            id += 1 + next(gap);
        }
        ids
    }

    #[test]
    fn values_take_the_bytes_said_and_come_back() {
        let mut next = crate::test_random(2);
        let mut out = [0u8; 10];
        for shift in 0..64 {
            for value in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) | next(1 << shift)] {
                let n = put(&mut out, value);
                assert_eq!(n, coded_len(value), "{value}");
                assert_eq!(get(&out, 0), (value, n));
            }
        }
        assert_eq!(coded_len(127), 1);
        assert_eq!(coded_len(128), 2);
        assert_eq!(delta_len(0, u32::MAX), 5);
        assert_eq!(delta_len(u32::MAX, 0), 1, "differences wrap");
    }

    #[test]
    fn live_lists_keep_their_ids_through_compactions() {
        let mut lists = Lists { min_compact: 1000, ..Lists::default() };
        // (position, ids) of every list pushed, in order; None once dropped.
        let mut model: Vec<Option<(ListAt, Vec<u32>)>> = Vec::new();
        let mut next = crate::test_random(1);
        let mut compactions = 0;
        let mut decoded = Vec::new();
        for step in 0..200_000u32 {
            if next(5) < 3 || model.is_empty() {
                let mut ids = random_ids(&mut next);
                if step % 1000 == 7 {
                    ids.reverse(); // not increasing: still exact
                }
                let at = if next(2) == 0 {
                    lists.push(&ids)
                } else {
                    // Sized first, then written in place, in two pieces as `start.rs` does.
                    let mut previous = 0;
                    let coded = ids.iter().map(|&id| delta_len(std::mem::replace(&mut previous, id), id)).sum();
                    let at = lists.push_zeros(coded);
                    if !ids.is_empty() {
                        let (from, cut) = (lists.ids_at(at), ids.len() / 2);
                        let first: usize = ids[..cut].iter().scan(0, |p, &id| Some(delta_len(std::mem::replace(p, id), id))).sum();
                        let (low, high) = lists.bytes_mut()[from..from + coded].split_at_mut(first);
                        let write = |piece: &mut [u8], ids: &[u32], mut previous: u32| {
                            let mut at = 0;
                            for &id in ids {
                                at += put_delta(&mut piece[at..], previous, id);
                                previous = id;
                            }
                            assert_eq!(at, piece.len());
                        };
                        write(high, &ids[cut..], if cut > 0 { ids[cut - 1] } else { 0 });
                        write(low, &ids[..cut], 0);
                    }
                    at
                };
                model.push(Some((at, ids)));
            } else {
                // A random live list: the first at or after a random place.
                let start = next(model.len() as u64) as usize;
                if let Some(i) = (start..model.len()).find(|&i| model[i].is_some()) {
                    model[i] = None;
                }
            }
            if lists.wants_compacting() {
                let (before, room) = (lists.len(), lists.bytes.capacity());
                lists.compact(model.iter_mut().flatten().map(|(at, _)| at));
                assert!(lists.len() <= before);
                // The room kept is what the lists fill before the next compaction: no less (it
                // would only be faulted in again), and no more.
                let kept = lists.bytes.capacity();
                assert!(kept <= grown(lists.len()) && kept >= room.min(grown(lists.len())), "{kept} bytes kept for {} live", lists.len());
                compactions += 1;
            }
            if step % 997 == 0 {
                for (at, ids) in model.iter().flatten() {
                    lists.decode(*at, &mut decoded);
                    assert_eq!(decoded, *ids);
                    let mut first = [0u32; 3];
                    assert_eq!(lists.first(*at, &mut first), &ids[..ids.len().min(3)]);
                }
            }
        }
        assert!(compactions > 2, "the test must reach compactions");
        for (at, ids) in model.iter().flatten() {
            lists.decode(*at, &mut decoded);
            assert_eq!(decoded, *ids);
        }
        // Compacted, the arena holds exactly the live lists it holds, each its size and its coded
        // ids; lists pushed of up to 7 coded bytes are held in their `ListAt` instead.
        lists.compact(model.iter_mut().flatten().map(|(at, _)| at));
        let coded = |ids: &[u32]| ids.iter().scan(0, |p, &id| Some(delta_len(std::mem::replace(p, id), id))).sum::<usize>();
        let live: usize = model.iter().flatten().filter(|(at, _)| in_arena(*at)).map(|(_, ids)| Lists::room(coded(ids))).sum();
        assert_eq!(lists.len(), live);
        let held = model.iter().flatten().filter(|(at, ids)| !ids.is_empty() && !in_arena(*at));
        assert!(held.clone().count() > 100 && held.clone().all(|(_, ids)| coded(ids) <= INLINE_BYTES), "short lists are held in their place");
        // Increasing ids close together take a byte each.
        let close: Vec<u32> = (0..100).map(|k| 1000 + 3 * k).collect();
        assert_eq!(coded(&close), 2 + 99);
    }
}
