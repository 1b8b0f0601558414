//! Stamps build provenance (git commit, dirty flag, build time) into the binary, for
//! `capsid --version` and `/health`.

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
}
