//! Which classes drive this GPU's engines: the newest the GPU lists wins.

use core::fmt;

use nvbare_gsp::rm::classes as cls;

/// The classes this GPU's engines are driven with, chosen from its class list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classes {
    /// `*_CHANNEL_GPFIFO_A`.
    pub gpfifo: u32,
    /// `*_COMPUTE_*`.
    pub compute: u32,
    /// `*_DMA_COPY_*`.
    pub copy: u32,
    /// `*_USERMODE_A` (the doorbell and GPU timer region).
    pub usermode: u32,
}

/// The GPU lists none of the classes nvbare knows for one engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoClass {
    /// Which engine ("compute").
    pub what: &'static str,
    /// The classes nvbare knows for it, newest first.
    pub known: &'static [u32],
}

impl fmt::Display for NoClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the GPU offers none of the {} classes nvbare knows (",
            self.what
        )?;
        for (i, c) in self.known.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{c:#06x}")?;
        }
        f.write_str("); chip not supported")
    }
}

impl core::error::Error for NoClass {}

/// GPFIFO channel classes, newest first.
pub const GPFIFO: &[u32] = &[
    cls::BLACKWELL_CHANNEL_GPFIFO_A,
    cls::HOPPER_CHANNEL_GPFIFO_A,
    cls::AMPERE_CHANNEL_GPFIFO_A,
    cls::TURING_CHANNEL_GPFIFO_A,
];
/// Compute classes, newest first.
pub const COMPUTE: &[u32] = &[
    cls::BLACKWELL_COMPUTE_B,
    cls::BLACKWELL_COMPUTE_A,
    cls::HOPPER_COMPUTE_A,
    cls::ADA_COMPUTE_A,
    cls::AMPERE_COMPUTE_B,
    cls::AMPERE_COMPUTE_A,
    cls::TURING_COMPUTE_A,
];
/// Copy-engine classes, newest first.
pub const COPY: &[u32] = &[
    cls::BLACKWELL_DMA_COPY_B,
    cls::BLACKWELL_DMA_COPY_A,
    cls::HOPPER_DMA_COPY_A,
    cls::AMPERE_DMA_COPY_B,
    cls::AMPERE_DMA_COPY_A,
    cls::TURING_DMA_COPY_A,
];
/// Usermode classes, newest first.
pub const USERMODE: &[u32] = &[
    cls::BLACKWELL_USERMODE_A,
    cls::HOPPER_USERMODE_A,
    cls::AMPERE_USERMODE_A,
    cls::TURING_USERMODE_A,
];

fn pick(list: &[u32], known: &'static [u32], what: &'static str) -> Result<u32, NoClass> {
    known
        .iter()
        .copied()
        .find(|c| list.contains(c))
        .ok_or(NoClass { what, known })
}

impl Classes {
    /// Newest first: the first the GPU lists wins (HOPPER_* on GH100).
    pub fn choose(list: &[u32]) -> Result<Self, NoClass> {
        Ok(Self {
            gpfifo: pick(list, GPFIFO, "GPFIFO channel")?,
            compute: pick(list, COMPUTE, "compute")?,
            copy: pick(list, COPY, "copy engine")?,
            usermode: pick(list, USERMODE, "usermode")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_listed_class_wins_and_a_missing_engine_is_named() {
        let h200 = [
            cls::HOPPER_CHANNEL_GPFIFO_A,
            cls::AMPERE_CHANNEL_GPFIFO_A,
            cls::HOPPER_COMPUTE_A,
            cls::AMPERE_COMPUTE_B,
            cls::HOPPER_DMA_COPY_A,
            cls::HOPPER_USERMODE_A,
            cls::TURING_USERMODE_A,
        ];
        let c = Classes::choose(&h200).unwrap();
        assert_eq!(
            (c.gpfifo, c.compute, c.copy, c.usermode),
            (0xc86f, 0xcbc0, 0xc8b5, 0xc661)
        );
        // TU102's list (gpuGetClassDescriptorList_TU102, OpenRM 570.144): the Turing classes,
        // with VOLTA_CHANNEL_GPFIFO_A/VOLTA_USERMODE_A beside them.
        let tu102 = [
            cls::TURING_CHANNEL_GPFIFO_A,
            cls::TURING_COMPUTE_A,
            cls::TURING_DMA_COPY_A,
            cls::TURING_USERMODE_A,
            cls::VOLTA_CHANNEL_GPFIFO_A,
            cls::VOLTA_USERMODE_A,
        ];
        let c = Classes::choose(&tu102).unwrap();
        assert_eq!(
            (c.gpfifo, c.compute, c.copy, c.usermode),
            (0xc46f, 0xc5c0, 0xc5b5, 0xc461)
        );
        let e = Classes::choose(&h200[..3]).unwrap_err();
        assert_eq!(e.what, "copy engine");
        let msg = alloc::format!("{e}");
        assert!(
            msg.contains("0xc8b5") && msg.ends_with("chip not supported"),
            "{msg}"
        );
    }
}
