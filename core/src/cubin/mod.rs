//! Cubin loading: the ELF files nvcc/ptxas write for one SM architecture (sm_80 .. sm_120).
//!
//! [`Cubin::parse`] reads the sections and, for every kernel (entry-point symbol): its code
//! section `.text.<kernel>`, the attributes in `.nv.info` (registers, frame and stack sizes)
//! and `.nv.info.<kernel>` (parameter bank offset and size, parameters, barriers, launch
//! bounds), its static shared memory `.nv.shared.<kernel>` and the constant banks
//! `.nv.constantN[.<kernel>]`. [`Cubin::load_image`] lays the loadable sections out for a GPU
//! address and applies the relocations. Every malformed input is a [`CubinError`].

pub mod elf;
mod image;
pub mod info;

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use elf::{Elf, SHT_CUDA_INFO, STO_CUDA_ENTRY, STT_FUNC};
pub use image::{ModuleImage, R_CUDA_64, R_CUDA_ABS32_HI_32, R_CUDA_ABS32_LO_32};
use info::{Attributes, attr};

/// Largest constant bank the hardware addresses (64 KiB).
pub const MAX_CONSTANT_BANK: u64 = 0x10000;

/// A cubin could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CubinError {
    /// Not an ELF file (no `\x7fELF` magic).
    NotElf,
    /// An ELF file but not 64-bit little-endian.
    NotElf64LittleEndian {
        /// `EI_CLASS`.
        class: u8,
        /// `EI_DATA`.
        data: u8,
    },
    /// An ELF file for another machine than `EM_CUDA` (190).
    NotCuda {
        /// `e_machine`.
        machine: u16,
    },
    /// A structure runs past the end of the file.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where.
        offset: u64,
        /// How many bytes.
        len: u64,
    },
    /// A structure is inconsistent.
    Malformed {
        /// What is wrong.
        what: &'static str,
    },
    /// No kernel of that name.
    NoSuchKernel(String),
    /// A kernel lacks something every nvcc kernel has.
    MissingKernelInfo {
        /// The kernel.
        kernel: String,
        /// What is missing.
        what: &'static str,
    },
    /// A relocation of a type this loader does not apply.
    UnsupportedRelocation {
        /// `R_CUDA_*` number.
        kind: u32,
        /// Section it applies to.
        section: String,
    },
    /// A relocation against a symbol no section defines.
    UndefinedSymbol(String),
}

impl fmt::Display for CubinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotElf => write!(
                f,
                "not a cubin: no ELF magic; pass the .cubin nvcc -cubin wrote (not PTX or a fatbin)"
            ),
            Self::NotElf64LittleEndian { class, data } => write!(
                f,
                "not a cubin: ELF class {class} data {data}, cubins are 64-bit little-endian"
            ),
            Self::NotCuda { machine } => write!(
                f,
                "not a cubin: ELF machine {machine}, cubins are EM_CUDA (190); compile with nvcc -cubin"
            ),
            Self::Truncated { what, offset, len } => write!(
                f,
                "malformed cubin: {what} ({len} bytes at {offset:#x}) runs past the end of the file; the file is cut short or corrupt"
            ),
            Self::Malformed { what } => {
                write!(f, "malformed cubin: {what}; recompile it with nvcc -cubin")
            }
            Self::NoSuchKernel(k) => write!(
                f,
                "the cubin has no kernel named {k:?}; kernels need extern \"C\" or their mangled name"
            ),
            Self::MissingKernelInfo { kernel, what } => write!(
                f,
                "kernel {kernel:?} has no {what}; recompile with a current nvcc"
            ),
            Self::UnsupportedRelocation { kind, section } => write!(
                f,
                "relocation type {kind:#x} in {section} is not supported by this loader; avoid the construct (e.g. device-side function pointers) or report it"
            ),
            Self::UndefinedSymbol(s) => write!(
                f,
                "relocation against undefined symbol {s:?}; link the cubin fully (nvcc -cubin, not -rdc without nvlink)"
            ),
        }
    }
}

impl core::error::Error for CubinError {}

/// One kernel parameter (`EIATTR_KPARAM_INFO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelParam {
    /// Position in the C signature.
    pub ordinal: u16,
    /// Byte offset within the parameter block.
    pub offset: u16,
    /// Size in bytes.
    pub size: u16,
}

/// A constant bank a kernel reads, other than bank 0 (which the launch builds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstantBank {
    /// Bank number (`.nv.constantN`).
    pub bank: u32,
    /// Its section.
    pub section: usize,
    /// Its size in bytes.
    pub size: u64,
}

/// What a kernel needs to launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel<'a> {
    /// Symbol name (borrowed from the cubin; [`Kernel::into_owned`] detaches it).
    pub name: Cow<'a, str>,
    /// Section index of `.text.<name>`.
    pub text_section: usize,
    /// Code bytes.
    pub code_size: u64,
    /// Registers per thread (`EIATTR_REGCOUNT`).
    pub registers: u32,
    /// Offset of the parameters in constant bank 0 (`EIATTR_PARAM_CBANK`).
    pub param_offset: u32,
    /// Bytes of parameters (`EIATTR_CBANK_PARAM_SIZE`).
    pub param_size: u32,
    /// Size of `.nv.constant0.<name>`: driver slots + parameters.
    pub cbuf0_size: u32,
    /// Parameters in offset order.
    pub params: Vec<KernelParam>,
    /// Stack frame bytes (`EIATTR_FRAME_SIZE`).
    pub frame_size: u32,
    /// Stack bytes including callees (`EIATTR_MIN_STACK_SIZE`).
    pub min_stack_size: u32,
    /// Maximum stack (`EIATTR_MAX_STACK_SIZE`), when recorded.
    pub max_stack_size: u32,
    /// Static shared memory (`.nv.shared.<name>`; on sm_90+ it includes the reserved 1 KiB).
    pub shared_size: u32,
    /// Named barriers (`EIATTR_NUM_BARRIERS`).
    pub barriers: u32,
    /// `__launch_bounds__` max threads, when given.
    pub max_threads: Option<[u32; 3]>,
    /// Required CTA shape, when given.
    pub required_block: Option<[u32; 3]>,
    /// Other constant banks (user `__constant__` data in bank 3, addresses in bank 4, ...).
    pub constant_banks: Vec<ConstantBank>,
}

impl Kernel<'_> {
    /// The same record with its name copied, so it outlives the cubin bytes (a
    /// loaded kernel keeps this, not the ELF it came from).
    pub fn into_owned(self) -> Kernel<'static> {
        Kernel {
            name: Cow::Owned(self.name.into_owned()),
            params: self.params,
            constant_banks: self.constant_banks,
            ..self
        }
    }
}

/// A parsed cubin.
#[derive(Clone, Debug)]
pub struct Cubin<'a> {
    elf: Elf<'a>,
    /// SM version, e.g. 90 for sm_90.
    pub sm: u32,
    /// Kernels in symbol-table order.
    pub kernels: Vec<Kernel<'a>>,
}

fn parse_bank_name(name: &str) -> Option<(u32, Option<&str>)> {
    let rest = name.strip_prefix(".nv.constant")?;
    let (num, kernel) = match rest.find('.') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) || num.len() > 2 {
        return None;
    }
    Some((num.parse().ok()?, kernel))
}

impl<'a> Cubin<'a> {
    /// Parses `data`, reading every kernel's attributes.
    pub fn parse(data: &'a [u8]) -> Result<Self, CubinError> {
        let elf = Elf::parse(data)?;
        let sm = match (elf.flags >> 16) & 0xff {
            0 => (elf.flags >> 8) & 0xff,
            v => v,
        };
        let symbols = elf.symbols()?;
        let mut kernels = Vec::new();
        for sym in &symbols {
            if sym.kind != STT_FUNC || sym.other & STO_CUDA_ENTRY == 0 {
                continue;
            }
            let text = sym.section as usize;
            if elf.section_name(text)? != alloc::format!(".text.{}", sym.name) {
                return Err(CubinError::Malformed {
                    what: "kernel symbol not in its .text.<kernel> section",
                });
            }
            kernels.push(Kernel {
                name: Cow::Borrowed(sym.name),
                text_section: text,
                code_size: elf.sections[text].size,
                registers: 0,
                param_offset: 0,
                param_size: 0,
                cbuf0_size: 0,
                params: Vec::new(),
                frame_size: 0,
                min_stack_size: 0,
                max_stack_size: 0,
                shared_size: 0,
                barriers: 0,
                max_threads: None,
                required_block: None,
                constant_banks: Vec::new(),
            });
        }
        let mut cubin = Self { elf, sm, kernels };
        cubin.read_module_info(&symbols)?;
        for k in 0..cubin.kernels.len() {
            cubin.read_kernel_info(k)?;
        }
        Ok(cubin)
    }

    /// The ELF view.
    pub fn elf(&self) -> &Elf<'a> {
        &self.elf
    }

    /// The kernel named `name`.
    pub fn kernel(&self, name: &str) -> Result<&Kernel<'a>, CubinError> {
        self.kernels
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| CubinError::NoSuchKernel(String::from(name)))
    }

    /// `.nv.info`: per-function registers and stack sizes, keyed by symbol.
    fn read_module_info(&mut self, symbols: &[elf::Symbol<'a>]) -> Result<(), CubinError> {
        let Some(idx) = self.elf.find_section(".nv.info") else {
            return Ok(());
        };
        for a in Attributes::new(self.elf.contents(idx)?) {
            let a = a?;
            let field: for<'k> fn(&'k mut Kernel<'a>) -> &'k mut u32 = match a.attr {
                attr::REGCOUNT => |k| &mut k.registers,
                attr::FRAME_SIZE => |k| &mut k.frame_size,
                attr::MIN_STACK_SIZE => |k| &mut k.min_stack_size,
                attr::MAX_STACK_SIZE => |k| &mut k.max_stack_size,
                _ => continue,
            };
            let (sym, value) = a.symbol_value()?;
            let name = symbols
                .get(sym as usize)
                .ok_or(CubinError::Malformed {
                    what: ".nv.info names a symbol that does not exist",
                })?
                .name;
            if let Some(k) = self.kernels.iter_mut().find(|k| k.name == name) {
                *field(k) = value;
            }
        }
        Ok(())
    }

    fn read_kernel_info(&mut self, k: usize) -> Result<(), CubinError> {
        let name = self.kernels[k].name.clone();
        let name = &*name;
        let text = self.kernels[k].text_section;
        let mut found_param_bank = false;
        let mut kernel = self.kernels[k].clone();
        for i in 0..self.elf.sections.len() {
            let sh = self.elf.sections[i];
            let sname = self.elf.section_name(i)?;
            if sh.kind == SHT_CUDA_INFO
                && sh.info as usize == text
                && sname.starts_with(".nv.info.")
            {
                for a in Attributes::new(self.elf.contents(i)?) {
                    let a = a?;
                    match a.attr {
                        attr::PARAM_CBANK => {
                            let (_, off, size) = a.param_cbank()?;
                            kernel.param_offset = off as u32;
                            kernel.param_size = size as u32;
                            found_param_bank = true;
                        }
                        attr::CBANK_PARAM_SIZE => kernel.param_size = a.value as u32,
                        attr::NUM_BARRIERS => kernel.barriers = a.value as u32,
                        attr::MAX_THREADS => kernel.max_threads = Some(a.xyz()?),
                        attr::REQNTID => kernel.required_block = Some(a.xyz()?),
                        attr::KPARAM_INFO => {
                            let d = a.data;
                            let flags = elf::u32_at(d, 8, "KPARAM_INFO")?;
                            kernel.params.push(KernelParam {
                                ordinal: elf::u16_at(d, 4, "KPARAM_INFO")?,
                                offset: elf::u16_at(d, 6, "KPARAM_INFO")?,
                                size: ((flags >> 18) & 0x3fff) as u16,
                            });
                        }
                        _ => {}
                    }
                }
            } else if let Some(kname) = sname.strip_prefix(".nv.shared.") {
                if kname == name {
                    kernel.shared_size =
                        u32::try_from(sh.size).map_err(|_| CubinError::Malformed {
                            what: "shared memory section larger than 4 GiB",
                        })?;
                }
            } else if let Some((bank, owner)) = parse_bank_name(sname) {
                let size = sh.size;
                match (bank, owner) {
                    (0, Some(o)) if o == name => {
                        kernel.cbuf0_size =
                            u32::try_from(size).map_err(|_| CubinError::Malformed {
                                what: "constant bank larger than 4 GiB",
                            })?;
                    }
                    (0, _) => {}
                    (b, None) => kernel.constant_banks.push(ConstantBank {
                        bank: b,
                        section: i,
                        size,
                    }),
                    (b, Some(o)) if o == name => kernel.constant_banks.push(ConstantBank {
                        bank: b,
                        section: i,
                        size,
                    }),
                    _ => {}
                }
            }
        }
        if !found_param_bank && kernel.param_size > 0 {
            return Err(CubinError::MissingKernelInfo {
                kernel: String::from(name),
                what: "EIATTR_PARAM_CBANK",
            });
        }
        if kernel.cbuf0_size as u64 > MAX_CONSTANT_BANK
            || kernel
                .constant_banks
                .iter()
                .any(|b| b.size > MAX_CONSTANT_BANK)
        {
            return Err(CubinError::Malformed {
                what: "constant bank larger than 64 KiB",
            });
        }
        if kernel.cbuf0_size == 0 {
            return Err(CubinError::MissingKernelInfo {
                kernel: String::from(name),
                what: ".nv.constant0 section",
            });
        }
        if kernel.param_offset as u64 + kernel.param_size as u64 > kernel.cbuf0_size as u64 {
            return Err(CubinError::Malformed {
                what: "parameters extend past the kernel's constant bank 0",
            });
        }
        kernel.params.sort_by_key(|p| p.offset);
        kernel.constant_banks.sort_by_key(|b| b.bank);
        kernel.constant_banks.dedup_by_key(|b| b.bank);
        self.kernels[k] = kernel;
        Ok(())
    }

    /// Lays out the loadable sections at `base_va` and applies relocations.
    pub fn load_image(&self, base_va: u64) -> Result<ModuleImage, CubinError> {
        ModuleImage::build(&self.elf, base_va)
    }
}
