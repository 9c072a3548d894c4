//! NV status codes (`NV_STATUS`, `nvstatus.h`; the list is `nvstatuscodes.h`), with their
//! names and NVIDIA's one-line descriptions.
//!
//! The list is 580.142's, a superset of 570.144's: 580 added `NV_ERR_THRESHOLD_CROSSED`,
//! `NV_ERR_FABRIC_STATE_OUT_OF_SYNC`, `NV_ERR_BUFFER_FULL`, `NV_ERR_BUFFER_EMPTY`,
//! `NV_ERR_MC_FLA_OFFSET_TABLE_FULL`, `NV_ERR_DMA_XFER_FAILED` and
//! `NV_WARN_THRESHOLD_CROSSED` ([`NvStatus::ADDED_IN_580`]); no value changed. GSP-RM 570.144
//! simply never returns the added ones.

use core::fmt;

/// An RM status code (`NV_STATUS`): 0 is success, `0x0001_xxxx` are warnings, the rest
/// errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct NvStatus(pub u32);

/// One entry of `nvstatuscodes.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusCode {
    /// The C name, e.g. `NV_ERR_NO_MEMORY`.
    pub name: &'static str,
    /// The code.
    pub status: NvStatus,
    /// NVIDIA's description.
    pub text: &'static str,
}

macro_rules! status_codes {
    ($($name:ident = $value:literal, $text:literal;)*) => {
        impl NvStatus {
            $(
                #[doc = $text]
                pub const $name: NvStatus = NvStatus($value);
            )*
        }

        /// Every status code, in header order.
        pub const ALL: &[StatusCode] = &[
            $(StatusCode { name: concat!("NV_", stringify!($name)), status: NvStatus($value), text: $text },)*
        ];
    };
}

status_codes! {
    OK = 0x00000000, "Success";
    ERR_GENERIC = 0x0000ffff, "Failure: Generic Error";
    ERR_BROKEN_FB = 0x00000001, "Frame-Buffer broken";
    ERR_BUFFER_TOO_SMALL = 0x00000002, "Buffer passed in is too small";
    ERR_BUSY_RETRY = 0x00000003, "System is busy, retry later";
    ERR_CALLBACK_NOT_SCHEDULED = 0x00000004, "The requested callback API not scheduled";
    ERR_CARD_NOT_PRESENT = 0x00000005, "Card not detected";
    ERR_CYCLE_DETECTED = 0x00000006, "Call cycle detected";
    ERR_DMA_IN_USE = 0x00000007, "Requested DMA is in use";
    ERR_DMA_MEM_NOT_LOCKED = 0x00000008, "Requested DMA memory is not locked";
    ERR_DMA_MEM_NOT_UNLOCKED = 0x00000009, "Requested DMA memory is not unlocked";
    ERR_DUAL_LINK_INUSE = 0x0000000a, "Dual-Link is in use";
    ERR_ECC_ERROR = 0x0000000b, "Generic ECC error";
    ERR_FIFO_BAD_ACCESS = 0x0000000c, "FIFO: Invalid access";
    ERR_FREQ_NOT_SUPPORTED = 0x0000000d, "Requested frequency is not supported";
    ERR_GPU_DMA_NOT_INITIALIZED = 0x0000000e, "Requested DMA not initialized";
    ERR_GPU_IS_LOST = 0x0000000f, "GPU lost from the bus";
    ERR_GPU_IN_FULLCHIP_RESET = 0x00000010, "GPU currently in full-chip reset";
    ERR_GPU_NOT_FULL_POWER = 0x00000011, "GPU not in full power";
    ERR_GPU_UUID_NOT_FOUND = 0x00000012, "GPU UUID not found";
    ERR_HOT_SWITCH = 0x00000013, "System in hot switch";
    ERR_I2C_ERROR = 0x00000014, "I2C Error";
    ERR_I2C_SPEED_TOO_HIGH = 0x00000015, "I2C Error: Speed too high";
    ERR_ILLEGAL_ACTION = 0x00000016, "Current action is not allowed";
    ERR_IN_USE = 0x00000017, "Generic busy error";
    ERR_INFLATE_COMPRESSED_DATA_FAILED = 0x00000018, "Failed to inflate compressed data";
    ERR_INSERT_DUPLICATE_NAME = 0x00000019, "Found a duplicate entry in the requested btree";
    ERR_INSUFFICIENT_RESOURCES = 0x0000001a, "Ran out of a critical resource, other than memory";
    ERR_INSUFFICIENT_PERMISSIONS = 0x0000001b, "The requester does not have sufficient permissions";
    ERR_INSUFFICIENT_POWER = 0x0000001c, "Generic Error: Low power";
    ERR_INVALID_ACCESS_TYPE = 0x0000001d, "This type of access is not allowed";
    ERR_INVALID_ADDRESS = 0x0000001e, "Address not valid";
    ERR_INVALID_ARGUMENT = 0x0000001f, "Invalid argument to call";
    ERR_INVALID_BASE = 0x00000020, "Invalid base";
    ERR_INVALID_CHANNEL = 0x00000021, "Given channel-id not valid";
    ERR_INVALID_CLASS = 0x00000022, "Given class-id not valid";
    ERR_INVALID_CLIENT = 0x00000023, "Given client not valid";
    ERR_INVALID_COMMAND = 0x00000024, "Command passed is not valid";
    ERR_INVALID_DATA = 0x00000025, "Invalid data passed";
    ERR_INVALID_DEVICE = 0x00000026, "Current device is not valid";
    ERR_INVALID_DMA_SPECIFIER = 0x00000027, "The requested DMA specifier is not valid";
    ERR_INVALID_EVENT = 0x00000028, "Invalid event occurred";
    ERR_INVALID_FLAGS = 0x00000029, "Invalid flags passed";
    ERR_INVALID_FUNCTION = 0x0000002a, "Called function is not valid";
    ERR_INVALID_HEAP = 0x0000002b, "Heap corrupted";
    ERR_INVALID_INDEX = 0x0000002c, "Index invalid";
    ERR_INVALID_IRQ_LEVEL = 0x0000002d, "Requested IRQ level is not valid";
    ERR_INVALID_LIMIT = 0x0000002e, "Generic Error: Invalid limit";
    ERR_INVALID_LOCK_STATE = 0x0000002f, "Requested lock state not valid";
    ERR_INVALID_METHOD = 0x00000030, "Requested method not valid";
    ERR_INVALID_OBJECT = 0x00000031, "Object not valid";
    ERR_INVALID_OBJECT_BUFFER = 0x00000032, "Object buffer passed is not valid";
    ERR_INVALID_OBJECT_HANDLE = 0x00000033, "Object handle is not valid";
    ERR_INVALID_OBJECT_NEW = 0x00000034, "New object is not valid";
    ERR_INVALID_OBJECT_OLD = 0x00000035, "Old object is not valid";
    ERR_INVALID_OBJECT_PARENT = 0x00000036, "Object parent is not valid";
    ERR_INVALID_OFFSET = 0x00000037, "The offset passed is not valid";
    ERR_INVALID_OPERATION = 0x00000038, "Requested operation is not valid";
    ERR_INVALID_OWNER = 0x00000039, "Owner not valid";
    ERR_INVALID_PARAM_STRUCT = 0x0000003a, "Invalid structure parameter";
    ERR_INVALID_PARAMETER = 0x0000003b, "At least one of the parameters passed is not valid";
    ERR_INVALID_PATH = 0x0000003c, "The requested path is not valid";
    ERR_INVALID_POINTER = 0x0000003d, "Pointer not valid";
    ERR_INVALID_REGISTRY_KEY = 0x0000003e, "Found an invalid registry key";
    ERR_INVALID_REQUEST = 0x0000003f, "Generic Error: Invalid request";
    ERR_INVALID_STATE = 0x00000040, "Generic Error: Invalid state";
    ERR_INVALID_STRING_LENGTH = 0x00000041, "The string length is not valid";
    ERR_INVALID_READ = 0x00000042, "The requested read operation is not valid";
    ERR_INVALID_WRITE = 0x00000043, "The requested write operation is not valid";
    ERR_INVALID_XLATE = 0x00000044, "The requested translate operation is not valid";
    ERR_IRQ_NOT_FIRING = 0x00000045, "Requested IRQ is not firing";
    ERR_IRQ_EDGE_TRIGGERED = 0x00000046, "IRQ is edge triggered";
    ERR_MEMORY_TRAINING_FAILED = 0x00000047, "Failed memory training sequence";
    ERR_MISMATCHED_SLAVE = 0x00000048, "Slave mismatch";
    ERR_MISMATCHED_TARGET = 0x00000049, "Target mismatch";
    ERR_MISSING_TABLE_ENTRY = 0x0000004a, "Requested entry missing not found in the table";
    ERR_MODULE_LOAD_FAILED = 0x0000004b, "Failed to load the requested module";
    ERR_MORE_DATA_AVAILABLE = 0x0000004c, "There is more data available";
    ERR_MORE_PROCESSING_REQUIRED = 0x0000004d, "More processing required for the given call";
    ERR_MULTIPLE_MEMORY_TYPES = 0x0000004e, "Multiple memory types found";
    ERR_NO_FREE_FIFOS = 0x0000004f, "No more free FIFOs found";
    ERR_NO_INTR_PENDING = 0x00000050, "No interrupt pending";
    ERR_NO_MEMORY = 0x00000051, "Out of memory";
    ERR_NO_SUCH_DOMAIN = 0x00000052, "Requested domain does not exist";
    ERR_NO_VALID_PATH = 0x00000053, "Caller did not specify a valid path";
    ERR_NOT_COMPATIBLE = 0x00000054, "Generic Error: Incompatible types";
    ERR_NOT_READY = 0x00000055, "Generic Error: Not ready";
    ERR_NOT_SUPPORTED = 0x00000056, "Call not supported";
    ERR_OBJECT_NOT_FOUND = 0x00000057, "Requested object not found";
    ERR_OBJECT_TYPE_MISMATCH = 0x00000058, "Specified objects do not match";
    ERR_OPERATING_SYSTEM = 0x00000059, "Generic operating system error";
    ERR_OTHER_DEVICE_FOUND = 0x0000005a, "Found other device instead of the requested one";
    ERR_OUT_OF_RANGE = 0x0000005b, "The specified value is out of bounds";
    ERR_OVERLAPPING_UVM_COMMIT = 0x0000005c, "Overlapping unified virtual memory commit";
    ERR_PAGE_TABLE_NOT_AVAIL = 0x0000005d, "Requested page table not available";
    ERR_PID_NOT_FOUND = 0x0000005e, "Process-Id not found";
    ERR_PROTECTION_FAULT = 0x0000005f, "Protection fault";
    ERR_RC_ERROR = 0x00000060, "Generic RC error";
    ERR_REJECTED_VBIOS = 0x00000061, "Given Video BIOS rejected/invalid";
    ERR_RESET_REQUIRED = 0x00000062, "Reset required";
    ERR_STATE_IN_USE = 0x00000063, "State in use";
    ERR_SIGNAL_PENDING = 0x00000064, "Signal pending";
    ERR_TIMEOUT = 0x00000065, "Call timed out";
    ERR_TIMEOUT_RETRY = 0x00000066, "Call timed out, please retry later";
    ERR_TOO_MANY_PRIMARIES = 0x00000067, "Too many primaries";
    ERR_UVM_ADDRESS_IN_USE = 0x00000068, "Unified virtual memory requested address already in use";
    ERR_MAX_SESSION_LIMIT_REACHED = 0x00000069, "Maximum number of sessions reached";
    ERR_LIB_RM_VERSION_MISMATCH = 0x0000006a, "Library version doesn't match driver version";
    ERR_PRIV_SEC_VIOLATION = 0x0000006b, "Priv security violation";
    ERR_GPU_IN_DEBUG_MODE = 0x0000006c, "GPU currently in debug mode";
    ERR_FEATURE_NOT_ENABLED = 0x0000006d, "Requested Feature functionality is not enabled";
    ERR_RESOURCE_LOST = 0x0000006e, "Requested resource has been destroyed";
    ERR_PMU_NOT_READY = 0x0000006f, "PMU is not ready or has not yet been initialized";
    ERR_FLCN_ERROR = 0x00000070, "Generic falcon assert or halt";
    ERR_FATAL_ERROR = 0x00000071, "Fatal/unrecoverable error";
    ERR_MEMORY_ERROR = 0x00000072, "Generic memory error";
    ERR_INVALID_LICENSE = 0x00000073, "License provided is rejected or invalid";
    ERR_NVLINK_INIT_ERROR = 0x00000074, "Nvlink Init Error";
    ERR_NVLINK_MINION_ERROR = 0x00000075, "Nvlink Minion Error";
    ERR_NVLINK_CLOCK_ERROR = 0x00000076, "Nvlink Clock Error";
    ERR_NVLINK_TRAINING_ERROR = 0x00000077, "Nvlink Training Error";
    ERR_NVLINK_CONFIGURATION_ERROR = 0x00000078, "Nvlink Configuration Error";
    ERR_RISCV_ERROR = 0x00000079, "Generic RISC-V assert or halt";
    ERR_FABRIC_MANAGER_NOT_PRESENT = 0x0000007a, "Fabric Manager is not loaded";
    ERR_ALREADY_SIGNALLED = 0x0000007b, "Semaphore Surface value already >= requested wait value";
    ERR_QUEUE_TASK_SLOT_NOT_AVAILABLE = 0x0000007c, "PMU RPC error due to no queue slot available for this event";
    ERR_KEY_ROTATION_IN_PROGRESS = 0x0000007d, "Operation not allowed as key rotation is in progress";
    ERR_TEST_ONLY_CODE_NOT_ENABLED = 0x0000007e, "Test-only code path not enabled";
    ERR_SECURE_BOOT_FAILED = 0x0000007f, "GFW secure boot failed";
    ERR_INSUFFICIENT_ZBC_ENTRY = 0x00000080, "No more ZBC entry for the client";
    ERR_NVLINK_FABRIC_NOT_READY = 0x00000081, "Nvlink Fabric Status or Fabric Probe is not yet complete, caller needs to retry";
    ERR_NVLINK_FABRIC_FAILURE = 0x00000082, "Nvlink Fabric Probe failed";
    ERR_GPU_MEMORY_ONLINING_FAILURE = 0x00000083, "GPU Memory Onlining failed";
    ERR_REDUCTION_MANAGER_NOT_AVAILABLE = 0x00000084, "Reduction Manager is not available";
    ERR_THRESHOLD_CROSSED = 0x00000085, "A fatal threshold has been crossed"; // 580 only
    ERR_RESOURCE_RETIREMENT_ERROR = 0x00000086, "An error occurred while trying to retire a resource";
    ERR_FABRIC_STATE_OUT_OF_SYNC = 0x00000087, "NVLink fabric state cached by the driver is out of sync"; // 580 only
    ERR_BUFFER_FULL = 0x00000088, "Buffer is full"; // 580 only
    ERR_BUFFER_EMPTY = 0x00000089, "Buffer is empty"; // 580 only
    ERR_MC_FLA_OFFSET_TABLE_FULL = 0x0000008a, "Multicast FLA offset table has no available slots"; // 580 only
    ERR_DMA_XFER_FAILED = 0x0000008b, "DMA transfer failed"; // 580 only
    WARN_HOT_SWITCH = 0x00010001, "WARNING Hot switch";
    WARN_INCORRECT_PERFMON_DATA = 0x00010002, "WARNING Incorrect performance monitor data";
    WARN_MISMATCHED_SLAVE = 0x00010003, "WARNING Slave mismatch";
    WARN_MISMATCHED_TARGET = 0x00010004, "WARNING Target mismatch";
    WARN_MORE_PROCESSING_REQUIRED = 0x00010005, "WARNING More processing required for the call";
    WARN_NOTHING_TO_DO = 0x00010006, "WARNING Nothing to do";
    WARN_NULL_OBJECT = 0x00010007, "WARNING NULL object found";
    WARN_OUT_OF_RANGE = 0x00010008, "WARNING value out of range";
    WARN_THRESHOLD_CROSSED = 0x00010009, "WARNING Threshold has been crossed"; // 580 only
}

impl NvStatus {
    /// The codes 580.142 added over 570.144.
    pub const ADDED_IN_580: [NvStatus; 7] = [
        NvStatus::ERR_THRESHOLD_CROSSED,
        NvStatus::ERR_FABRIC_STATE_OUT_OF_SYNC,
        NvStatus::ERR_BUFFER_FULL,
        NvStatus::ERR_BUFFER_EMPTY,
        NvStatus::ERR_MC_FLA_OFFSET_TABLE_FULL,
        NvStatus::ERR_DMA_XFER_FAILED,
        NvStatus::WARN_THRESHOLD_CROSSED,
    ];

    /// Whether this is `NV_OK`.
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// Whether this is a warning (`NV_WARN_*`, `0x0001_xxxx`): the call did its work.
    pub const fn is_warning(self) -> bool {
        self.0 >> 16 == 1
    }

    /// `Ok(())` for `NV_OK` and warnings, `Err(self)` for errors.
    pub const fn into_result(self) -> Result<(), NvStatus> {
        if self.is_ok() || self.is_warning() {
            Ok(())
        } else {
            Err(self)
        }
    }

    fn entry(self) -> Option<&'static StatusCode> {
        ALL.iter().find(|c| c.status == self)
    }

    /// The C name (`NV_ERR_…`), if the code is known.
    pub fn name(self) -> Option<&'static str> {
        self.entry().map(|c| c.name)
    }

    /// NVIDIA's description, if the code is known.
    pub fn text(self) -> Option<&'static str> {
        self.entry().map(|c| c.text)
    }
}

impl fmt::Display for NvStatus {
    /// `NV_ERR_NO_MEMORY (0x00000051): Out of memory`, or the bare number if unknown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.entry() {
            Some(c) => write!(f, "{} (0x{:08x}): {}", c.name, self.0, c.text),
            None => write!(f, "unknown NV_STATUS 0x{:08x}", self.0),
        }
    }
}

impl core::error::Error for NvStatus {}

impl From<u32> for NvStatus {
    fn from(raw: u32) -> Self {
        NvStatus(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn names_and_texts_of_known_codes() {
        assert_eq!(NvStatus::OK.name(), Some("NV_OK"));
        assert_eq!(NvStatus(0x51).name(), Some("NV_ERR_NO_MEMORY"));
        assert_eq!(NvStatus::ERR_NO_MEMORY.text(), Some("Out of memory"));
        assert_eq!(NvStatus(0xdead_beef).name(), None);
    }

    #[test]
    fn display_names_the_code_or_says_unknown() {
        assert_eq!(
            format!("{}", NvStatus::ERR_NO_MEMORY),
            "NV_ERR_NO_MEMORY (0x00000051): Out of memory"
        );
        assert_eq!(
            format!("{}", NvStatus(0x1234_5678)),
            "unknown NV_STATUS 0x12345678"
        );
    }

    #[test]
    fn warnings_are_not_errors() {
        assert!(NvStatus::WARN_MORE_PROCESSING_REQUIRED.is_warning());
        assert_eq!(
            NvStatus::WARN_MORE_PROCESSING_REQUIRED.into_result(),
            Ok(())
        );
        assert_eq!(
            NvStatus::ERR_GENERIC.into_result(),
            Err(NvStatus::ERR_GENERIC)
        );
        assert!(!NvStatus::ERR_GENERIC.is_warning());
    }

    #[test]
    fn codes_are_unique() {
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert_ne!(
                    a.status, b.status,
                    "{} and {} share a value",
                    a.name, b.name
                );
                assert_ne!(a.name, b.name);
            }
        }
    }
}
