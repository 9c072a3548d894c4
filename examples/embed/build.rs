//! Links the bare-metal build as a kernel QEMU can boot with `-kernel` (PVH): at the physical
//! addresses of `link.ld`, not position independent (nothing relocates it; the PVH stub's
//! 32-bit code takes absolute addresses). Hosted builds (the stub `main`) are untouched.

fn main() {
    println!("cargo:rerun-if-changed=link.ld");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none") {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo:rustc-link-arg-bins=-T{dir}/link.ld");
        println!("cargo:rustc-link-arg-bins=--no-pie");
    }
}
