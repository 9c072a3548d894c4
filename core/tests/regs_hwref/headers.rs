//! Reading NVIDIA's hwref headers, through nvbare's one header reader (`nvbare-hwref`): a
//! chip's own directory in front of the chip-independent `nv_ref.h` (as `nvbare_hwref::Layered`
//! does, owning the chip's headers); repeated definitions of a name must agree.

use std::path::Path;

use nvbare_hwref::Define;
pub use nvbare_hwref::{Headers as Defines, Lookup, split_range};

/// Every header of `dir`.
pub fn load_dir(dir: &Path) -> Defines {
    let mut d = Defines::new();
    d.add_dir(dir, false)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    d
}

/// One header.
pub fn load_file(path: &Path) -> Defines {
    let mut d = Defines::new();
    d.add_file(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    d
}

/// The headers of one chip: its own directory first, then the chip-independent `nv_ref.h`.
pub struct ChipHeaders<'a> {
    pub own: Defines,
    pub common: &'a Defines,
}

impl ChipHeaders<'_> {
    pub fn has(&self, name: &str) -> bool {
        self.own.contains(name) || self.common.contains(name)
    }
}

impl Lookup for ChipHeaders<'_> {
    fn define(&self, name: &str, function_like: bool) -> Result<Option<&Define>, String> {
        match self.own.define(name, function_like)? {
            Some(d) => Ok(Some(d)),
            None => self.common.define(name, function_like),
        }
    }
}
