//! Stamps build provenance (git commit, dirty flag, build time) into the binary, for
//! `capsid --version` and `/health`; and, where this host's linker and C library support them,
//! links the binary with packed relative relocations (`-z pack-relative-relocs`, DT_RELR:
//! glibc 2.36 and binutils 2.38 or later). A position-independent binary of this size carries
//! about 800 KB of plain relative relocations; packed, a few kilobytes, with ASLR kept and
//! nothing changed at run time. A host without them links as before.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    let sha = std::env::var("CAPSID_BUILD_SHA")
        .ok()
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let built = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=CAPSID_GIT_SHA={sha}");
    println!("cargo:rustc-env=CAPSID_GIT_DIRTY={dirty}");
    println!("cargo:rustc-env=CAPSID_BUILT_AT={built}");
    if let Some(top) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={top}/HEAD");
        println!("cargo:rerun-if-changed={top}/index");
    }
    println!("cargo:rerun-if-env-changed=CAPSID_BUILD_SHA");
    if relr_supported() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether a program linked with `-z pack-relative-relocs` links and runs here (the linker
/// knows the flag, and the C library's loader reads DT_RELR).
fn relr_supported() -> bool {
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host || !target.ends_with("-linux-gnu") {
        return false;
    }
    let Some(out) = std::env::var_os("OUT_DIR").map(std::path::PathBuf::from) else {
        return false;
    };
    let source = out.join("relr-probe.c");
    let program = out.join("relr-probe");
    if std::fs::write(&source, "int main(void) { return 0; }\n").is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let linked = Command::new(cc)
        .arg("-pie")
        .arg("-fPIE")
        .arg("-Wl,-z,pack-relative-relocs")
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .output()
        .is_ok_and(|o| o.status.success());
    linked && Command::new(&program).status().is_ok_and(|s| s.success())
}
