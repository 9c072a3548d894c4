//! The grammar of `nvbare run`'s kernel arguments, `--out` and `--dump`, read into typed
//! values before any GPU is opened (so every mistake in them is reported first), and the
//! packing of the arguments into the kernel's parameter block.
//!
//! ```text
//! --arg [NAME=]TYPE:VALUE          TYPE: u8 u16 u32 i32 u64 i64 f32 f64
//! --arg [NAME=]buf:BYTES[:OPT]...  a buffer of BYTES, zeroed, passed as its GPU address
//! --arg [NAME=]buf:@FILE[:OPT]...  a buffer holding FILE's bytes
//!   OPT: an element type (u8 … f64: how fill= reads its value and --dump shows it),
//!        host | vram (placement; host is the default), fill=iota | fill=VALUE
//! --out ARG=FILE                   a buffer's bytes written to FILE after the run
//! --dump ARG[:TYPE|hex]            a buffer's first elements printed after the run
//! ```
//! ARG is an argument's NAME or its position among the `--arg`s (0 first).

use std::path::PathBuf;

use nvbare_core::gpu::Placement;

use super::values::{BadValue, DumpFormat, ElemType, parse_bytes};

/// What a buffer holds before the kernel runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Contents {
    /// Zeros.
    Zeroed,
    /// Element `i` is `i` (as the buffer's element type).
    Iota,
    /// Every element is this value (little-endian bytes of one element).
    Value(Vec<u8>),
    /// The bytes of a file (read when the run is planned).
    File(PathBuf),
}

/// A `buf:` argument.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferArg {
    /// Bytes, for a sized buffer (a file's buffer takes the file's size).
    pub size: Option<u64>,
    /// Its initial contents.
    pub contents: Contents,
    /// The element type given, if any.
    pub elem: Option<ElemType>,
    /// Video or host memory.
    pub placement: Placement,
}

/// What one `--arg` passes.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A scalar: its type and its little-endian bytes.
    Scalar(ElemType, Vec<u8>),
    /// A buffer, passed as its 64-bit GPU address.
    Buffer(BufferArg),
}

/// One `--arg` as given.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelArg {
    /// `NAME=` when given.
    pub name: Option<String>,
    /// The text after any `NAME=`, for messages.
    pub spec: String,
    /// What it passes.
    pub value: ArgValue,
}

impl KernelArg {
    /// Bytes and alignment in the parameter block.
    pub fn param_size(&self) -> usize {
        match &self.value {
            ArgValue::Scalar(t, _) => t.size(),
            ArgValue::Buffer(_) => 8,
        }
    }

    /// How the argument reads in a message: `x (buf:4096:f32)` or `#2 (u32:7)`.
    pub fn label(&self, index: usize) -> String {
        match &self.name {
            Some(n) => format!("{n} ({})", self.spec),
            None => format!("#{index} ({})", self.spec),
        }
    }
}

/// A mistake in `--arg`, `--out` or `--dump`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ArgError {
    /// Not of the form `[NAME=]KIND:VALUE`, or an unknown kind or option.
    #[error(
        "--arg {spec:?}: {why}; write TYPE:VALUE (TYPE u8 u16 u32 i32 u64 i64 f32 f64), \
         buf:BYTES[:OPT]... or buf:@FILE[:OPT]... (OPT: a TYPE, host, vram, fill=iota, \
         fill=VALUE), optionally after NAME="
    )]
    Form {
        /// The argument as given.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// A scalar or fill value that is not of its type.
    #[error("--arg {spec:?}: {source}")]
    Value {
        /// The argument as given.
        spec: String,
        /// Why.
        #[source]
        source: BadValue,
    },
    /// A buffer size that is not a byte count, or does not hold whole elements.
    #[error("--arg {spec:?}: {why}")]
    Size {
        /// The argument as given.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// Two arguments of one name.
    #[error("--arg names {name:?} twice; give each argument its own name")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// `--out`/`--dump` names no buffer argument.
    #[error("{flag} {given:?}: {why}")]
    Reference {
        /// `--out` or `--dump`.
        flag: &'static str,
        /// The text given.
        given: String,
        /// What is wrong.
        why: String,
    },
}

fn form(spec: &str, why: impl Into<String>) -> ArgError {
    ArgError::Form {
        spec: spec.to_owned(),
        why: why.into(),
    }
}

/// Whether `s` can be an argument's name (a C identifier).
fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// Reads one `--arg`.
pub fn parse_arg(text: &str) -> Result<KernelArg, ArgError> {
    let (name, spec) = match text.split_once('=') {
        Some((n, rest)) if is_name(n) && rest.contains(':') => (Some(n.to_owned()), rest),
        _ => (None, text),
    };
    let (kind, rest) = spec
        .split_once(':')
        .ok_or_else(|| form(spec, "no ':' after the type"))?;
    let value = match kind {
        "buf" => ArgValue::Buffer(parse_buffer(spec, rest)?),
        _ => {
            let ty = ElemType::from_name(kind)
                .ok_or_else(|| form(spec, format!("{kind:?} is not a type")))?;
            let bytes = ty.encode(rest).map_err(|source| ArgError::Value {
                spec: spec.to_owned(),
                source,
            })?;
            ArgValue::Scalar(ty, bytes)
        }
    };
    Ok(KernelArg {
        name,
        spec: spec.to_owned(),
        value,
    })
}

/// `BYTES[:OPT]...` or `@FILE[:OPT]...`. Options are read from the end, so a file path may
/// itself hold a `:`.
fn parse_buffer(spec: &str, rest: &str) -> Result<BufferArg, ArgError> {
    let mut parts: Vec<&str> = rest.split(':').collect();
    let (mut elem, mut placement, mut fill) = (None, None, None);
    while parts.len() > 1 {
        // PANIC-free: more than one part.
        let opt = parts[parts.len() - 1];
        if let Some(t) = ElemType::from_name(opt) {
            if elem.replace(t).is_some() {
                return Err(form(spec, "two element types"));
            }
        } else if opt == "host" || opt == "vram" {
            let p = if opt == "host" {
                Placement::Host
            } else {
                Placement::Vram
            };
            if placement.replace(p).is_some() {
                return Err(form(spec, "two placements"));
            }
        } else if let Some(f) = opt.strip_prefix("fill=") {
            if fill.replace(f).is_some() {
                return Err(form(spec, "two fills"));
            }
        } else if rest.starts_with('@') {
            // Part of the file's path.
            break;
        } else {
            return Err(form(spec, format!("{opt:?} is not a buffer option")));
        }
        parts.pop();
    }
    let head = parts.join(":");
    let (size, contents) = match head.strip_prefix('@') {
        Some("") => return Err(form(spec, "no file after '@'")),
        Some(path) => {
            if fill.is_some() {
                return Err(form(
                    spec,
                    "a buffer is filled from its file or by fill=, not both",
                ));
            }
            (None, Contents::File(PathBuf::from(path)))
        }
        None => {
            let size = parse_bytes(&head).ok_or_else(|| ArgError::Size {
                spec: spec.to_owned(),
                why: format!(
                    "{head:?} is not a buffer size; give bytes (4096, 0x1000, 64K, 1M, 2G), at \
                     least 1"
                ),
            })?;
            let ty = elem.unwrap_or(ElemType::U32);
            let contents = match fill {
                None => Contents::Zeroed,
                Some("iota") => Contents::Iota,
                Some(v) => Contents::Value(ty.encode(v).map_err(|source| ArgError::Value {
                    spec: spec.to_owned(),
                    source,
                })?),
            };
            if fill.is_some() && size % ty.size() as u64 != 0 {
                return Err(ArgError::Size {
                    spec: spec.to_owned(),
                    why: format!(
                        "{size} bytes are not a whole number of {ty} elements to fill; give a \
                         multiple of {}",
                        ty.size()
                    ),
                });
            }
            (Some(size), contents)
        }
    };
    Ok(BufferArg {
        size,
        contents,
        elem,
        placement: placement.unwrap_or(Placement::Host),
    })
}

/// Checks the names of `args` are unique.
pub fn check_names(args: &[KernelArg]) -> Result<(), ArgError> {
    for (i, a) in args.iter().enumerate() {
        if let Some(n) = &a.name
            && args[..i].iter().any(|b| b.name.as_ref() == Some(n))
        {
            return Err(ArgError::DuplicateName { name: n.clone() });
        }
    }
    Ok(())
}

/// The buffer argument `given` names (a NAME or a position), as an index into `args`.
pub fn resolve(args: &[KernelArg], flag: &'static str, given: &str) -> Result<usize, ArgError> {
    let err = |why: String| ArgError::Reference {
        flag,
        given: given.to_owned(),
        why,
    };
    let index = match given.parse::<usize>() {
        Ok(i) if i < args.len() => i,
        Ok(i) => {
            return Err(err(format!(
                "there is no argument #{i}: {} --arg given (0 is the first)",
                args.len()
            )));
        }
        Err(_) => args
            .iter()
            .position(|a| a.name.as_deref() == Some(given))
            .ok_or_else(|| {
                let names: Vec<&str> = args.iter().filter_map(|a| a.name.as_deref()).collect();
                err(format!(
                    "no argument is named so (named: {}); name one with --arg {given}=buf:...",
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                ))
            })?,
    };
    match args[index].value {
        ArgValue::Buffer(_) => Ok(index),
        ArgValue::Scalar(..) => Err(err(format!(
            "argument {} is a scalar; only buffers are read back",
            args[index].label(index)
        ))),
    }
}

/// `--out ARG=FILE`: the buffer's index and the file.
pub fn parse_out(args: &[KernelArg], text: &str) -> Result<(usize, PathBuf), ArgError> {
    let (arg, file) = text
        .split_once('=')
        .filter(|(a, f)| !a.is_empty() && !f.is_empty())
        .ok_or_else(|| ArgError::Reference {
            flag: "--out",
            given: text.to_owned(),
            why: "write ARG=FILE (ARG: an argument's name or position)".into(),
        })?;
    Ok((resolve(args, "--out", arg)?, PathBuf::from(file)))
}

/// `--dump ARG[:TYPE|hex]`: the buffer's index and how to show it (the buffer's element type
/// when no format is given, hex words when it has none).
pub fn parse_dump(args: &[KernelArg], text: &str) -> Result<(usize, DumpFormat), ArgError> {
    let (arg, format) = match text.rsplit_once(':') {
        Some((a, f)) => {
            let format = DumpFormat::from_name(f).ok_or_else(|| ArgError::Reference {
                flag: "--dump",
                given: text.to_owned(),
                why: format!("{f:?} is not a type: give u8 u16 u32 i32 u64 i64 f32 f64 or hex"),
            })?;
            (a, Some(format))
        }
        None => (text, None),
    };
    let index = resolve(args, "--dump", arg)?;
    Ok((
        index,
        format.unwrap_or_else(|| default_format(&args[index])),
    ))
}

/// How a buffer is shown when no format is asked for.
pub fn default_format(arg: &KernelArg) -> DumpFormat {
    match &arg.value {
        ArgValue::Buffer(BufferArg { elem: Some(t), .. }) => DumpFormat::Elem(*t),
        _ => DumpFormat::Hex,
    }
}

/// Where each argument sits in the parameter block, and what packing left over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packing {
    /// Byte offset of each argument that fits, in order.
    pub offsets: Vec<usize>,
    /// Arguments past the kernel's parameters (ignored, with a warning).
    pub extra: usize,
}

/// Why the arguments do not fit the kernel's parameters.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    /// Fewer argument bytes than the kernel takes.
    #[error(
        "kernel {kernel} takes {expected} bytes of parameters{layout}, the --args give {given}; \
         pass one --arg per parameter of its C signature"
    )]
    TooFew {
        /// The kernel.
        kernel: String,
        /// Bytes the kernel takes.
        expected: usize,
        /// Bytes given.
        given: usize,
        /// The parameters' sizes, when the cubin lists them.
        layout: String,
    },
    /// The cubin lists a parameter outside the kernel's parameter block.
    #[error(
        "kernel {kernel}'s parameter {index} is listed at offset {offset} ({size} bytes), past \
         its {param_size}-byte parameter block; the cubin is corrupt: recompile it"
    )]
    BadLayout {
        /// The kernel.
        kernel: String,
        /// The parameter's position.
        index: usize,
        /// Its offset.
        offset: usize,
        /// Its size.
        size: usize,
        /// The block's size.
        param_size: usize,
    },
    /// An argument's size differs from its parameter's.
    #[error(
        "argument {arg} is {given} bytes, parameter {index} of kernel {kernel} is {expected} \
         bytes at offset {offset}; give it as {hint}"
    )]
    SizeMismatch {
        /// The argument's label.
        arg: String,
        /// Its position.
        index: usize,
        /// The kernel.
        kernel: String,
        /// Bytes given.
        given: usize,
        /// Bytes the parameter takes.
        expected: usize,
        /// The parameter's offset.
        offset: usize,
        /// The types of that size.
        hint: &'static str,
    },
}

fn types_of_size(n: usize) -> &'static str {
    match n {
        1 => "u8",
        2 => "u16",
        4 => "u32, i32 or f32",
        8 => "u64, i64, f64 or a buf",
        _ => "raw bytes nvbare cannot pass (a struct by value)",
    }
}

/// Places `args` in a parameter block of `param_size` bytes. With the cubin's parameter list
/// (`params`: offset and size of each), every argument goes to its parameter's offset and
/// must have its size; without it, arguments are laid out as C lays out a signature of those
/// types. Arguments beyond the block are counted in [`Packing::extra`].
pub fn pack(
    kernel: &str,
    param_size: usize,
    params: &[(usize, usize)],
    args: &[KernelArg],
) -> Result<Packing, PackError> {
    let mut offsets = Vec::new();
    if !params.is_empty() {
        for (index, &(offset, size)) in params.iter().enumerate() {
            if offset.checked_add(size).is_none_or(|end| end > param_size) {
                return Err(PackError::BadLayout {
                    kernel: kernel.to_owned(),
                    index,
                    offset,
                    size,
                    param_size,
                });
            }
        }
        for (i, (a, &(offset, size))) in args.iter().zip(params).enumerate() {
            if a.param_size() != size {
                return Err(PackError::SizeMismatch {
                    arg: a.label(i),
                    index: i,
                    kernel: kernel.to_owned(),
                    given: a.param_size(),
                    expected: size,
                    offset,
                    hint: types_of_size(size),
                });
            }
            offsets.push(offset);
        }
        if args.len() < params.len() {
            let layout: Vec<String> = params.iter().map(|(_, s)| s.to_string()).collect();
            return Err(PackError::TooFew {
                kernel: kernel.to_owned(),
                expected: param_size,
                given: args
                    .iter()
                    .map(KernelArg::param_size)
                    .sum::<usize>()
                    .min(param_size),
                layout: format!(
                    " ({} parameters of {} bytes)",
                    params.len(),
                    layout.join(", ")
                ),
            });
        }
        return Ok(Packing {
            offsets,
            extra: args.len() - params.len(),
        });
    }
    let mut end = 0usize;
    for a in args {
        let at = end.next_multiple_of(a.param_size());
        if at + a.param_size() > param_size {
            break;
        }
        offsets.push(at);
        end = at + a.param_size();
    }
    let extra = args.len() - offsets.len();
    if end.next_multiple_of(4) < param_size {
        return Err(PackError::TooFew {
            kernel: kernel.to_owned(),
            expected: param_size,
            given: end,
            layout: String::new(),
        });
    }
    Ok(Packing { offsets, extra })
}
