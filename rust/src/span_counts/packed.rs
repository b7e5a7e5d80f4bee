//! Span counts as one compact byte string, for pickling and for moving them between processes
//! (Ray, Dask, multiprocessing): the split pattern, the counting options and the sorted spans
//! with their counts, and a CRC-32 of all of it.
//!
//! Layout: the magic `BPSC`, a format version byte, then LEB128 integers and raw bytes: the
//! pattern's length and bytes, the options' length and bytes, the number of spans, each span's
//! length and count, then every span's bytes end to end; last, the CRC-32 of everything before
//! it (4 bytes, little-endian). Sorted spans share long prefixes, but lengths and counts are
//! mostly one or two bytes each, so the encoding takes about the spans' bytes plus 2-3 bytes a
//! span.

use super::sorted::SortedSpans;
use crate::count::{Counts, Ends, Spans};

const MAGIC: &[u8; 4] = b"BPSC";
const VERSION: u8 = 1;

/// What packed counts hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpacked {
    pub pattern: String,
    pub options: String,
    pub spans: SortedSpans,
}

fn put(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The counts as bytes (see the module's comment).
pub fn pack(pattern: &str, options: &str, spans: &SortedSpans) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + pattern.len() + options.len() + spans.distinct_bytes() + 4 * spans.len());
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    put(&mut out, pattern.len() as u64);
    out.extend_from_slice(pattern.as_bytes());
    put(&mut out, options.len() as u64);
    out.extend_from_slice(options.as_bytes());
    put(&mut out, spans.len() as u64);
    for (span, n) in spans.spans().iter() {
        put(&mut out, span.len() as u64);
        put(&mut out, n);
    }
    out.extend_from_slice(spans.spans().bytes());
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Reads bytes from [`pack`], checking everything: a message says what is wrong.
pub fn unpack(data: &[u8]) -> Result<Unpacked, String> {
    if data.len() < MAGIC.len() + 1 + 4 || &data[..4] != MAGIC {
        return Err("not packed span counts (no BPSC header)".into());
    }
    if data[4] != VERSION {
        return Err(format!("packed span counts of format version {}, this bpeforge reads version {VERSION}", data[4]));
    }
    let (body, crc) = data.split_at(data.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) {
        return Err("packed span counts are damaged (checksum mismatch)".into());
    }
    let mut reader = Reader { body, at: 5 };
    let pattern_len = reader.int("the pattern's length")?;
    let pattern = reader.text(pattern_len, "the pattern")?;
    let options_len = reader.int("the options' length")?;
    let options = reader.text(options_len, "the options")?;
    let n = reader.int("the number of spans")?;
    // Each span takes at least two bytes (its length and count) before the spans' bytes: a
    // larger number is damage, refused before anything is allocated for it.
    let n = usize::try_from(n).ok().filter(|&n| n <= (body.len() - reader.at) / 2).ok_or("packed span counts claim more spans than they hold")?;
    // Read straight into the spans' own vectors (their ends, their counts, then their bytes,
    // which lie end to end): unpacking takes no more memory than the counts it makes.
    let mut ends = Ends::with_capacity(n);
    let mut counts = Counts::with_capacity(n);
    let mut end = 0usize;
    for i in 0..n {
        let len = reader.int("a span's length")?;
        counts.push(reader.int("a count").map_err(|e| format!("{e} (span {i})"))?);
        end = usize::try_from(len).ok().and_then(|len| end.checked_add(len)).ok_or("packed span counts end inside the spans' bytes")?;
        ends.push(end);
    }
    let bytes = reader.bytes(end as u64, "the spans' bytes")?.to_vec();
    let spans = Spans::from_parts(bytes, ends, counts);
    if reader.at != body.len() {
        return Err(format!("packed span counts have {} bytes too many", body.len() - reader.at));
    }
    let spans = SortedSpans::from_sorted(spans).map_err(|e| format!("packed span counts hold {} at span {}", e.why, e.row))?;
    Ok(Unpacked { pattern, options, spans })
}

/// Reads [`pack`]'s integers and bytes in order.
struct Reader<'a> {
    body: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn int(&mut self, what: &str) -> Result<u64, String> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.body.get(self.at).ok_or_else(|| format!("packed span counts end inside {what}"))?;
            self.at += 1;
            if shift == 63 && byte > 1 {
                return Err(format!("bad integer in {what}"));
            }
            n |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(n);
            }
        }
        Err(format!("bad integer in {what}"))
    }

    fn bytes(&mut self, len: u64, what: &str) -> Result<&'a [u8], String> {
        let end = usize::try_from(len).ok().and_then(|len| self.at.checked_add(len)).filter(|&end| end <= self.body.len());
        let end = end.ok_or_else(|| format!("packed span counts end inside {what}"))?;
        let bytes = &self.body[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn text(&mut self, len: u64, what: &str) -> Result<String, String> {
        let bytes = self.bytes(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} in packed span counts is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> SortedSpans {
        let spans: Spans = [(&b" the"[..], 1_000_000u64), (b"a", 1), (b"\xff\xfe", u64::MAX)].into_iter().collect();
        SortedSpans::from_unsorted(spans).unwrap()
    }

    #[test]
    fn packed_counts_come_back_equal() {
        let spans = example();
        let packed = pack("gpt4 regex", "{\"doc_cap\": 10}", &spans);
        assert!(packed.len() < 4 + 1 + 40 + 30 + spans.distinct_bytes() + 3 * 12);
        let back = unpack(&packed).unwrap();
        assert_eq!(back, Unpacked { pattern: "gpt4 regex".into(), options: "{\"doc_cap\": 10}".into(), spans });
        let empty = unpack(&pack("p", "{}", &SortedSpans::default())).unwrap();
        assert!(empty.spans.is_empty());
    }

    #[test]
    fn every_damaged_byte_is_refused() {
        let packed = pack("p", "{}", &example());
        for i in 0..packed.len() {
            let mut bad = packed.clone();
            bad[i] ^= 0x21;
            assert!(unpack(&bad).is_err(), "byte {i}");
        }
        for cut in 0..packed.len() {
            assert!(unpack(&packed[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// Bytes with a good checksum that claim more than they hold: a message, nothing allocated
    /// for the claim.
    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut out = body.to_vec();
        out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
        out
    }

    #[test]
    fn counts_claiming_more_than_they_hold_are_refused() {
        let mut body = b"BPSC\x01\x01p\x02{}".to_vec();
        let mut huge = body.clone();
        put(&mut huge, u64::MAX >> 1); // spans
        assert_eq!(unpack(&sealed(&huge)).unwrap_err(), "packed span counts claim more spans than they hold");
        put(&mut body, 1); // one span of 200 bytes counted once, with 2 bytes of span
        put(&mut body, 200);
        put(&mut body, 1);
        body.extend_from_slice(b"ab");
        assert_eq!(unpack(&sealed(&body)).unwrap_err(), "packed span counts end inside the spans' bytes");
    }
}
