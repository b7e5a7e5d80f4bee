//! The distinct spans as one flat array of token ids, and merging a pair inside them.

use rayon::prelude::*;

use super::Pair;

/// Merges that touch at least this many spans are applied in parallel.
pub(super) const PARALLEL_SPANS: usize = 2048;
/// Spans per parallel task.
pub(super) const SPANS_PER_TASK: usize = 4096;

/// The spans with at least one pair, each with its count. Span `i` lives in
/// `tokens[bounds[i]..bounds[i] + lens[i]]`; merges only shorten spans, in place, so the
/// tokens of spans that are merged together lie close together in memory.
pub(super) struct SpanTable {
    tokens: Vec<u32>,
    bounds: Vec<usize>,
    lens: Vec<u32>,
    counts: Vec<i64>,
}

impl SpanTable {
    /// Spans shorter than two bytes hold no pair and are left out.
    pub(super) fn new(spans: Vec<(Box<[u8]>, u64)>) -> Self {
        let spans: Vec<_> = spans.into_iter().filter(|(bytes, n)| bytes.len() >= 2 && *n > 0).collect();
        let total = spans.iter().map(|(b, _)| b.len()).sum();
        let mut table = SpanTable {
            tokens: Vec::with_capacity(total),
            bounds: Vec::with_capacity(spans.len() + 1),
            lens: Vec::with_capacity(spans.len()),
            counts: Vec::with_capacity(spans.len()),
        };
        for (bytes, n) in spans {
            table.bounds.push(table.tokens.len());
            table.tokens.extend(bytes.iter().map(|&b| u32::from(b)));
            table.lens.push(bytes.len() as u32);
            table.counts.push(n as i64);
        }
        table.bounds.push(table.tokens.len());
        table
    }

    pub(super) fn len(&self) -> usize {
        self.lens.len()
    }

    pub(super) fn tokens(&self, id: u32) -> &[u32] {
        let start = self.bounds[id as usize];
        &self.tokens[start..start + self.lens[id as usize] as usize]
    }

    pub(super) fn count(&self, id: u32) -> i64 {
        self.counts[id as usize]
    }

    /// Merges `pair` into `token` in the spans `ids` (increasing, no repeats) and returns the
    /// neighbours of the replaced occurrences. Many spans are merged in parallel, in blocks of
    /// consecutive spans whose events are joined in block order, so the result is the same.
    pub(super) fn merge(&mut self, ids: &[u32], pair: Pair, token: u32) -> Neighbours {
        if ids.len() < PARALLEL_SPANS {
            let mut found = Neighbours::default();
            for &id in ids {
                let (start, len) = (self.bounds[id as usize], self.lens[id as usize] as usize);
                found.merge_span(&mut self.tokens[start..start + len], &mut self.lens[id as usize], id, pair, token);
            }
            return found;
        }
        let mut blocks = Vec::with_capacity(self.len() / SPANS_PER_TASK + 1);
        let (mut tokens, mut lens) = (&mut self.tokens[..], &mut self.lens[..]);
        let mut first = 0;
        while first < self.bounds.len() - 1 {
            let end = (first + SPANS_PER_TASK).min(self.bounds.len() - 1);
            let (block_tokens, rest_tokens) = tokens.split_at_mut(self.bounds[end] - self.bounds[first]);
            let (block_lens, rest_lens) = lens.split_at_mut(end - first);
            blocks.push((first, block_tokens, block_lens));
            (tokens, lens, first) = (rest_tokens, rest_lens, end);
        }
        let bounds = &self.bounds;
        blocks
            .into_par_iter()
            .filter_map(|(first, block_tokens, block_lens)| {
                let start = ids.partition_point(|&id| (id as usize) < first);
                let end = ids.partition_point(|&id| (id as usize) < first + block_lens.len());
                if start == end {
                    return None;
                }
                let mut found = Neighbours::default();
                for &id in &ids[start..end] {
                    let offset = bounds[id as usize] - bounds[first];
                    let len = &mut block_lens[id as usize - first];
                    found.merge_span(&mut block_tokens[offset..offset + *len as usize], len, id, pair, token);
                }
                Some(found)
            })
            .reduce(Neighbours::default, Neighbours::absorb)
    }
}

/// A token next to a replaced occurrence of `(a, b)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neighbour {
    /// `x` was on the left: `(x, a)` is gone and `(x, token)` appeared.
    Left(u32),
    /// `y` was on the right: `(b, y)` is gone and `(token, y)` appeared.
    Right(u32),
}

/// The neighbours of the occurrences one merge replaced, as `(token, span)` events. They
/// describe all of the merge's changes to pair counts besides the merged pair itself (a token
/// made earlier in the same span is a neighbour like any other, which keeps runs such as `abab`
/// exact).
#[derive(Default)]
pub(super) struct Neighbours {
    pub(super) left: Vec<(u32, u32)>,
    pub(super) right: Vec<(u32, u32)>,
}

impl Neighbours {
    fn merge_span(&mut self, tokens: &mut [u32], len: &mut u32, id: u32, pair: Pair, token: u32) {
        *len = merge_in_span(tokens, pair, token, |side| match side {
            Neighbour::Left(x) => self.left.push((x, id)),
            Neighbour::Right(y) => self.right.push((y, id)),
        }) as u32;
    }

    /// Adds `later`'s events, which come from spans after all of `self`'s.
    fn absorb(mut self, mut later: Neighbours) -> Neighbours {
        self.left.append(&mut later.left);
        self.right.append(&mut later.right);
        self
    }
}

/// Replaces each non-overlapping occurrence of `pair` in `tokens`, left to right, by `token`,
/// reporting the neighbours of each replaced occurrence. The merged span is written to the
/// front of `tokens`; returns its length.
pub fn merge_in_span(tokens: &mut [u32], pair: Pair, token: u32, mut on_neighbour: impl FnMut(Neighbour)) -> usize {
    let (a, b) = pair;
    let n = tokens.len();
    let (mut read, mut write) = (0, 0);
    while read < n {
        if read + 1 < n && tokens[read] == a && tokens[read + 1] == b {
            // `write - 1` is already the merged output; `read + 2` is still the input.
            if write > 0 {
                on_neighbour(Neighbour::Left(tokens[write - 1]));
            }
            if read + 2 < n {
                on_neighbour(Neighbour::Right(tokens[read + 2]));
            }
            tokens[write] = token;
            read += 2;
        } else {
            tokens[write] = tokens[read];
            read += 1;
        }
        write += 1;
    }
    write
}
