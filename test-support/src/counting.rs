//! A global allocator that counts live heap bytes, for tests and benches that measure
//! memory. Install it in the test or bench binary:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: dynrec_test_support::counting::Counting = dynrec_test_support::counting::Counting;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting live bytes.
pub struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Live heap bytes allocated through [`Counting`] (0 when it is not the global allocator).
pub fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
