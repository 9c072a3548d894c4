//! The FSP chain of trust: wait for the FSP, send it the COT message over EMEM channel 0,
//! check its reply, then wait for GSP-FMC to release the GSP.
//!
//! Send (`kfspSendPacket_GH100`): wait `QUEUE_HEAD == QUEUE_TAIL`; `EMEMC` = offset 0 with
//! write auto-increment; the packet's dwords to `EMEMD`; check the port advanced by that
//! many dwords; `QUEUE_TAIL` = size - 4, then `QUEUE_HEAD` = 0 (which interrupts FSP, so
//! it comes last). Receive (`kfspReadPacket_GH100`): wait `MSGQ_HEAD != MSGQ_TAIL`;
//! size = tail - head + 4; `EMEMC` with read auto-increment; read; `MSGQ_TAIL` =
//! `MSGQ_HEAD` = head. The reply (`kfspProcessCommandResponse_GH100`) must be
//! `NVDM_TYPE_FSP_RESPONSE` for command type `NVDM_TYPE_COT` with `errorCode` `FSP_OK`
//! (tinygrad checks none of it).
//!
//! Release (`kgspBootstrap_GH100`): `NV_PGSP_FALCON_HWCFG2` must read neither 0 nor
//! `0xBADF41xx` (`_kfspIsGspTargetMaskReleased`), then `RISCV_BR_PRIV_LOCKDOWN` (bit 13)
//! must clear, a non-zero `MAILBOX0` that is not the boot-args address being GSP-FMC's error
//! code (`_kgspLockdownReleasedOrFmcError`). A 0xBADF41xx read has bit 13 clear too, so
//! testing bit 13 alone (as tinygrad does) reports success too early. Then `FALCON_OS` gets
//! the bootloader's `appVersion` and the RISC-V core must be running.

use alloc::vec::Vec;

use nvbare_gsp::fsp::{NVDM_TYPE_COT, cot_message, cot_payload, parse_response};

use crate::boot::Timeouts;
use crate::boot::error::BootErrorKind;
use crate::boot::hal::ChipHal;
use crate::boot::report::Timeline;
use crate::hal::{Platform, PollError, Wait};
use crate::regs::falcon::{FalconHwcfg2, FalconMailbox0, FalconMailbox1, FalconOs, RiscvCpuctl};
use crate::regs::fsp::{
    FspEmemc, FspEmemd, FspMsgqHead, FspMsgqTail, FspQueueHead, FspQueueTail, ThermI2csScratch,
};
use crate::regs::{FalconBase, RiscvBase};

/// The EMEM channel RM uses (`FSP_EMEM_CHANNEL_RM`).
const CHANNEL: usize = 0;
/// Pause between polls of FSP and GSP registers: these waits take milliseconds.
const PAUSE_NS: u64 = 20_000;
/// The largest packet (`FSP_EMEM_CHANNEL_RM_SIZE`).
const MAX_PACKET: u32 = 1024;

/// Fails the probe of a wait if the device vanished (a register reads all ones).
fn present(p: &impl Platform, value: u32) -> Result<(), BootErrorKind> {
    if value == u32::MAX && !p.is_present() {
        return Err(BootErrorKind::gone("polling an FSP or GSP register"));
    }
    Ok(())
}

/// Waits for the FSP to report its boot complete (`kfspWaitForSecureBoot_*`).
pub fn wait_ready(
    p: &impl Platform,
    hal: &ChipHal,
    tl: &mut Timeline,
    timeout_ns: u64,
) -> Result<(), BootErrorKind> {
    let register = hal.fsp.boot_status_register();
    let mut value = 0;
    let wait = Wait::pausing("the FSP's boot complete", timeout_ns, PAUSE_NS);
    let r = tl.try_poll(p.clock(), wait, || {
        value = p.read32(register);
        present(p, value)?;
        Ok(ThermI2csScratch::from_raw(value)
            .fsp_boot_complete()
            .then_some(()))
    });
    match r {
        Ok(()) => Ok(()),
        Err(PollError::Failed(e)) => Err(e),
        Err(PollError::TimedOut(timed_out)) => Err(BootErrorKind::FspNotReady {
            register,
            value,
            timed_out,
        }),
    }
}

fn reg<T>(r: Result<T, crate::regs::RegisterError>) -> T {
    match r {
        Ok(v) => v,
        // PANIC: every register here is indexed with channel 0 of 8.
        Err(e) => unreachable!("{e}"),
    }
}

/// The EMEM port's dword offset (`BLK` * 64 + `OFFS`).
fn emem_offset(p: &impl Platform) -> u32 {
    let c = reg(FspEmemc::read(p, CHANNEL));
    u32::from(c.blk()) * 64 + u32::from(c.offs())
}

/// Sends the COT message for GSP-FMC at `fmc_image` with boot parameters at
/// `boot_params` and checks FSP's answer.
pub fn chain_of_trust(
    p: &impl Platform,
    hal: &ChipHal,
    images: &crate::boot::firmware::BootImages<'_>,
    fmc_image: u64,
    boot_params: u64,
    tl: &mut Timeline,
    timeouts: &Timeouts,
) -> Result<(), BootErrorKind> {
    let params = hal.fsp.cot_params(fmc_image, boot_params);
    let payload = cot_payload(
        &params,
        &images.fmc.hash,
        images.fmc.public_key,
        images.fmc.signature,
    )
    .map_err(|_| BootErrorKind::Structure {
        what: "the COT payload",
        why: "the FMC's public key or signature exceeds its 384-byte field",
    })?;
    let msg = cot_message(&payload).map_err(|_| BootErrorKind::Structure {
        what: "the COT message",
        why: "larger than one 1 KiB FSP packet",
    })?;
    send_packet(p, &msg, tl, timeouts.fsp_ns)?;
    let reply = receive_packet(p, tl, timeouts.fsp_ns)?;
    let r = parse_response(&reply).map_err(BootErrorKind::FspReplyMalformed)?;
    if r.command_nvdm_type != u32::from(NVDM_TYPE_COT) {
        return Err(BootErrorKind::FspAnsweredOtherCommand {
            command_nvdm_type: r.command_nvdm_type,
        });
    }
    if !r.is_ok() {
        let (name, status) = r.error_name();
        return Err(BootErrorKind::FspRejected {
            error_code: r.error_code,
            name,
            status,
        });
    }
    Ok(())
}

fn send_packet(
    p: &impl Platform,
    packet: &[u8],
    tl: &mut Timeline,
    timeout_ns: u64,
) -> Result<(), BootErrorKind> {
    let wait = Wait::pausing("the FSP's command queue to drain", timeout_ns, PAUSE_NS);
    let r = tl.try_poll(p.clock(), wait, || {
        let head = reg(FspQueueHead::read(p, CHANNEL)).raw();
        let tail = reg(FspQueueTail::read(p, CHANNEL)).raw();
        present(p, head)?;
        Ok((head == tail).then_some(()))
    });
    match r {
        Ok(()) => {}
        Err(PollError::Failed(e)) => return Err(e),
        Err(PollError::TimedOut(timed_out)) => return Err(BootErrorKind::FspBusy { timed_out }),
    }
    // The framed message is whole dwords (`frame_message` pads it).
    let words: Vec<u32> = packet
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect();
    reg(FspEmemc::default().with_aincw(true).write(p, CHANNEL));
    let start = emem_offset(p);
    for w in &words {
        reg(FspEmemd::default().with_data(*w).write(p, CHANNEL));
    }
    // CAST: at most 256 dwords (one 1 KiB packet).
    let n = words.len() as u32;
    let advanced = emem_offset(p).wrapping_sub(start);
    if advanced != n {
        return Err(BootErrorKind::FspEmem { words: n, advanced });
    }
    reg(FspQueueTail::default()
        .with_tail(n * 4 - 4)
        .write(p, CHANNEL));
    reg(FspQueueHead::default().with_head(0).write(p, CHANNEL));
    Ok(())
}

fn receive_packet(
    p: &impl Platform,
    tl: &mut Timeline,
    timeout_ns: u64,
) -> Result<Vec<u8>, BootErrorKind> {
    let wait = Wait::pausing("the FSP's reply", timeout_ns, PAUSE_NS);
    let r = tl.try_poll(p.clock(), wait, || {
        let head = reg(FspMsgqHead::read(p, CHANNEL)).raw();
        let tail = reg(FspMsgqTail::read(p, CHANNEL)).raw();
        present(p, head)?;
        Ok((head != tail).then_some((head, tail)))
    });
    let (head, tail) = match r {
        Ok(ht) => ht,
        Err(PollError::Failed(e)) => return Err(e),
        Err(PollError::TimedOut(timed_out)) => {
            return Err(BootErrorKind::FspNoReply { timed_out });
        }
    };
    // The tail names the last dword of the packet.
    let size = tail.wrapping_sub(head).wrapping_add(4);
    if !(4..=MAX_PACKET).contains(&size) || size % 4 != 0 {
        return Err(BootErrorKind::FspReplySize { head, tail });
    }
    reg(FspEmemc::default().with_aincr(true).write(p, CHANNEL));
    let mut out = Vec::with_capacity(size as usize);
    for _ in 0..size / 4 {
        out.extend_from_slice(&reg(FspEmemd::read(p, CHANNEL)).data().to_le_bytes());
    }
    let advanced = emem_offset(p);
    // Tell FSP the packet was taken: TAIL = HEAD.
    reg(FspMsgqTail::default().with_tail(head).write(p, CHANNEL));
    reg(FspMsgqHead::default().with_head(head).write(p, CHANNEL));
    if advanced != size / 4 {
        return Err(BootErrorKind::FspEmem {
            words: size / 4,
            advanced,
        });
    }
    Ok(out)
}

/// Waits for GSP-FMC to take over: target mask released, then lockdown released without
/// an FMC error; programs `FALCON_OS` and checks the RISC-V core runs.
pub fn wait_released(
    p: &impl Platform,
    boot_args: u64,
    app_version: u32,
    tl: &mut Timeline,
    timeouts: &Timeouts,
) -> Result<(), BootErrorKind> {
    let gsp = FalconBase::GSP;
    let mut hwcfg2 = 0;
    let wait = Wait::pausing(
        "the GSP's target mask release",
        timeouts.lockdown_ns,
        PAUSE_NS,
    );
    let r = tl.try_poll(p.clock(), wait, || {
        let h = FalconHwcfg2::read(p, gsp);
        hwcfg2 = h.raw();
        present(p, hwcfg2)?;
        Ok(h.target_mask_released().then_some(()))
    });
    match r {
        Ok(()) => {}
        Err(PollError::Failed(e)) => return Err(e),
        Err(PollError::TimedOut(timed_out)) => {
            return Err(BootErrorKind::TargetMaskLocked { hwcfg2, timed_out });
        }
    }

    // CAST: the low and high halves of the boot-args bus address.
    let (lo, hi) = (boot_args as u32, (boot_args >> 32) as u32);
    let mut mailbox0 = 0;
    let wait = Wait::pausing(
        "the RISC-V lockdown release",
        timeouts.lockdown_ns,
        PAUSE_NS,
    );
    let r = tl.try_poll(p.clock(), wait, || {
        mailbox0 = FalconMailbox0::read(p, gsp).raw();
        present(p, mailbox0)?;
        if mailbox0 != 0 {
            let mailbox1 = FalconMailbox1::read(p, gsp).raw();
            // The boot-args address still in the mailboxes is not an error code.
            if !(mailbox0 == lo && mailbox1 == hi) {
                return Err(BootErrorKind::FmcError { mailbox0, mailbox1 });
            }
        }
        let h = FalconHwcfg2::read(p, gsp);
        hwcfg2 = h.raw();
        Ok(h.fmc_running().then_some(()))
    });
    match r {
        Ok(()) => {}
        Err(PollError::Failed(e)) => return Err(e),
        Err(PollError::TimedOut(timed_out)) => {
            return Err(BootErrorKind::LockdownNotReleased {
                hwcfg2,
                mailbox0,
                timed_out,
            });
        }
    }
    // kgspBootstrap_GH100 reads MAILBOX0 once more after the wait: an error the FMC wrote as
    // it released lockdown (after this poll's mailbox read) fails the boot too; by then
    // GSP-FMC has consumed (cleared) the boot-args address, so any non-zero value is one.
    let mailbox0 = FalconMailbox0::read(p, gsp).raw();
    present(p, mailbox0)?;
    if mailbox0 != 0 {
        let mailbox1 = FalconMailbox1::read(p, gsp).raw();
        return Err(BootErrorKind::FmcError { mailbox0, mailbox1 });
    }
    FalconOs::default().with_version(app_version).write(p, gsp);
    // kflcnIsRiscvActive: NV_PRISCV_RISCV_CPUCTL_ACTIVE_STAT (bit 7).
    let cpuctl = RiscvCpuctl::read(p, RiscvBase::GSP);
    if !cpuctl.active_stat() {
        return Err(BootErrorKind::RiscvNotRunning {
            cpuctl: cpuctl.raw(),
        });
    }
    Ok(())
}
