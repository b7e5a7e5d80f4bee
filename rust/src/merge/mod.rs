//! The merge loop: learn merges from distinct spans and their counts.
//!
//! The rule (the specification the tests hold): repeatedly take the adjacent pair with the
//! highest count, where a pair's count is the sum over spans of span count × adjacent positions
//! holding the pair; among equal counts the smallest pair (by ids) wins. Replace it left to right,
//! non-overlapping, in every span. The merged token is `bytes(a) + bytes(b)` as a new rank. (These
//! bytes cannot already be a token under this rule, see docs/design.md; should they ever be, the
//! loop ends with [`Error::Internal`] rather than give two ranks the same bytes.)
//!
//! Counts are kept incrementally: a merge only changes the pairs around the occurrences it
//! replaces. A pair is born with all its occurrences at the merge that makes its later token
//! (see `pairs.rs`), and its count only falls after that. A max-heap holds candidate pairs with
//! the count they had when pushed, so a popped entry whose count is stale is re-pushed with its
//! current count (lazy refresh) and the first entry popped with its current count is the true
//! best pair.
//!
//! A maximum token length, if given, drops a pair whose token would be longer when it is popped
//! from the heap, so the choice is the specification's among the pairs that fit.
//!
//! Only pairs counted at least a floor are kept in the heap (most pairs that late merges make
//! occur a few times and are never chosen); when the heap holds nothing at or above the floor,
//! the floor is lowered and the pairs between the new and the old floor are pushed.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;

use dary_heap::OctonaryHeap;
use crate::count::Spans;
use crate::{Error, Vocab};

mod alphabet;
mod extend;
mod lists;
mod other_half;
mod pairs;
mod parity;
mod span_table;
mod start;
mod sums;

pub use alphabet::{byte_level_order, Alphabet, AlphabetRule};
pub use extend::{extend, ExtendBase, TokenIds};
pub use parity::{learn_parity, ParityLearned, ParityOptions, ParityTies, Selection};
pub use span_table::{merge_in_span, Neighbour, TokenId};
use other_half::OtherHalf;
use pairs::{PairIndex, PairSlot};
use span_table::{Neighbours, SpanTable};
use start::check_stop;
use sums::Side;

/// Two adjacent token ids.
pub type Pair = (u32, u32);

/// A pair packed into one integer; its order is the lexicographic order of the pair.
type PairKey = u64;

fn key(pair: Pair) -> PairKey {
    (u64::from(pair.0) << 32) | u64::from(pair.1)
}

fn unkey(key: PairKey) -> Pair {
    ((key >> 32) as u32, key as u32)
}

/// What to learn.
#[derive(Debug, Clone)]
pub struct LearnOptions {
    /// Stop when the vocabulary has this many tokens: the alphabet's single bytes (all 256 by
    /// default) and the learned tokens.
    pub vocab_size: usize,
    /// Stop when the best pair occurs fewer times than this.
    pub min_frequency: u64,
    /// Never make a token longer than this many bytes: a pair whose token would be is dropped
    /// from consideration for good (its length never changes), and the best of the others is
    /// merged. `None`: no limit.
    pub max_token_length: Option<usize>,
    /// Never make a token of more than this many words (runs of bytes other than the space,
    /// 0x20: `b" of the"` is two), dropping such pairs as `max_token_length` does. `None`: no
    /// limit.
    pub max_token_words: Option<usize>,
    /// Never make a token of more than this many characters (see [`chars`]), as CJK corpora
    /// want (a character there takes three bytes): dropped for good as `max_token_length` is.
    /// `None`: no limit.
    pub max_token_chars: Option<usize>,
    /// Which bytes are single-byte tokens and how they are numbered, which breaks ties (see
    /// `alphabet.rs`). Extending a base takes the base's tokens instead.
    pub alphabet: AlphabetRule,
}

impl Default for LearnOptions {
    /// The 256 single bytes alone: no merge, no limit.
    fn default() -> Self {
        LearnOptions {
            vocab_size: 256,
            min_frequency: 1,
            max_token_length: None,
            max_token_words: None,
            max_token_chars: None,
            alphabet: AlphabetRule::Bytes,
        }
    }
}

impl LearnOptions {
    /// Whether the token of `left` then `right` keeps to the limits on tokens
    /// (`max_token_length`, `max_token_words`, `max_token_chars`). A token that does not never
    /// will (its bytes never change), and no token containing it will either.
    #[inline]
    fn allows(&self, left: &[u8], right: &[u8]) -> bool {
        self.max_token_length.map_or(true, |max| left.len() + right.len() <= max)
            && self.max_token_words.map_or(true, |max| words(left) + words(right) - usize::from(joined(left, right)) <= max)
            && self.max_token_chars.map_or(true, |max| joined_chars(left, right) <= max)
    }
}

/// The words of `token`: its runs of bytes other than the space.
fn words(token: &[u8]) -> usize {
    let mut words = 0;
    let mut in_word = false;
    for &b in token {
        if b != b' ' && !in_word {
            words += 1;
        }
        in_word = b != b' ';
    }
    words
}

/// Whether `left`'s last word and `right`'s first are one word in `left` then `right`.
fn joined(left: &[u8], right: &[u8]) -> bool {
    left.last().is_some_and(|&b| b != b' ') && right.first().is_some_and(|&b| b != b' ')
}

/// One step of the merge loop: `pair` was replaced by `token`; it occurred `count` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merge {
    pub pair: Pair,
    pub token: u32,
    pub count: u64,
}

/// The result of the merge loop.
#[derive(Debug, Clone)]
pub struct Learned {
    /// The tokens by id: the 256 single bytes (the alphabet's first, in the order of their ids,
    /// then the bytes outside it, which no span held), then the merged tokens; or, extending, the
    /// base's tokens and the new ones.
    pub vocab: Vocab,
    pub merges: Vec<Merge>,
    /// How many of the first tokens of `vocab` are the alphabet (256 but with
    /// [`AlphabetRule::ByteLevel`]; an extension's base tokens all count).
    pub alphabet: usize,
}

/// A pair in the heap, with its count when it was pushed.
#[derive(Debug, PartialEq, Eq)]
struct Candidate {
    count: u64,
    pair: PairKey,
    /// Where the pair lives in the index (given by the pair, so it takes no part in the order).
    slot: PairSlot,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        // Highest count first; among equal counts the smallest pair is the greatest.
        self.count.cmp(&other.count).then_with(|| other.pair.cmp(&self.pair))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Merges of at least this many spans are shared with the other thread ([`OtherHalf`]).
const SHARED_SPANS: usize = 256;

/// The room for spans kept for the next merge's list: a larger one (a merge of millions of
/// spans, whose neighbours take more room still) is given back after its merge.
const KEPT_SPANS: usize = 1 << 18;

/// How much the heap's floor drops when the heap runs out of pairs above it. Halving keeps the
/// heap small (each drop pushes only the pairs between the old and the new floor), which pays
/// for the extra scans of the pairs; larger steps learn slower on the kernel corpora, and
/// smaller ones no faster.
const FLOOR_STEP: u64 = 2;

/// The merge loop's state: the spans, and what is known of every pair.
struct Loop<T> {
    spans: SpanTable<T>,
    pairs: PairIndex,
    heap: OctonaryHeap<Candidate>,
    /// Every pair counted at least this has an entry in the heap with at least its count.
    floor: u64,
    /// The second thread that merges of [`SHARED_SPANS`] spans or more are shared with, if the
    /// pool has two threads or more and there are that many spans.
    other_half: Option<OtherHalf>,
    // Scratch space reused by every merge:
    /// The spans of the merged pair, decoded from its list (at most [`KEPT_SPANS`] kept between
    /// merges).
    merged_spans: Vec<u32>,
    /// The neighbours found in the first and in the second half of the merged spans (all of
    /// them in the first when the merge is not shared).
    neighbours: [Neighbours; 2],
    /// The left and the right neighbours summed, with the old pairs they take occurrences from.
    left: Side,
    right: Side,
    /// The pairs a merge made that go in the heap.
    born: Vec<Candidate>,
    /// Pairs born counted less than this are left out of the index (pairs of two bytes, at the
    /// start, are all kept). Counts only fall after a pair is born and the best count never
    /// rises, so such a pair cannot be merged while a pair counted this much or more is left;
    /// on text with many distinct spans, most pairs born are counted once.
    keep_from: u64,
    /// Pairs counted less than this are never merged (the run's `min_frequency`).
    min_frequency: u64,
    /// Whether a pair that could be merged was left out: the index then takes back every pair
    /// ([`Loop::keep_every_pair`]) before one counted less than `keep_from` is chosen.
    left_out: bool,
}

impl<T: TokenId> Loop<T> {
    /// The loop's state before the first merge. Setting `stop` makes it give up soon with
    /// [`Error::Interrupted`]: each step is a pass over the spans (about a second for tens of
    /// millions of them), and it is checked between them and in the longest ones.
    fn new<'a>(spans: impl Into<Cow<'a, Spans>>, stop: &AtomicBool) -> Result<Self, Error> {
        let spans = spans.into();
        let (table, ids) = SpanTable::<T>::new(&spans)?;
        drop(spans); // the table holds them now: not kept while the pair index is built (if owned)
        check_stop(stop)?;
        let pairs = start::byte_pair_index(&table, &ids, stop)?;
        Ok(Self::start(table, pairs, ids.len()))
    }

    /// The loop's state before the first merge, given the span table (of `spans` spans) and
    /// its pair index.
    fn start(table: SpanTable<T>, pairs: PairIndex, spans: usize) -> Self {
        let (floor, heap) = first_heap(&pairs);
        Self {
            spans: table,
            pairs,
            heap,
            floor,
            // No merge can touch SHARED_SPANS spans with fewer than that.
            other_half: if rayon::current_num_threads() > 1 && spans >= SHARED_SPANS { OtherHalf::start() } else { None },
            merged_spans: Vec::new(),
            neighbours: Default::default(),
            left: Side::default(),
            right: Side::default(),
            born: Vec::new(),
            keep_from: 0,
            min_frequency: 0,
            left_out: false,
        }
    }

    /// Leaves out of the index the pairs born counted less than `min_frequency` (never merged)
    /// or once, which are most of them on text with many distinct spans (see `keep_from`).
    fn leave_out_rare_pairs(&mut self, min_frequency: u64) {
        self.min_frequency = min_frequency;
        self.keep_from = min_frequency.max(2);
    }

    /// Takes back every pair left out: the index is built anew from the spans as they are now,
    /// `tokens` tokens made so far, and so is the heap. Only a run that merges pairs counted
    /// once gets here, once. Setting `stop` makes it give up with [`Error::Interrupted`].
    fn keep_every_pair(&mut self, tokens: u32, stop: &AtomicBool) -> Result<(), Error> {
        let ids = self.spans.ids();
        self.pairs = PairIndex::default(); // the old index freed before the new one is built
        self.pairs = start::token_pair_index(&self.spans, &ids, tokens, stop)?;
        (self.floor, self.heap) = first_heap(&self.pairs);
        (self.keep_from, self.left_out) = (0, false);
        Ok(())
    }

    /// The pair with the highest current count (smallest pair among equals) among those
    /// `allowed`, as its heap entry, which holds that count. An entry of a pair not allowed is
    /// dropped when popped: the floor's invariant then holds for the allowed pairs, which is
    /// all the answer needs (lowering the floor may push such a pair again, to be dropped again).
    /// `tokens` tokens are made so far. Fails only with [`Error::Interrupted`], if `stop` is set
    /// while the index takes back the pairs it left out (a pass over the spans).
    fn best(&mut self, allowed: impl Fn(Pair) -> bool, tokens: u32, stop: &AtomicBool) -> Result<Option<Candidate>, Error> {
        loop {
            if self.heap.peek().map_or(true, |top| top.count < self.floor) {
                if self.floor == 0 {
                    if self.left_out {
                        self.keep_every_pair(tokens, stop)?;
                        continue;
                    }
                    return Ok(None);
                }
                self.lower_floor();
                continue;
            }
            let Some(top) = self.heap.pop() else { return Ok(None) };
            if !allowed(unkey(top.pair)) {
                continue;
            }
            let current = self.pairs.count(top.slot);
            if current <= 0 {
                continue; // no longer occurs
            }
            // Counts only fall after a pair is born, so an entry's count is at least current.
            debug_assert!(current as u64 <= top.count);
            if current as u64 != top.count {
                if current as u64 >= self.floor {
                    self.heap.push(Candidate { count: current as u64, ..top });
                }
            } else if self.left_out && top.count < self.keep_from {
                self.keep_every_pair(tokens, stop)?; // a pair left out may beat or tie it
            } else {
                return Ok(Some(top));
            }
        }
    }

    /// Raises the floor after a merge of a pair counted `count`: pairs counted less than half
    /// of it are unlikely to be chosen soon.
    fn raise_floor(&mut self, count: u64) {
        self.floor = self.floor.max(count / 2);
    }

    /// Lowers the floor, pushing the pairs it now covers.
    fn lower_floor(&mut self) {
        let old = self.floor;
        self.floor = old / FLOOR_STEP;
        let pushed = self.pairs.counted_between(self.floor, old);
        self.heap.extend(pushed.map(|(count, pair, slot)| Candidate { count, pair, slot }));
    }

    /// Replaces the pair of `best` by `token` in every span that holds it and updates the
    /// counts: the pairs next to each replaced occurrence lose it, and `token`'s block gets
    /// the pairs that took their place.
    fn apply(&mut self, best: &Candidate, token: u32) {
        let pair = unkey(best.pair);
        // The pair likely merged next, whose first reads are fetched while this merge goes on.
        let next = self.heap.peek().map(|c| c.slot);
        if let Some(slot) = next {
            self.pairs.prefetch_slot(slot);
        }
        let shared = self.replace_in_spans(best.slot, pair, token);
        self.pairs.remove(best.slot);
        if let Some(slot) = next {
            self.pairs.prefetch_spans(slot);
        }
        self.sum_neighbours(pair, token, shared);
        self.add_new_pairs(pair.0, token);
        if let Some(slot) = next {
            self.spans.prefetch(self.pairs.first_spans(slot, &mut [0; 8]));
        }
        self.heap.extend(self.born.drain(..));
        self.pairs.compact_if_due();
    }

    /// Replaces `pair` by `token` in the spans listed for the pair at `slot`, recording the
    /// neighbours of the replaced occurrences in `self.neighbours`. Many spans are shared
    /// with the other thread ([`OtherHalf`]), which takes the later half of them; returns
    /// whether they were.
    fn replace_in_spans(&mut self, slot: PairSlot, pair: Pair, token: u32) -> bool {
        let Loop { spans, pairs, other_half, merged_spans, neighbours: [first, second], .. } = self;
        pairs.spans_of(slot, merged_spans);
        let list = increasing(merged_spans);
        let other_half = other_half.as_ref().filter(|_| list.len() >= SHARED_SPANS && !spans.merges_in_parallel(list));
        first.clear();
        second.clear();
        if let Some(other_half) = other_half {
            let (low, high) = list.split_at(list.len() / 2);
            let (mut below, mut above) = spans.split_at(high[0]);
            other_half.join(|| below.merge(low, pair, token, first), || above.merge(high, pair, token, second));
        } else {
            spans.merge(list, pair, token, first);
        }
        // The list is not kept: after an unusually large merge, its room is given back.
        if merged_spans.capacity() > KEPT_SPANS {
            *merged_spans = Vec::new();
        }
        other_half.is_some()
    }

    /// Sums the neighbours found by side, and finds the old pairs they take occurrences from:
    /// a left neighbour `x` takes them from `(x, a)`, a right neighbour `y` from `(b, y)`. The
    /// two sides are summed at once, the right one on the other thread, when the merge was
    /// `shared` with it.
    ///
    /// `x` may be `token` itself (a token made earlier in the same span, as in `abab`): then
    /// `(token, a)` is not in the index yet but born by a right neighbour of this same merge,
    /// which [`Loop::add_new_pairs`] takes the occurrences off. The merged pair has lost all
    /// its occurrences already. Any other old pair is a pair of earlier tokens, so it is in the
    /// index with at least the occurrences it loses. A right neighbour is never `token` (right
    /// of an occurrence is still the input).
    fn sum_neighbours(&mut self, pair: Pair, token: u32, shared: bool) {
        let Loop { pairs, neighbours: [first, second], left, right, other_half, .. } = self;
        let (pairs, first, second): (&PairIndex, &Neighbours, &Neighbours) = (pairs, first, second);
        let (a, b) = pair;
        let mut sum_left = || left.sum([&first.left, &second.left], pairs, |x| (x != token && (x, a) != pair).then_some((x, a)));
        let mut sum_right = || right.sum([&first.right, &second.right], pairs, |y| ((b, y) != pair).then_some((b, y)));
        if let Some(other_half) = other_half.as_ref().filter(|_| shared) {
            other_half.join(sum_left, sum_right);
        } else {
            sum_left();
            sum_right();
        }
    }

    /// Opens `token`'s block of the pair index and fills it from the neighbours summed: each
    /// left neighbour `x` moves its occurrences from its old pair to `(x, token)`, each right
    /// neighbour `y` from its old pair to `(token, y)`. The new pairs counted at least the
    /// floor are put in `self.born`, for the heap.
    fn add_new_pairs(&mut self, a: u32, token: u32) {
        let Loop { pairs, floor, left, right, born, keep_from, min_frequency, left_out, .. } = self;
        let (floor, keep_from, min_frequency) = (*floor, *keep_from, *min_frequency);
        pairs.open_block(token);
        // The occurrences of (token, a) counted by the left neighbour `token`, which are not
        // in the index yet: the right neighbour `a` makes (token, a) with them, less these.
        let mut token_then_a = 0;
        let mut old_pairs = left.old_pairs.iter();
        left.sums.drain(|x, n, spans| {
            if x == token {
                token_then_a = n;
            }
            if let Some(&Some(old)) = old_pairs.next() {
                pairs.sub(old, n);
            }
            if (n as u64) < keep_from {
                *left_out |= n as u64 >= min_frequency;
                return;
            }
            let slot = pairs.push((x, token), n, spans);
            if n as u64 >= floor {
                born.push(Candidate { count: n as u64, pair: key((x, token)), slot });
            }
        });
        let mut old_pairs = right.old_pairs.iter();
        right.sums.drain(|y, n, spans| {
            if let Some(&Some(old)) = old_pairs.next() {
                pairs.sub(old, n);
            }
            let count = if y == a { n - token_then_a } else { n };
            debug_assert!(count >= 0, "a pair's count is never negative");
            if count > 0 && (count as u64) < keep_from {
                *left_out |= count as u64 >= min_frequency;
            } else if count > 0 {
                let slot = pairs.push((token, y), count, spans);
                if count as u64 >= floor {
                    born.push(Candidate { count: count as u64, pair: key((token, y)), slot });
                }
            }
        });
    }
}

/// The floor and the heap of a loop whose index is `pairs`: the pairs counted at least half the
/// most counted one (the floor then lets the others in when needed).
fn first_heap(pairs: &PairIndex) -> (u64, OctonaryHeap<Candidate>) {
    let floor = pairs.counted_between(0, u64::MAX).map(|(count, _, _)| count).max().unwrap_or(0) / 2;
    let heap = pairs.counted_between(floor, u64::MAX).map(|(count, pair, slot)| Candidate { count, pair, slot }).collect::<Vec<_>>().into();
    (floor, heap)
}

/// `list`, the spans that may hold a pair, which is written once in span order and so is
/// increasing; else (a bug) sorted without repeats. The merge relies on it: a span listed twice
/// would be merged twice.
fn increasing(list: &mut Vec<u32>) -> &[u32] {
    if !list.windows(2).all(|w| w[0] < w[1]) {
        list.sort_unstable();
        list.dedup();
    }
    list
}

/// The error for distinct spans that need `words` words in the span table, past its reach.
pub(super) fn too_many_words(words: usize) -> Error {
    Error::InvalidOption(format!("the distinct spans need {words} words of token ids, more than the 2^34 supported"))
}

/// Runs the merge loop. `on_merge` is called after every merge with the merge and the
/// vocabulary so far; returning `ControlFlow::Break` stops the loop early (the result then holds
/// the merges made so far). Setting `stop` before the first merge makes it give up soon with
/// [`Error::Interrupted`] (getting to the first merge takes seconds for tens of millions of
/// spans), and so does setting it while the pair index takes back the pairs it left out (a
/// pass over the spans, in a run that comes to merge pairs counted once); otherwise `on_merge`
/// is the way to stop.
///
/// Its parallel parts run on the current Rayon pool (call it inside `ThreadPool::install` to
/// choose the threads) and, when that pool has two threads or more, on a second thread of its
/// own for the duration of the loop.
///
/// `spans` may be owned, and is then freed once the loop's own table of them is built (before
/// the pair index, the loop's largest part), or borrowed (as counts a caller keeps), and is then
/// never copied.
///
/// Fails only on inputs past the loop's integer widths: a pair count that could pass 2^63,
/// more than 2^31-1 spans, more than 2^32-1 bytes in a span, or distinct spans that need more
/// than 2^34 words of token ids (with their headers) in the span table.
pub fn learn<'a>(
    spans: impl Into<Cow<'a, Spans>>,
    options: &LearnOptions,
    stop: &AtomicBool,
    on_merge: impl FnMut(&Merge, &Vocab) -> ControlFlow<()>,
) -> Result<Learned, Error> {
    let spans = spans.into();
    check_total(&spans)?;
    let alphabet = Alphabet::of(&options.alphabet, &spans);
    let (spans, vocab) = if alphabet.is_identity() {
        (spans, Vocab::bytes())
    } else {
        // The spans in the alphabet's ids: a copy (the original freed here if owned).
        (Cow::Owned(alphabet.relabel(&spans)), alphabet.vocab())
    };
    // The loop's vocabulary holds all 256 single bytes, so it stops at as many merges as the
    // alphabet leaves room for (none if the alphabet alone fills the vocabulary).
    let options = &LearnOptions { vocab_size: 256 + options.vocab_size.saturating_sub(alphabet.len()), ..options.clone() };
    let learned = if options.vocab_size <= 256 {
        Ok(Learned { vocab, merges: Vec::new(), alphabet: 256 }) // no merge to make (the alphabet is set below)
    } else if options.vocab_size <= 1 << 16 {
        // Token ids are below vocab_size: 2^16 of them fit in a u16.
        run(Loop::<u16>::new(spans, stop)?, vocab, options, stop, on_merge)
    } else {
        run(Loop::<u32>::new(spans, stop)?, vocab, options, stop, on_merge)
    };
    learned.map(|learned| Learned { alphabet: alphabet.len(), ..learned })
}

/// The merge loop from `state`, whose tokens are `vocab`, until the vocabulary is full, the best
/// pair (of those that make a token within the options' limits, see [`LearnOptions::allows`]) is counted less
/// than `options.min_frequency`, no pair is left, or `on_merge` breaks; or until `stop` is set
/// while the pair index takes back the pairs it left out ([`Error::Interrupted`]).
fn run<T: TokenId>(
    mut state: Loop<T>,
    mut vocab: Vocab,
    options: &LearnOptions,
    stop: &AtomicBool,
    mut on_merge: impl FnMut(&Merge, &Vocab) -> ControlFlow<()>,
) -> Result<Learned, Error> {
    let mut merges = Vec::new();
    state.leave_out_rare_pairs(options.min_frequency);
    while vocab.len() < options.vocab_size {
        let fits = |(a, b): Pair| options.allows(vocab.token(a), vocab.token(b));
        let Some(best) = state.best(fits, vocab.len() as u32, stop)? else { break };
        let (pair, count) = (unkey(best.pair), best.count);
        if count < options.min_frequency {
            break;
        }
        let token = vocab.try_push_merge(pair.0, pair.1)?;
        state.apply(&best, token);
        state.raise_floor(count);
        let merge = Merge { pair, token, count };
        merges.push(merge);
        if on_merge(&merge, &vocab).is_break() {
            break;
        }
    }
    if let Some((earlier, later)) = vocab.first_repeat() {
        return Err(Error::Internal(format!("tokens {earlier} and {later} have the same bytes, which the merge rule rules out")));
    }
    let alphabet = vocab.len() - merges.len();
    Ok(Learned { vocab, merges, alphabet })
}

/// Whether `byte` continues a UTF-8 character (`0b10xxxxxx`).
fn continues(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The characters of a token: the UTF-8 characters its bytes start, a first byte that continues
/// a character (the rest of one begun in another token) counting as one more.
pub fn chars(token: &[u8]) -> usize {
    let started = token.iter().filter(|&&b| !continues(b)).count();
    started + usize::from(token.first().is_some_and(|&b| continues(b)))
}

/// The characters of the token `left + right` (see [`chars`]): `right`'s first bytes, if they
/// continue a character, continue `left`'s last.
fn joined_chars(left: &[u8], right: &[u8]) -> usize {
    if left.is_empty() {
        return chars(right);
    }
    chars(left) + right.iter().filter(|&&b| !continues(b)).count()
}

/// Pair counts are signed 64-bit (updates are ±span count) and span ids and lengths 32-bit;
/// refuse inputs that could overflow them.
fn check_total(spans: &Spans) -> Result<(), Error> {
    // Span lengths are u32 in the merge loop, and so are the lengths of the pairs' span lists,
    // which hold a span at most twice (a pair's spans are added when the pair starts to
    // exist, at the merge that made its first or its second token).
    if spans.len() > i32::MAX as usize {
        return Err(Error::InvalidOption(format!("{} distinct spans, more than the 2^31-1 supported", spans.len())));
    }
    if let Some((bytes, _)) = spans.iter().find(|(b, _)| b.len() > u32::MAX as usize) {
        return Err(Error::InvalidOption(format!("a span of {} bytes, more than the 2^32-1 supported", bytes.len())));
    }
    let mut total: u128 = 0;
    for (bytes, n) in spans.iter() {
        total += u128::from(n) * bytes.len().saturating_sub(1) as u128;
    }
    if total > i64::MAX as u128 {
        return Err(Error::InvalidOption(format!(
            "the span counts sum to {total} adjacent pairs, more than the 2^63-1 a pair count can hold"
        )));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The specification, run naively: recount every pair before every merge.
    pub(crate) fn naive(spans: &[(Vec<u8>, u64)], vocab_size: usize) -> Vec<Merge> {
        naive_limited(spans, vocab_size, usize::MAX)
    }

    /// [`naive`], choosing only among pairs whose token has at most `max_length` bytes.
    fn naive_limited(spans: &[(Vec<u8>, u64)], vocab_size: usize, max_length: usize) -> Vec<Merge> {
        let words = spans.iter().map(|(b, n)| (b.iter().map(|&x| x as u32).collect(), *n)).collect();
        naive_from(words, Vocab::bytes(), vocab_size, max_length)
    }

    /// The specification from `words` (spans as tokens of `vocab`, with their counts): recount
    /// every pair before every merge, merge the most counted (the smallest among equals) of
    /// those making a token of at most `max_length` bytes, until `vocab_size` tokens.
    pub(crate) fn naive_from(words: Vec<(Vec<u32>, u64)>, vocab: Vocab, vocab_size: usize, max_length: usize) -> Vec<Merge> {
        naive_allowing(words, vocab, vocab_size, |a, b| a.len() + b.len() <= max_length)
    }

    /// [`naive_from`], choosing only among pairs whose tokens `allows`.
    fn naive_allowing(mut words: Vec<(Vec<u32>, u64)>, mut vocab: Vocab, vocab_size: usize, allows: impl Fn(&[u8], &[u8]) -> bool) -> Vec<Merge> {
        let mut merges = Vec::new();
        while vocab.len() < vocab_size {
            let mut counts: BTreeMap<Pair, u64> = BTreeMap::new();
            for (w, n) in &words {
                for p in w.windows(2) {
                    *counts.entry((p[0], p[1])).or_default() += n;
                }
            }
            counts.retain(|&(a, b), _| allows(vocab.token(a), vocab.token(b)));
            // max count, then smallest pair: BTreeMap iterates pairs ascending, keep the first max.
            let Some((&pair, &count)) = counts.iter().rev().max_by_key(|(_, &c)| c) else { break };
            let token = vocab.push_merge(pair.0, pair.1);
            for (w, _) in &mut words {
                let len = merge_in_span(w, pair, token, |_| {});
                w.truncate(len);
            }
            merges.push(Merge { pair, token, count });
        }
        merges
    }

    fn pair_counts(words: &[Vec<u32>]) -> BTreeMap<Pair, i64> {
        let mut c = BTreeMap::new();
        for w in words {
            for p in w.windows(2) {
                *c.entry((p[0], p[1])).or_default() += 1;
            }
        }
        c
    }

    fn learn_all(spans: &[(Vec<u8>, u64)], vocab_size: usize) -> Vec<Merge> {
        let spans: Spans = spans.iter().map(|(b, n)| (b.clone().into_boxed_slice(), *n)).collect();
        let options = LearnOptions { vocab_size, min_frequency: 1, max_token_length: None, ..Default::default() };
        learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap().merges
    }

    /// A random corpus of `seed` (see [`crate::test_random`]).
    fn corpus(seed: u64) -> Vec<(Vec<u8>, u64)> {
        let mut next = crate::test_random(seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
        let alphabet = b"aab ";
        (0..1 + next(30))
            .map(|_| {
                let len = 1 + next(12) as usize;
                let span = (0..len).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect();
                (span, 1 + next(5))
            })
            .collect()
    }

    #[test]
    fn deltas_match_a_recount() {
        for seed in 0..500 {
            for (span, _) in corpus(seed) {
                let mut word: Vec<u32> = span.iter().map(|&b| b as u32).collect();
                let before = pair_counts(&[word.clone()]);
                let mut expected = before.clone();
                let (a, b, c) = (b'a' as u32, b'a' as u32, 999);
                let old_len = word.len();
                let len = merge_in_span(&mut word, (a, b), c, |side| {
                    let (gone, new) = match side {
                        Neighbour::Left(x) => ((x, a), (x, c)),
                        Neighbour::Right(y) => ((b, y), (c, y)),
                    };
                    *expected.entry(gone).or_default() -= 1;
                    *expected.entry(new).or_default() += 1;
                });
                word.truncate(len);
                // Each replaced occurrence shortens the span by one.
                *expected.entry((a, b)).or_default() -= (old_len - len) as i64;
                expected.retain(|_, c| *c != 0);
                assert_eq!(expected, pair_counts(&[word]), "{span:?}");
            }
        }
    }

    #[test]
    fn merges_equal_the_naive_loop() {
        for seed in 0..300 {
            let spans = corpus(seed);
            // Past 2^16 the span table holds u32 token ids instead of u16 (these corpora run out
            // of pairs long before).
            for vocab_size in [256, 260, 300, 70_000] {
                assert_eq!(learn_all(&spans, vocab_size), naive(&spans, vocab_size), "seed {seed}");
            }
        }
    }

    #[test]
    fn parallel_merges_equal_the_naive_loop() {
        // Enough distinct spans that the first merges take the parallel paths: on one thread
        // there is none, on two the other thread takes half of each merge of SHARED_SPANS spans
        // or more, on four the pool takes merges of PARALLEL_SPANS spans in blocks. Every 13th
        // span is one byte, which the span table leaves out (in each of the groups it is built
        // in, on two threads or more).
        let spans: Vec<(Vec<u8>, u64)> = (0..3 * span_table::PARALLEL_SPANS as u64)
            .map(|i| if i % 13 == 5 { (vec![b'a' + (i % 3) as u8], 2) } else { (format!("ab{}a{}", i % 97, i).into_bytes(), 1 + i % 3) })
            .collect();
        assert!(spans.len() > span_table::SPANS_PER_TASK, "spans must cover several parallel blocks");
        let want = naive(&spans, 290);
        assert!(want.len() > 20, "the test must make merges of many spans and of few");
        for threads in [1, 2, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            assert_eq!(pool.install(|| learn_all(&spans, 290)), want, "{threads} threads");
        }
    }

    #[test]
    fn u16_and_u32_token_ids_learn_the_same_up_to_the_last_16_bit_id() {
        // Random spans with room for every merge up to 2^16 tokens, so that the largest 16-bit
        // ids are made, and merged again, in the u16 table.
        let mut state = 11u64;
        let spans: Spans = (0..8000u64)
            .map(|i| {
                let span: Vec<u8> = (0..32)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        b'0' + (state >> 58) as u8
                    })
                    .collect();
                (span, 1 + i % 5)
            })
            .collect();
        let options = LearnOptions { vocab_size: 1 << 16, min_frequency: 1, max_token_length: None, ..Default::default() };
        let small = run(Loop::<u16>::new(spans.clone(), &AtomicBool::new(false)).unwrap(), Vocab::bytes(), &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap();
        let big = run(Loop::<u32>::new(spans, &AtomicBool::new(false)).unwrap(), Vocab::bytes(), &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap();
        assert_eq!(small.merges.len(), (1 << 16) - 256);
        assert!(small.merges.iter().any(|m| m.pair.0 > 65_000 || m.pair.1 > 65_000), "late ids are merged again");
        assert_eq!(small.merges, big.merges);
    }

    #[test]
    fn max_token_length_merges_equal_the_naive_loop() {
        let learn_limited = |spans: &[(Vec<u8>, u64)], vocab_size, max_token_length| {
            let spans: Spans = spans.iter().map(|(b, n)| (b.clone().into_boxed_slice(), *n)).collect();
            let options = LearnOptions { vocab_size, min_frequency: 1, max_token_length: Some(max_token_length), ..Default::default() };
            learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap().merges
        };
        let mut limited = 0;
        for seed in 0..300 {
            let spans = corpus(seed);
            for max in [1, 2, 3, 5] {
                let want = naive_limited(&spans, 300, max);
                limited += usize::from(want != naive(&spans, 300));
                assert_eq!(learn_limited(&spans, 300, max), want, "seed {seed}, max {max}");
            }
        }
        assert!(limited > 300, "the limit must change the merges of many corpora");
    }

    #[test]
    fn max_token_words_merges_equal_the_naive_loop() {
        // Words are runs of bytes other than the space: spans of a few short words and spaces.
        let count_words = |t: &[u8]| t.split(|&b| b == b' ').filter(|w| !w.is_empty()).count();
        let mut next = crate::test_random(5);
        let mut limited = 0;
        for seed in 0..200 {
            let spans: Vec<(Vec<u8>, u64)> = (0..12)
                .map(|_| ((0..2 + next(14)).map(|_| [b'a', b'b', b' '][next(3) as usize]).collect(), 1 + next(5)))
                .collect();
            for max in [1, 2, 3] {
                let words = spans.iter().map(|(b, n)| (b.iter().map(|&x| x as u32).collect(), *n)).collect();
                let want = naive_allowing(words, Vocab::bytes(), 300, |a, b| count_words(&[a, b].concat()) <= max);
                limited += usize::from(want != naive(&spans, 300));
                let options = LearnOptions { vocab_size: 300, max_token_words: Some(max), ..Default::default() };
                let spans_owned: Spans = spans.iter().map(|(b, n)| (b.clone().into_boxed_slice(), *n)).collect();
                let got = learn(spans_owned, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap().merges;
                assert_eq!(got, want, "seed {seed}, max {max}");
            }
        }
        assert!(limited > 200, "the limit must change the merges of many corpora: {limited}");
    }

    #[test]
    fn max_token_chars_counts_utf8_characters() {
        assert_eq!((chars(b"abc"), chars("日本".as_bytes()), chars(&[0x97, 0xA5]), chars(&[0xE6, 0x97])), (3, 2, 1, 1));
        assert_eq!(joined_chars(&[0xE6, 0x97], &[0xA5, b'a']), 2); // the character 日 split across the two
        let learn_chars = |spans: &[(Vec<u8>, u64)], max_token_chars| {
            let spans: Spans = spans.iter().map(|(b, n)| (b.clone().into_boxed_slice(), *n)).collect();
            let options = LearnOptions { vocab_size: 400, max_token_chars: Some(max_token_chars), ..Default::default() };
            learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap()
        };
        // On ASCII, characters are bytes: the limit is max_token_length's.
        for seed in 0..100 {
            let spans = corpus(seed);
            for max in [1, 2, 3, 5] {
                assert_eq!(learn_chars(&spans, max).merges, naive_limited(&spans, 400, max), "seed {seed}, max {max}");
            }
        }
        // On CJK text, a token of 2 characters holds up to 6 bytes, and none holds 3 characters.
        let text = "日本語の文章を日本語で書く。東京と京都、日本の都。".repeat(3);
        let spans: Vec<(Vec<u8>, u64)> = text.split('、').map(|s| (s.as_bytes().to_vec(), 2)).collect();
        let learned = learn_chars(&spans, 2);
        let longest = learned.vocab.tokens().map(|t| (chars(t), t.len())).max().unwrap();
        assert_eq!(longest, (2, 6));
    }

    #[test]
    fn overlapping_runs_merge_left_to_right() {
        let merges = learn_all(&[(b"aaaaa".to_vec(), 1)], 258);
        assert_eq!(merges[0], Merge { pair: (97, 97), token: 256, count: 4 });
        // "aaaaa" -> [aa, aa, a]: (aa, aa) and (aa, a) once each; the smaller pair wins.
        assert_eq!(merges[1], Merge { pair: (256, 97), token: 257, count: 1 });
    }

    #[test]
    fn spans_longer_than_16_bits_keep_their_length() {
        // A span's length is stored in two 16-bit words of the span table when ids are u16.
        let long: Vec<u8> = b"abcab".iter().cycle().take(70_001).copied().collect();
        let spans = vec![(long, 3), (b"ca".to_vec(), 1 << 40)];
        assert_eq!(learn_all(&spans, 262), naive(&spans, 262));
    }

    #[test]
    fn spans_around_the_headers_longest_length_merge_as_the_others() {
        // A header holds lengths below 255 tokens; longer spans keep theirs after it, also
        // once merges have made them shorter than that (see span_table.rs). Random spans of lengths
        // around it, beside short ones, on u16 and u32 ids, merged far enough to shorten them.
        let mut next = crate::test_random(11);
        for corpus in 0..40 {
            let spans: Vec<(Vec<u8>, u64)> = (0..30)
                .map(|i| {
                    let len = if i % 3 == 0 { 250 + next(12) as usize } else { 2 + next(8) as usize };
                    ((0..len).map(|_| b'a' + next(3 + corpus % 4) as u8).collect(), 1 + next(4))
                })
                .collect();
            let want = naive(&spans, 300);
            assert_eq!(learn_all(&spans, 300), want, "corpus {corpus}");
            let table: Spans = spans.iter().map(|(b, n)| (b.clone().into_boxed_slice(), *n)).collect();
            let options = LearnOptions { vocab_size: 300, min_frequency: 1, max_token_length: None, ..Default::default() };
            let wide = run(Loop::<u32>::new(table, &AtomicBool::new(false)).unwrap(), Vocab::bytes(), &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap();
            assert_eq!(wide.merges, want, "corpus {corpus}, u32 ids");
        }
    }

    #[test]
    fn counts_beyond_32_bits_are_exact() {
        let big = 3_000_000_000u64;
        let merges = learn_all(&[(b"ab".to_vec(), big), (b"abab".to_vec(), big)], 257);
        assert_eq!(merges[0].count, 3 * big);
    }

    #[test]
    fn counts_around_the_headers_24_bits_are_exact() {
        // A span's header holds 24 bits of its count, larger counts being listed apart (see
        // span_table.rs): counts just below, at and past that, and past 32 bits, in spans spread
        // over the groups the table is built in, on one thread and two.
        let around = [(1 << 24) - 2, (1 << 24) - 1, 1 << 24, u64::from(u32::MAX), 1 << 40];
        let spans: Vec<(Vec<u8>, u64)> = (0..12_000u64)
            .map(|i| (format!("ab{}a{}", i % 89, i).into_bytes(), if i % 97 == 3 { around[(i / 97 % 5) as usize] } else { 1 + i % 5 }))
            .collect();
        let want = naive(&spans, 275);
        assert!(want.iter().any(|m| m.count > 1 << 40), "big counts must be merged");
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            assert_eq!(pool.install(|| learn_all(&spans, 275)), want, "{threads} threads");
        }
    }

    #[test]
    fn no_spans_learn_nothing() {
        for spans in [vec![], vec![(b"a".to_vec(), 5)]] {
            assert_eq!(learn_all(&spans, 1000), vec![]);
        }
    }

    #[test]
    fn pairs_left_out_are_taken_back_before_a_pair_counted_once_is_merged() {
        // Spans counted once or twice, merged until no pair is left: pairs born counted once
        // are left out of the index until the best pair is counted once, and then every pair
        // is taken back. With min_frequency 2 they are never needed: the merges are the
        // naive loop's counted twice or more (a prefix, as the best count never rises).
        let mut merged_once = 0;
        for seed in 0..200 {
            let mut next = crate::test_random(seed + 11);
            let spans: Vec<(Vec<u8>, u64)> =
                (0..1 + next(40)).map(|_| ((0..2 + next(10)).map(|_| b"abcde"[next(5) as usize]).collect(), 1 + next(4) / 3)).collect();
            let want = naive(&spans, 70_000);
            assert_eq!(learn_all(&spans, 70_000), want, "seed {seed}");
            merged_once += want.iter().filter(|m| m.count == 1).count();
            let options = LearnOptions { vocab_size: 70_000, min_frequency: 2, max_token_length: None, ..Default::default() };
            let owned: Spans = spans.iter().map(|(b, n)| (b.as_slice(), *n)).collect();
            let learned = learn(owned, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap();
            let counted_twice: Vec<Merge> = want.iter().copied().take_while(|m| m.count >= 2).collect();
            assert_eq!(learned.merges, counted_twice, "seed {seed}");
        }
        assert!(merged_once > 1000, "the corpora must merge pairs counted once: {merged_once}");
    }

    #[test]
    fn a_stop_set_before_the_pairs_left_out_are_taken_back_gives_up() {
        // Distinct spans counted once: the pairs born are left out, and taken back (a pass over
        // the spans) once the best pair is counted once, which a stop set before gives up.
        let spans: Spans = (0..200u32).map(|i| (format!("x{i:03}yz{}", i * 7 % 13), 1)).map(|(s, n)| (s.into_bytes().into_boxed_slice(), n)).collect();
        let options = LearnOptions { vocab_size: 70_000, min_frequency: 1, max_token_length: None, ..Default::default() };
        let stop = AtomicBool::new(false);
        let mut before_stop = 0;
        let result = learn(&spans, &options, &stop, |merge, _| {
            if merge.count == 2 || stop.load(std::sync::atomic::Ordering::Relaxed) {
                stop.store(true, std::sync::atomic::Ordering::Relaxed); // as Ctrl-C sets it
                before_stop += 1;
            }
            ControlFlow::Continue(())
        });
        assert!(matches!(result, Err(Error::Interrupted)), "{:?}", result.map(|l| l.merges.len()));
        assert!(before_stop > 0);
        // Not stopped, the same run merges pairs counted once, exactly.
        let corpus: Vec<(Vec<u8>, u64)> = spans.iter().map(|(b, n)| (b.to_vec(), n)).collect();
        let learned = learn(&spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap();
        assert_eq!(learned.merges, naive(&corpus, 70_000));
        assert!(learned.merges.iter().any(|m| m.count == 1));
    }

    #[test]
    fn min_frequency_stops_early() {
        let spans: Spans = [(b"ab", 3), (b"cd", 2)].into_iter().collect();
        let options = LearnOptions { vocab_size: 1000, min_frequency: 3, max_token_length: None, ..Default::default() };
        let learned = learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap();
        assert_eq!(learned.merges.len(), 1);
    }

    #[test]
    fn a_stop_set_before_the_first_merge_gives_up() {
        let spans: Spans = [(&b"abab"[..], 3), (b"abc", 2)].into_iter().collect();
        let options = LearnOptions { vocab_size: 300, min_frequency: 1, max_token_length: None, ..Default::default() };
        let mut merges = 0;
        let stopped = learn(spans.clone(), &options, &AtomicBool::new(true), |_, _| {
            merges += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(stopped.err(), Some(Error::Interrupted));
        assert_eq!(merges, 0);
        assert_eq!(learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap().merges.len(), 3);
    }

    #[test]
    fn overflowing_totals_are_refused() {
        let spans: Spans = [(b"abc", u64::MAX / 2)].into_iter().collect();
        let options = LearnOptions { vocab_size: 300, min_frequency: 1, max_token_length: None, ..Default::default() };
        assert!(learn(spans, &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).is_err());
    }
}
