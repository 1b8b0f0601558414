//! The real binary: `capsid improve workflows --repo <dir>` writes the loop's two workflows as
//! they are in `templates/workflows/`, byte for byte; `--check` passes on them and on an edit
//! of a repository's own job, and exits 1 naming the file when Capsid's text differs or a
//! file is missing; writing again restores Capsid's text and keeps the repository's job; a
//! copy without its marker lines is refused and nothing is written. `capsid improve key <ns>`
//! prints the key the workflows sign with.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use capsid_core::improve::report::namespace_key;

const SCORE: &str = ".github/workflows/improve-score.yml";
const PROBE: &str = ".github/workflows/improve-probe.yml";

fn capsid(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_capsid"))
        .args(args)
        .env("CAPSID_DATA_DIR", data)
        .env_remove("CAPSID_DATABASE_URL")
        .env_remove("CAPSID_SIGNING_SECRET")
        .env("CAPSID_LOG", "warn")
        .output()
        .expect("run capsid")
}

fn shipped(file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../templates/workflows")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read(repo: &Path, file: &str) -> String {
    std::fs::read_to_string(repo.join(file)).expect(file)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn workflows_are_written_as_shipped_and_check_names_the_file_that_drifted() {
    let data = tempfile::tempdir().expect("data");
    let repo = tempfile::tempdir().expect("repo");
    let r = repo.path().to_str().unwrap();

    let out = capsid(data.path(), &["improve", "workflows", "--repo", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("wrote {SCORE}")),
        "{}",
        stdout(&out)
    );
    assert_eq!(read(repo.path(), SCORE), shipped("improve-score.yml"));
    assert_eq!(read(repo.path(), PROBE), shipped("improve-probe.yml"));

    let ok = capsid(
        data.path(),
        &["improve", "workflows", "--repo", r, "--check"],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    assert!(stdout(&ok).contains(&format!("ok {SCORE}")));
    assert!(stdout(&ok).contains(&format!("ok {PROBE}")));

    // The repository's own build job is its own: --check does not compare it.
    let own = read(repo.path(), SCORE).replace(
        "run: ./.capsid/improve-build improve-out",
        "run: make improve-build OUT=improve-out",
    );
    assert_ne!(own, read(repo.path(), SCORE));
    std::fs::write(repo.path().join(SCORE), &own).unwrap();
    let ok = capsid(
        data.path(),
        &["improve", "workflows", "--repo", r, "--check"],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));

    // Capsid's score job is not: a container given the network drifts.
    let opened = own.replace("--network none", "--network host");
    let line = opened
        .lines()
        .position(|l| l.contains("--network host"))
        .unwrap()
        + 1;
    std::fs::write(repo.path().join(SCORE), &opened).unwrap();
    let bad = capsid(
        data.path(),
        &["improve", "workflows", "--repo", r, "--check"],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", stdout(&bad));
    let said = stderr(&bad);
    assert!(
        said.contains(&format!("differs: {SCORE}: line {line}:")),
        "{said}"
    );
    assert!(
        said.contains("--network host") && said.contains("--network none"),
        "{said}"
    );
    assert!(
        !said.contains(PROBE),
        "only the file that differs is named: {said}"
    );
    assert!(stdout(&bad).contains(&format!("ok {PROBE}")));

    // Writing again restores Capsid's text and keeps the repository's job.
    let out = capsid(data.path(), &["improve", "workflows", "--repo", r]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("unchanged {PROBE}")),
        "{}",
        stdout(&out)
    );
    assert_eq!(read(repo.path(), SCORE), own);
    let ok = capsid(
        data.path(),
        &["improve", "workflows", "--repo", r, "--check"],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));

    // A missing file is named.
    std::fs::remove_file(repo.path().join(PROBE)).unwrap();
    let gone = capsid(
        data.path(),
        &["improve", "workflows", "--repo", r, "--check"],
    );
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        stderr(&gone).contains(&format!("missing: {PROBE}")),
        "{}",
        stderr(&gone)
    );

    // A copy without its markers cannot be merged: refused, and nothing is written, not
    // even the missing probe workflow.
    std::fs::write(repo.path().join(SCORE), "name: ours\n").unwrap();
    let refused = capsid(data.path(), &["improve", "workflows", "--repo", r]);
    assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains(&format!("refused: {SCORE}")),
        "{}",
        stderr(&refused)
    );
    assert_eq!(read(repo.path(), SCORE), "name: ours\n");
    assert!(!repo.path().join(PROBE).exists());
    let unmarked = capsid(
        data.path(),
        &["improve", "workflows", "--repo", r, "--check"],
    );
    assert_eq!(unmarked.status.code(), Some(1));
    assert!(
        stderr(&unmarked).contains(&format!("differs: {SCORE}: cannot be compared")),
        "{}",
        stderr(&unmarked)
    );

    let nowhere = capsid(
        data.path(),
        &[
            "improve",
            "workflows",
            "--repo",
            "/nonexistent/capsid-repo",
            "--check",
        ],
    );
    assert_eq!(nowhere.status.code(), Some(2));
}

#[test]
fn the_key_printed_is_the_namespaces_score_key() {
    let data = tempfile::tempdir().expect("data");
    let out = Command::new(env!("CARGO_BIN_EXE_capsid"))
        .args(["improve", "key", "proj"])
        .env("CAPSID_DATA_DIR", data.path())
        .env("CAPSID_SIGNING_SECRET", "root-secret")
        .env("CAPSID_LOG", "warn")
        .output()
        .expect("run capsid");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), namespace_key("root-secret", "proj"));
    // Without a secret there is no key, and one is not made up.
    let none = capsid(data.path(), &["improve", "key", "proj"]);
    assert!(!none.status.success());
    assert!(
        stderr(&none).contains("no signing secret"),
        "{}",
        stderr(&none)
    );
    assert!(!data.path().join("signing.key").exists());
    let bad = capsid(data.path(), &["improve", "key", "Not A Namespace"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("namespace"), "{}", stderr(&bad));
}
