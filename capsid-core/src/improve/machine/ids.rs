//! Run and attempt ids, attempt branches and archive paths (reference 8.2): run
//! `<ns>-<ISO timestamp with : and . replaced by ->` (first 19 characters of the timestamp),
//! attempt `<run>-aNN`, branch `improve/<attempt>`, archive `improve/archive/<run>/<attempt>.md`.

use crate::improve::report::namespace_header_ok;
use crate::time::Timestamp;

use super::limits::MAX_ATTEMPTS_PER_RUN;

/// An id that cannot be formed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The namespace is not `^[a-z0-9_-]{1,64}$`.
    #[error("namespace `{0}` must be 1-64 characters of a-z, 0-9, `_` or `-`")]
    Namespace(String),
    /// The attempt number is outside `1..=10`.
    #[error("attempt number {0} must be between 1 and {MAX_ATTEMPTS_PER_RUN}")]
    AttemptNumber(u32),
}

/// The id of a run opened in `namespace` at `opened_at`, e.g. `capsid-2026-12-01T03-00-00`.
pub fn run_id(namespace: &str, opened_at: Timestamp) -> Result<String, IdError> {
    if !namespace_header_ok(namespace) {
        return Err(IdError::Namespace(namespace.to_owned()));
    }
    let stamp: String = opened_at
        .to_string()
        .chars()
        .map(|c| if c == ':' || c == '.' { '-' } else { c })
        .take(19)
        .collect();
    Ok(format!("{namespace}-{stamp}"))
}

/// The id of attempt `number` (1-based) of `run`, e.g. `<run>-a03`.
pub fn attempt_id(run: &str, number: u32) -> Result<String, IdError> {
    if !(1..=MAX_ATTEMPTS_PER_RUN).contains(&number) {
        return Err(IdError::AttemptNumber(number));
    }
    Ok(format!("{run}-a{number:02}"))
}

/// The number of `attempt` within `run`, when it is one of that run's attempt ids.
pub fn attempt_number(run: &str, attempt: &str) -> Option<u32> {
    let digits = attempt.strip_prefix(run)?.strip_prefix("-a")?;
    if digits.len() != 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = digits.parse().ok()?;
    (1..=MAX_ATTEMPTS_PER_RUN).contains(&n).then_some(n)
}

/// The branch an attempt is pushed to.
pub fn attempt_branch(attempt: &str) -> String {
    format!("improve/{attempt}")
}

/// The archive document of an attempt, written before its score arrives.
pub fn archive_path(run: &str, attempt: &str) -> String {
    format!("improve/archive/{run}/{attempt}.md")
}
