//! The span lists of all pairs, end to end in one arena of `u32` words.
//!
//! A pair's list is written once, when the pair is born, and only read or dropped after (see
//! `pairs.rs`): so lists are appended at the end, each as its length then its span ids, and a
//! dropped list is simply no longer referred to (looking at it to count it would cost a cache
//! miss per dropped list). When the arena has doubled since the last compaction, the live
//! lists slide down over the dropped ones ([`Lists::compact`]), in the order they were
//! written, which is the order of the pairs in the index. So the arena holds at most
//! [`GROWTH`] times what was live at the last compaction, and compactions cost O(1) per word
//! written (`1 / (GROWTH - 1)` copies of each).

/// Where a list starts in the arena (its length word). [`EMPTY`] is the empty list.
pub(super) type ListAt = u64;

/// The empty list, which takes no room.
pub(super) const EMPTY: ListAt = u64::MAX;

/// The arena is not compacted below this many words, so small runs never compact.
const MIN_COMPACT: usize = 1 << 20;

/// The arena is compacted once it holds this many times what was live at the last compaction
/// (as a fraction: 5/4). The lists are most of the merge loop's memory on text with many
/// distinct spans (about a word per span and pair it holds at the start), so the arena's slack
/// is what its peak grows by; a smaller one costs more compactions, each a pass over the live
/// lists, which stays a small part of the loop's time (benches/README.md, span memory).
const GROWTH: (usize, usize) = (5, 4);

/// [`GROWTH`] times `words`.
fn grown(words: usize) -> usize {
    words / GROWTH.1 * GROWTH.0 + words % GROWTH.1 * GROWTH.0 / GROWTH.1
}

pub(super) struct Lists {
    words: Vec<u32>,
    /// The size of the arena after the last compaction.
    compacted: usize,
    /// [`MIN_COMPACT`], lower in tests.
    min_compact: usize,
}

impl Default for Lists {
    fn default() -> Self {
        Self { words: Vec::new(), compacted: 0, min_compact: MIN_COMPACT }
    }
}

impl Lists {
    /// Makes room for `words` more words.
    pub(super) fn reserve(&mut self, words: usize) {
        self.words.reserve(words);
    }

    /// Appends a list.
    pub(super) fn push(&mut self, ids: &[u32]) -> ListAt {
        if ids.is_empty() {
            return EMPTY;
        }
        let at = self.words.len();
        self.words.push(len_word(ids.len()));
        self.words.extend_from_slice(ids);
        at as ListAt
    }

    /// Appends a list of `len` ids, all `0` for now, to be filled in place (see
    /// [`Lists::ids_at`]).
    pub(super) fn push_zeros(&mut self, len: usize) -> ListAt {
        if len == 0 {
            return EMPTY;
        }
        let at = self.words.len();
        self.words.push(len_word(len));
        self.words.resize(at + 1 + len, 0);
        at as ListAt
    }

    /// Where the ids of `list` (not [`EMPTY`]) start in [`Lists::words_mut`].
    pub(super) fn ids_at(&self, list: ListAt) -> usize {
        list as usize + 1
    }

    /// The arena, to fill lists pushed by [`Lists::push_zeros`] in place.
    pub(super) fn words_mut(&mut self) -> &mut [u32] {
        &mut self.words
    }

    /// The ids in `list`.
    pub(super) fn get(&self, list: ListAt) -> &[u32] {
        if list == EMPTY {
            return &[];
        }
        let at = list as usize;
        let len = self.words[at] as usize;
        &self.words[at + 1..at + 1 + len]
    }

    /// Prefetches the start of `list`.
    #[inline]
    pub(super) fn prefetch(&self, list: ListAt) {
        if list != EMPTY {
            crate::memory::prefetch(self.words.as_ptr().wrapping_add(list as usize));
        }
    }

    /// Whether [`Lists::compact`] is due: the arena grew by [`GROWTH`] since the last one.
    pub(super) fn wants_compacting(&self) -> bool {
        self.words.len() >= self.min_compact.max(grown(self.compacted))
    }

    /// Slides the live lists down over the dropped ones. `live` must yield every live list exactly
    /// once, in the order they were pushed (which is increasing position), each as a place to
    /// write its new position.
    pub(super) fn compact<'a>(&mut self, live: impl Iterator<Item = &'a mut ListAt>) {
        let mut to = 0;
        for list in live {
            if *list == EMPTY {
                continue;
            }
            let from = *list as usize;
            debug_assert!(from >= to, "lists are compacted in the order they were pushed");
            let len = 1 + self.words[from] as usize;
            self.words.copy_within(from..from + len, to);
            *list = to as ListAt;
            to += len;
        }
        self.words.truncate(to);
        // Keep the room the lists fill before the next compaction (which is due at GROWTH times
        // what is live): given back, it would only be faulted in again, a visible share of the
        // merge loop on text with many distinct spans (CJK: benches/shapes.py). Give back the
        // rest of the freed end: the arena's peak is what counts against memory.
        self.words.shrink_to(grown(to));
        self.compacted = to;
    }

    /// Words held (for tests).
    #[cfg(test)]
    fn words(&self) -> usize {
        self.words.len()
    }
}

/// A list's length as its first word. A list holds each span at most twice and there are
/// fewer than 2^31 spans (see `check_total`), so the length fits.
fn len_word(len: usize) -> u32 {
    len as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_lists_keep_their_ids_through_compactions() {
        let mut lists = Lists { min_compact: 1000, ..Lists::default() };
        // (position, ids) of every list pushed, in order; None once dropped.
        let mut model: Vec<Option<(ListAt, Vec<u32>)>> = Vec::new();
        let mut next = crate::test_random(1);
        let mut compactions = 0;
        for step in 0..200_000u32 {
            if next(5) < 3 || model.is_empty() {
                let ids: Vec<u32> = (0..next(40) as u32).map(|k| step.wrapping_mul(64) + k).collect();
                let at = if next(2) == 0 {
                    lists.push(&ids)
                } else {
                    let at = lists.push_zeros(ids.len());
                    if !ids.is_empty() {
                        let from = lists.ids_at(at);
                        lists.words_mut()[from..from + ids.len()].copy_from_slice(&ids);
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
                let (before, room) = (lists.words(), lists.words.capacity());
                lists.compact(model.iter_mut().flatten().map(|(at, _)| at));
                assert!(lists.words() <= before);
                // The room kept is what the lists fill before the next compaction: no less (it
                // would only be faulted in again), and no more.
                let kept = lists.words.capacity();
                assert!(kept <= grown(lists.words()) && kept >= room.min(grown(lists.words())), "{kept} words kept for {} live", lists.words());
                compactions += 1;
            }
            if step % 997 == 0 {
                for (at, ids) in model.iter().flatten() {
                    assert_eq!(lists.get(*at), &ids[..]);
                }
            }
        }
        assert!(compactions > 2, "the test must reach compactions");
        for (at, ids) in model.iter().flatten() {
            assert_eq!(lists.get(*at), &ids[..]);
        }
        // Compacted, the arena holds exactly the live lists.
        lists.compact(model.iter_mut().flatten().map(|(at, _)| at));
        let live: usize = model.iter().flatten().filter(|(_, ids)| !ids.is_empty()).map(|(_, ids)| 1 + ids.len()).sum();
        assert_eq!(lists.words(), live);
    }
}
