//! RPC structures, queue headers, sequencer payloads and event payloads
//! (group `gsp_rpc_msgq`).

use super::with_aliases;
use super::with_trailing;
use crate::layout::Struct;
use core::mem::offset_of;
use core::mem::size_of;
use nvbare_gsp::abi::*;

pub(super) fn structs() -> Vec<Struct> {
    vec![
        crate::layout!("rpc_os_error_log_v17_00" => RpcOsErrorLog {
            "exceptType" => except_type,
            "runlistId" => runlist_id,
            "chid" => chid,
            "errString" => err_string,
            "preemptiveRemovalPreviousXid" => preemptive_removal_previous_xid,
        }),
        with_trailing(
            crate::layout!("rpc_post_event_v17_00" => RpcPostEvent {
                "hClient" => h_client,
                "hEvent" => h_event,
                "notifyIndex" => notify_index,
                "data" => data,
                "info16" => info16,
                "status" => status,
                "eventDataSize" => event_data_size,
                "bNotifyList" => b_notify_list,
            }),
            "eventData[0]",
            RPC_POST_EVENT_DATA_OFFSET,
            1,
        ),
        with_trailing(
            crate::layout!("rpc_rc_triggered_v17_02" => RpcRcTriggered {
                "nv2080EngineType" => nv2080_engine_type,
                "chid" => chid,
                "gfid" => gfid,
                "exceptLevel" => except_level,
                "exceptType" => except_type,
                "scope" => scope,
                "partitionAttributionId" => partition_attribution_id,
                "mmuFaultAddrLo" => mmu_fault_addr_lo,
                "mmuFaultAddrHi" => mmu_fault_addr_hi,
                "mmuFaultType" => mmu_fault_type,
                "bCallbackNeeded" => b_callback_needed,
                "rcJournalBufferSize" => rc_journal_buffer_size,
            }),
            "rcJournalBuffer[0]",
            size_of::<RpcRcTriggered>(),
            1,
        ),
        crate::layout!("rpc_gsp_lockdown_notice_v17_00" => RpcGspLockdownNotice {
            "bLockdownEngaging" => b_lockdown_engaging,
        }),
        with_trailing(
            crate::layout!("rpc_ucode_libos_print_v1E_08" => RpcUcodeLibosPrint {
                "ucodeEngDesc" => ucode_eng_desc,
                "libosPrintBufSize" => libos_print_buf_size,
            }),
            "libosPrintBuf[0]",
            size_of::<RpcUcodeLibosPrint>(),
            1,
        ),
        with_aliases(
            crate::layout!("rpc_message_header_v03_00" => RpcMessageHeader {
                "header_version" => header_version,
                "signature" => signature,
                "length" => length,
                "function" => function,
                "rpc_result" => rpc_result,
                "rpc_result_private" => rpc_result_private,
                "sequence" => sequence,
                "u.spare" => spare,
            }),
            &[("u.cpuRmGfid", offset_of!(RpcMessageHeader, spare), 4)],
        ),
        with_trailing(
            crate::layout!("rpc_gsp_rm_alloc_v03_00" => RpcGspRmAlloc {
                "hClient" => h_client,
                "hParent" => h_parent,
                "hObject" => h_object,
                "hClass" => h_class,
                "status" => status,
                "paramsSize" => params_size,
                "flags" => flags,
                "reserved" => reserved,
            }),
            "params[0]",
            size_of::<RpcGspRmAlloc>(),
            1,
        ),
        with_trailing(
            crate::layout!("rpc_gsp_rm_control_v03_00" => RpcGspRmControl {
                "hClient" => h_client,
                "hObject" => h_object,
                "cmd" => cmd,
                "status" => status,
                "paramsSize" => params_size,
                "flags" => flags,
            }),
            "params[0]",
            size_of::<RpcGspRmControl>(),
            1,
        ),
        with_trailing(
            crate::layout!("struct pte_desc" => PteDesc {}),
            "pte_pde[0]",
            size_of::<PteDesc>(),
            8,
        ),
        crate::layout!("rpc_alloc_memory_v13_01" => RpcAllocMemory {
            "hClient" => h_client,
            "hDevice" => h_device,
            "hMemory" => h_memory,
            "hClass" => h_class,
            "flags" => flags,
            "pteAdjust" => pte_adjust,
            "format" => format,
            "length" => length,
            "pageCount" => page_count,
            "pteDesc" => pte_desc,
        }),
        crate::layout!("NV0080_CTRL_DMA_SET_PAGE_DIRECTORY_PARAMS_v1E_05" => Nv0080CtrlDmaSetPageDirectoryParams {
            "physAddress" => phys_address,
            "numEntries" => num_entries,
            "flags" => flags,
            "hVASpace" => h_va_space,
            "chId" => ch_id,
            "subDeviceId" => sub_device_id,
            "pasid" => pasid,
        }),
        crate::layout!("rpc_set_page_directory_v1E_05" => RpcSetPageDirectory {
            "hClient" => h_client,
            "hDevice" => h_device,
            "pasid" => pasid,
            "params" => params,
        }),
        crate::layout!("rpc_unloading_guest_driver_v1F_07" => RpcUnloadingGuestDriver {
            "bInPMTransition" => b_in_pm_transition,
            "bGc6Entering" => b_gc6_entering,
            "newLevel" => new_level,
        }),
        with_trailing(
            crate::layout!("rpc_run_cpu_sequencer_v17_00" => RpcRunCpuSequencer {
                "bufferSizeDWord" => buffer_size_dword,
                "cmdIndex" => cmd_index,
                "regSaveArea" => reg_save_area,
            }),
            "commandBuffer[0]",
            size_of::<RpcRunCpuSequencer>(),
            4,
        ),
        crate::layout!("msgqTxHeader" => MsgqTxHeader {
            "version" => version,
            "size" => size,
            "msgSize" => msg_size,
            "msgCount" => msg_count,
            "writePtr" => write_ptr,
            "flags" => flags,
            "rxHdrOff" => rx_hdr_off,
            "entryOff" => entry_off,
        }),
        crate::layout!("msgqRxHeader" => MsgqRxHeader {
            "readPtr" => read_ptr,
        }),
        crate::layout!("GSP_MSG_QUEUE_ELEMENT" => GspMsgQueueElement {
            "authTagBuffer" => auth_tag_buffer,
            "aadBuffer" => aad_buffer,
            "checkSum" => check_sum,
            "seqNum" => seq_num,
            "elemCount" => elem_count,
            "rpc" => rpc,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_REG_WRITE" => GspSeqBufPayloadRegWrite {
            "addr" => addr,
            "val" => val,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_REG_MODIFY" => GspSeqBufPayloadRegModify {
            "addr" => addr,
            "mask" => mask,
            "val" => val,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_REG_POLL" => GspSeqBufPayloadRegPoll {
            "addr" => addr,
            "mask" => mask,
            "val" => val,
            "timeout" => timeout,
            "error" => error,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_DELAY_US" => GspSeqBufPayloadDelayUs {
            "val" => val,
        }),
        crate::layout!("GSP_SEQ_BUF_PAYLOAD_REG_STORE" => GspSeqBufPayloadRegStore {
            "addr" => addr,
            "index" => index,
        }),
    ]
}
