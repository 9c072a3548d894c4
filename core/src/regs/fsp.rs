//! FSP (Hopper and Blackwell): the EMEM message channels the chain-of-trust boot talks
//! through (hwref `dev_fsp_pri.h`), and the FSP boot status (hwref `dev_therm.h`).
//!
//! Channel `i` of each array sits at base + 8·i; the send queue is `QUEUE_HEAD/TAIL`, the
//! reply queue `MSGQ_HEAD/TAIL`.

use super::macros::register;
use crate::chip::Arch;

register! {
    /// `NV_PFSP_EMEMC(i)`: EMEM port control of channel `i`.
    pub struct FspEmemc @ [0x008f_2ac0; stride 8; count 8]
        hwref("NV_PFSP_EMEMC"; absent [GB100, GB202],
              only Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x)
    {
        /// Word offset within the block.
        offs / with_offs: u8 = 7:2, hwref("OFFS");
        /// 256-byte block.
        blk / with_blk: u8 = 15:8, hwref("BLK");
        /// Auto-increment the offset on each `EMEMD` write.
        aincw / with_aincw: bool = 24:24, hwref("AINCW");
        /// Auto-increment the offset on each `EMEMD` read.
        aincr / with_aincr: bool = 25:25, hwref("AINCR");
    }

    /// `NV_PFSP_EMEMD(i)`: EMEM port data of channel `i`.
    pub struct FspEmemd @ [0x008f_2ac4; stride 8; count 8]
        hwref("NV_PFSP_EMEMD"; absent [GB100, GB202],
              only Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x)
    {
        /// The word.
        data / with_data: u32 = 31:0, hwref("DATA");
    }

    /// `NV_PFSP_QUEUE_HEAD(i)`: head of the CPU→FSP queue of channel `i`; writing it
    /// interrupts the FSP, so it is written last.
    pub struct FspQueueHead @ [0x008f_2c00; stride 8; count 8]
        hwref("NV_PFSP_QUEUE_HEAD"; absent [GB100, GB202],
              only Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x)
    {
        /// EMEM offset of the head.
        head / with_head: u32 = 31:0, hwref("ADDRESS");
    }

    /// `NV_PFSP_QUEUE_TAIL(i)`: tail of the CPU→FSP queue (offset of the last dword).
    pub struct FspQueueTail @ [0x008f_2c04; stride 8; count 8]
        hwref("NV_PFSP_QUEUE_TAIL"; absent [GB100, GB202],
              only Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x)
    {
        /// EMEM offset of the tail.
        tail / with_tail: u32 = 31:0, hwref("ADDRESS");
    }

    /// `NV_PFSP_MSGQ_HEAD(i)`: head of the FSP→CPU reply queue of channel `i`.
    pub struct FspMsgqHead @ [0x008f_2c80; stride 8; count 8]
        hwref("NV_PFSP_MSGQ_HEAD"; absent [GB100, GB202],
              only Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x)
    {
        /// EMEM offset of the head.
        head / with_head: u32 = 31:0, hwref("VAL");
    }

    /// `NV_PFSP_MSGQ_TAIL(i)`: tail of the FSP→CPU reply queue of channel `i`.
    pub struct FspMsgqTail @ [0x008f_2c84; stride 8; count 8]
        hwref("NV_PFSP_MSGQ_TAIL"; absent [GB100, GB202],
              only Arch::Hopper | Arch::BlackwellGb10x | Arch::BlackwellGb20x)
    {
        /// EMEM offset of the tail.
        tail / with_tail: u32 = 31:0, hwref("VAL");
    }

    /// `NV_THERM_I2CS_SCRATCH`: FSP boot status (`_FSP_BOOT_COMPLETE_STATUS_SUCCESS` = 0xff
    /// once the FSP is ready). GB20x moved it (0xad00bc; GH100 and GB100 have 0x200bc).
    pub struct ThermI2csScratch @ [match arch {
        Arch::Hopper | Arch::BlackwellGb10x => 0x0002_00bc,
        Arch::BlackwellGb20x => 0x00ad_00bc,
    }] hwref("NV_THERM_I2CS_SCRATCH") {
        /// The scratch value.
        data / with_data: u32 = 31:0, hwref("DATA");
    }
}

impl ThermI2csScratch {
    /// `NV_THERM_I2CS_SCRATCH_FSP_BOOT_COMPLETE_STATUS_SUCCESS`.
    pub const FSP_BOOT_COMPLETE_SUCCESS: u32 = 0xff;

    /// Whether the FSP reports its boot complete.
    pub fn fsp_boot_complete(self) -> bool {
        self.data() == Self::FSP_BOOT_COMPLETE_SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regs::RegisterError;

    #[test]
    fn emem_channel_stride_is_eight() {
        assert_eq!(FspEmemc::address(0), Ok(0x8f2ac0));
        assert_eq!(FspEmemd::address(1), Ok(0x8f2acc));
        assert_eq!(FspMsgqTail::address(7), Ok(0x8f2cbc));
        assert!(FspQueueHead::address(8).is_err());
    }

    #[test]
    fn fsp_boot_status_address_per_arch() {
        assert_eq!(ThermI2csScratch::address(Arch::Hopper), Ok(0x200bc));
        assert_eq!(
            ThermI2csScratch::address(Arch::BlackwellGb20x),
            Ok(0xad00bc)
        );
        assert_eq!(
            ThermI2csScratch::address(Arch::Ada),
            Err(RegisterError::NotOnArch {
                register: "NV_THERM_I2CS_SCRATCH",
                arch: Arch::Ada
            })
        );
        assert!(ThermI2csScratch::from_raw(0xff).fsp_boot_complete());
        assert!(!ThermI2csScratch::from_raw(0xbadf_4100).fsp_boot_complete());
    }

    #[test]
    fn ememc_send_setup() {
        let reg = FspEmemc::default()
            .with_offs(0)
            .with_blk(0)
            .with_aincw(true);
        assert_eq!(reg.raw(), 1 << 24);
    }
}
