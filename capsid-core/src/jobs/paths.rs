//! Where a job works (issue 51): its `paths`, glob patterns relative to the repository root,
//! signed with its body, and the leases a claim takes on them.
//!
//! A pattern covers every path it matches and everything under one (`src/api` covers
//! `src/api/x.rs`); `*`, `?` and classes stay within one path segment, `**` crosses them. A
//! job without `paths` leases the whole repository, so work nobody scoped runs alone.
//!
//! Whether two leases overlap is decided on the patterns alone, conservatively: two patterns
//! overlap unless they are provably disjoint, segment by segment, before either reaches a `**`
//! ([`overlap`]; the property test below holds it to "never disjoint when a path is covered
//! by both").

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use super::Job;

/// The most patterns one job may carry.
pub const MAX_PATHS: usize = 32;

/// The longest pattern, in bytes.
pub const MAX_PATTERN_LEN: usize = 256;

/// Why `paths` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathsError {
    /// Not an array of strings.
    #[error(
        "paths must be an array of glob patterns relative to the repository root (for example [\"src/api/**\", \"docs/api.md\"])"
    )]
    NotList,
    /// An empty array.
    #[error(
        "paths must name at least one pattern; leave paths out for a job that leases the whole repository"
    )]
    Empty,
    /// Too many patterns.
    #[error("paths names {n} patterns; at most {MAX_PATHS} are allowed")]
    TooMany {
        /// How many were given.
        n: usize,
    },
    /// One pattern is not a pattern this rule accepts.
    #[error("paths[{index}] {pattern:?} {why}")]
    Bad {
        /// Its place in the array.
        index: usize,
        /// The pattern as given.
        pattern: String,
        /// Which rule it breaks.
        why: &'static str,
    },
}

/// Reads `paths` from `jobs post` arguments: `None` when absent or null (the whole
/// repository), else the patterns, each checked ([`check_pattern`]), a trailing `/` dropped.
pub fn parse_paths(value: Option<&Value>) -> Result<Option<Vec<String>>, PathsError> {
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(PathsError::NotList),
    };
    if items.is_empty() {
        return Err(PathsError::Empty);
    }
    if items.len() > MAX_PATHS {
        return Err(PathsError::TooMany { n: items.len() });
    }
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let Value::String(given) = item else {
                return Err(PathsError::NotList);
            };
            let pattern = given.strip_suffix('/').unwrap_or(given);
            check_pattern(pattern)
                .map(|()| pattern.to_owned())
                .map_err(|why| PathsError::Bad {
                    index,
                    pattern: given.clone(),
                    why,
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Whether `pattern` is a glob this rule reads: relative, `/`-separated, no empty, `.` or
/// `..` segment, no backslash or control character, and each segment a glob of its own (a
/// brace or class never holds a `/`).
pub fn check_pattern(pattern: &str) -> Result<(), &'static str> {
    if pattern.is_empty() {
        return Err("is empty");
    }
    if pattern.len() > MAX_PATTERN_LEN {
        return Err("is longer than 256 bytes");
    }
    if pattern.starts_with('/') {
        return Err("starts with '/': patterns are relative to the repository root");
    }
    if pattern.chars().any(|c| c == '\\' || c.is_control()) {
        return Err("holds a backslash or a control character");
    }
    for segment in pattern.split('/') {
        match segment {
            "" => return Err("has an empty segment ('//')"),
            "." | ".." => return Err("has a '.' or '..' segment"),
            _ => {}
        }
        if segment.contains("**") && segment != "**" {
            return Err("uses '**' inside a segment; '**' stands alone between slashes");
        }
        if glob(segment).is_none() {
            return Err("is not a glob (an unclosed '[' or '{', or one that spans a '/')");
        }
    }
    Ok(())
}

/// `text` compiled as one glob whose `*`, `?` and classes never match a `/`.
fn glob(text: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(text)
        .literal_separator(true)
        .backslash_escape(false)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// The lease of a claim that holds the whole repository: `**` covers every path and overlaps
/// every pattern.
pub const WHOLE: &str = "**";

/// What a job holds while it is live: its patterns, or the whole repository.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lease<'a> {
    /// A job without `paths`, claimed by a driver.
    Whole,
    /// The job's patterns.
    Paths(&'a [String]),
}

impl<'a> Lease<'a> {
    /// The lease stored as `leased` reads as: `["**"]` is the whole repository.
    pub fn of_leased(leased: &'a [String]) -> Lease<'a> {
        match leased {
            [only] if only == WHOLE => Lease::Whole,
            _ => Lease::Paths(leased),
        }
    }
}

impl Lease<'_> {
    /// How the lease reads in a message: `` `src/api/**`, `docs/**` `` or "the whole
    /// repository".
    pub fn describe(&self) -> String {
        match self {
            Lease::Whole => "the whole repository".to_owned(),
            Lease::Paths(paths) => paths
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// Whether `path` (relative to the repository root) is inside the lease.
    pub fn covers(&self, path: &str) -> bool {
        match self {
            Lease::Whole => true,
            Lease::Paths(patterns) => patterns.iter().any(|p| covers(p, path)),
        }
    }
}

/// The lease a claim of `job` asks for: its paths; without paths, the whole repository when
/// the claim is a driver's (`driven`), else nothing (an agent working through the tools, as
/// the Worker's queue has it, works in no checkout Capsid hands out).
pub fn claim_lease(job: &Job, driven: bool) -> Option<Lease<'_>> {
    match &job.paths {
        Some(paths) => Some(Lease::Paths(paths)),
        None if driven => Some(Lease::Whole),
        None => None,
    }
}

/// What a claim of `job` stores as `leased` (`None`: it leases nothing).
pub fn lease_for_claim(job: &Job, driven: bool) -> Option<Vec<String>> {
    claim_lease(job, driven).map(|lease| match lease {
        Lease::Whole => vec![WHOLE.to_owned()],
        Lease::Paths(paths) => paths.to_vec(),
    })
}

/// What `job` holds while it is live (its `leased`), or would hold were a driver to claim it.
pub fn lease_of(job: &Job) -> Lease<'_> {
    match (&job.leased, &job.paths) {
        (Some(leased), _) => Lease::of_leased(leased),
        (None, Some(paths)) => Lease::Paths(paths),
        (None, None) => Lease::Whole,
    }
}

/// Whether `pattern` covers `path`: it matches the path or a folder above it.
pub fn covers(pattern: &str, path: &str) -> bool {
    let Some(matcher) = glob(pattern) else {
        return false;
    };
    let path = path.trim_start_matches("./").trim_end_matches('/');
    let mut at = path.len();
    loop {
        if matcher.is_match(&path[..at]) {
            return true;
        }
        match path[..at].rfind('/') {
            Some(i) => at = i,
            None => return false,
        }
    }
}

/// Whether two patterns may cover a common path: `false` only when they provably cannot.
pub fn overlap(a: &str, b: &str) -> bool {
    for (x, y) in a.split('/').zip(b.split('/')) {
        if x == "**" || y == "**" {
            return true;
        }
        if !segments_may_meet(x, y) {
            return false;
        }
    }
    // One is a folder of the other (or they are alike), and a pattern covers what is below.
    true
}

const META: [char; 4] = ['*', '?', '[', '{'];

/// Whether some segment text could match both `x` and `y`.
fn segments_may_meet(x: &str, y: &str) -> bool {
    match (x.contains(META), y.contains(META)) {
        (false, false) => x == y,
        (false, true) => glob(y).is_none_or(|g| g.is_match(x)),
        (true, false) => glob(x).is_none_or(|g| g.is_match(y)),
        (true, true) => {
            let (px, py) = (literal_prefix(x), literal_prefix(y));
            let (sx, sy) = (literal_suffix(x), literal_suffix(y));
            (px.starts_with(py) || py.starts_with(px)) && (sx.ends_with(sy) || sy.ends_with(sx))
        }
    }
}

/// The literal text every match of a segment glob starts with.
fn literal_prefix(segment: &str) -> &str {
    segment.find(META).map_or(segment, |i| &segment[..i])
}

/// The literal text every match of a segment glob ends with.
fn literal_suffix(segment: &str) -> &str {
    segment
        .rfind(['*', '?', ']', '}'])
        .map_or(segment, |i| &segment[i + 1..])
}

/// The first pair of patterns by which two leases overlap (`None`: disjoint). The whole
/// repository overlaps everything.
pub fn overlapping<'a>(a: &Lease<'a>, b: &Lease<'a>) -> Option<(&'a str, &'a str)> {
    match (a, b) {
        (Lease::Whole, Lease::Whole) => Some(("**", "**")),
        (Lease::Whole, Lease::Paths(p)) => p.first().map(|p| ("**", p.as_str())),
        (Lease::Paths(p), Lease::Whole) => p.first().map(|p| (p.as_str(), "**")),
        (Lease::Paths(x), Lease::Paths(y)) => x.iter().find_map(|a| {
            y.iter()
                .find(|b| overlap(a, b))
                .map(|b| (a.as_str(), b.as_str()))
        }),
    }
}

/// A live job's lease as the claim's transaction reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveLease {
    /// The job holding it.
    pub job_id: String,
    /// Its title.
    pub title: String,
    /// What its claim leased (`["**"]`: the whole repository).
    pub leased: Vec<String>,
}

impl LiveLease {
    /// The lease.
    pub fn lease(&self) -> Lease<'_> {
        Lease::of_leased(&self.leased)
    }
}

/// Why a claim of `job` (a driver's when `driven`) cannot be taken while `live` leases are held
/// in its repository: "waiting on job X ('title') for `src/api/**`". `None`: its lease is free,
/// or it asks for none.
pub fn waiting_on(job: &Job, driven: bool, live: &[LiveLease]) -> Option<String> {
    let wanted = claim_lease(job, driven)?;
    live.iter().filter(|l| l.job_id != job.id).find_map(|held| {
        let lease = held.lease();
        overlapping(&wanted, &lease).map(|(_, theirs)| {
            let what = match lease {
                Lease::Whole => "the whole repository".to_owned(),
                Lease::Paths(_) => format!("`{theirs}`"),
            };
            let mine = match wanted {
                Lease::Whole => " (this job has no paths, so it leases the whole repository)",
                Lease::Paths(_) => "",
            };
            format!(
                "waiting on job {} ('{}') for {what}{mine}",
                held.job_id, held.title
            )
        })
    })
}

#[cfg(test)]
mod tests;
