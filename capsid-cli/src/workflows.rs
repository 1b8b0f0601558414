//! `capsid improve workflows [--repo <dir>] [--check]` writes the loop's two workflows
//! (`improve-score.yml`, `improve-probe.yml`, as embedded from `templates/workflows/`) into a
//! repository's `.github/workflows/`, keeping each one's own job, or with `--check` compares
//! them and exits 1 naming each file that differs; and `capsid improve key <ns>` prints the
//! namespace's score key, the secret those workflows sign with. What counts as drift is the
//! core's (`capsid_core::improve::workflows`); this module reads and writes the files.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use capsid_core::improve::report::{namespace_header_ok, namespace_key};
use capsid_core::improve::workflows::{Drift, Workflow, drift, written};

use crate::config::{GlobalArgs, required_signing_secret};

/// A workflow file's text, or `None` when the repository has none.
fn existing(repo: &Path, w: Workflow) -> Result<Option<String>> {
    let path = repo.join(w.path());
    match std::fs::read(&path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .with_context(|| format!("{} is not UTF-8 text", w.path())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// `capsid improve workflows`.
pub fn run(repo: &Path, check: bool) -> Result<ExitCode> {
    if !repo.is_dir() {
        eprintln!(
            "refused: --repo {} is not a folder (give the repository's checkout)",
            repo.display()
        );
        return Ok(ExitCode::from(2));
    }
    if check {
        return self::check(repo);
    }
    // Every file is decided before any is written: a refusal writes nothing.
    let mut plans = Vec::new();
    let mut refused = false;
    for w in Workflow::ALL {
        let now = existing(repo, w)?;
        match written(w, now.as_deref()) {
            Ok(text) => plans.push((w, now, text)),
            Err(why) => {
                refused = true;
                eprintln!(
                    "refused: {}: its own {} job cannot be told from Capsid's text: {why}. Move the file aside (or restore the marker lines) and run again; nothing was written.",
                    w.path(),
                    w.own_job()
                );
            }
        }
    }
    if refused {
        return Ok(ExitCode::from(2));
    }
    std::fs::create_dir_all(repo.join(capsid_core::improve::workflows::WORKFLOWS_DIR))
        .context("creating .github/workflows")?;
    for (w, now, text) in plans {
        if now.as_deref() == Some(text.as_str()) {
            println!("unchanged {}", w.path());
            continue;
        }
        std::fs::write(repo.join(w.path()), &text)
            .with_context(|| format!("writing {}", w.path()))?;
        match now {
            None => println!("wrote {}", w.path()),
            Some(_) => println!(
                "wrote {} (Capsid's part as it ships; its own {} job kept)",
                w.path(),
                w.own_job()
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check(repo: &Path) -> Result<ExitCode> {
    let mut drifted = false;
    for w in Workflow::ALL {
        match existing(repo, w)? {
            None => {
                drifted = true;
                eprintln!(
                    "missing: {} (`capsid improve workflows` writes it)",
                    w.path()
                );
            }
            Some(text) => match drift(w, &text) {
                Drift::Same => println!("ok {}", w.path()),
                other => {
                    drifted = true;
                    eprintln!("differs: {}: {other}", w.path());
                }
            },
        }
    }
    Ok(if drifted {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `capsid improve key <ns>`: the hex key `HMAC(signing secret, "capsid-improve-score:v1:<ns>")`
/// that the namespace's repository keeps as the secret `CAPSID_IMPROVE_KEY`.
pub fn key(global: &GlobalArgs, namespace: &str) -> Result<ExitCode> {
    // The name the signed reports carry in their namespace header, whose rule this is.
    if !namespace_header_ok(namespace) {
        eprintln!(
            "refused: namespace {namespace:?} must match ^[a-z0-9_-]{{1,64}}$ (the score report's namespace header)"
        );
        return Ok(ExitCode::from(2));
    }
    let secret = required_signing_secret(global)?;
    println!("{}", namespace_key(&secret, namespace));
    Ok(ExitCode::SUCCESS)
}
