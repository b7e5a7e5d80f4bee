//! Whether HuggingFace's BPE, given a list of merges, splits some spans as tiktoken does with
//! the ranks: the check `huggingface.to_huggingface` runs on every export (and so every save)
//! before writing a `tokenizer.json`. `bpeforge.huggingface.check_merges_agree` says which spans
//! and why, and is the slow reference this is tested against; here the spans are split in
//! parallel without the GIL (a 32k vocabulary has some 18 thousand such spans).

use pyo3::prelude::*;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::to_py;
use crate::encode::Encoder;

/// The first of `contexts` (in their order) that HuggingFace's merge loop, given `merges` (pairs
/// of token bytes, the first place of a pair counting) with `ignore_merges` on, splits otherwise
/// than tiktoken does with `ranks` (token bytes and rank), and both splits: `(context, HF's
/// tokens, tiktoken's tokens)`. None when every context splits alike.
#[pyfunction]
pub(super) fn first_merge_disagreement(
    py: Python<'_>,
    ranks: Vec<(Vec<u8>, u32)>,
    merges: Vec<(Vec<u8>, Vec<u8>)>,
    contexts: Vec<Vec<u8>>,
) -> PyResult<Option<(Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>)>> {
    py.detach(|| {
        let token_of: FxHashMap<u32, &[u8]> = ranks.iter().map(|(token, rank)| (*rank, &token[..])).collect();
        let whole: FxHashMap<&[u8], u32> = ranks.iter().map(|(token, rank)| (&token[..], *rank)).collect();
        let encoder = Encoder::new(ranks.iter().cloned()).map_err(to_py)?;
        let mut priority: FxHashMap<(&[u8], &[u8]), usize> = FxHashMap::default();
        for (place, (left, right)) in merges.iter().enumerate() {
            priority.entry((&left[..], &right[..])).or_insert(place);
        }
        let splits = |context: &[u8]| -> Result<_, crate::Error> {
            let mut ids = Vec::new();
            encoder.encode_span(context, &mut ids)?;
            // Every id the encoder gives is one of the ranks it was made with.
            let ours: Vec<Vec<u8>> = ids.iter().map(|id| token_of.get(id).map_or_else(Vec::new, |t| t.to_vec())).collect();
            let theirs = if whole.contains_key(context) { vec![context.to_vec()] } else { merged_by_list(context, &priority) };
            Ok((theirs, ours))
        };
        // A context that cannot be encoded (out of memory) is found again below, which says so.
        let first = contexts.par_iter().position_first(|context| splits(context).map_or(true, |(theirs, ours)| theirs != ours));
        first
            .map(|k| {
                let (theirs, ours) = splits(&contexts[k])?;
                Ok((contexts[k].clone(), theirs, ours))
            })
            .transpose()
            .map_err(to_py)
    })
}

/// The merges HuggingFace's BPE needs to split as tiktoken does with `ranks` (token bytes and
/// rank), as `bpeforge.huggingface.merges_of` lists them (every pair of tokens whose
/// concatenation is a token, by the rank it makes, the longer left part first), and the first
/// tie context (`huggingface.tie_contexts`, shortest first) HuggingFace's loop would split
/// otherwise, as `first_merge_disagreement` gives it: the export's work on the merges, done
/// without the GIL (in Python it cost most of a save).
#[pyfunction]
#[allow(clippy::type_complexity)]
pub(super) fn huggingface_merges(
    py: Python<'_>,
    ranks: Vec<(Vec<u8>, u32)>,
) -> PyResult<(Vec<(Vec<u8>, Vec<u8>)>, Option<(Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>)>)> {
    let (merges, contexts) = py.detach(|| {
        let rank_of: FxHashMap<&[u8], u32> = ranks.iter().map(|(token, rank)| (&token[..], *rank)).collect();
        let mut found: Vec<(u32, usize, &[u8], &[u8])> = Vec::new(); // (rank made, len - k, left, right)
        for (token, rank) in &ranks {
            for k in (1..token.len()).rev() {
                if rank_of.contains_key(&token[..k]) && rank_of.contains_key(&token[k..]) {
                    found.push((*rank, token.len() - k, &token[..k], &token[k..]));
                }
            }
        }
        found.sort_unstable_by(|a, b| (a.0, std::cmp::Reverse(a.2.len()), a.2, a.3).cmp(&(b.0, std::cmp::Reverse(b.2.len()), b.2, b.3)));
        let merges: Vec<(&[u8], &[u8])> = found.iter().map(|&(_, _, l, r)| (l, r)).collect();
        // tie_contexts: tokens made in several ways, their overlapping ways and their neighbours.
        let mut ways: FxHashMap<Vec<u8>, Vec<(&[u8], &[u8])>> = FxHashMap::default();
        for &(left, right) in &merges {
            ways.entry([left, right].concat()).or_default().push((left, right));
        }
        let several: FxHashMap<&[u8], ()> = ways.iter().filter(|(_, p)| p.len() > 1).map(|(t, _)| (&t[..], ())).collect();
        let mut contexts: Vec<Vec<u8>> = Vec::new();
        for token in several.keys() {
            for &(left, right) in &ways[*token] {
                if token.starts_with(right) && ways[*token].contains(&(right, &token[right.len()..])) {
                    contexts.push([left, token].concat());
                }
            }
        }
        for &(left, right) in &merges {
            let made = [left, right].concat();
            for part in [left, right] {
                if several.contains_key(part) && rank_of[&made[..]] < rank_of[part] {
                    contexts.push([part, &made[..]].concat());
                    contexts.push([&made[..], part].concat());
                }
            }
        }
        contexts.sort_unstable_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
        contexts.dedup();
        let merges: Vec<(Vec<u8>, Vec<u8>)> = merges.iter().map(|(l, r)| (l.to_vec(), r.to_vec())).collect();
        (merges, contexts)
    });
    let disagreement = first_merge_disagreement(py, ranks, merges.clone(), contexts)?;
    Ok((merges, disagreement))
}

/// The parts of `piece` once every byte starts as a part and the adjacent pair listed first in
/// `priority` is merged, the leftmost of equals, until no adjacent pair is listed: HuggingFace's
/// loop. Each adjacent pair's place is looked up once, and again only when a merge beside it
/// changes it (contexts are a few tokens long: the lowest place is found by a scan).
fn merged_by_list(piece: &[u8], priority: &FxHashMap<(&[u8], &[u8]), usize>) -> Vec<Vec<u8>> {
    // Part k is piece[starts[k]..starts[k + 1]]; places[k] is the place of the pair (k, k + 1).
    let mut starts: Vec<usize> = (0..=piece.len()).collect();
    let place = |starts: &[usize], k: usize| priority.get(&(&piece[starts[k]..starts[k + 1]], &piece[starts[k + 1]..starts[k + 2]])).copied();
    let mut places: Vec<Option<usize>> = (0..piece.len().saturating_sub(1)).map(|k| place(&starts, k)).collect();
    while let Some((k, _)) = places.iter().enumerate().filter_map(|(k, p)| p.map(|p| (k, p))).min_by_key(|&(k, p)| (p, k)) {
        starts.remove(k + 1);
        places.remove(k);
        if k < places.len() {
            places[k] = place(&starts, k);
        }
        if k > 0 {
            places[k - 1] = place(&starts, k - 1);
        }
    }
    starts.windows(2).map(|w| piece[w[0]..w[1]].to_vec()).collect()
}
