//! `capsid backup pull --server <url> --to <folder|s3://bucket/prefix>`: the off-site
//! puller. It asks the server's `POST /backup/credential` with the backup-context key (the
//! only secret it holds: `HMAC(signing secret, "capsid-backup-credential:v1")`, printed by
//! `capsid backup pull-key`), and copies the newest dump with the one-hour read token (or
//! the presigned URLs of an S3 media store): incremental (a file already there with the
//! manifest's digest is skipped), each file hashed as it arrives and refused unless its digest
//! is the manifest's, each written under a temporary name and moved into place (on S3 an
//! object appears whole or not at all), the manifest last. Exit codes: 0 pulled (or nothing
//! to pull), 2 refused (bad input, a refused credential, a digest that differs), 1 failed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use capsid_blobs::{BlobUrl, ObjectBlobStore, parse_blob_url};
use capsid_core::backup::credential::{
    SIGNATURE_HEADER, TIMESTAMP_HEADER, credential_key, sign_request_with_key,
};
use capsid_core::backup::manifest::parse_manifest;
use capsid_core::backup::pull::{listed_digests, pull_order};
use capsid_core::crypto::{Sha256Stream, sha256_hex};
use capsid_core::ports::BlobStore;
use clap::Args;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::{self, GlobalArgs};

/// `capsid backup pull`.
#[derive(Debug, Clone, Args)]
pub struct PullArgs {
    /// The Capsid server to pull from (its base URL, http:// or https://).
    #[arg(long, env = "CAPSID_BACKUP_SERVER", value_name = "URL")]
    pub server: String,
    /// Where the dumps go: a folder (`file:///folder` or a path) or `s3://bucket/prefix`
    /// (the `AWS_*` variables configure S3). Files land under `backups/json/<run>/` there.
    #[arg(long, value_name = "DIR|s3://bucket/prefix")]
    pub to: String,
    /// The backup credential key (hex), as a credential reference (`env:NAME`, `file:/path`,
    /// `cmd:command`) or the value. Without it, derived from this host's signing secret
    /// (`CAPSID_SIGNING_SECRET` or `<data-dir>/signing.key`).
    #[arg(
        long,
        env = "CAPSID_BACKUP_PULL_KEY",
        value_name = "REF",
        hide_env_values = true
    )]
    pub key: Option<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The server's answer to a credential request (the fields the puller reads).
#[derive(Debug, Deserialize)]
struct Credential {
    token: String,
    newest_run: Option<String>,
    objects: Vec<CredentialObject>,
}

#[derive(Debug, Deserialize)]
struct CredentialObject {
    key: String,
    signed_url: Option<String>,
}

/// One file's fate.
#[derive(Debug, Serialize)]
struct Pulled {
    key: String,
    /// `copied` or `skipped` (already there with the manifest's digest).
    outcome: &'static str,
    bytes: u64,
    sha256: String,
}

/// What a pull did.
#[derive(Debug, Serialize)]
struct PullSummary {
    ok: bool,
    server: String,
    to: String,
    run: Option<String>,
    copied: usize,
    skipped: usize,
    bytes_copied: u64,
    files: Vec<Pulled>,
}

/// Why a pull stopped: refused (exit 2, nothing half-written) or failed (exit 1).
enum Stop {
    Refused(String),
    Failed(anyhow::Error),
}

impl From<anyhow::Error> for Stop {
    fn from(e: anyhow::Error) -> Stop {
        Stop::Failed(e)
    }
}

/// Where pulled files go.
enum Destination {
    /// A local folder: a temporary file beside the target, renamed into place.
    Folder(PathBuf),
    /// An S3 bucket (a put appears whole or not at all).
    Store(ObjectBlobStore),
}

impl Destination {
    fn open(to: &str) -> Result<Destination, String> {
        match parse_blob_url(to).map_err(|e| format!("--to: {e}"))? {
            BlobUrl::Folder(folder) => {
                if folder.exists() && !folder.is_dir() {
                    return Err(format!(
                        "--to: {} exists and is not a folder",
                        folder.display()
                    ));
                }
                Ok(Destination::Folder(folder))
            }
            BlobUrl::S3 { .. } => ObjectBlobStore::open(to)
                .map(Destination::Store)
                .map_err(|e| format!("--to: {e}")),
        }
    }

    fn describe(&self) -> String {
        match self {
            Destination::Folder(f) => format!("folder {}", f.display()),
            Destination::Store(s) => s.describe().to_owned(),
        }
    }

    /// The digest of `key` there, or `None` when it is absent.
    async fn digest(&self, key: &str) -> Result<Option<String>> {
        match self {
            Destination::Folder(root) => {
                let path = root.join(key);
                if !path.is_file() {
                    return Ok(None);
                }
                Ok(Some(file_digest(&path).await?))
            }
            Destination::Store(store) => {
                if !store.list(key).await?.iter().any(|k| k == key) {
                    return Ok(None);
                }
                let mut reader = store.reader(key).await?;
                let mut digest = Sha256Stream::default();
                while let Some(chunk) = reader.next_chunk().await? {
                    digest.update(&chunk);
                }
                Ok(Some(digest.finish_hex()))
            }
        }
    }

    /// Moves the verified temporary file `tmp` to `key`.
    async fn install(&self, key: &str, tmp: &Path) -> Result<()> {
        match self {
            Destination::Folder(root) => {
                let path = root.join(key);
                tokio::fs::rename(tmp, &path)
                    .await
                    .with_context(|| format!("moving {} to {}", tmp.display(), path.display()))
            }
            Destination::Store(store) => {
                let mut file = tokio::fs::File::open(tmp).await?;
                let mut writer = store.writer(key).await?;
                let mut buf = vec![0u8; 8 << 20];
                loop {
                    let n = file.read(&mut buf).await?;
                    if n == 0 {
                        break;
                    }
                    if let Err(e) = writer.write(buf[..n].to_vec()).await {
                        let _ = writer.abort().await;
                        return Err(e.into());
                    }
                }
                writer.finish().await?;
                let _ = tokio::fs::remove_file(tmp).await;
                Ok(())
            }
        }
    }

    /// Where a file of `key` is first written: beside the target for a folder (so the rename
    /// stays on one file system), in `scratch` otherwise.
    async fn temp_path(&self, key: &str, scratch: &Path) -> Result<PathBuf> {
        let name = format!(
            ".{}.partial-{}",
            key.rsplit('/').next().unwrap_or("file"),
            std::process::id()
        );
        match self {
            Destination::Folder(root) => {
                let path = root.join(key);
                let dir = path.parent().context("a dump file has a folder")?;
                tokio::fs::create_dir_all(dir)
                    .await
                    .with_context(|| format!("creating {}", dir.display()))?;
                Ok(dir.join(name))
            }
            Destination::Store(_) => Ok(scratch.join(name)),
        }
    }
}

async fn file_digest(path: &Path) -> Result<String> {
    let mut file = tokio::fs::File::open(path)
        .await
        .with_context(|| format!("reading {}", path.display()))?;
    let mut digest = Sha256Stream::default();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        digest.update(&buf[..n]);
    }
    Ok(digest.finish_hex())
}

/// The key requests are signed with: `--key`, else derived from this host's signing secret.
fn pull_key(global: &GlobalArgs, args: &PullArgs) -> Result<String, String> {
    if let Some(reference) = &args.key {
        let key = config::resolve_credential(reference).map_err(|e| format!("--key: {e:#}"))?;
        if key.len() != 64 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("--key (CAPSID_BACKUP_PULL_KEY): must be the 64 hex characters `capsid backup pull-key` prints on the server's host".to_owned());
        }
        return Ok(key.to_ascii_lowercase());
    }
    match config::existing_signing_secret(global) {
        Ok(Some(secret)) => Ok(credential_key(&secret)),
        Ok(None) => Err("--key (CAPSID_BACKUP_PULL_KEY) is required: give the key `capsid backup pull-key` prints on the server's host (this host has no signing secret to derive it from)".to_owned()),
        Err(e) => Err(format!("the signing secret: {e:#}")),
    }
}

fn server_url(server: &str) -> Result<String, String> {
    let trimmed = server.trim().trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("https://")
        .or_else(|| trimmed.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains(['?', '#']) => Ok(trimmed.to_owned()),
        _ => Err(format!(
            "--server (CAPSID_BACKUP_SERVER): {server:?} is not an http:// or https:// URL of a Capsid server"
        )),
    }
}

/// Runs a pull.
pub async fn run(global: &GlobalArgs, args: PullArgs) -> Result<ExitCode> {
    let json_out = args.json;
    match pull(global, &args).await {
        Ok(summary) => {
            if json_out {
                println!("{}", serde_json::to_string_pretty(&summary)?);
            } else {
                match &summary.run {
                    None => println!(
                        "nothing to pull: {} has no complete dump yet",
                        summary.server
                    ),
                    Some(run) => println!(
                        "pulled run {run} from {} to {}: {} copied ({} bytes), {} already there; every file's SHA-256 matches the manifest",
                        summary.server,
                        summary.to,
                        summary.copied,
                        summary.bytes_copied,
                        summary.skipped
                    ),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(stop) => {
            let (code, kind, message) = match stop {
                Stop::Refused(m) => (ExitCode::from(2), "refused", m),
                Stop::Failed(e) => (ExitCode::FAILURE, "failed", format!("{e:#}")),
            };
            if json_out {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"ok": false, "outcome": kind, "error": message})
                    )?
                );
            } else {
                eprintln!("capsid backup pull {kind}: {message}");
            }
            Ok(code)
        }
    }
}

async fn pull(global: &GlobalArgs, args: &PullArgs) -> Result<PullSummary, Stop> {
    // Every input is checked before anything is asked or written.
    let server = server_url(&args.server).map_err(Stop::Refused)?;
    let dest = Destination::open(&args.to).map_err(Stop::Refused)?;
    let key = pull_key(global, args).map_err(Stop::Refused)?;
    let http = reqwest::Client::builder()
        .build()
        .context("the HTTP client")?;
    let credential = request_credential(&http, &server, &key).await?;
    let mut summary = PullSummary {
        ok: true,
        server: server.clone(),
        to: dest.describe(),
        run: credential.newest_run.clone(),
        copied: 0,
        skipped: 0,
        bytes_copied: 0,
        files: Vec::new(),
    };
    let Some(run) = &credential.newest_run else {
        return Ok(summary);
    };
    let keys: Vec<String> = credential.objects.iter().map(|o| o.key.clone()).collect();
    let order = pull_order(run, &keys).map_err(|e| Stop::Refused(e.to_string()))?;
    let url_of = |key: &str| -> (String, bool) {
        match credential
            .objects
            .iter()
            .find(|o| o.key == key)
            .and_then(|o| o.signed_url.clone())
        {
            Some(url) => (url, false),
            None => (format!("{server}/backup/objects/{key}"), true),
        }
    };
    // The manifest first, in memory: it lists every other file's digest.
    let manifest_key = order.last().cloned().context("a manifest")?;
    let (url, bearer) = url_of(&manifest_key);
    let manifest_bytes = get_bytes(&http, &url, bearer.then_some(&credential.token)).await?;
    let manifest =
        parse_manifest(&manifest_key, &manifest_bytes).map_err(|e| Stop::Refused(e.to_string()))?;
    let digests = listed_digests(&manifest);
    let scratch = tempfile_dir()?;
    let total = order.len();
    for (i, key) in order.iter().enumerate() {
        let expected = if *key == manifest_key {
            Some(sha256_hex(&manifest_bytes))
        } else {
            digests.get(key).cloned().flatten()
        };
        let present = dest.digest(key).await?;
        if let (Some(found), Some(want)) = (&present, &expected)
            && found == want
        {
            eprintln!(
                "[{}/{total}] {key}: already there (same SHA-256), skipped",
                i + 1
            );
            summary.skipped += 1;
            summary.files.push(Pulled {
                key: key.clone(),
                outcome: "skipped",
                bytes: 0,
                sha256: found.clone(),
            });
            continue;
        }
        let tmp = dest.temp_path(key, scratch.path()).await?;
        let (bytes, found) = if *key == manifest_key {
            tokio::fs::write(&tmp, &manifest_bytes)
                .await
                .with_context(|| format!("writing {}", tmp.display()))?;
            (manifest_bytes.len() as u64, sha256_hex(&manifest_bytes))
        } else {
            let (url, bearer) = url_of(key);
            match download(&http, &url, bearer.then_some(&credential.token), &tmp).await {
                Ok(got) => got,
                Err(e) => {
                    let _ = tokio::fs::remove_file(&tmp).await;
                    return Err(e);
                }
            }
        };
        match &expected {
            Some(want) if *want != found => {
                let _ = tokio::fs::remove_file(&tmp).await;
                return Err(Stop::Refused(format!(
                    "{key}: its SHA-256 is {found}, the manifest lists {want}: not written (the dump changed on the server, or in transit)"
                )));
            }
            // An unsealed dump lists no digest: the file is kept as it came.
            _ => {}
        }
        if let Err(e) = dest.install(key, &tmp).await {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(e.into());
        }
        eprintln!(
            "[{}/{total}] {key}: copied, {bytes} bytes, SHA-256 verified",
            i + 1
        );
        summary.copied += 1;
        summary.bytes_copied += bytes;
        summary.files.push(Pulled {
            key: key.clone(),
            outcome: "copied",
            bytes,
            sha256: found,
        });
    }
    Ok(summary)
}

fn tempfile_dir() -> Result<TempDir> {
    let path = std::env::temp_dir().join(format!(
        "capsid-pull-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
    Ok(TempDir(path))
}

/// A scratch folder removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn request_credential(
    http: &reqwest::Client,
    server: &str,
    key: &str,
) -> Result<Credential, Stop> {
    let mut nonce = [0u8; 16];
    rand::fill(&mut nonce[..]);
    let jti: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let body = serde_json::json!({ "jti": format!("pull-{jti}") }).to_string();
    let timestamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        .to_string();
    let signature = sign_request_with_key(key, &timestamp, body.as_bytes());
    let url = format!("{server}/backup/credential");
    let response = http
        .post(&url)
        .header(TIMESTAMP_HEADER, &timestamp)
        .header(SIGNATURE_HEADER, signature)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        let why = format!("POST {url} answered {status}: {}", text.trim());
        return Err(if status.is_client_error() {
            Stop::Refused(format!(
                "{why} (a 401 means --key is not this server's backup credential key)"
            ))
        } else {
            Stop::Failed(anyhow!(why))
        });
    }
    serde_json::from_str(&text)
        .map_err(|e| Stop::Failed(anyhow!("POST {url}: not a backup credential: {e}")))
}

fn request(http: &reqwest::Client, url: &str, token: Option<&String>) -> reqwest::RequestBuilder {
    let req = http.get(url);
    match token {
        Some(token) => req.bearer_auth(token),
        None => req,
    }
}

/// What is printed of a URL: never its query (a presigned URL's signature).
fn shown(url: &str) -> &str {
    url.split('?').next().unwrap_or(url)
}

async fn get_bytes(
    http: &reqwest::Client,
    url: &str,
    token: Option<&String>,
) -> Result<Vec<u8>, Stop> {
    let response = request(http, url, token)
        .send()
        .await
        .with_context(|| format!("GET {}", shown(url)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(Stop::Failed(anyhow!(
            "GET {} answered {status}",
            shown(url)
        )));
    }
    Ok(response
        .bytes()
        .await
        .with_context(|| format!("GET {}", shown(url)))?
        .to_vec())
}

/// Streams `url` into `tmp`, hashing as it goes: (bytes, SHA-256).
async fn download(
    http: &reqwest::Client,
    url: &str,
    token: Option<&String>,
    tmp: &Path,
) -> Result<(u64, String), Stop> {
    let mut response = request(http, url, token)
        .send()
        .await
        .with_context(|| format!("GET {}", shown(url)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(Stop::Failed(anyhow!(
            "GET {} answered {status}",
            shown(url)
        )));
    }
    let mut file = tokio::fs::File::create(tmp)
        .await
        .with_context(|| format!("creating {}", tmp.display()))?;
    let mut digest = Sha256Stream::default();
    let mut bytes = 0u64;
    while let Some(chunk) = response
        .chunk()
        .await
        .with_context(|| format!("reading {}", shown(url)))?
    {
        digest.update(&chunk);
        bytes += chunk.len() as u64;
        file.write_all(&chunk).await.context("writing")?;
    }
    file.flush().await.context("writing")?;
    file.sync_all().await.context("syncing")?;
    Ok((bytes, digest.finish_hex()))
}

/// `capsid backup pull-key`: the key a puller signs its credential requests with, derived
/// from this host's signing secret (give it to the puller's host, never the secret).
pub fn print_key(global: &GlobalArgs) -> Result<ExitCode> {
    match config::existing_signing_secret(global)? {
        Some(secret) => {
            println!("{}", credential_key(&secret));
            Ok(ExitCode::SUCCESS)
        }
        None => bail!(
            "no signing secret here (CAPSID_SIGNING_SECRET or {}): run this on the server's host",
            global.data_dir.join("signing.key").display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_must_be_an_http_url() {
        assert_eq!(
            server_url("http://127.0.0.1:8787/"),
            Ok("http://127.0.0.1:8787".into())
        );
        for bad in ["127.0.0.1:8787", "ftp://x", "https://", "https://x/?a=1"] {
            let e = server_url(bad).expect_err(bad);
            assert!(e.starts_with("--server"), "{e}");
        }
    }

    #[test]
    fn a_presigned_query_is_never_shown() {
        assert_eq!(shown("https://b.s3/x?X-Amz-Signature=s"), "https://b.s3/x");
    }
}
