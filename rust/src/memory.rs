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
//! faulting the pages in one by one costs a trap each. So mappings of 2 MiB or more ask for
//! transparent huge pages (`madvise`; the system may decline, which changes nothing else).

use std::alloc::{GlobalAlloc, Layout, System};

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

/// Blocks of at least this many bytes are mapped straight from the system.
pub const LARGE: usize = 1 << 20;

/// Returns free memory held by the allocator to the operating system (glibc on Linux; a no-op
/// elsewhere, where allocators differ).
pub fn release() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases pages that no allocation uses; it takes no pointer and
    // is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The system allocator, except that large blocks are mapped and unmapped directly (Linux; the
/// system allocator alone elsewhere). See the module doc.
pub struct Allocator;

/// Whether a block of this layout is mapped directly: large, and aligned no more than a page
/// (mappings are page-aligned). A block's layout is the same when it is freed as when it was
/// allocated, so this tells both calls the same thing.
#[cfg(target_os = "linux")]
fn mapped(layout: &Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= 4096
}

#[cfg(target_os = "linux")]
unsafe fn map(size: usize) -> *mut u8 {
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
        huge(p, size);
        p.cast()
    }
}

/// Asks for transparent huge pages on a mapping of at least 2 MiB (see the module doc). A
/// refusal is no error: the block works the same with small pages.
#[cfg(target_os = "linux")]
unsafe fn huge(p: *mut libc::c_void, size: usize) {
    if size >= 2 << 20 {
        libc::madvise(p, size, libc::MADV_HUGEPAGE);
    }
}

// SAFETY: every block is either from `System` (and goes back to it) or a private anonymous
// mapping of at least its size (and is unmapped or remapped as a whole); `mapped` sends each
// block to the same side on every call, since it depends only on the layout, which the caller
// passes unchanged (and `realloc` moves blocks that change sides).
#[cfg(target_os = "linux")]
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            map(layout.size())
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if mapped(&layout) {
            map(layout.size()) // anonymous mappings are zero-filled
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if mapped(&layout) {
            libc::munmap(ptr.cast(), layout.size());
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
                if p == libc::MAP_FAILED {
                    std::ptr::null_mut()
                } else {
                    huge(p, new_size);
                    p.cast()
                }
            }
            _ => {
                let moved = self.alloc(new_layout);
                if !moved.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                moved
            }
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
