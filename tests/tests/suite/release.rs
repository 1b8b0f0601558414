//! The release statement (issue 56, item 16): the licence files match the licence every crate
//! declares, and the README says what a user brings and that Capsid is no vendor's product.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_licence_files_match_what_every_crate_declares() {
    let workspace = read("Cargo.toml");
    let licence = "MIT OR Apache-2.0";
    assert!(
        workspace.contains(&format!("license = \"{licence}\"")),
        "the workspace declares {licence}"
    );
    // Every member crate (each folder of the workspace with a Cargo.toml) inherits it.
    let mut members = 0;
    for entry in std::fs::read_dir(root()).expect("the workspace") {
        let dir = entry.expect("an entry").path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        members += 1;
        let text = std::fs::read_to_string(&manifest).expect("a manifest");
        // The fuzz crate lives outside the workspace and names the licence itself.
        assert!(
            text.contains("license.workspace = true")
                || text.contains(&format!("license = \"{licence}\"")),
            "{} declares another licence",
            manifest.display()
        );
    }
    assert!(members >= 10, "found {members} member crates");
    let statement = read("LICENSE");
    assert!(statement.contains("MIT OR Apache-2.0"), "{statement}");
    for file in ["LICENSE-APACHE", "LICENSE-MIT"] {
        assert!(statement.contains(file), "LICENSE names {file}");
    }
    let apache = read("LICENSE-APACHE");
    assert!(
        apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"),
        "LICENSE-APACHE is the Apache License 2.0"
    );
    let mit = read("LICENSE-MIT");
    assert!(
        mit.contains("Permission is hereby granted, free of charge") && mit.contains("Copyright"),
        "LICENSE-MIT is the MIT licence with its copyright line"
    );
}

#[test]
fn the_readme_says_what_a_user_brings_and_claims_no_affiliation() {
    let readme = read("README.md");
    let start = readme
        .find("## What you bring, and the licence")
        .expect("the README's section on what a user brings");
    let section = &readme[start..];
    for part in [
        "Claude Code",
        "Codex",
        "login",
        "git host",
        "credential",
        "network",
        "not affiliated",
        "MIT OR Apache-2.0",
    ] {
        assert!(section.contains(part), "{part} in the section");
    }
}
