//! Memory: giving freed memory back to the operating system between the pipeline's stages,
//! huge pages for the large tables, and prefetch hints.
//!
//! glibc's allocator keeps freed memory for reuse instead of returning it, in two ways that
//! matter here. Small blocks stay in per-thread arenas: the counting tables, built on the pool's
//! threads, would stay resident while the merge loop, on another thread, allocates its own, so
//! peak memory would be the sum of both stages instead of the larger. And large blocks, which
//! glibc maps from the system and unmaps when freed, stop being mapped once the program has
//! freed a few: glibc then raises its threshold for mapping up to 32 MiB, and later large
//! buffers, grown by doubling, leave holes in the arenas.
//!
//! So the extension module allocates through [`Allocator`], which maps every block of at least
//! [`LARGE`] bytes straight from the system (grown in place by `mremap`, unmapped when freed)
//! and leaves smaller ones to the system allocator; and [`release`] hands the free pages of
//! every arena back between stages. Only bpeforge's own (Rust) allocations go through it.
//!
//! The counting tables, the span table and the pair index are read at random places, tens of
//! megabytes of them: with 4 KiB pages most of those reads would also miss the TLB, and
//! faulting the pages in one by one costs a trap each. So blocks mapped at 2 MiB or more ask
//! for transparent huge pages (`madvise`; the system may decline, which changes nothing else).
//! A block grown by appending (a `Vec` pushed to) asks only once it reaches [`HUGE_GROWN`]: the
//! first write into a huge page faults in all 2 MiB of it, so the last, partly written page of
//! each growing array holds up to 2 MiB more than it uses, which weighs on small runs (several
//! growing arrays in the merge loop). A block written whole when it grows, as the counting
//! tables are, asks for itself ([`prefer_huge_pages`]).
//!
//! A fresh mapping costs a fault and the zeroing of each of its pages when first written. The
//! Parquet reader maps and unmaps two buffers of megabytes per page (compressed and
//! decompressed bytes); under [`keeping_spares`] up to two freed mappings are kept (while a
//! slot is free) and the next blocks are made from them.
//!
//! Why an allocator of our own rather than a well-kept one with an explicit purge between
//! stages: in its place, the system allocator (with `malloc_trim`) peaks higher by a seventh to
//! a fifth and merges slower, and mimalloc (with `mi_collect`, with or without its large OS
//! pages) peaks near twice as high, in interleaved runs of `python benches/compare.py --corpus
//! <kernel-docs|kernel-code>.<txt|parquet> --vocab-size <32768|65536> --only bpeforge` against
//! builds of each. Either is past what a library may cost here (3% more time, 2% more peak
//! memory); benches/README.md has the figures.

use std::alloc::{GlobalAlloc, Layout, System};

use crate::Error;
#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicUsize, Ordering};

/// A hint to load the cache line holding `p`; it never faults, whatever `p` is.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is only a hint: it does not access memory architecturally, so any
    // address is fine.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Makes room in `v` for `additional` more items, as `Vec::reserve` does (doubling), or
/// returns [`Error::OutOfMemory`] naming `stage` and the size of the block asked for: Rust
/// aborts the process on an allocation that fails, so the large structures grow through this
/// (or [`try_filled`]) and the work gives up with an error instead.
pub fn try_reserve<T>(v: &mut Vec<T>, additional: usize, stage: &'static str) -> Result<(), Error> {
    if v.capacity() - v.len() >= additional {
        return Ok(());
    }
    let asked = v.len().saturating_add(additional).max(v.capacity().saturating_mul(2));
    v.try_reserve(additional).map_err(|_| Error::OutOfMemory { stage, bytes: asked.saturating_mul(std::mem::size_of::<T>()) })
}

/// [`try_reserve`] for exactly `additional` more items.
pub fn try_reserve_exact<T>(v: &mut Vec<T>, additional: usize, stage: &'static str) -> Result<(), Error> {
    let asked = v.len().saturating_add(additional);
    v.try_reserve_exact(additional).map_err(|_| Error::OutOfMemory { stage, bytes: asked.saturating_mul(std::mem::size_of::<T>()) })
}

/// `vec![value; len]`, or [`Error::OutOfMemory`] naming `stage` (see [`try_reserve`]).
pub fn try_filled<T: Clone>(len: usize, value: T, stage: &'static str) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    try_reserve_exact(&mut v, len, stage)?;
    v.resize(len, value);
    Ok(v)
}

/// The message of an allocation of `bytes` that failed while `stage` (`"counting spans"`,
/// `"reading FILE"`): [`Error::OutOfMemory`]'s, and the readers' (whose stage names a file).
pub fn out_of_memory_message(stage: impl std::fmt::Display, bytes: usize) -> String {
    format!("out of memory while {stage}: a block of {} could not be allocated", describe_size(bytes))
}

/// A size in bytes for a message: `"1.5 GB (1,500,000,000 bytes)"`, or `"4,096 bytes"`.
pub fn describe_size(bytes: usize) -> String {
    let digits = bytes.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.1} GB ({grouped} bytes)", b as f64 / 1e9),
        b if b >= 1_000_000 => format!("{:.1} MB ({grouped} bytes)", b as f64 / 1e6),
        _ => format!("{grouped} bytes"),
    }
}

/// Blocks of at least this many bytes are mapped straight from the system.
pub const LARGE: usize = 1 << 20;

/// A block mapped at this size or more asks for huge pages (see the module doc)...
const HUGE: usize = 2 << 20;

/// ... and a block grown to this size or more: its last huge page, partly written, then holds
/// at most a sixteenth more than the block.
const HUGE_GROWN: usize = 32 << 20;

/// Asks for transparent huge pages on the room of `block` (its capacity), which is about to be
/// written whole (see the module doc); a no-op off Linux, for a block of less than 2 MiB, and
/// on a refusal.
pub fn prefer_huge_pages<T>(block: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        let size = block.capacity() * std::mem::size_of::<T>();
        // SAFETY: advice is asked only on a block of `HUGE` bytes or more, a mapping of its own
        // (see `mapped`), so it covers the whole mapping, its last page included: advice on
        // part of a mapping would split it in two, which a later `mremap` of the whole cannot
        // grow. It changes no byte of the block.
        unsafe { huge(block.as_mut_ptr().cast(), size, HUGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = block;
}

/// Gives the whole pages of `items` at or past address `*from` back to the system, and moves
/// `*from` past them: for a large buffer read once, from start to end, before it is freed,
/// called with what was read so far, so that it shrinks as it is read (a mapping's pages read
/// as zeros after this, and are faulted in again if written). A no-op off Linux.
///
/// # Safety
/// Zero bytes must make a valid `T`, and the caller must not rely on the bytes of `items`
/// after this (they may read as zeros).
pub unsafe fn discard<T>(items: &mut [T], from: &mut usize) {
    #[cfg(target_os = "linux")]
    {
        let page = libc::sysconf(libc::_SC_PAGESIZE).max(1) as usize;
        let start = (items.as_mut_ptr() as usize).next_multiple_of(page).max(*from);
        let end = (items.as_mut_ptr() as usize + std::mem::size_of_val(items)) / page * page;
        if end > start {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            *from = end;
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (items, from);
}

/// Returns free memory held by the allocator to the operating system (glibc on Linux; a no-op
/// elsewhere, where allocators differ).
pub fn release() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases pages that no allocation uses; it takes no pointer and
    // is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
    drop_spares();
}

/// The system allocator, except that large blocks are mapped and unmapped directly (Linux; the
/// system allocator alone elsewhere). See the module doc.
pub struct Allocator;

#[cfg(target_os = "linux")]
thread_local! {
    /// Set while this thread runs [`keeping_spares`].
    static KEEPING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the spares on for this thread: the mapped blocks it frees may be kept (two
/// at most, of up to 8 MiB) and those it makes may come from them (never a zeroed block, whose
/// bytes must be zero). For a reader, which frees and makes blocks of the same few sizes again
/// and again; not for the merge loop, whose blocks are best fresh mappings (a spare grown into
/// a table moves where fewer of its pages are huge). [`release`] unmaps the spares.
pub fn keeping_spares<T>(f: impl FnOnce() -> T) -> T {
    #[cfg(target_os = "linux")]
    {
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                KEEPING.with(|k| k.set(self.0));
            }
        }
        let _restore = Restore(KEEPING.with(|k| k.replace(true)));
        f()
    }
    #[cfg(not(target_os = "linux"))]
    f()
}

#[cfg(target_os = "linux")]
fn keeping() -> bool {
    KEEPING.with(std::cell::Cell::get)
}

/// Freed mappings of at most this many bytes may be kept as spares...
#[cfg(target_os = "linux")]
const SPARE_MAX: usize = 8 << 20;

/// ... in these slots (0 for none, else a mapping as [`pack`] writes it), for the next mapped
/// blocks to take: a block made from a spare is not faulted in and zeroed by the system again.
#[cfg(target_os = "linux")]
static SPARES: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];

/// A mapping as one word: its address (a multiple of 4096) with its length in 4096-byte pages
/// in the low 12 bits, or `None` if it does not fit (4095 pages at most).
#[cfg(target_os = "linux")]
fn pack(p: *mut u8, len: usize) -> Option<usize> {
    let pages = len.div_ceil(4096);
    (p as usize % 4096 == 0 && pages < 4096 && p as usize != 0).then_some(p as usize | pages)
}

#[cfg(target_os = "linux")]
fn unpack(word: usize) -> (*mut u8, usize) {
    ((word & !4095) as *mut u8, (word & 4095) * 4096)
}

/// Unmaps the spares (see [`keeping_spares`]).
pub fn drop_spares() {
    #[cfg(target_os = "linux")]
    for slot in &SPARES {
        let word = slot.swap(0, Ordering::AcqRel);
        if word != 0 {
            let (p, len) = unpack(word);
            // SAFETY: a spare is a mapping of `len` bytes (page-rounded) no block uses.
            unsafe { libc::munmap(p.cast(), len) };
        }
    }
}

/// A mapping of `size` bytes: made from a spare if it is no longer than a spare may be (the
/// shortest one at least as long first, cut to size where it is; else a shorter one, grown,
/// which may move), else a new one.
#[cfg(target_os = "linux")]
unsafe fn map_reusing(size: usize) -> *mut u8 {
    if size > SPARE_MAX {
        return map(size, HUGE);
    }
    let best = SPARES
        .iter()
        .map(|s| (s, s.load(Ordering::Relaxed)))
        .filter(|&(_, word)| word != 0 && unpack(word).1 >= size)
        .min_by_key(|&(_, word)| unpack(word).1)
        .map(|(s, _)| s);
    for slot in best.into_iter().chain(&SPARES) {
        let word = slot.swap(0, Ordering::AcqRel);
        if word != 0 {
            let (p, len) = unpack(word);
            let q = libc::mremap(p.cast(), len, size, libc::MREMAP_MAYMOVE);
            if q == libc::MAP_FAILED {
                libc::munmap(p.cast(), len);
                break;
            }
            huge(q, size, HUGE);
            return q.cast();
        }
    }
    map(size, HUGE)
}

/// Keeps a freed mapping as a spare if it is small enough and a slot is free, else unmaps it.
#[cfg(target_os = "linux")]
unsafe fn unmap_keeping(p: *mut u8, size: usize) {
    if size <= SPARE_MAX {
        if let Some(word) = pack(p, size) {
            for slot in &SPARES {
                if slot.compare_exchange(0, word, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                    return;
                }
            }
        }
    }
    libc::munmap(p.cast(), size);
}

/// Whether a block of this layout is mapped directly: large, and aligned no more than a page
/// (mappings are page-aligned). A block's layout is the same when it is freed as when it was
/// allocated, so this tells both calls the same thing.
#[cfg(target_os = "linux")]
fn mapped(layout: &Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= 4096
}

/// A new mapping of `size` bytes, asking for huge pages if it is at least `huge_from`.
#[cfg(target_os = "linux")]
unsafe fn map(size: usize, huge_from: usize) -> *mut u8 {
    let p = libc::mmap(
        std::ptr::null_mut(),
        size,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if p == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        huge(p, size, huge_from);
        p.cast()
    }
}

/// Asks for transparent huge pages on a mapping of `size` bytes if it is at least `from` (see
/// the module doc). A refusal is no error: the block works the same with small pages.
#[cfg(target_os = "linux")]
unsafe fn huge(p: *mut libc::c_void, size: usize, from: usize) {
    if size >= from {
        libc::madvise(p, size, libc::MADV_HUGEPAGE);
    }
}

/// `moved`, a new block of `new_size` bytes (null if none could be made), given the first
/// bytes of the block of `size` bytes at `ptr`, which `free` then gives back; `ptr` is kept if
/// `moved` is null, as `realloc` must.
#[cfg(target_os = "linux")]
unsafe fn move_block<R>(ptr: *const u8, size: usize, moved: *mut u8, new_size: usize, free: impl FnOnce() -> R) -> *mut u8 {
    if !moved.is_null() {
        std::ptr::copy_nonoverlapping(ptr, moved, size.min(new_size));
        free();
    }
    moved
}

// SAFETY: every block is either from `System` (and goes back to it) or a private anonymous
// mapping of at least its size (and is unmapped, remapped or kept as a spare as a whole; a spare
// is in one slot at a time, taken out by a swap before it is made a block again, and a block
// made from one is not zeroed, so `alloc_zeroed` never takes one); `mapped` sends each block to
// the same side on every call, since it depends only on the layout, which the caller passes
// unchanged (and `realloc` moves blocks that change sides).
#[cfg(target_os = "linux")]
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            if keeping() { map_reusing(layout.size()) } else { map(layout.size(), HUGE) }
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            map(layout.size(), HUGE) // anonymous mappings are zero-filled
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if mapped(&layout) {
            if keeping() {
                unmap_keeping(ptr, layout.size());
            } else {
                libc::munmap(ptr.cast(), layout.size());
            }
        } else {
            System.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        match (mapped(&layout), mapped(&new_layout)) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => {
                let p = libc::mremap(ptr.cast(), layout.size(), new_size, libc::MREMAP_MAYMOVE);
                if p != libc::MAP_FAILED {
                    huge(p, new_size, HUGE_GROWN);
                    return p.cast();
                }
                // A remap fails where the system refuses (or if the mapping were split): a new
                // mapping and a copy, as glibc does.
                let moved = map(new_size, HUGE_GROWN);
                move_block(ptr, layout.size(), moved, new_size, || libc::munmap(ptr.cast(), layout.size()))
            }
            (false, true) => {
                // A block grown past `LARGE` into a mapping of its own: grown, so huge pages
                // only from `HUGE_GROWN` (or a spare, under `keeping_spares`).
                let moved = if keeping() { map_reusing(new_size) } else { map(new_size, HUGE_GROWN) };
                move_block(ptr, layout.size(), moved, new_size, || System.dealloc(ptr, layout))
            }
            (true, false) => move_block(ptr, layout.size(), self.alloc(new_layout), new_size, || self.dealloc(ptr, layout)),
        }
    }
}

#[cfg(not(target_os = "linux"))]
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        System.realloc(ptr, layout, new_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mapping with huge pages asked on all of it grows past [`HUGE_GROWN`] and keeps its
    /// bytes; one split by advice on part of it, which a remap of the whole cannot grow, is
    /// moved instead (see [`blocks_keep_their_bytes_across_sizes`] for the other moves).
    #[cfg(target_os = "linux")]
    #[test]
    fn advised_and_split_mappings_grow() {
        let a = Allocator;
        let byte = |i: usize| (i * 31 % 251) as u8;
        // SAFETY: each block is used within its layout, and given back once with it.
        unsafe {
            let fill = |p: *mut u8, from: usize, to: usize| (from..to).for_each(|i| *p.add(i) = byte(i));
            let check = |p: *const u8, len: usize| assert!((0..len).all(|i| *p.add(i) == byte(i)), "bytes lost");
            let mut layout = Layout::from_size_align(512 << 10, 8).unwrap();
            let mut p = a.alloc(layout);
            fill(p, 0, layout.size());
            for (size, split) in [(3 << 20, false), ((40 << 20) + 100, false), ((41 << 20) + 7, true), (5 << 20, false), (100 << 10, false)] {
                if split {
                    // Other advice on its first pages: two mappings with different flags.
                    libc::madvise(p.cast(), 64 << 10, libc::MADV_NOHUGEPAGE);
                } else if mapped(&layout) {
                    libc::madvise(p.cast(), layout.size(), libc::MADV_HUGEPAGE);
                }
                let q = a.realloc(p, layout, size);
                assert!(!q.is_null(), "realloc to {size} failed");
                check(q, layout.size().min(size));
                fill(q, layout.size().min(size), size);
                (p, layout) = (q, Layout::from_size_align(size, 8).unwrap());
            }
            a.dealloc(p, layout);
        }
    }

    /// Under `keeping_spares`, a freed mapped block is made into the next one (at the same
    /// address when it is no longer), with all its bytes usable; elsewhere, and for zeroed
    /// blocks, a new mapping is made; `release` gives the spares back.
    #[cfg(target_os = "linux")]
    #[test]
    fn spares_are_reused_only_where_asked() {
        let a = Allocator;
        let layout = |size| Layout::from_size_align(size, 8).unwrap();
        let (big, small) = (layout(3 * LARGE), layout(LARGE + 12345));
        let spares = || SPARES.iter().filter(|s| s.load(Ordering::Relaxed) != 0).count();
        // A spare's length is its mapping's: whole pages.
        let p = 0x7f00_1234_5000 as *mut u8;
        assert_eq!(pack(p, 4096 * 3 + 1).map(unpack), Some((p, 4096 * 4)));
        assert_eq!(pack(p, 4096 * 3).map(unpack), Some((p, 4096 * 3)));
        assert_eq!(pack(p, 4096 * 4096), None, "too long to pack");
        // SAFETY: each block is used within its layout and freed once with it.
        unsafe {
            keeping_spares(|| {
                let p = a.alloc(big);
                std::ptr::write_bytes(p, 7, big.size());
                a.dealloc(p, big);
                assert_eq!(spares(), 1);
                let q = a.alloc(small);
                assert_eq!(q, p, "a spare at least as long is cut to size where it is");
                std::ptr::write_bytes(q, 1, small.size());
                a.dealloc(q, small);
                let z = a.alloc_zeroed(small); // not the spare of ones
                assert!(std::slice::from_raw_parts(z, small.size()).iter().all(|&b| b == 0));
                assert_eq!(spares(), 1);
                a.dealloc(z, small);
                assert_eq!(spares(), 2);
                let r = a.alloc(layout(SPARE_MAX + 1)); // too long for a spare
                assert_eq!(spares(), 2);
                a.dealloc(r, layout(SPARE_MAX + 1));
                let g = a.alloc(layout(5 * LARGE)); // longer than both: one grows
                std::ptr::write_bytes(g, 2, 5 * LARGE);
                assert_eq!(spares(), 1);
                a.dealloc(g, layout(5 * LARGE));
                // Spares of 5 and 1 MiB and a bit: a block of 1 MiB is made from the shorter.
                let short = SPARES.iter().map(|s| unpack(s.load(Ordering::Relaxed))).min_by_key(|&(_, len)| len).unwrap();
                assert_eq!(short.1, small.size().div_ceil(4096) * 4096);
                let b = a.alloc(layout(LARGE));
                assert_eq!(b, short.0, "not the shortest spare long enough");
                a.dealloc(b, layout(LARGE));
            });
            release();
            assert_eq!(spares(), 0);
            let p = a.alloc(big);
            a.dealloc(p, big);
            assert_eq!(spares(), 0, "kept outside keeping_spares");
        }
    }

    /// The pages `discard` gives back read as zeros (on Linux): only whole pages inside the
    /// items, each once (a page before `from` is not given back again).
    #[test]
    fn discarded_pages_are_given_back_whole() {
        let mut items = vec![7u64; 3 * LARGE / 8];
        let page = 4096 / 8;
        // Items are whole pages from the first page boundary in the buffer on.
        let first = (items.as_ptr() as usize).next_multiple_of(4096) - items.as_ptr() as usize;
        assert_eq!(first % 8, 0);
        let first = first / 8;
        let mut from = 0;
        // SAFETY: zero is a valid u64, and the items discarded are read only to see zeros.
        unsafe { discard(&mut items[..first + 11 * page / 2], &mut from) };
        let linux = cfg!(target_os = "linux");
        let zeros = |items: &[u64]| items.iter().filter(|&&x| x == 0).count();
        assert!(items[..first].iter().all(|&x| x == 7), "a page partly outside is kept");
        assert_eq!(zeros(&items[first..first + 5 * page]), if linux { 5 * page } else { 0 });
        assert!(items[first + 5 * page..].iter().all(|&x| x == 7), "the half page is kept");
        items[first..first + 5 * page].iter_mut().for_each(|x| *x = 1);
        // SAFETY: as above.
        unsafe { discard(&mut items[..first + 6 * page], &mut from) };
        assert!(items[..first + 5 * page].iter().all(|&x| x != 0), "given back again");
        assert_eq!(zeros(&items[first + 5 * page..first + 6 * page]), if linux { page } else { 0 });
        assert!(items[first + 6 * page..].iter().all(|&x| x == 7));
    }

    /// Grows and shrinks blocks across the `LARGE` boundary, checking that their contents
    /// survive every move and that zeroed blocks are zero.
    #[test]
    fn blocks_keep_their_bytes_across_sizes() {
        let a = Allocator;
        for align in [1, 8, 64, 4096] {
            let sizes = [16, LARGE - 1, LARGE, 3 * LARGE + 5, 100, 2 * LARGE, 7];
            let mut layout = Layout::from_size_align(sizes[0], align).unwrap();
            // SAFETY: each block is used within its current layout and freed once with it.
            unsafe {
                let mut p = a.alloc_zeroed(layout);
                assert!(!p.is_null());
                assert!(std::slice::from_raw_parts(p, layout.size()).iter().all(|&b| b == 0));
                for (k, &size) in sizes.iter().enumerate().skip(1) {
                    std::ptr::write_bytes(p, k as u8, layout.size());
                    let kept = layout.size().min(size);
                    p = a.realloc(p, layout, size);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0);
                    layout = Layout::from_size_align(size, align).unwrap();
                    assert!(std::slice::from_raw_parts(p, kept).iter().all(|&b| b == k as u8), "size {size}");
                }
                a.dealloc(p, layout);
                let big = Layout::from_size_align(2 * LARGE, align).unwrap();
                let z = a.alloc_zeroed(big);
                assert!(std::slice::from_raw_parts(z, big.size()).iter().all(|&b| b == 0));
                a.dealloc(z, big);
            }
        }
    }
}
