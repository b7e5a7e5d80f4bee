//! Parity-aware merging (Foroutan et al., "Parity-Aware Byte-Pair Encoding", arXiv 2508.04796),
//! with the rules of HuggingFace `tokenizers`' `ParityBpeTrainer` (0.23).
//!
//! Each language has its own spans and counts. Every merge is made for one language: the one
//! compressed worst so far, measured on its dev spans if there are any (its length in tokens),
//! else against a target ratio (its compression rate, the bytes per token of its training
//! spans, over its ratio: the lowest is the worst), else on its training spans (its length).
//! The merge is that language's most counted pair, and it is applied to every language's spans.
//! The `Window` selection passes over a language chosen more than `alpha / languages` of the
//! last `size` merges, for the next worst. The first `global_merges` merges are plain BPE on the
//! counts of all languages summed. A language whose best pair is counted less than
//! `min_frequency` (or that has no pair left) is exhausted: it is never chosen again by the
//! base rule, and training ends when every language is.
//!
//! Among pairs of equal counts, HuggingFace's rule takes the greatest by the spellings of its
//! tokens in GPT-2's byte-level characters (left token first), Python's `max(stats, key=lambda
//! x: (stats[x], x))` in the paper's code; bpeforge's own rule takes the smallest pair by ids,
//! as its plain training does (so a training that is all global merges is plain BPE).
//!
//! The loop keeps, per pair, its count in each language and the spans that may hold it, and one
//! max-heap per language (and one of the summed counts for the global merges) with lazy refresh:
//! an entry whose count is stale is pushed again with the current count. Spans are shared by the
//! languages that hold them, each with its count in each. A language's selection where
//! HuggingFace's code would loop forever (every language its window allows is exhausted) takes
//! the worst-compressed language that is not.

use std::cmp::{Ordering, Reverse};
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;

use dary_heap::OctonaryHeap;
use rustc_hash::FxHashMap;

use super::alphabet::byte_level_order;
use super::span_table::{merge_in_span, Neighbour};
use super::start::check_stop;
use super::{key, Alphabet, Learned, LearnOptions, Merge, Pair};
use crate::count::Spans;
use crate::{Error, Vocab};

/// How the language of each merge is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Selection {
    /// The language compressed worst.
    Base,
    /// The language compressed worst among those chosen at most `alpha / languages` of the last
    /// `size` merges (HuggingFace's `window` variant, `window_size` and `alpha`).
    Window { size: usize, alpha: f64 },
}

/// How pairs of equal counts are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParityTies {
    /// The smallest pair by ids wins (bpeforge's rule).
    SmallestIds,
    /// The greatest pair by its tokens' spellings in GPT-2's byte-level characters wins
    /// (`ParityBpeTrainer`'s rule).
    GreatestSpelling,
}

/// What parity-aware merging adds to [`LearnOptions`].
#[derive(Debug, Clone, PartialEq)]
pub struct ParityOptions {
    pub selection: Selection,
    /// The first merges made on the counts of all languages summed (plain BPE).
    pub global_merges: usize,
    /// Each language's target compression rate, used when there are no dev spans: only their
    /// ratios to each other matter.
    pub ratio: Option<Vec<f64>>,
    pub ties: ParityTies,
}

/// What parity-aware merging gives back: the merges, and how each language fared.
#[derive(Debug, Clone)]
pub struct ParityLearned {
    pub learned: Learned,
    /// The language each merge was made for, `None` for a global merge.
    pub chosen: Vec<Option<u32>>,
    /// Each language's measured length in tokens (its dev spans', else its training spans'):
    /// before the first merge (which is its bytes, those of the alphabet), then after each
    /// merge, `languages` numbers each.
    pub lengths: Vec<i64>,
    /// Whether `lengths` measure the dev spans.
    pub on_dev: bool,
    /// For each language, the number of merges made when it was found exhausted (its best pair
    /// counted less than `min_frequency`, or none left), if it was.
    pub exhausted: Vec<Option<u32>>,
}

/// Spans shared by the languages: each span's tokens, and its count in each language holding it.
#[derive(Default)]
struct LanguageSpans {
    tokens: Vec<u32>,
    start: Vec<usize>,
    len: Vec<u32>,
    /// `(language, count)` of span `i`: `counts[count_start[i]..count_start[i + 1]]`.
    counts: Vec<(u32, i64)>,
    count_start: Vec<usize>,
}

impl LanguageSpans {
    /// The spans of each language of `languages` in the alphabet's ids (`ids`): a span with a
    /// byte outside it loses the byte, or is left out if `drop_outside` (HuggingFace's dev
    /// words); empty spans and spans counted 0 are left out. Returns them and each language's
    /// length (its tokens, all single bytes).
    fn new(languages: &[&Spans], ids: &[Option<u8>; 256], drop_outside: bool) -> Result<(Self, Vec<i64>), Error> {
        // Spans are still single bytes here: keyed by their ids as bytes.
        let mut found: FxHashMap<Vec<u8>, usize> = FxHashMap::default();
        let mut per_span: Vec<Vec<(u32, i64)>> = Vec::new();
        let mut spans = LanguageSpans::default();
        let mut lengths = vec![0i64; languages.len()];
        let mut tokens = Vec::new();
        for (language, spans_of) in languages.iter().enumerate() {
            for (bytes, n) in spans_of.iter() {
                if n == 0 {
                    continue;
                }
                tokens.clear();
                let mut outside = false;
                for &b in bytes {
                    match ids[b as usize] {
                        Some(id) => tokens.push(id),
                        None => outside = true,
                    }
                }
                if tokens.is_empty() || (outside && drop_outside) {
                    continue;
                }
                let n = i64::try_from(n).map_err(|_| too_large())?;
                lengths[language] = (tokens.len() as i64).checked_mul(n).and_then(|l| l.checked_add(lengths[language])).ok_or_else(too_large)?;
                let i = *found.entry(tokens.clone()).or_insert_with(|| {
                    spans.start.push(spans.tokens.len());
                    spans.len.push(tokens.len() as u32);
                    spans.tokens.extend(tokens.iter().map(|&id| u32::from(id)));
                    per_span.push(Vec::new());
                    per_span.len() - 1
                });
                match per_span[i].last_mut() {
                    Some((l, count)) if *l == language as u32 => *count = count.checked_add(n).ok_or_else(too_large)?,
                    _ => per_span[i].push((language as u32, n)),
                }
            }
        }
        if spans.start.len() > u32::MAX as usize {
            return Err(Error::InvalidOption(format!("{} distinct spans, more than the 2^32-1 supported", spans.start.len())));
        }
        for counts in per_span {
            spans.count_start.push(spans.counts.len());
            spans.counts.extend(counts);
        }
        spans.count_start.push(spans.counts.len());
        Ok((spans, lengths))
    }

    fn len(&self) -> usize {
        self.start.len()
    }

    fn tokens(&self, i: usize) -> &[u32] {
        &self.tokens[self.start[i]..self.start[i] + self.len[i] as usize]
    }

    fn counts(&self, i: usize) -> &[(u32, i64)] {
        &self.counts[self.count_start[i]..self.count_start[i + 1]]
    }

    /// Replaces `pair` by `token` in span `i` (left to right, non-overlapping), calling
    /// `on_neighbour` for each neighbour of a replaced occurrence; returns how much shorter it is.
    fn merge(&mut self, i: usize, pair: Pair, token: u32, on_neighbour: impl FnMut(Neighbour)) -> usize {
        let (start, len) = (self.start[i], self.len[i] as usize);
        let merged = merge_in_span(&mut self.tokens[start..start + len], pair, token, on_neighbour);
        self.len[i] = merged as u32;
        len - merged
    }
}

fn too_large() -> Error {
    Error::InvalidOption("the span counts of a language sum to more than 2^63-1 tokens".into())
}

/// The order of pairs of equal counts: the greater key wins.
trait TieKey: Ord {
    fn of(pair: Pair, spellings: &[Rc<[u8]>]) -> Self;
}

impl TieKey for Reverse<u64> {
    fn of(pair: Pair, _: &[Rc<[u8]>]) -> Self {
        Reverse(key(pair))
    }
}

impl TieKey for (Rc<[u8]>, Rc<[u8]>) {
    fn of(pair: Pair, spellings: &[Rc<[u8]>]) -> Self {
        (Rc::clone(&spellings[pair.0 as usize]), Rc::clone(&spellings[pair.1 as usize]))
    }
}

/// A pair in a heap, with its count when it was pushed.
struct Entry<K> {
    count: u64,
    key: K,
    slot: u32,
}

impl<K: Ord> Ord for Entry<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.count.cmp(&other.count).then_with(|| self.key.cmp(&other.key))
    }
}

impl<K: Ord> PartialOrd for Entry<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord> PartialEq for Entry<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K: Ord> Eq for Entry<K> {}

/// Every pair that may be merged: its count in each language, and the spans that may hold it.
struct Pairs {
    languages: usize,
    slot_of: FxHashMap<u64, u32>,
    pairs: Vec<Pair>,
    /// `counts[slot * languages + language]`.
    counts: Vec<i64>,
    /// The counts of all languages summed (kept for the global merges).
    totals: Vec<i64>,
    spans: Vec<Vec<u32>>,
    /// The merge at which `(slot, language)` last changed, to push it once.
    changed_at: Vec<u32>,
    total_changed_at: Vec<u32>,
    /// What changed in this merge: `(slot, language)`, and the slots.
    changed: Vec<(u32, u32)>,
    totals_changed: Vec<u32>,
}

impl Pairs {
    fn new(languages: usize) -> Self {
        Pairs {
            languages,
            slot_of: FxHashMap::default(),
            pairs: Vec::new(),
            counts: Vec::new(),
            totals: Vec::new(),
            spans: Vec::new(),
            changed_at: Vec::new(),
            total_changed_at: Vec::new(),
            changed: Vec::new(),
            totals_changed: Vec::new(),
        }
    }

    fn slot(&mut self, pair: Pair) -> u32 {
        let next = self.pairs.len() as u32;
        let slot = *self.slot_of.entry(key(pair)).or_insert(next);
        if slot == next {
            self.pairs.push(pair);
            self.counts.extend(std::iter::repeat_n(0, self.languages));
            self.totals.push(0);
            self.spans.push(Vec::new());
            self.changed_at.extend(std::iter::repeat_n(u32::MAX, self.languages));
            self.total_changed_at.push(u32::MAX);
        }
        slot
    }

    /// Adds `sign` occurrences of the pair at `slot` in span `span`, counted `counts` in each of
    /// its languages, at merge `step`.
    fn add(&mut self, slot: u32, sign: i64, span: u32, counts: &[(u32, i64)], step: u32) {
        let s = slot as usize;
        for &(language, n) in counts {
            let at = s * self.languages + language as usize;
            self.counts[at] += sign * n;
            self.totals[s] += sign * n;
            if self.changed_at[at] != step {
                self.changed_at[at] = step;
                self.changed.push((slot, language));
            }
        }
        if self.total_changed_at[s] != step {
            self.total_changed_at[s] = step;
            self.totals_changed.push(slot);
        }
        if sign > 0 && self.spans[s].last() != Some(&span) {
            self.spans[s].push(span);
        }
    }

    fn count(&self, slot: u32, language: usize) -> i64 {
        self.counts[slot as usize * self.languages + language]
    }
}

/// The dev spans: each language's length in tokens as the merges go.
struct Dev {
    spans: LanguageSpans,
    /// The dev spans that may hold each pair.
    index: FxHashMap<u64, Vec<u32>>,
    lengths: Vec<i64>,
}

impl Dev {
    fn new(spans: LanguageSpans, lengths: Vec<i64>) -> Self {
        let mut index: FxHashMap<u64, Vec<u32>> = FxHashMap::default();
        for i in 0..spans.len() {
            for w in spans.tokens(i).windows(2) {
                let list = index.entry(key((w[0], w[1]))).or_default();
                if list.last() != Some(&(i as u32)) {
                    list.push(i as u32);
                }
            }
        }
        Dev { spans, index, lengths }
    }

    /// Replaces `pair` by `token` in every dev span (all occurrences: no limit on tokens here).
    fn merge(&mut self, pair: Pair, token: u32) {
        let Some(list) = self.index.remove(&key(pair)) else { return };
        let mut born: Vec<Pair> = Vec::new();
        for &i in &list {
            born.clear();
            let shorter = self.spans.merge(i as usize, pair, token, |side| {
                born.push(match side {
                    Neighbour::Left(x) => (x, token),
                    Neighbour::Right(y) => (token, y),
                })
            });
            if shorter == 0 {
                continue;
            }
            for &(language, n) in self.spans.counts(i as usize) {
                self.lengths[language as usize] -= shorter as i64 * n;
            }
            for &p in &born {
                let list = self.index.entry(key(p)).or_default();
                if list.last() != Some(&i) {
                    list.push(i);
                }
            }
        }
    }
}

/// Checks the options for `languages` languages.
fn check(languages: usize, dev: Option<usize>, parity: &ParityOptions) -> Result<(), Error> {
    if languages == 0 {
        return Err(Error::InvalidOption("parity-aware training needs the spans of at least one language".into()));
    }
    if let Some(dev) = dev.filter(|&d| d != languages) {
        return Err(Error::InvalidOption(format!("{dev} dev sets for {languages} languages: give one per language")));
    }
    if let Some(ratio) = &parity.ratio {
        if ratio.len() != languages {
            return Err(Error::InvalidOption(format!("{} ratios for {languages} languages: give one per language", ratio.len())));
        }
        if let Some((i, r)) = ratio.iter().enumerate().find(|(_, r)| !(r.is_finite() && **r > 0.0)) {
            return Err(Error::InvalidOption(format!("ratio {i} must be a positive finite number, got {r}")));
        }
    }
    if let Selection::Window { size, alpha } = parity.selection {
        if size == 0 {
            return Err(Error::InvalidOption("the window's size must be at least 1".into()));
        }
        if !(alpha.is_finite() && alpha > 0.0) {
            return Err(Error::InvalidOption(format!("the window's alpha must be a positive finite number, got {alpha}")));
        }
    }
    Ok(())
}

/// Learns merges from each language's spans (`train`) for parity (see the module's comment):
/// measured on `dev` (one set of spans per language) if given. `options` as for
/// [`super::learn`]: its alphabet is found over all the spans, training and dev. `on_merge` is
/// called after every merge; `ControlFlow::Break` stops early. Setting `stop` before the first
/// merge makes it give up with [`Error::Interrupted`].
pub fn learn_parity(
    train: &[&Spans],
    dev: Option<&[&Spans]>,
    options: &LearnOptions,
    parity: &ParityOptions,
    stop: &AtomicBool,
    on_merge: impl FnMut(&Merge, &Vocab) -> ControlFlow<()>,
) -> Result<ParityLearned, Error> {
    check(train.len(), dev.map(<[_]>::len), parity)?;
    let mut all: Vec<&Spans> = train.to_vec();
    all.extend(dev.unwrap_or_default());
    let alphabet = Alphabet::of_all(&options.alphabet, &all);
    let vocab = if alphabet.is_identity() { Vocab::bytes() } else { alphabet.vocab() };
    let ids = alphabet.ids();
    let (spans, lengths) = LanguageSpans::new(train, &ids, false)?;
    check_stop(stop)?;
    let dev = match dev {
        Some(dev) => {
            let (spans, lengths) = LanguageSpans::new(dev, &ids, true)?;
            Some(Dev::new(spans, lengths))
        }
        None => None,
    };
    let merges = options.vocab_size.saturating_sub(alphabet.len());
    let state = State { spans, lengths, dev, languages: train.len(), options, parity, merges };
    let learned = match parity.ties {
        ParityTies::SmallestIds => state.run::<Reverse<u64>>(vocab, stop, on_merge),
        ParityTies::GreatestSpelling => state.run::<(Rc<[u8]>, Rc<[u8]>)>(vocab, stop, on_merge),
    }?;
    Ok(ParityLearned { learned: Learned { alphabet: alphabet.len(), ..learned.learned }, ..learned })
}

/// The loop's inputs.
struct State<'a> {
    spans: LanguageSpans,
    /// Each language's length in tokens of its training spans.
    lengths: Vec<i64>,
    dev: Option<Dev>,
    languages: usize,
    options: &'a LearnOptions,
    parity: &'a ParityOptions,
    /// The merges to make.
    merges: usize,
}

impl State<'_> {
    fn run<K: TieKey>(
        mut self,
        mut vocab: Vocab,
        stop: &AtomicBool,
        mut on_merge: impl FnMut(&Merge, &Vocab) -> ControlFlow<()>,
    ) -> Result<ParityLearned, Error> {
        let languages = self.languages;
        let order = byte_level_order();
        let mut rank = [0u8; 256];
        for (k, &b) in order.iter().enumerate() {
            rank[b as usize] = k as u8;
        }
        let spell = |token: &[u8]| -> Rc<[u8]> { token.iter().map(|&b| rank[b as usize]).collect() };
        let mut spellings: Vec<Rc<[u8]>> = match self.parity.ties {
            ParityTies::GreatestSpelling => vocab.tokens().map(spell).collect(),
            ParityTies::SmallestIds => Vec::new(),
        };

        // Every adjacent pair of every span, counted in each language.
        let mut pairs = Pairs::new(languages);
        for i in 0..self.spans.len() {
            let (tokens, counts) = (self.spans.tokens(i), self.spans.counts(i));
            for w in tokens.windows(2) {
                if self.options.allows(vocab.token(w[0]), vocab.token(w[1])) {
                    let slot = pairs.slot((w[0], w[1]));
                    pairs.add(slot, 1, i as u32, counts, 0);
                }
            }
            if i % (1 << 20) == 0 {
                check_stop(stop)?;
            }
        }
        let global = self.parity.global_merges > 0;
        let mut heaps: Vec<OctonaryHeap<Entry<K>>> = (0..languages).map(|_| OctonaryHeap::new()).collect();
        let mut totals: OctonaryHeap<Entry<K>> = OctonaryHeap::new();
        for (slot, &pair) in pairs.pairs.iter().enumerate() {
            for (language, heap) in heaps.iter_mut().enumerate() {
                let count = pairs.count(slot as u32, language);
                if count > 0 {
                    heap.push(Entry { count: count as u64, key: K::of(pair, &spellings), slot: slot as u32 });
                }
            }
            if global && pairs.totals[slot] > 0 {
                totals.push(Entry { count: pairs.totals[slot] as u64, key: K::of(pair, &spellings), slot: slot as u32 });
            }
        }
        pairs.changed.clear();
        pairs.totals_changed.clear();

        let initial = self.lengths.clone();
        let on_dev = self.dev.is_some();
        let mut trace: Vec<i64> = self.measured().to_vec();
        let mut chosen = Vec::new();
        let mut merges = Vec::new();
        let mut exhausted = vec![false; languages];
        let mut exhausted_at: Vec<Option<u32>> = vec![None; languages];
        let mut window: VecDeque<usize> = VecDeque::new();
        let mut neighbours: Vec<Neighbour> = Vec::new();
        // Steps in a row without a merge (each exhausts a language, or moves the window past one
        // exhausted already): bounded, as a guard.
        let mut idle = 0usize;
        while merges.len() < self.merges {
            if exhausted.iter().all(|&e| e) || idle > languages * (window_size(self.parity) + 2) + 16 {
                break;
            }
            let language = self.select(merges.len(), &initial, &exhausted, &mut window);
            let best = match language {
                None => pop(&mut totals, |slot| pairs.totals[slot as usize]),
                Some(l) => pop(&mut heaps[l], |slot| pairs.count(slot, l)),
            };
            let best = match best {
                Some(best) if best.count >= self.options.min_frequency => best,
                _ => match language {
                    None => break, // no pair left in any language
                    Some(l) if exhausted[l] && self.parity.selection == Selection::Base => break,
                    Some(l) => {
                        exhausted[l] = true;
                        exhausted_at[l].get_or_insert(merges.len() as u32);
                        idle += 1;
                        continue;
                    }
                },
            };
            idle = 0;
            let step = merges.len() as u32 + 1;
            let pair = pairs.pairs[best.slot as usize];
            let token = vocab.try_push_merge(pair.0, pair.1)?;
            if self.parity.ties == ParityTies::GreatestSpelling {
                spellings.push(spell(vocab.token(token)));
            }

            // The merge in every span that may hold the pair, in every language.
            let list = std::mem::take(&mut pairs.spans[best.slot as usize]);
            let mut born: FxHashMap<u32, [Option<u32>; 2]> = FxHashMap::default();
            for &i in &list {
                neighbours.clear();
                let shorter = self.spans.merge(i as usize, pair, token, |side| neighbours.push(side));
                if shorter == 0 {
                    continue;
                }
                let counts = self.spans.counts(i as usize);
                for &(language, n) in counts {
                    self.lengths[language as usize] -= shorter as i64 * n;
                }
                for &side in &neighbours {
                    let (old, new, at) = match side {
                        Neighbour::Left(x) => ((x, pair.0), (x, token), 0),
                        Neighbour::Right(y) => ((pair.1, y), (token, y), 1),
                    };
                    if let Some(&slot) = pairs.slot_of.get(&key(old)) {
                        pairs.add(slot, -1, i, counts, step);
                    }
                    let other = if at == 0 { new.0 } else { new.1 };
                    let slots = born.entry(other).or_insert([None; 2]);
                    let slot = match slots[at] {
                        Some(slot) => Some(slot),
                        None if self.options.allows(vocab.token(new.0), vocab.token(new.1)) => {
                            let slot = pairs.slot(new);
                            slots[at] = Some(slot);
                            Some(slot)
                        }
                        None => None,
                    };
                    if let Some(slot) = slot {
                        pairs.add(slot, 1, i, counts, step);
                    }
                }
            }
            let merged = best.slot as usize;
            pairs.counts[merged * languages..(merged + 1) * languages].fill(0);
            pairs.totals[merged] = 0;
            for (slot, language) in pairs.changed.drain(..) {
                let count = pairs.counts[slot as usize * languages + language as usize];
                if count > 0 {
                    let key = K::of(pairs.pairs[slot as usize], &spellings);
                    heaps[language as usize].push(Entry { count: count as u64, key, slot });
                }
            }
            for slot in pairs.totals_changed.drain(..) {
                let count = pairs.totals[slot as usize];
                if global && merges.len() + 1 < self.parity.global_merges && count > 0 {
                    totals.push(Entry { count: count as u64, key: K::of(pairs.pairs[slot as usize], &spellings), slot });
                }
            }
            if let Some(dev) = &mut self.dev {
                dev.merge(pair, token);
            }
            let merge = Merge { pair, token, count: best.count };
            merges.push(merge);
            chosen.push(language.map(|l| l as u32));
            trace.extend_from_slice(self.measured());
            if on_merge(&merge, &vocab).is_break() {
                break;
            }
        }
        if let Some((earlier, later)) = vocab.first_repeat() {
            return Err(Error::Internal(format!("tokens {earlier} and {later} have the same bytes, which the merge rule rules out")));
        }
        let alphabet = vocab.len() - merges.len();
        Ok(ParityLearned { learned: Learned { vocab, merges, alphabet }, chosen, lengths: trace, on_dev, exhausted: exhausted_at })
    }

    /// Each language's measured length: its dev spans', else its training spans'.
    fn measured(&self) -> &[i64] {
        match &self.dev {
            Some(dev) => &dev.lengths,
            None => &self.lengths,
        }
    }

    /// The language the next merge is for (`None`: a global merge), as HuggingFace chooses it.
    fn select(&self, done: usize, initial: &[i64], exhausted: &[bool], window: &mut VecDeque<usize>) -> Option<usize> {
        if done < self.parity.global_merges {
            return None;
        }
        let ratio = self.parity.ratio.as_ref().filter(|_| self.dev.is_none());
        let chosen = match (ratio, self.parity.selection) {
            (Some(ratio), Selection::Base) => {
                // The lowest compression rate over its ratio (first among equals).
                let mut best = (0, f64::INFINITY);
                for (l, value) in adjusted(initial, &self.lengths, ratio).enumerate() {
                    if !exhausted[l] && value < best.1 {
                        best = (l, value);
                    }
                }
                return Some(best.0);
            }
            (None, Selection::Base) => {
                // The longest (first among equals).
                let lengths = self.measured();
                let mut best = (0, i64::MIN);
                for (l, &value) in lengths.iter().enumerate() {
                    if !exhausted[l] && value > best.1 {
                        best = (l, value);
                    }
                }
                return Some(best.0);
            }
            (Some(ratio), Selection::Window { size, alpha }) => {
                let values: Vec<f64> = adjusted(initial, &self.lengths, ratio).zip(exhausted).map(|(v, &e)| if e { f64::NEG_INFINITY } else { -v }).collect();
                pick_in_window(&values, f64::NEG_INFINITY, window, size, alpha / self.languages as f64)
            }
            (None, Selection::Window { size, alpha }) => {
                let values: Vec<i64> = self.measured().iter().zip(exhausted).map(|(&v, &e)| if e { i64::MIN } else { v }).collect();
                pick_in_window(&values, i64::MIN, window, size, alpha / self.languages as f64)
            }
        };
        window.push_back(chosen);
        if let Selection::Window { size, .. } = self.parity.selection {
            if window.len() > size {
                window.pop_front();
            }
        }
        Some(chosen)
    }
}

fn window_size(parity: &ParityOptions) -> usize {
    match parity.selection {
        Selection::Base => 0,
        Selection::Window { size, .. } => size,
    }
}

/// Each language's compression rate (its first length over its length now) over its ratio.
fn adjusted<'a>(initial: &'a [i64], lengths: &'a [i64], ratio: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
    initial.iter().zip(lengths).zip(ratio).map(|((&first, &now), &r)| (first as f64 / now as f64) / r)
}

/// HuggingFace's moving window: the language of the greatest value (first among equals; `min`
/// for an exhausted one) unless it was chosen more than `threshold` of the last `size` merges,
/// then the next greatest, and so on; the last one passed over if all are. Where HuggingFace's
/// loop would not end (every language left unmasked has the value `min`), the greatest value.
fn pick_in_window<T: PartialOrd + Copy>(values: &[T], min: T, window: &VecDeque<usize>, size: usize, threshold: f64) -> usize {
    let mut masked = vec![false; values.len()];
    loop {
        let mut best = (0, min);
        for (l, &value) in values.iter().enumerate() {
            if !masked[l] && value > best.1 {
                best = (l, value);
            }
        }
        let l = best.0;
        let share = window.iter().filter(|&&chosen| chosen == l).count() as f64 / size as f64;
        if share <= threshold {
            return l;
        }
        if masked[l] && !masked.iter().all(|&m| m) {
            // HuggingFace's loop would go on forever here.
            let mut best = (0, min);
            for (l, &value) in values.iter().enumerate() {
                if value > best.1 {
                    best = (l, value);
                }
            }
            return best.0;
        }
        masked[l] = true;
        if masked.iter().all(|&m| m) {
            return l;
        }
    }
}

/// The best entry of `heap` whose count is current (`count` gives it), stale entries pushed
/// again with their current count, entries of pairs no longer counted dropped.
fn pop<K: Ord>(heap: &mut OctonaryHeap<Entry<K>>, count: impl Fn(u32) -> i64) -> Option<Entry<K>> {
    loop {
        let top = heap.pop()?;
        let current = count(top.slot);
        if current <= 0 {
            continue;
        }
        if top.count != current as u64 {
            heap.push(Entry { count: current as u64, ..top });
            continue;
        }
        return Some(top);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{learn, AlphabetRule};
    use std::collections::BTreeMap;

    fn spans(list: &[(Vec<u8>, u64)]) -> Spans {
        list.iter().map(|(b, n)| (b.clone().into_boxed_slice(), *n)).collect()
    }

    /// A random corpus per language of `seed`, languages drawing from overlapping alphabets.
    fn corpora(seed: u64, languages: usize) -> Vec<Vec<(Vec<u8>, u64)>> {
        let mut next = crate::test_random(seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
        let alphabets: [&[u8]; 3] = [b"aab ", b"bcc d", b"ad\xc3\xa9 "];
        (0..languages)
            .map(|l| {
                let alphabet = alphabets[l % 3];
                (0..1 + next(20))
                    .map(|_| {
                        let len = 1 + next(10) as usize;
                        ((0..len).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect(), 1 + next(6))
                    })
                    .collect()
            })
            .collect()
    }

    /// The rule, run naively: every count and length recounted before every merge.
    fn naive(train: &[Vec<(Vec<u8>, u64)>], dev: Option<&[Vec<(Vec<u8>, u64)>]>, merges: usize, parity: &ParityOptions, min_frequency: u64) -> (Vec<Pair>, Vec<Option<u32>>) {
        let words = |corpus: &[Vec<(Vec<u8>, u64)>]| -> Vec<Vec<(Vec<u32>, u64)>> {
            corpus.iter().map(|l| l.iter().map(|(b, n)| (b.iter().map(|&x| u32::from(x)).collect(), *n)).collect()).collect()
        };
        let mut train = words(train);
        let mut dev = dev.map(words);
        let length = |ws: &[Vec<(Vec<u32>, u64)>]| -> Vec<i64> { ws.iter().map(|l| l.iter().map(|(w, n)| (w.len() as u64 * n) as i64).sum()).collect() };
        let first = length(&train);
        let languages = train.len();
        let mut vocab = Vocab::bytes();
        let (mut out, mut chosen) = (Vec::new(), Vec::new());
        let mut exhausted = vec![false; languages];
        let mut window: VecDeque<usize> = VecDeque::new();
        while out.len() < merges && !exhausted.iter().all(|&e| e) {
            let counts = |l: Option<usize>| {
                let mut c: BTreeMap<Pair, u64> = BTreeMap::new();
                for (k, lang) in train.iter().enumerate() {
                    if l.is_none_or(|l| l == k) {
                        for (w, n) in lang {
                            for p in w.windows(2) {
                                *c.entry((p[0], p[1])).or_default() += n;
                            }
                        }
                    }
                }
                // the most counted, the smallest pair among equals
                c.iter().rev().max_by_key(|(_, &n)| n).map(|(&p, &n)| (p, n))
            };
            let language = if out.len() < parity.global_merges {
                None
            } else {
                let measured = length(dev.as_deref().unwrap_or(&train));
                let now = length(&train);
                let ratio = parity.ratio.as_ref().filter(|_| dev.is_none());
                // "worse" scores: greater is worse
                let score: Vec<f64> = (0..languages)
                    .map(|l| match ratio {
                        Some(r) => -((first[l] as f64 / now[l] as f64) / r[l]),
                        None => measured[l] as f64,
                    })
                    .collect();
                // The worst of `from` (greatest score, first among equals), or language 0 if none.
                let worst = |from: &dyn Fn(usize) -> bool| {
                    let mut order: Vec<usize> = (0..languages).filter(|&l| from(l) && !exhausted[l]).collect();
                    order.sort_by(|&x, &y| score[y].partial_cmp(&score[x]).unwrap().then(x.cmp(&y)));
                    order.first().copied().unwrap_or(0)
                };
                Some(match parity.selection {
                    Selection::Base => worst(&|_| true),
                    Selection::Window { size, alpha } => {
                        // The worst not passed over yet, passed over if chosen more than its share
                        // of the window; the last passed over if all are; the worst of all where
                        // no language is left to pass over but exhausted ones.
                        let share = |l: usize| window.iter().filter(|&&c| c == l).count() as f64 / size as f64;
                        let mut passed = vec![false; languages];
                        let l = loop {
                            let l = worst(&|l| !passed[l]);
                            if share(l) <= alpha / languages as f64 {
                                break l;
                            }
                            if passed[l] && !passed.iter().all(|&p| p) {
                                break worst(&|_| true);
                            }
                            passed[l] = true;
                            if passed.iter().all(|&p| p) {
                                break l;
                            }
                        };
                        window.push_back(l);
                        if window.len() > size {
                            window.pop_front();
                        }
                        l
                    }
                })
            };
            let Some((pair, n)) = counts(language).filter(|&(_, n)| n >= min_frequency) else {
                match language {
                    None => break,
                    Some(l) if exhausted[l] && parity.selection == Selection::Base => break,
                    Some(l) => {
                        exhausted[l] = true;
                        continue;
                    }
                }
            };
            let token = vocab.push_merge(pair.0, pair.1);
            for lang in train.iter_mut().chain(dev.iter_mut().flatten()) {
                for (w, _) in lang.iter_mut() {
                    let len = merge_in_span(w, pair, token, |_| {});
                    w.truncate(len);
                }
            }
            let _ = n;
            out.push(pair);
            chosen.push(language.map(|l| l as u32));
        }
        (out, chosen)
    }

    fn run(train: &[Vec<(Vec<u8>, u64)>], dev: Option<&[Vec<(Vec<u8>, u64)>]>, merges: usize, parity: &ParityOptions, min_frequency: u64) -> ParityLearned {
        let train: Vec<Spans> = train.iter().map(|l| spans(l)).collect();
        let train: Vec<&Spans> = train.iter().collect();
        let dev: Option<Vec<Spans>> = dev.map(|d| d.iter().map(|l| spans(l)).collect());
        let dev: Option<Vec<&Spans>> = dev.as_ref().map(|d| d.iter().collect());
        let options = LearnOptions { vocab_size: 256 + merges, min_frequency, ..Default::default() };
        learn_parity(&train, dev.as_deref(), &options, parity, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap()
    }

    fn options(selection: Selection, global_merges: usize, ratio: Option<Vec<f64>>) -> ParityOptions {
        ParityOptions { selection, global_merges, ratio, ties: ParityTies::SmallestIds }
    }

    #[test]
    fn parity_merges_match_a_naive_recount() {
        for seed in 0..300 {
            let languages = 1 + (seed % 3) as usize;
            let train = corpora(seed, languages);
            let dev = corpora(seed + 1000, languages);
            let selection = if seed % 2 == 0 { Selection::Base } else { Selection::Window { size: 1 + (seed % 5) as usize, alpha: 0.5 + (seed % 4) as f64 * 0.5 } };
            let ratio = (seed % 3 == 1).then(|| (0..languages).map(|l| 1.0 + l as f64 * 0.75).collect());
            let parity = options(selection, (seed % 4) as usize, ratio);
            let with_dev = seed % 5 < 2;
            let min_frequency = 1 + seed % 3;
            let got = run(&train, with_dev.then_some(&dev[..]), 40, &parity, min_frequency);
            let (want, chosen) = naive(&train, with_dev.then_some(&dev[..]), 40, &parity, min_frequency);
            let pairs: Vec<Pair> = got.learned.merges.iter().map(|m| m.pair).collect();
            assert_eq!((pairs, &got.chosen), (want, &chosen), "seed {seed}");
        }
    }

    #[test]
    fn all_global_merges_or_one_language_are_plain_bpe() {
        for seed in 0..200 {
            let train = corpora(seed, 1 + (seed % 3) as usize);
            let all: Vec<(Vec<u8>, u64)> = train.iter().flatten().cloned().collect();
            let options = LearnOptions { vocab_size: 256 + 30, min_frequency: 1, ..Default::default() };
            let plain = learn(spans(&all), &options, &AtomicBool::new(false), |_, _| ControlFlow::Continue(())).unwrap().merges;
            let global = run(&train, None, 30, &self::options(Selection::Base, 30, None), 1).learned.merges;
            assert_eq!(global, plain, "seed {seed}");
            let one = run(&[all.clone()], None, 30, &self::options(Selection::Window { size: 3, alpha: 1.0 }, 0, None), 1).learned.merges;
            assert_eq!(one, plain, "seed {seed}");
        }
    }

    #[test]
    fn lengths_trace_each_languages_tokens() {
        let train = corpora(7, 2);
        let got = run(&train, None, 10, &options(Selection::Base, 0, None), 1);
        let bytes: Vec<i64> = train.iter().map(|l| l.iter().map(|(b, n)| (b.len() as u64 * n) as i64).sum()).collect();
        assert_eq!(&got.lengths[..2], &bytes[..]);
        assert_eq!(got.lengths.len(), 2 * (got.learned.merges.len() + 1));
        // Each merge shortens the language it was made for (its best pair occurs there).
        for (k, chosen) in got.chosen.iter().enumerate() {
            let l = chosen.unwrap() as usize;
            assert!(got.lengths[2 * (k + 1) + l] < got.lengths[2 * k + l]);
        }
    }

    #[test]
    fn bad_options_are_errors() {
        let train = corpora(1, 2);
        let t: Vec<Spans> = train.iter().map(|l| spans(l)).collect();
        let t: Vec<&Spans> = t.iter().collect();
        let go = |parity: ParityOptions, dev: Option<&[&Spans]>| learn_parity(&t, dev, &LearnOptions::default(), &parity, &AtomicBool::new(false), |_, _| ControlFlow::Continue(()));
        assert!(matches!(go(options(Selection::Base, 0, Some(vec![1.0])), None), Err(Error::InvalidOption(_))));
        assert!(matches!(go(options(Selection::Base, 0, Some(vec![1.0, f64::NAN])), None), Err(Error::InvalidOption(_))));
        assert!(matches!(go(options(Selection::Window { size: 0, alpha: 1.0 }, 0, None), None), Err(Error::InvalidOption(_))));
        assert!(matches!(go(options(Selection::Window { size: 3, alpha: 0.0 }, 0, None), None), Err(Error::InvalidOption(_))));
        assert!(matches!(go(options(Selection::Base, 0, None), Some(&t[..1])), Err(Error::InvalidOption(_))));
        let none: [&Spans; 0] = [];
        let r = learn_parity(&none, None, &LearnOptions::default(), &options(Selection::Base, 0, None), &AtomicBool::new(false), |_, _| ControlFlow::Continue(()));
        assert!(matches!(r, Err(Error::InvalidOption(_))));
        let _ = AlphabetRule::Bytes;
    }
}
