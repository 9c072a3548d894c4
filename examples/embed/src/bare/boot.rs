//! The boot stub: from QEMU's PVH entry (32-bit protected mode, paging off, no stack) to Rust
//! in 64-bit long mode.
//!
//! QEMU's `-kernel` loads an ELF that carries a Xen `PHYS32_ENTRY` note (PVH boot, the x86/HVM
//! direct boot ABI of Xen's `arch-x86/hvm/start_info.h`) at its physical addresses and jumps to
//! the note's address with `ebx` pointing at an `hvm_start_info` (memory map, modules — the
//! firmware archive —, ACPI RSDP). Multiboot is not an option: QEMU's multiboot loader refuses
//! ELF64. The stub zeroes `.bss`, checks the CPU has long mode and 1 GiB pages, identity maps
//! the first 512 GiB with 1 GiB pages (RAM, the PCI holes and 64-bit BARs up to there;
//! [`super::paging`] refines this once the BARs are known), enables PAE, long mode and paging,
//! loads a flat GDT and an IDT whose 32 exception vectors report on COM1 ([`exception`]),
//! and calls [`super::kmain`] with the start info's physical address.
//! A CPU without long mode or 1 GiB pages gets one line on COM1 and a halt.

/// The stack Rust runs on.
const STACK_BYTES: usize = 4 << 20;

core::arch::global_asm!(
    // The PVH entry point: Xen's ELF note `XEN_ELFNOTE_PHYS32_ENTRY` (18), name "Xen", a
    // pointer-sized descriptor (as Linux writes it: QEMU reads a size_t), 4-byte aligned.
    r#"
    .section .note.Xen, "a", @note
    .balign 4
    .long 4
    .long 8
    .long 18
    .asciz "Xen"
    .balign 4
    .quad pvh_start
    .balign 4

    .section .bss.pvh, "aw", @nobits
    .balign 4096
    .global pvh_pml4
pvh_pml4:
    .skip 4096
    .global pvh_pdpt
pvh_pdpt:
    .skip 4096
    .balign 16
pvh_idt:
    .skip 32 * 16
    .balign 16
    .skip {stack}
pvh_stack_top:

    .section .text.pvh, "ax"
    .balign 8
pvh_gdt:
    .quad 0
    .quad 0x00af9a000000ffff
    .quad 0x00cf92000000ffff
pvh_gdt_end:
pvh_gdt_ptr:
    .word pvh_gdt_end - pvh_gdt - 1
    .quad pvh_gdt
pvh_idt_ptr:
    .word 32 * 16 - 1
    .quad pvh_idt
pvh_no_long_mode:
    .asciz "NVBARE-CHECK boot fail this CPU has no long mode or no 1 GiB pages (QEMU: -cpu max)\r\n"

    .code32
    .global pvh_start
pvh_start:
    cli
    cld
    mov esi, ebx
    mov edi, offset __bss_start
    mov ecx, offset __bss_end
    sub ecx, edi
    shr ecx, 2
    xor eax, eax
    rep stosd
    mov esp, offset pvh_stack_top

    mov eax, 0x80000000
    cpuid
    cmp eax, 0x80000001
    jb 9f
    mov eax, 0x80000001
    cpuid
    bt edx, 29
    jnc 9f
    bt edx, 26
    jnc 9f

    mov eax, offset pvh_pdpt
    or eax, 3
    mov dword ptr [pvh_pml4], eax
    xor ecx, ecx
2:
    mov eax, ecx
    shl eax, 30
    or eax, 0x83
    mov edx, ecx
    shr edx, 2
    mov dword ptr [pvh_pdpt + ecx * 8], eax
    mov dword ptr [pvh_pdpt + ecx * 8 + 4], edx
    inc ecx
    cmp ecx, 512
    jne 2b

    mov eax, cr4
    or eax, 0x20
    mov cr4, eax
    mov eax, offset pvh_pml4
    mov cr3, eax
    mov ecx, 0xc0000080
    rdmsr
    or eax, 0x100
    wrmsr
    mov eax, cr0
    or eax, 0x80000001
    mov cr0, eax
    lgdt [pvh_gdt_ptr]
    push 0x08
    mov eax, offset pvh_long_mode
    push eax
    retf

9:
    mov esi, offset pvh_no_long_mode
    mov dx, 0x3f8
3:
    lodsb
    test al, al
    jz 4f
    out dx, al
    jmp 3b
4:
    cli
    hlt
    jmp 4b

    .code64
pvh_long_mode:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor eax, eax
    mov fs, ax
    mov gs, ax
    mov rsp, offset pvh_stack_top

    mov rax, offset pvh_vectors
    mov rdi, offset pvh_idt
    mov ecx, 32
6:
    mov rdx, rax
    mov word ptr [rdi], dx
    mov word ptr [rdi + 2], 0x08
    mov word ptr [rdi + 4], 0x8e00
    shr rdx, 16
    mov word ptr [rdi + 6], dx
    shr rdx, 16
    mov dword ptr [rdi + 8], edx
    mov dword ptr [rdi + 12], 0
    add rax, 16
    add rdi, 16
    dec ecx
    jnz 6b
    lidt [pvh_idt_ptr]

    mov edi, esi
    call {kmain}
5:
    cli
    hlt
    jmp 5b

    .balign 16
pvh_vectors:
    .set vector, 0
    .rept 32
    .balign 16
    .if vector == 8 || (vector >= 10 && vector <= 14) || vector == 17 || vector == 21 || vector == 29 || vector == 30
    .else
    push 0
    .endif
    push vector
    jmp pvh_exception
    .set vector, vector + 1
    .endr
pvh_exception:
    mov rdi, [rsp]
    mov rsi, [rsp + 8]
    mov rdx, [rsp + 16]
    mov rcx, cr2
    and rsp, -16
    call {exception}
7:
    cli
    hlt
    jmp 7b
"#,
    stack = const STACK_BYTES,
    kmain = sym super::kmain,
    exception = sym exception,
);

/// The exceptions' names (Intel SDM vol. 3, table 6-1).
const EXCEPTIONS: [&str; 22] = [
    "#DE divide error",
    "#DB debug",
    "NMI",
    "#BP breakpoint",
    "#OF overflow",
    "#BR bound range",
    "#UD invalid opcode",
    "#NM no FPU",
    "#DF double fault",
    "coprocessor segment overrun",
    "#TS invalid TSS",
    "#NP segment not present",
    "#SS stack fault",
    "#GP general protection",
    "#PF page fault",
    "reserved",
    "#MF x87 error",
    "#AC alignment check",
    "#MC machine check",
    "#XM SIMD error",
    "#VE virtualization",
    "#CP control protection",
];

/// Every CPU exception lands here (the stub's IDT, interrupts stay masked): one report line
/// naming it, and QEMU told the run failed, instead of a triple fault and a silent reset.
extern "C" fn exception(vector: u64, error: u64, rip: u64, cr2: u64) -> ! {
    use core::fmt::Write;
    let name = EXCEPTIONS
        // CAST: the vector is below 32.
        .get(vector as usize)
        .copied()
        .unwrap_or("reserved");
    let mut out = super::serial::Com1::init();
    let _ = writeln!(
        out,
        "NVBARE-CHECK exception fail CPU exception {vector} ({name}) at rip {rip:#x}, \
         error code {error:#x}, cr2 {cr2:#x}"
    );
    let _ = writeln!(out, "NVBARE-CHECK done fail CPU exception");
    super::port::qemu_exit(1);
    super::halt()
}
