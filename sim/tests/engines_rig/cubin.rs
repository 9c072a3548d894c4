//! The committed test cubins, read with a minimal ELF64 section reader written here (not
//! nvbare's cubin loader): section bytes by name.

use std::path::PathBuf;

/// A cubin's sections.
pub struct Cubin {
    bytes: Vec<u8>,
    /// (name, file offset, size, type)
    sections: Vec<(String, usize, usize, u32)>,
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

/// SHT_NOBITS: a section with no bytes in the file.
const SHT_NOBITS: u32 = 8;

impl Cubin {
    /// The cubin at `path` relative to the workspace root.
    pub fn load(path: &str) -> Cubin {
        let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(path);
        let bytes = std::fs::read(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
        assert_eq!(&bytes[..4], b"\x7fELF");
        // ELF64 header: e_shoff 0x28, e_shentsize 0x3a, e_shnum 0x3c, e_shstrndx 0x3e.
        let (shoff, shentsize, shnum, shstrndx) = (
            u64_at(&bytes, 0x28),
            u16_at(&bytes, 0x3a),
            u16_at(&bytes, 0x3c),
            u16_at(&bytes, 0x3e),
        );
        // Section header: sh_name 0, sh_type 4, sh_offset 0x18, sh_size 0x20.
        let hdr = |i: usize| {
            let h = shoff + i * shentsize;
            (
                u32_at(&bytes, h) as usize,
                u32_at(&bytes, h + 4),
                u64_at(&bytes, h + 0x18),
                u64_at(&bytes, h + 0x20),
            )
        };
        let strtab = hdr(shstrndx).2;
        let sections = (0..shnum)
            .map(|i| {
                let (name, ty, off, size) = hdr(i);
                let start = strtab + name;
                let end = start + bytes[start..].iter().position(|&c| c == 0).unwrap();
                (
                    String::from_utf8(bytes[start..end].to_vec()).unwrap(),
                    off,
                    size,
                    ty,
                )
            })
            .collect();
        Cubin { bytes, sections }
    }

    /// The bytes of section `name` (zeros for a NOBITS section).
    pub fn section(&self, name: &str) -> Vec<u8> {
        let (_, off, size, ty) = self
            .sections
            .iter()
            .find(|s| s.0 == name)
            .unwrap_or_else(|| panic!("no section {name}"));
        if *ty == SHT_NOBITS {
            return vec![0; *size];
        }
        self.bytes[*off..*off + *size].to_vec()
    }

    /// The names of the kernels (`.text.NAME` sections).
    pub fn kernels(&self) -> Vec<String> {
        self.sections
            .iter()
            .filter_map(|s| s.0.strip_prefix(".text.").map(str::to_string))
            .collect()
    }
}
