//! Stable error codes, as `cudaGetErrorString` gives CUDA's: every error `nvbare` can print
//! carries one (`nvbare: error[NVB-E104]: ...`), `nvbare explain CODE` says what it means
//! and what to do, and README.md's troubleshooting section lists them all (a test keeps the
//! three in step). A code, once given, keeps its meaning; a retired one is not reused.
//!
//! Ranges: E0xx the command line and files, E1xx the GPU layer, E2xx the kernel-driver
//! backend, E3xx `list`/`bind`/`unbind`, E4xx `sim serve`, E5xx `firmware`, E6xx the
//! backends on which nvbare boots GSP-RM itself (`vfio`, `sim`, `remote`) and `demo`.

use nvbare_core::boot::{BootError, BootErrorKind};
use nvbare_core::cubin::CubinError;
use nvbare_core::gpu::GpuError;
use nvbare_core::gsp_rm::{GspRmError, MemoryError, OpenError};
use nvbare_core::hal::PlatformError;
use nvbare_core::rm::FaultReport;
use nvbare_firmware_fetch::FetchError;
use nvbare_sim::remote::ServeError;

use super::args::{ArgError, PackError};
use super::error::{BackendError, CliError};
use crate::nvk::NvkError;
use crate::remote::OpenError as RemoteOpenError;
use crate::setup::SetupError;
use crate::vfio::VfioError;

/// One error code: the code, what went wrong, and what to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCode {
    /// `NVB-E104`.
    pub code: &'static str,
    /// What went wrong, in a few words.
    pub title: &'static str,
    /// What to do about it.
    pub remedy: &'static str,
}

macro_rules! error_codes {
    ($($name:ident $code:literal $title:literal $remedy:literal;)*) => {
        $(
            #[doc = $title]
            pub const $name: ErrorCode = ErrorCode { code: $code, title: $title, remedy: $remedy };
        )*
        /// Every code, in order.
        pub const ALL: &[ErrorCode] = &[$($name),*];
    };
}

error_codes! {
    USAGE "NVB-E001" "the command line is not understood"
        "Read the usage line printed with it; `nvbare help COMMAND` shows every option.";
    ARG_FORM "NVB-E002" "a --arg is malformed"
        "Write TYPE:VALUE, buf:BYTES[:OPT]... or buf:@FILE[:OPT]... (see `nvbare run --help`).";
    ARG_VALUE "NVB-E003" "a value does not fit its type"
        "Give a number of the argument's type and range (hex with 0x for integers).";
    ARG_SIZE "NVB-E004" "a buffer size cannot be used"
        "Give bytes (4096, 0x1000, 64K, 1M), at least 1, a whole number of elements when filled.";
    ARG_NAME "NVB-E005" "two arguments have one name"
        "Give each --arg NAME= its own name.";
    ARG_REF "NVB-E006" "--out or --dump names no buffer argument"
        "Name a buf argument by its NAME= or its position among the --args (0 is the first).";
    PARAMS "NVB-E007" "the arguments do not match the kernel's parameters"
        "Pass one --arg per parameter of the kernel's C signature, each of its size.";
    READ "NVB-E008" "an input file cannot be read"
        "Check the path and its permissions.";
    WRITE "NVB-E009" "an output file cannot be written"
        "Check that the directory exists and is writable, and the disk has room.";
    CUBIN "NVB-E010" "the file is not a usable cubin"
        "Pass the .cubin `nvcc -cubin -arch=sm_XX` wrote (not PTX or a fatbin).";
    NO_KERNEL "NVB-E011" "the cubin has no kernel of that name"
        "Declare the kernel extern \"C\", or give its mangled name (cuobjdump -elf lists them).";
    LAUNCH "NVB-E012" "the launch does not fit the kernel or the GPU"
        "Use a grid, block and --shared within the limits the message names.";
    TUNE "NVB-E013" "--tune (NVBARE_TUNE) is not understood"
        "Give membar=N,inval=0|1,mirror=0|1,relmembar=0|1,chainmembar=N,cbpre=0|1,latchcycle=N,bHI_LO=V, or unset NVBARE_TUNE.";
    DEVICE "NVB-E014" "--device is not what the backend takes"
        "With --backend nvk give a GPU index (0, 1, ...); nvidia-smi lists them in this order.";
    INTERRUPTED "NVB-E015" "interrupted (Ctrl-C)"
        "Nothing to fix: the GPU was released; run the command again. A second Ctrl-C ends nvbare at once.";
    OUTPUT "NVB-E016" "standard output cannot be written"
        "Check where the output goes (a closed pipe, a full disk).";
    UNKNOWN_CODE "NVB-E017" "not an nvbare error code"
        "`nvbare explain` lists every code.";
    NO_DEVICE "NVB-E018" "the backend needs --device"
        "Give --device BDF with --backend vfio (`nvbare list` shows them), --device HOST:PORT with --backend remote.";
    NOT_FOR_BACKEND "NVB-E019" "an option does not apply to the backend"
        "Drop the option, or give the --backend it belongs to (`nvbare help COMMAND` says which).";
    VBIOS "NVB-E020" "the VBIOS is malformed or could not be read"
        "The message names the failed check; a file may be no VBIOS, or a GPU's ROM unreadable (try --sysfs as root).";
    NO_CLASS "NVB-E101" "the GPU offers no class nvbare drives an engine with"
        "Use a GPU of the Turing to Blackwell families; `nvbare info` lists the classes it has.";
    UNSUPPORTED_CHIP "NVB-E102" "this chip is not supported yet"
        "nvbare has no QMD or constant-bank layout for it; use a Hopper or Blackwell GPU.";
    WRONG_SM "NVB-E103" "the cubin was built for another SM"
        "Recompile with nvcc -arch=sm_XX for this GPU's SM (`nvbare info` shows it).";
    STALL "NVB-E104" "a wait ran out of time: a channel stalled"
        "The kernel ran longer than the wait allows or hung; check it for endless loops and for faults.";
    MMU_FAULT "NVB-E105" "the GPU's MMU faulted (an access to an address that is not mapped)"
        "Check the kernel's pointers and indices against the buffers passed; the message names the address.";
    SM_EXCEPTION "NVB-E106" "an SM stopped on an exception (trap, illegal instruction, address out of range)"
        "The message names the error, SM, warp and PC (kernel+offset: look it up in cuobjdump -sass).";
    SUBMIT "NVB-E107" "a channel could not take the submission"
        "The channel is full or stalled; see the message for its GPGet/GPPut.";
    QMD "NVB-E108" "a launch field could not be set (QMD)"
        "An internal limit was hit; report it with the command line.";
    METHODS "NVB-E109" "GPU methods could not be encoded"
        "An address or count is out of range for the method; report it with the command line.";
    CPU_ACCESS "NVB-E110" "a CPU access to GPU memory fell outside the buffer"
        "An internal error; report it with the command line.";
    ARENA "NVB-E111" "the launch arena is too small for one launch"
        "The kernel's constant bank is larger than the arena; report it with the cubin.";
    POOL "NVB-E112" "the sub-allocator refused a request"
        "Allocate large buffers with Gpu::alloc; report it if it came from nvbare's own commands.";
    NO_CPU_VIEW "NVB-E113" "a buffer the CPU must write has no CPU view"
        "An internal error; report it with the command line.";
    STAMPS "NVB-E114" "a timed op's GPU stamps were overwritten before they were read"
        "Read each op's times (Gpu::times) before STAMP_PAIRS more timed ops are submitted.";
    NO_DRIVER "NVB-E201" "NVIDIA's kernel driver is not there (no /dev/nvidiactl or /dev/nvidia-uvm)"
        "--backend nvk drives GPUs owned by nvidia.ko: load nvidia.ko and nvidia-uvm.ko, or run where they are.";
    IOCTL "NVB-E202" "an ioctl to NVIDIA's kernel driver failed"
        "Check dmesg; the driver may be of an unsupported version (nvbare speaks 580.x's ABI).";
    RM_STATUS "NVB-E203" "RM (or UVM) returned an error status"
        "The message names the call and the status; check dmesg and nvidia-smi for the GPU's state.";
    RM_ALLOC "NVB-E204" "RM refused to allocate an object"
        "The message names the class and status; the GPU may be out of memory or channels.";
    RM_CONTROL "NVB-E205" "RM refused a control call"
        "The message names the command and status; check dmesg.";
    NO_SUCH_GPU "NVB-E206" "no GPU at that index"
        "Give an index below the count the message names (nvidia-smi lists them).";
    MMAP "NVB-E207" "mapping GPU memory into the process failed"
        "Check the process's memory limits (ulimit -v) and dmesg.";
    VA_SPACE "NVB-E208" "the process's GPU virtual address windows are full"
        "Free buffers, or allocate fewer at once.";
    MAPPED_ELSEWHERE "NVB-E209" "RM mapped a buffer at another address than asked"
        "Another user of the address range exists in this process; report it.";
    GPU_UUID "NVB-E210" "RM returned a GPU UUID UVM cannot use"
        "The driver's version is not one nvbare knows; report it with `nvidia-smi -q` output.";
    LIST_SYSFS "NVB-E301" "sysfs cannot be read"
        "`nvbare list` reads /sys/bus/pci/devices: run it where sysfs is mounted.";
    BAD_ADDRESS "NVB-E302" "not a PCI address"
        "Write DOMAIN:BUS:DEVICE.FUNCTION (0000:41:00.0) or BUS:DEVICE.FUNCTION, as `nvbare list` prints it.";
    NO_SUCH_DEVICE "NVB-E303" "no PCI device at that address"
        "`nvbare list` shows the NVIDIA GPUs of this machine.";
    NOT_NVIDIA "NVB-E304" "the device is not an NVIDIA device"
        "nvbare binds only NVIDIA functions; check the address.";
    IOMMU_OFF "NVB-E305" "the IOMMU is off"
        "Turn on VT-d or AMD-Vi in the firmware and intel_iommu=on iommu=pt (or amd_iommu=on) on the kernel command line, then reboot.";
    NO_GROUP "NVB-E306" "the device has no IOMMU group"
        "The IOMMU does not cover its PCI segment: check dmesg for DMAR/AMD-Vi messages.";
    GROUP_NOT_VIABLE "NVB-E307" "the IOMMU group holds devices bound to host drivers"
        "Put the GPU in a slot with its own IOMMU group, or unbind those devices.";
    NVIDIA_IN_USE "NVB-E308" "processes hold the GPU through NVIDIA's driver"
        "Stop them (nvidia-smi lists them; systemctl stop nvidia-persistenced) and retry.";
    NO_VFIO_DRIVER "NVB-E309" "the vfio-pci driver is not loaded"
        "Run `modprobe vfio-pci`.";
    NOT_PERMITTED "NVB-E310" "no permission to write sysfs"
        "Run the command as root (sudo).";
    SYSFS_WRITE "NVB-E311" "the kernel refused a sysfs write"
        "See dmesg for the kernel's reason.";
    BIND_DID_NOT_TAKE "NVB-E312" "the device is not bound to vfio-pci after the bind"
        "See dmesg for why vfio-pci did not take it.";
    NVBARE_IN_USE "NVB-E313" "an nvbare process drives the GPU"
        "Stop that process before unbinding.";
    NOT_BOUND "NVB-E314" "the device is not bound to vfio-pci"
        "There is nothing to unbind; `nvbare list` shows its driver.";
    SERVE_NOT_LOOPBACK "NVB-E401" "refused to listen beyond loopback"
        "The remote protocol has no authentication: listen on 127.0.0.1, or pass --allow-remote knowingly.";
    SERVE_GPU_COUNT "NVB-E402" "that many simulated GPUs cannot be served"
        "Give --gpus between 1 and the limit the message names.";
    SERVE_BIND "NVB-E403" "the listen address cannot be bound"
        "Pick a free port (port 0 picks one) or stop what holds it.";
    SERVE_GPU "NVB-E404" "a simulated GPU could not be made"
        "The message says why (memory for its VRAM, its firmware).";
    SERVE_THREAD "NVB-E405" "the server's thread could not be started"
        "The process is out of threads or memory; check ulimit -u.";
    SERVE_TRACE "NVB-E406" "the trace file cannot be written"
        "Give --trace a path in a writable directory.";
    SERVE_SOCKET "NVB-E407" "the vfio-user socket cannot be made"
        "Give --vfio-user a path that does not exist yet, in a writable directory.";
    FW_UNKNOWN_CHIP "NVB-E501" "unknown chip"
        "Give one of the chips the message lists, or all.";
    FW_UNUSABLE_SOURCE "NVB-E502" "the firmware source cannot be used"
        "Give --from a firmware directory, a firmware-nvidia-graphics .deb or an http(s) URL.";
    FW_NO_CACHE_DIR "NVB-E503" "no cache directory"
        "Set HOME or XDG_CACHE_HOME, or pass --cache DIR.";
    FW_HASH_MISMATCH "NVB-E504" "a firmware file has the wrong bytes"
        "The source holds another version or a corrupt copy; nvbare boots GSP-RM 570.144 only.";
    FW_UNREADABLE "NVB-E505" "a firmware file cannot be read"
        "The message names the file and why (permissions, a truncated archive).";
    FW_NOT_FOUND "NVB-E506" "no source supplied every firmware file"
        "Supply the files with --from DIR (a linux-firmware checkout) or a .deb.";
    FW_CACHE_WRITE "NVB-E507" "the firmware cache cannot be written"
        "Free disk space or pick a writable --cache DIR.";
    FW_CACHE_ALTERED "NVB-E508" "a cached firmware file was altered"
        "Fetch again: `nvbare firmware fetch --chip CHIP` replaces it.";
    FW_LINKED_IN_CACHE "NVB-E509" "cached names are linked to one file"
        "Remove the links made by hand in the cache directory and fetch again.";
    FW_NOT_CACHED "NVB-E601" "the GSP-RM firmware is not in the cache (--offline)"
        "Run the `nvbare firmware fetch` command the message gives (where there is network, or with --from), or drop --offline.";
    VFIO_NOT_BOUND "NVB-E602" "the GPU is not bound to vfio-pci"
        "Run `nvbare bind BDF` (as root) first; `nvbare list` shows each GPU's driver.";
    NOIOMMU_REFUSED "NVB-E603" "the GPU is in VFIO's no-IOMMU mode, which is UNSAFE"
        "Turn the IOMMU on; or accept that the GPU can write anywhere in memory with --allow-noiommu-unsafe (UNSAFE).";
    VFIO_OPEN "NVB-E604" "a VFIO device node cannot be opened"
        "The message names the node and what to do (root or access to /dev/vfio, vfio-pci loaded, no VM holding the group).";
    VFIO_REQUEST "NVB-E605" "the kernel refused a VFIO request"
        "The message names the request (ioctl, region, BAR mapping, config access); see dmesg.";
    NO_RESET "NVB-E606" "the GPU offers VFIO no reset"
        "Reset it another way (a secondary bus reset of its bridge, a power cycle) and retry.";
    NO_HUGEPAGES "NVB-E607" "no free 2 MiB hugepages for DMA memory"
        "Reserve them as the message says: echo N > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages.";
    DMA "NVB-E608" "DMA memory could not be had or mapped"
        "The message says why: raise the locked-memory limit (ulimit -l unlimited), free DMA memory, or run as root in no-IOMMU mode.";
    GPU_LOCKED "NVB-E609" "another process drives this GPU"
        "Stop the process the message names, or wait for it to finish (a process that died has released it).";
    REMOTE_CONNECT "NVB-E610" "the remote PCI server cannot be reached"
        "Start one (`nvbare sim serve --chip gh100`) or check --device HOST:PORT.";
    REMOTE_OPEN "NVB-E611" "the remote GPU could not be opened"
        "The message names the step; check the server's output and that it serves an NVIDIA GPU.";
    CHIP_NOT_BOOTABLE "NVB-E612" "nvbare cannot boot GSP-RM on this chip"
        "The VFIO path boots Hopper and Blackwell GPUs (GH100, GB100, GB202); use --backend nvk for others.";
    WPR2_STUCK "NVB-E613" "WPR2 stays up: the GPU could not be reset"
        "Reset the GPU's slot (a secondary bus reset) or power-cycle the machine, then retry.";
    BOOT_FIRMWARE "NVB-E614" "a firmware file does not fit the chip"
        "Fetch the chip's GSP-RM 570.144 files again: `nvbare firmware fetch --chip CHIP`.";
    BOOT_FSP "NVB-E615" "the FSP chain of trust failed"
        "The message names FSP's answer; reset the GPU (or power-cycle) and retry, and report it with -vv output.";
    BOOT_LOCKDOWN "NVB-E616" "GSP-FMC did not release the GSP"
        "The message names the registers read; reset the GPU (or power-cycle) and retry, and report it with -vv output.";
    BOOT_GSP "NVB-E617" "GSP-RM did not come up"
        "The message holds GSP-RM's own log; reset the GPU and retry, and report it with -vv output.";
    BOOT_SETUP "NVB-E618" "the boot could not set up the GPU's memory or structures"
        "The message names the step (DMA memory, the FB layout, a BAR); on VFIO check hugepages and the locked-memory limit.";
    RM_SETUP "NVB-E619" "RM could not be set up over GSP-RM"
        "GSP-RM refused or did not answer a call the message names; retry, and report it with -vv output.";
    RM_REFUSED "NVB-E620" "GSP-RM refused an RM call"
        "The message names the call and its NV_STATUS; the GPU may be out of memory or channels.";
    RM_RPC "NVB-E621" "GSP-RM did not answer an RPC as it should"
        "GSP-RM stopped, hung or answered nonsense; the next run resets the GPU. Report the message with -vv output.";
    RM_MEMORY "NVB-E622" "the RM emulation ran out of memory"
        "Free buffers or ask for less; the message says which memory (VRAM, GPU addresses, DMA, the BAR1 window).";
    GPU_GONE "NVB-E623" "the GPU no longer answers"
        "It was removed or reset under nvbare: check dmesg and the PCI bus (`nvbare list`).";
    TEARDOWN "NVB-E624" "the teardown did not complete"
        "GSP-RM was not unloaded cleanly; the next nvbare run on the GPU finds WPR2 up and resets it.";
    WRONG_RESULT "NVB-E625" "a result read back from the GPU is wrong"
        "A copy or kernel gave other data than the CPU computed; report it with the message (it names the first difference).";
}

/// The code named `code` (`NVB-E104`, `E104`, `104`; `E7` and `7` are `NVB-E007`; any case).
pub fn find(code: &str) -> Option<&'static ErrorCode> {
    let c = code.trim().to_ascii_uppercase();
    let digits = c.strip_prefix("NVB-").unwrap_or(&c);
    let digits = digits.strip_prefix('E').unwrap_or(digits);
    if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let full = format!("NVB-E{digits:0>3}");
    ALL.iter().find(|e| e.code == full)
}

impl CliError {
    /// This error's code.
    pub fn code(&self) -> ErrorCode {
        match self {
            CliError::Read { .. } => READ,
            CliError::Write { .. } => WRITE,
            CliError::Arg(e) => match e {
                ArgError::Form { .. } => ARG_FORM,
                ArgError::Value { .. } => ARG_VALUE,
                ArgError::Size { .. } => ARG_SIZE,
                ArgError::DuplicateName { .. } => ARG_NAME,
                ArgError::Reference { .. } => ARG_REF,
            },
            CliError::Params(PackError::BadLayout { .. }) => CUBIN,
            CliError::Params(PackError::TooFew { .. } | PackError::SizeMismatch { .. }) => PARAMS,
            CliError::Cubin { source, .. } => cubin_code(source),
            CliError::Launch { .. } => LAUNCH,
            CliError::Tune { .. } => TUNE,
            CliError::Device { .. } => DEVICE,
            CliError::NoDevice { .. } => NO_DEVICE,
            CliError::NotForBackend { .. } => NOT_FOR_BACKEND,
            CliError::FirmwareNotCached { .. } => FW_NOT_CACHED,
            CliError::FirmwareFetch { source, .. } => firmware_code(source),
            CliError::Vfio(e) => vfio_code(e),
            CliError::Remote(e) => remote_code(e),
            CliError::Sim(_) => SERVE_GPU,
            CliError::UnknownChip { .. } | CliError::ChipNotBootable { .. } => CHIP_NOT_BOOTABLE,
            CliError::Open { source, .. } => open_code(source),
            CliError::Close(_) => TEARDOWN,
            CliError::WrongResult { .. } => WRONG_RESULT,
            CliError::Interrupted { .. } => INTERRUPTED,
            CliError::Output(_) => OUTPUT,
            CliError::UnknownCode(_) => UNKNOWN_CODE,
            CliError::List(_) => LIST_SYSFS,
            CliError::Setup(e) => setup_code(e),
            CliError::Serve(e) => serve_code(e),
            CliError::Trace { .. } => SERVE_TRACE,
            CliError::VfioUser(e) => vfio_user_code(e),
            CliError::Firmware(e) => firmware_code(e),
            CliError::Fault { report, .. } => fault_code(report),
            CliError::Vbios { .. } => VBIOS,
            CliError::Gpu(e) => gpu_code(e, backend_code),
        }
    }
}

fn cubin_code(e: &CubinError) -> ErrorCode {
    match e {
        CubinError::NoSuchKernel(_) => NO_KERNEL,
        CubinError::NotElf
        | CubinError::NotElf64LittleEndian { .. }
        | CubinError::NotCuda { .. }
        | CubinError::Truncated { .. }
        | CubinError::Malformed { .. }
        | CubinError::MissingKernelInfo { .. }
        | CubinError::UnsupportedRelocation { .. }
        | CubinError::UndefinedSymbol(_) => CUBIN,
    }
}

/// An MMU fault when the MMU reported one (an SM's MMU_FAULT error follows from it), else an
/// SM exception.
fn fault_code(report: &FaultReport) -> ErrorCode {
    if report.mmu.is_empty() && report.mmu_without_address.is_none() {
        SM_EXCEPTION
    } else {
        MMU_FAULT
    }
}

fn backend_code(e: &BackendError) -> ErrorCode {
    match e {
        BackendError::Nvk(e) => nvk_code(e),
        BackendError::GspRm(e) => gsp_rm_code(e),
    }
}

fn gpu_code<E: std::error::Error + 'static>(
    e: &GpuError<E>,
    backend: fn(&E) -> ErrorCode,
) -> ErrorCode {
    match e {
        GpuError::Backend { source, .. } => backend(source),
        GpuError::NoClass(_) => NO_CLASS,
        GpuError::NoQmdLayout(_) | GpuError::NoCbufLayout(_) => UNSUPPORTED_CHIP,
        GpuError::Submit(_) => SUBMIT,
        GpuError::Wait(_) => STALL,
        GpuError::Fault { report, .. } => fault_code(report),
        GpuError::Cubin(e) => cubin_code(e),
        GpuError::WrongSm { .. } => WRONG_SM,
        // A recorded sequence's launches or patches refused: what a launch's refusal is (no
        // command records sequences; the code serves programs that map errors the CLI's way).
        GpuError::Launch { .. } | GpuError::Sequence(_) => LAUNCH,
        GpuError::Qmd(_) => QMD,
        GpuError::Push(_) => METHODS,
        GpuError::Memory(_) => CPU_ACCESS,
        GpuError::ArenaTooSmall { .. } => ARENA,
        GpuError::PoolRequest { .. } | GpuError::Pool(_) => POOL,
        GpuError::NoCpuView(_) => NO_CPU_VIEW,
        GpuError::StampsReused { .. } => STAMPS,
    }
}

fn nvk_code(e: &NvkError) -> ErrorCode {
    match e {
        NvkError::NoDriver { .. } => NO_DRIVER,
        NvkError::Ioctl { .. } => IOCTL,
        NvkError::Rm { .. } => RM_STATUS,
        NvkError::RmAlloc { .. } => RM_ALLOC,
        NvkError::RmControl { .. } => RM_CONTROL,
        NvkError::NoSuchGpu { .. } => NO_SUCH_GPU,
        NvkError::Mmap { .. } => MMAP,
        NvkError::Va(_) | NvkError::OwnTables(_) => VA_SPACE,
        NvkError::MappedElsewhere { .. } => MAPPED_ELSEWHERE,
        NvkError::GpuUuid { .. } => GPU_UUID,
    }
}

fn gsp_rm_code(e: &GspRmError) -> ErrorCode {
    match e {
        GspRmError::Refused { .. } => RM_REFUSED,
        GspRmError::Rpc { .. }
        | GspRmError::Encode { .. }
        | GspRmError::UnexpectedReply { .. }
        | GspRmError::Events(_)
        | GspRmError::UnknownChannel(_)
        // GSP-RM's replies or tables make no sense: a reply of the wrong size, no runlist for
        // an engine it listed, a device info table without end.
        | GspRmError::ReplySize { .. }
        | GspRmError::UnknownRunlist { .. }
        | GspRmError::DeviceInfoTableTooLong { .. } => RM_RPC,
        GspRmError::Memory(MemoryError::Dma(p)) => platform_code(p).unwrap_or(RM_MEMORY),
        GspRmError::Memory(_) | GspRmError::OutOfHandles => RM_MEMORY,
        GspRmError::DeviceGone => GPU_GONE,
    }
}

/// The code of the platform error inside a platform failure, where it has its own.
fn platform_code(e: &PlatformError) -> Option<ErrorCode> {
    match e {
        PlatformError::DeviceGone => Some(GPU_GONE),
        PlatformError::OutOfDmaMemory { .. } => Some(DMA),
        PlatformError::Failed { source, .. } => source.downcast_ref::<VfioError>().map(vfio_code),
        PlatformError::Unsupported(_) => None,
    }
}

fn open_code(e: &OpenError) -> ErrorCode {
    match e {
        OpenError::Boot(b) => boot_code(b),
        OpenError::Setup { source, .. } => match gsp_rm_code(source) {
            c @ (GPU_GONE | DMA | NO_HUGEPAGES | RM_MEMORY) => c,
            _ => RM_SETUP,
        },
        OpenError::NoClass(_) => NO_CLASS,
        OpenError::Gpu(e) => gpu_code(e, gsp_rm_code),
    }
}

fn boot_code(e: &BootError) -> ErrorCode {
    use BootErrorKind as K;
    use nvbare_core::boot::booter::BooterError;
    match &e.kind {
        K::UnknownChip(_)
        | K::BootPathNotImplemented { .. }
        | K::NotAnNvidiaGpu { .. }
        | K::ChipMismatch { .. } => CHIP_NOT_BOOTABLE,
        K::ConfigSpaceNotBack { .. } | K::BarFirewall { .. } | K::Bar0Dead { .. } => BOOT_FSP,
        K::SysmemFlush(_) => BOOT_SETUP,
        K::Wpr2UpNoReset { source, .. } => platform_code(source)
            .filter(|c| *c == GPU_GONE)
            .unwrap_or(WPR2_STUCK),
        K::Wpr2StillUp { .. } => WPR2_STUCK,
        K::Firmware { .. } | K::FirmwareNotForChip { .. } => BOOT_FIRMWARE,
        K::FspNotReady { .. }
        | K::FspBusy { .. }
        | K::FspEmem { .. }
        | K::FspNoReply { .. }
        | K::FspReplySize { .. }
        | K::FspReplyMalformed(_)
        | K::FspAnsweredOtherCommand { .. }
        | K::FspRejected { .. } => BOOT_FSP,
        K::TargetMaskLocked { .. }
        | K::FmcError { .. }
        | K::LockdownNotReleased { .. }
        | K::RiscvNotRunning { .. } => BOOT_LOCKDOWN,
        K::Rpc(_) | K::InitFailed { .. } | K::UnexpectedReply { .. } | K::MalformedReply { .. } => {
            BOOT_GSP
        }
        K::GspDidNotHalt { .. } => TEARDOWN,
        // The booter path's secure steps (FWSEC, the SEC2 booter) share the FSP path's code:
        // the firmware that establishes WPR2 refused or failed.
        K::Booter(b) => match b {
            BooterError::BooterFile { .. } | BooterError::BooterSignature { .. } => BOOT_FIRMWARE,
            BooterError::Wpr2StillUpAfterUnload => WPR2_STUCK,
            _ => BOOT_FSP,
        },
        K::Platform { source, .. } | K::Dma { source, .. } => {
            platform_code(source).unwrap_or(BOOT_SETUP)
        }
        K::ImplausibleVram { .. }
        | K::LayoutDoesNotFit { .. }
        | K::BadDmaMemory { .. }
        | K::Memory { .. }
        | K::Structure { .. }
        | K::Queues(_)
        | K::MissingBar { .. } => BOOT_SETUP,
    }
}

fn vfio_code(e: &VfioError) -> ErrorCode {
    match e {
        VfioError::NoSuchDevice { .. } => NO_SUCH_DEVICE,
        VfioError::NotBoundToVfio { .. } => VFIO_NOT_BOUND,
        VfioError::IommuOff { .. } => IOMMU_OFF,
        VfioError::NoIommuRefused { .. } => NOIOMMU_REFUSED,
        VfioError::GroupNotViable { .. } => GROUP_NOT_VIABLE,
        VfioError::Open { .. } => VFIO_OPEN,
        VfioError::ApiVersion(_)
        | VfioError::NoExtension { .. }
        | VfioError::Ioctl { .. }
        | VfioError::BadRegion { .. }
        | VfioError::MapBar { .. }
        | VfioError::Config { .. } => VFIO_REQUEST,
        VfioError::ResetUnsupported { .. } => NO_RESET,
        VfioError::NoHugepages { .. } => NO_HUGEPAGES,
        VfioError::Hugepages { .. }
        | VfioError::DmaMap { .. }
        | VfioError::NoIova { .. }
        | VfioError::NoPhysicalAddress
        | VfioError::Pagemap(_)
        | VfioError::NotContiguous { .. } => DMA,
        VfioError::Locked(_) => GPU_LOCKED,
    }
}

fn remote_code(e: &RemoteOpenError) -> ErrorCode {
    match e {
        RemoteOpenError::BadAddress(_) => DEVICE,
        RemoteOpenError::Connect { .. } => REMOTE_CONNECT,
        RemoteOpenError::Step { .. }
        | RemoteOpenError::NoDevice { .. }
        | RemoteOpenError::BadName { .. }
        | RemoteOpenError::NoBar0 { .. }
        | RemoteOpenError::BusMaster { .. } => REMOTE_OPEN,
        RemoteOpenError::Locked(_) => GPU_LOCKED,
    }
}

fn setup_code(e: &SetupError) -> ErrorCode {
    match e {
        SetupError::BadAddress(_) => BAD_ADDRESS,
        SetupError::NoSuchDevice { .. } => NO_SUCH_DEVICE,
        SetupError::NotNvidia { .. } => NOT_NVIDIA,
        SetupError::IommuOff => IOMMU_OFF,
        SetupError::NoGroup { .. } => NO_GROUP,
        SetupError::GroupNotViable { .. } => GROUP_NOT_VIABLE,
        SetupError::NvidiaInUse { .. } => NVIDIA_IN_USE,
        SetupError::NoVfioDriver { .. } => NO_VFIO_DRIVER,
        SetupError::NotPermitted { .. } => NOT_PERMITTED,
        SetupError::Write { .. } => SYSFS_WRITE,
        SetupError::BindDidNotTake { .. } => BIND_DID_NOT_TAKE,
        SetupError::InUse { .. } => NVBARE_IN_USE,
        SetupError::NotBoundToVfio { .. } => NOT_BOUND,
    }
}

fn serve_code(e: &ServeError) -> ErrorCode {
    match e {
        ServeError::NotLoopback(_) => SERVE_NOT_LOOPBACK,
        ServeError::NoGpus | ServeError::TooManyGpus(_) => SERVE_GPU_COUNT,
        ServeError::Bind { .. } => SERVE_BIND,
        ServeError::Gpu { .. } => SERVE_GPU,
        ServeError::Thread(_) => SERVE_THREAD,
    }
}

fn vfio_user_code(e: &nvbare_sim::vfio_user::VfioUserError) -> ErrorCode {
    use nvbare_sim::vfio_user::VfioUserError as E;
    match e {
        E::SocketExists(_) | E::Bind { .. } => SERVE_SOCKET,
        E::Gpu(_) | E::BadBar1(_) => SERVE_GPU,
        E::Thread(_) => SERVE_THREAD,
    }
}

fn firmware_code(e: &FetchError) -> ErrorCode {
    match e {
        FetchError::UnknownChip { .. } => FW_UNKNOWN_CHIP,
        FetchError::UnusableSource { .. } => FW_UNUSABLE_SOURCE,
        FetchError::NoCacheDir => FW_NO_CACHE_DIR,
        FetchError::HashMismatch(_) => FW_HASH_MISMATCH,
        FetchError::Unreadable { .. } => FW_UNREADABLE,
        FetchError::NotFound { .. } => FW_NOT_FOUND,
        FetchError::Cache { .. } => FW_CACHE_WRITE,
        FetchError::CachedFileAltered { .. } => FW_CACHE_ALTERED,
        FetchError::LinkedInCache { .. } => FW_LINKED_IN_CACHE,
    }
}

/// `nvbare explain [CODE]`: one code's meaning and remedy, or the whole table.
pub fn explain(code: Option<&str>) -> Result<String, CliError> {
    let show = |e: &ErrorCode| format!("{}  {}\n          {}\n", e.code, e.title, e.remedy);
    match code {
        Some(c) => find(c)
            .map(show)
            .ok_or_else(|| CliError::UnknownCode(c.to_owned())),
        None => Ok(ALL.iter().map(show).collect()),
    }
}

/// The rows of README.md's troubleshooting table, as they must read there.
pub fn markdown_rows() -> String {
    ALL.iter()
        .map(|e| {
            format!(
                "| `{}` | {} | {} |\n",
                e.code,
                e.title,
                e.remedy.replace('|', "\\|")
            )
        })
        .collect()
}
