//! The span lists of all pairs in one pool of `u32` words, instead of one allocation per pair.
//!
//! A list lives in a block of `2^class` words: its length, then up to `2^class - 1` span ids.
//! A full list moves to a block of the next class. Freed blocks are kept by class for reuse,
//! and a larger free block is split in halves when no block of the class asked for is free, so
//! the long lists of the first merges, freed early, become room for the many short lists of the
//! later ones.
//!
//! The lists the loop starts with are known in full, so each gets a block of exactly its
//! length (class 0, "exact"), which is always full: appending moves it to a class block, and
//! freeing it frees it as power-of-two pieces.

/// Where a list lives: its block's offset in the pool in the low 56 bits, the block's class in
/// the top 8 bits. [`EMPTY`] is the empty list, which has no block.
pub(super) type ListAt = u64;

/// The empty list.
pub(super) const EMPTY: ListAt = u64::MAX;

/// The smallest block: 4 words, the length and 3 ids.
const MIN_CLASS: u32 = 2;

/// The class of blocks that hold exactly their list (see the module doc).
const EXACT: u32 = 0;

const OFFSET_BITS: u32 = 56;

fn at(offset: usize, class: u32) -> ListAt {
    offset as u64 | (u64::from(class) << OFFSET_BITS)
}

fn offset(list: ListAt) -> usize {
    (list & ((1 << OFFSET_BITS) - 1)) as usize
}

fn class(list: ListAt) -> u32 {
    (list >> OFFSET_BITS) as u32
}

/// The smallest class whose blocks hold `len` ids.
fn class_for(len: usize) -> u32 {
    (len + 1).next_power_of_two().trailing_zeros().max(MIN_CLASS)
}

#[derive(Default)]
pub(super) struct Lists {
    words: Vec<u32>,
    /// Offsets of the free blocks, by class.
    free: Vec<Vec<usize>>,
}

impl Lists {
    /// A new empty list with room for `capacity` ids without moving.
    fn with_capacity(&mut self, capacity: usize) -> ListAt {
        let class = class_for(capacity);
        let offset = self.block(class);
        self.set_len(offset, 0);
        at(offset, class)
    }

    /// A new list of exactly `len` ids, all `0` for now: [`Lists::set`] gives them.
    pub(super) fn exact(&mut self, len: usize) -> ListAt {
        let offset = self.words.len();
        self.words.resize(offset + 1 + len, 0);
        self.set_len(offset, len);
        at(offset, EXACT)
    }

    /// Sets the `i`-th id of `list`.
    pub(super) fn set(&mut self, list: ListAt, i: usize, id: u32) {
        let offset = offset(list);
        let len = self.words[offset] as usize;
        self.words[offset + 1..offset + 1 + len][i] = id;
    }

    /// How many ids `list` holds without moving.
    fn capacity(&self, list: ListAt) -> usize {
        match class(list) {
            EXACT => self.get(list).len(),
            c => (1 << c) - 1,
        }
    }

    /// The ids in `list`.
    pub(super) fn get(&self, list: ListAt) -> &[u32] {
        if list == EMPTY {
            return &[];
        }
        let offset = offset(list);
        let len = self.words[offset] as usize;
        &self.words[offset + 1..offset + 1 + len]
    }

    /// Appends `id` to `list`, unless it is already the list's last id.
    #[cfg(test)]
    fn push_new(&mut self, list: &mut ListAt, id: u32) {
        if self.get(*list).last() != Some(&id) {
            self.extend(list, &[id]);
        }
    }

    /// Appends `ids` to `list`, moving it to a larger block if it does not fit.
    pub(super) fn extend(&mut self, list: &mut ListAt, ids: &[u32]) {
        if ids.is_empty() {
            return;
        }
        let len = self.get(*list).len();
        let new_len = len + ids.len();
        if *list == EMPTY || new_len > self.capacity(*list) {
            let moved = self.with_capacity(new_len);
            if *list != EMPTY {
                let from = offset(*list);
                self.words.copy_within(from + 1..from + 1 + len, offset(moved) + 1);
                self.free(*list);
            }
            *list = moved;
        }
        let offset = offset(*list);
        self.words[offset + 1 + len..offset + 1 + new_len].copy_from_slice(ids);
        self.set_len(offset, new_len);
    }

    /// Records the length of the list in the block at `offset`. A list holds a span at most
    /// twice and there are fewer than 2^31 spans (see `check_total`), so its length fits.
    fn set_len(&mut self, offset: usize, len: usize) {
        self.words[offset] = len as u32;
    }

    /// Frees `list`'s block for reuse.
    pub(super) fn free(&mut self, list: ListAt) {
        if list == EMPTY {
            return;
        }
        let (mut offset, class) = (offset(list), class(list));
        if class != EXACT {
            self.free_block(offset, class);
            return;
        }
        // An exact block is freed as power-of-two pieces, largest first; the last 0 to 3 words
        // are too few for a list and stay unused.
        let mut size = self.get(list).len() + 1;
        while size >= 1 << MIN_CLASS {
            let c = size.ilog2();
            self.free_block(offset, c);
            offset += 1 << c;
            size -= 1 << c;
        }
    }

    fn free_block(&mut self, offset: usize, class: u32) {
        let class = class as usize;
        if self.free.len() <= class {
            self.free.resize_with(class + 1, Vec::new);
        }
        self.free[class].push(offset);
    }

    /// A block of `class`: a free one, half of a larger free one, or new room in the pool.
    fn block(&mut self, class: u32) -> usize {
        let wanted = class as usize;
        if let Some(offset) = self.free.get_mut(wanted).and_then(Vec::pop) {
            return offset;
        }
        if let Some(larger) = (wanted + 1..self.free.len()).find(|&c| !self.free[c].is_empty()) {
            if let Some(offset) = self.free[larger].pop() {
                // Keep the first 2^class words, free the rest as one block of each class from
                // `class` up to `larger - 1`.
                for c in wanted..larger {
                    self.free_block(offset + (1 << c), c as u32);
                }
                return offset;
            }
        }
        let offset = self.words.len();
        self.words.resize(offset + (1 << class), 0);
        offset
    }

    /// Words held by the pool (for tests).
    #[cfg(test)]
    fn words(&self) -> usize {
        self.words.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_their_ids_through_moves_and_reuse() {
        let mut lists = Lists::default();
        let mut model: Vec<Vec<u32>> = vec![Vec::new(); 50];
        let mut at = vec![EMPTY; 50];
        let mut state = 1u64;
        let mut next = |m: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for step in 0..20_000u32 {
            let i = next(50) as usize;
            match next(11) {
                10 => {
                    let ids: Vec<u32> = (0..next(40) as u32).map(|k| step * 64 + k).collect();
                    lists.free(at[i]);
                    at[i] = lists.exact(ids.len());
                    for (k, &id) in ids.iter().enumerate() {
                        lists.set(at[i], k, id);
                    }
                    model[i] = ids;
                }
                0 => {
                    lists.free(at[i]);
                    at[i] = EMPTY;
                    model[i].clear();
                }
                1 => {
                    let ids: Vec<u32> = (0..next(40) as u32).map(|k| step * 64 + k).collect();
                    lists.extend(&mut at[i], &ids);
                    model[i].extend(&ids);
                }
                _ => {
                    let id = if next(3) == 0 { model[i].last().copied().unwrap_or(step) } else { step };
                    lists.push_new(&mut at[i], id);
                    if model[i].last() != Some(&id) {
                        model[i].push(id);
                    }
                }
            }
            if step % 97 == 0 {
                for (list, want) in at.iter().zip(&model) {
                    assert_eq!(lists.get(*list), &want[..]);
                }
            }
        }
        for (list, want) in at.iter().zip(&model) {
            assert_eq!(lists.get(*list), &want[..]);
        }
    }

    #[test]
    fn freed_long_lists_make_room_for_short_ones() {
        let mut lists = Lists::default();
        let mut long = EMPTY;
        lists.extend(&mut long, &(0..1000).collect::<Vec<u32>>());
        let words = lists.words();
        lists.free(long);
        // 1000 ids took a 1024-word block (plus the smaller blocks it grew through): split, it
        // holds many 4-word lists without the pool growing.
        let short: Vec<ListAt> = (0..200).map(|i| {
            let mut l = EMPTY;
            lists.extend(&mut l, &[i, i + 1]);
            l
        }).collect();
        assert_eq!(lists.words(), words);
        for (i, l) in short.iter().enumerate() {
            assert_eq!(lists.get(*l), &[i as u32, i as u32 + 1]);
        }
    }
}
