//! nvbare-mmu: GPU page-table formats (ver2, ver3), allocators, map/unmap/translate.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
