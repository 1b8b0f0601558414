//! The container images (issue 56, item 15): the repository's `Dockerfile` builds `capsid
//! serve` into a slim, non-root runtime image with the data folder on a volume and a health
//! check, and `docker/agent-box.Dockerfile` is the boxed agents' base image with the two agent
//! CLIs at the versions the tests pin.
//!
//! Every run checks the files against the real binary and the test script (the command and
//! variables they name exist, the health check's path answers, the pinned versions agree);
//! where a Docker daemon answers, the image is built and its health check must report healthy.
//! Without one (CI has none) that half is skipped, and says so.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The value of the Dockerfile instruction `name` (the first one after the last `FROM`, for the
/// runtime stage), continuation lines joined.
fn instruction(dockerfile: &str, name: &str) -> Option<String> {
    let joined = dockerfile.replace("\\\n", " ");
    let last_stage = joined.rsplit("\nFROM ").next().unwrap_or(&joined);
    last_stage
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .map(|v| v.trim().to_owned())
}

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_capsid"))
        .args(args)
        .output()
        .expect("run capsid");
    assert!(out.status.success(), "{args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_server_image_runs_serve_as_a_user_on_a_volume_with_a_health_check() {
    let file = read("Dockerfile");
    // The build stage's toolchain is at least the workspace's.
    let rust_version = read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_owned())
        .expect("rust-version");
    assert!(
        file.contains(&format!("FROM rust:{rust_version}-")),
        "the build image is not rust {rust_version}"
    );
    assert!(
        file.contains("cargo build --release --locked -p capsid-cli"),
        "{file}"
    );
    // The runtime stage: not root, the data folder on a volume, the variable serve reads.
    let user = instruction(&file, "USER").expect("a USER");
    assert!(
        !user.starts_with("root") && !user.starts_with('0'),
        "{user}"
    );
    assert_eq!(instruction(&file, "VOLUME").as_deref(), Some("[\"/data\"]"));
    assert_eq!(
        instruction(&file, "ENV").as_deref(),
        Some("CAPSID_DATA_DIR=/data")
    );
    let serve_help = help(&["serve", "--help"]);
    assert!(
        serve_help.contains("[env: CAPSID_DATA_DIR="),
        "{serve_help}"
    );
    // The command's flags are serve's.
    let cmd: Vec<String> =
        serde_json::from_str(&instruction(&file, "CMD").expect("a CMD")).expect("CMD in JSON form");
    assert_eq!(cmd[0], "serve");
    for flag in cmd.iter().filter(|a| a.starts_with("--")) {
        assert!(
            serve_help.contains(&format!("{flag} <")),
            "serve has no {flag}"
        );
    }
    assert_eq!(
        instruction(&file, "ENTRYPOINT").as_deref(),
        Some("[\"capsid\"]")
    );
    // The health check asks the route that answers health (tested in serve.rs) on the port
    // the command listens on.
    let check = instruction(&file, "HEALTHCHECK").expect("a HEALTHCHECK");
    let port = cmd
        .iter()
        .find_map(|a| a.strip_prefix("0.0.0.0:"))
        .expect("a listen address");
    assert!(
        check.contains(&format!("http://127.0.0.1:{port}/health")),
        "{check}"
    );
    let ignore = read(".dockerignore");
    for dir in ["target", ".tools"] {
        assert!(
            ignore.lines().any(|l| l == dir),
            "{dir} is sent to the build"
        );
    }
    docker_build_and_check();
}

#[test]
fn the_agent_box_image_pins_the_clis_the_tests_run() {
    let file = read("docker/agent-box.Dockerfile");
    let script = read("scripts/test.sh");
    let pinned = |var: &str| {
        script
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{var}=")))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("scripts/test.sh pins no {var}"))
    };
    let arg = |name: &str| {
        file.lines()
            .find_map(|l| l.strip_prefix(&format!("ARG {name}=")))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no ARG {name}"))
    };
    assert_eq!(arg("CLAUDE_CODE_VERSION"), pinned("CAPSID_CLAUDE_VERSION"));
    assert_eq!(arg("CODEX_VERSION"), pinned("CAPSID_CODEX_VERSION"));
    assert_eq!(arg("NODE_MAJOR"), "22");
    for tool in [
        "bubblewrap",
        "git",
        "tmux",
        "mise",
        "@anthropic-ai/claude-code@",
        "@openai/codex@",
    ] {
        assert!(file.contains(tool), "the box image lacks {tool}");
    }
    let user = instruction(&file, "USER").expect("a USER");
    assert_ne!(user, "root");
}

/// Builds the server image and waits for its health check, where a Docker daemon answers.
fn docker_build_and_check() {
    let daemon = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output();
    match daemon {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "skipped: docker build and the image's health check (no Docker daemon answers: {})",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("skipped: docker build and the image's health check (no docker: {e})");
            return;
        }
    }
    let tag = format!("capsid-test:{}", std::process::id());
    let built = Command::new("docker")
        .args(["build", "-t", &tag, "."])
        .current_dir(repo())
        .status()
        .expect("docker build");
    assert!(built.success(), "docker build failed");
    let name = format!("capsid-test-{}", std::process::id());
    let run = Command::new("docker")
        .args(["run", "-d", "--name", &name, &tag])
        .status()
        .expect("docker run");
    assert!(run.success(), "docker run failed");
    let mut status = String::new();
    for _ in 0..60 {
        let out = Command::new("docker")
            .args(["inspect", "--format", "{{.State.Health.Status}}", &name])
            .output()
            .expect("docker inspect");
        status = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if status == "healthy" || status == "unhealthy" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
    let _ = Command::new("docker").args(["rm", "-f", &name]).status();
    let _ = Command::new("docker").args(["rmi", "-f", &tag]).status();
    assert_eq!(status, "healthy", "the image's health check");
}
