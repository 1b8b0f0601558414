//! Scheduled scouts (issue 55, item 3): "one cheap schedule fires a scout". A namespace's scout
//! is a signed schedule document in the `capsid` namespace, `policy/scouts/<namespace>/<name>.md`
//! (the autonomy policies' envelope: signed by `sign_policy`; unsigned, edited after signing,
//! unparseable or disabled posts nothing), with these fields:
//!
//! ```text
//! - version: 1
//! - enabled: true
//! - every: 6h                 (m, h or d; from 15m to 30d)
//! - brief: Look for widgets nobody touched in 90 days.
//! ```
//!
//! Time is cut into windows of `every` from the epoch; the first tick of a window posts that
//! window's scout job under an id derived from the schedule and the window, so replicas and
//! repeated ticks post it once, and a window whose scout of an earlier window is still open
//! posts nothing (the open title holds it). The job is a `scout` job: its body is the brief and
//! the watermark document (`scouts/<name>/watermark.md` in the namespace) the scout reads and
//! updates, so a quiet run reads it, finds nothing new and ends.

use crate::autonomy::policy::field;
use crate::crypto::sha256_hex;
use crate::paths::namespace_problem;
use crate::time::{DAY_MS, MINUTE_MS, Timestamp};

/// Where the schedules live in the `capsid` namespace.
pub const SCOUT_SCHEDULE_DIR: &str = "policy/scouts/";
/// The actor of the jobs the schedules post and of their audit rows.
pub const SCOUT_ACTOR: &str = "scheduler";
/// The shortest window a schedule may ask for.
pub const EVERY_MIN_MS: i64 = 15 * MINUTE_MS;
/// The longest window a schedule may ask for.
pub const EVERY_MAX_MS: i64 = 30 * DAY_MS;
/// The longest scout name (the file name without `.md`).
const NAME_MAX: usize = 40;
/// The longest brief.
const BRIEF_MAX: usize = 2000;

/// Where a run credential may write documents: a scout's watermark lives under `scouts/` of
/// its namespace, and no run writes anything else.
pub const RUN_WRITABLE_DIR: &str = "scouts/";

/// Whether a run credential may write the document at `path`.
pub fn run_may_write(path: &str) -> bool {
    path.starts_with(RUN_WRITABLE_DIR) && !path.split('/').any(|seg| seg == ".." || seg == ".")
}

/// A loaded scout schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScoutSchedule {
    /// The namespace its scout works in.
    pub namespace: String,
    /// Its name (the file name without `.md`).
    pub name: String,
    /// `- version:`, recorded on each job it posts.
    pub version: String,
    /// `- enabled:`.
    pub enabled: bool,
    /// The window, in milliseconds.
    pub every_ms: i64,
    /// The text `every` was given as (`6h`).
    pub every: String,
    /// What the scout looks for.
    pub brief: String,
}

/// What is wrong with a schedule, naming the field (or `path`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleError {
    /// `path`, `version`, `enabled`, `every` or `brief`.
    pub field: &'static str,
    /// What is wrong with it.
    pub why: String,
}

impl std::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.why)
    }
}

fn refuse<T>(field: &'static str, why: impl Into<String>) -> Result<T, ScheduleError> {
    Err(ScheduleError {
        field,
        why: why.into(),
    })
}

/// The namespace and name a schedule's path names (`policy/scouts/<namespace>/<name>.md`).
pub fn schedule_target(path: &str) -> Result<(String, String), ScheduleError> {
    let shape = "a scout schedule is capsid/policy/scouts/<namespace>/<name>.md";
    let Some(rest) = path
        .strip_prefix(SCOUT_SCHEDULE_DIR)
        .and_then(|r| r.strip_suffix(".md"))
    else {
        return refuse("path", format!("{path}: {shape}"));
    };
    let Some((ns, name)) = rest.split_once('/') else {
        return refuse("path", format!("{path}: {shape}"));
    };
    if let Some(problem) = namespace_problem(ns) {
        return refuse("path", format!("{path}: {problem}"));
    }
    let name_ok = !name.is_empty()
        && name.len() <= NAME_MAX
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !name_ok {
        return refuse(
            "path",
            format!(
                "{path}: the scout's name must be 1 to {NAME_MAX} lower-case letters, digits or dashes"
            ),
        );
    }
    Ok((ns.to_owned(), name.to_owned()))
}

/// `6h`, `30m`, `1d` in milliseconds, within [`EVERY_MIN_MS`] and [`EVERY_MAX_MS`].
pub fn parse_every(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let unit = match t.chars().last() {
        Some('m') => MINUTE_MS,
        Some('h') => 60 * MINUTE_MS,
        Some('d') => DAY_MS,
        _ => {
            return Err(format!(
                "'{t}' is not a number of minutes, hours or days (30m, 6h, 1d)"
            ));
        }
    };
    let n: i64 = t[..t.len() - 1]
        .parse()
        .map_err(|_| format!("'{t}' is not a whole number of minutes, hours or days"))?;
    let ms = n.saturating_mul(unit);
    if !(EVERY_MIN_MS..=EVERY_MAX_MS).contains(&ms) {
        return Err(format!(
            "'{t}' is outside 15m to 30d (a scout is a schedule, not a loop)"
        ));
    }
    Ok(ms)
}

/// Parses a schedule's verified body, for the scout of `path`.
pub fn parse_schedule(path: &str, body: &str) -> Result<ScoutSchedule, ScheduleError> {
    let (namespace, name) = schedule_target(path)?;
    let Some(version) = field(body, "version").filter(|v| !v.is_empty()) else {
        return refuse(
            "version",
            "missing (a `- version:` line); every scout job records the version that posted it",
        );
    };
    let enabled = match field(body, "enabled").map(str::to_ascii_lowercase) {
        Some(v) if v == "true" => true,
        Some(v) if v == "false" => false,
        Some(v) => return refuse("enabled", format!("'{v}' is neither true nor false")),
        None => return refuse("enabled", "missing (a `- enabled: true` or `false` line)"),
    };
    let Some(every) = field(body, "every") else {
        return refuse("every", "missing (a `- every: 6h` line)");
    };
    let every_ms = parse_every(every).map_err(|why| ScheduleError {
        field: "every",
        why,
    })?;
    let brief = field(body, "brief").unwrap_or_default();
    if brief.is_empty() {
        return refuse(
            "brief",
            "missing (a `- brief:` line saying what to look for)",
        );
    }
    if brief.chars().count() > BRIEF_MAX {
        return refuse("brief", format!("longer than {BRIEF_MAX} characters"));
    }
    Ok(ScoutSchedule {
        namespace,
        name,
        version: version.to_owned(),
        enabled,
        every_ms,
        every: every.trim().to_owned(),
        brief: brief.to_owned(),
    })
}

impl ScoutSchedule {
    /// The window `now` falls in (windows of `every` from the epoch).
    pub fn window(&self, now: Timestamp) -> i64 {
        now.as_millis().div_euclid(self.every_ms)
    }

    /// When `window` began.
    pub fn window_start(&self, window: i64) -> Timestamp {
        Timestamp::from_millis(window.saturating_mul(self.every_ms))
    }

    /// The id of the job this schedule posts for `window`: the same on every replica and every
    /// tick of the window, so the window's scout is posted once.
    pub fn job_id(&self, window: i64) -> String {
        let digest = sha256_hex(format!(
            "capsid-scout:v1\n{}\n{}\n{window}",
            self.namespace, self.name
        ));
        format!("job_{}", &digest[..12])
    }

    /// The scout job's title (one open scout per schedule: an open one holds the title).
    pub fn title(&self) -> String {
        format!("Scout {}", self.name)
    }

    /// The watermark document the scout reads and updates, in its namespace.
    pub fn watermark_path(&self) -> String {
        format!("scouts/{}/watermark.md", self.name)
    }

    /// The scout job's body: the brief, the watermark and where the schedule is.
    pub fn job_body(&self, window: i64) -> String {
        format!(
            "{brief}\n\nWatermark: the document `{wm}` in namespace `{ns}` (read it first with the `read` tool; it holds what earlier scouts reported, and may not exist yet). Nothing new since it: say so and stop. Something new: post one planner job (`parent` this job) and update the watermark.\n\nPosted by the scout schedule `capsid/{dir}{ns}/{name}.md` (version {v}, every {every}) for the window from {start}.\n",
            brief = self.brief,
            wm = self.watermark_path(),
            ns = self.namespace,
            dir = SCOUT_SCHEDULE_DIR,
            name = self.name,
            v = self.version,
            every = self.every,
            start = self.window_start(window),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "# Stale widgets\n- version: 3\n- enabled: true\n- every: 6h\n- brief: Look for stale widgets.\n";
    const PATH: &str = "policy/scouts/alpha/stale-widgets.md";

    #[test]
    fn a_schedule_reads_its_fields_and_its_target_from_the_path() {
        let s = parse_schedule(PATH, BODY).expect("schedule");
        assert_eq!(
            (s.namespace.as_str(), s.name.as_str(), s.version.as_str()),
            ("alpha", "stale-widgets", "3")
        );
        assert!(s.enabled);
        assert_eq!(s.every_ms, 6 * 60 * MINUTE_MS);
        assert_eq!(s.brief, "Look for stale widgets.");
        assert_eq!(s.watermark_path(), "scouts/stale-widgets/watermark.md");
        assert_eq!(s.title(), "Scout stale-widgets");
    }

    #[test]
    fn every_refusal_names_its_field() {
        let cases = [
            ("policy/scouts/alpha.md", BODY, "path"),
            ("policy/scouts/alpha/Bad Name.md", BODY, "path"),
            ("policy/other/alpha/x.md", BODY, "path"),
            (PATH, "- enabled: true\n- every: 6h\n- brief: b", "version"),
            (
                PATH,
                "- version: 1\n- enabled: yes\n- every: 6h\n- brief: b",
                "enabled",
            ),
            (PATH, "- version: 1\n- enabled: true\n- brief: b", "every"),
            (
                PATH,
                "- version: 1\n- enabled: true\n- every: 5m\n- brief: b",
                "every",
            ),
            (
                PATH,
                "- version: 1\n- enabled: true\n- every: 31d\n- brief: b",
                "every",
            ),
            (
                PATH,
                "- version: 1\n- enabled: true\n- every: soon\n- brief: b",
                "every",
            ),
            (PATH, "- version: 1\n- enabled: true\n- every: 1h", "brief"),
        ];
        for (path, body, named) in cases {
            let e = parse_schedule(path, body).expect_err(body);
            assert_eq!(e.field, named, "{path} {body}: {e}");
        }
    }

    #[test]
    fn one_job_id_per_window_and_schedule() {
        let s = parse_schedule(PATH, BODY).expect("schedule");
        let t = Timestamp::from_millis(1_800_000_000_000);
        let w = s.window(t);
        assert_eq!(
            s.window(t.plus_millis(1)),
            w,
            "the same window a moment later"
        );
        assert_eq!(s.window(s.window_start(w + 1)), w + 1);
        assert!(s.window_start(w) <= t && t < s.window_start(w + 1));
        assert_eq!(s.job_id(w), s.job_id(w));
        assert_ne!(s.job_id(w), s.job_id(w + 1));
        let other = parse_schedule("policy/scouts/beta/stale-widgets.md", BODY).expect("beta");
        assert_ne!(s.job_id(w), other.job_id(w));
        let id = s.job_id(w);
        assert!(id.starts_with("job_") && id.len() == 16, "{id}");
        assert!(s.job_body(w).contains("scouts/stale-widgets/watermark.md"));
    }
}
