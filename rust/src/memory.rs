//! Giving freed memory back to the operating system between the pipeline's stages.
//!
//! glibc's allocator keeps freed memory for reuse, per thread arena: the counting tables, built
//! on the pool's threads and freed once joined, would stay resident while the merge loop, on
//! another thread, allocates its own. Peak memory would then be the sum of both stages instead
//! of the larger of the two. [`release`] hands the free pages of every arena back.

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
