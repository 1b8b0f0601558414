//! The nightly task document of subscription mode (reference 8.1): its path
//! `improve/run-<YYYY-MM-DD>.md`, and its body, a markdown task with a machine-readable head
//! (the run, its limits, the branch rule, the protected-path patterns) and the instructions a
//! local driver session follows. The service seals the body with the job envelope
//! (`jobs::signature`) and writes it as the loop's actor; this module only renders and reads.

use crate::guards::PROTECTED_PATH_PATTERNS;
use crate::improve::keys::driver_key;
use crate::improve::machine::{MAX_ATTEMPTS_PER_RUN, RUN_CAP_MS, SCORE_DEADLINE_MS};
use crate::time::{MINUTE_MS, Timestamp};

/// The fence language of the machine-readable head.
pub const TASK_HEAD_FENCE: &str = "```capsid-task";

/// What the head holds, beside the fixed limits and patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskFacts {
    /// The namespace the run improves.
    pub namespace: String,
    /// The run's id (`<ns>-<timestamp>`).
    pub run_id: String,
    /// The commit the run starts from, when known.
    pub base_sha: Option<String>,
    /// The night, `YYYY-MM-DD`.
    pub date: String,
    /// `subscription` (the only mode that writes a task document).
    pub mode: String,
    /// `full`, `no-memory` or `no-transfer`.
    pub condition: String,
    /// When the run opened (its six-hour cap counts from here).
    pub started: Timestamp,
}

/// Whether `date` is a real calendar date written `YYYY-MM-DD`.
pub fn valid_task_date(date: &str) -> bool {
    date.len() == 10
        && date.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
        && Timestamp::parse(&format!("{date}T00:00:00Z")).is_some_and(|t| t.date() == date)
}

/// The document path of the night `date` inside the namespace: `improve/run-<date>.md`.
pub fn task_document_path(date: &str) -> String {
    format!("improve/run-{date}.md")
}

/// The night of a task document path, when `path` is one (`improve/run-<valid date>.md`).
pub fn task_document_date(path: &str) -> Option<&str> {
    let date = path.strip_prefix("improve/run-")?.strip_suffix(".md")?;
    valid_task_date(date).then_some(date)
}

/// A head value on one line: control characters (a newline above all) become spaces, so no
/// fact can forge another head line.
fn one_line(value: &str) -> String {
    value
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The task document's body (unsigned): the head, then the instructions.
pub fn task_body(t: &TaskFacts) -> String {
    let ns = one_line(&t.namespace);
    let run = one_line(&t.run_id);
    let base = t.base_sha.as_deref().map_or("none".to_owned(), one_line);
    let ends = t.started.plus_millis(RUN_CAP_MS);
    let deadline_min = SCORE_DEADLINE_MS / MINUTE_MS;
    let lease = driver_key(&ns);
    let mut head = vec![
        format!("namespace: {ns}"),
        format!("run_id: {run}"),
        format!("base_sha: {base}"),
        format!("date: {}", one_line(&t.date)),
        format!("mode: {}", one_line(&t.mode)),
        format!("condition: {}", one_line(&t.condition)),
        "branch: improve/<attempt-id>".to_owned(),
        format!("attempt_ids: {run}-a01 .. {run}-a{MAX_ATTEMPTS_PER_RUN:02}"),
        format!("attempt_limit: {MAX_ATTEMPTS_PER_RUN}"),
        format!("score_deadline_minutes: {deadline_min}"),
        format!("run_ends_by: {ends}"),
        format!("driver_lease: {lease}"),
    ];
    head.extend(
        PROTECTED_PATH_PATTERNS
            .iter()
            .map(|p| format!("protected_path: {}", p.source)),
    );
    let from = match &t.base_sha {
        Some(_) => format!("commit `{base}`"),
        None => "the default branch".to_owned(),
    };
    format!(
        "# Improve run {run}\n\n\
         The nightly self-improvement task of namespace `{ns}` for {date}. Only the holder of \
         the driver lease `{lease}` may drive it.\n\n\
         {TASK_HEAD_FENCE}\n{head}\n```\n\n\
         ## Instructions\n\n\
         1. Take the driver lease: call `improve_run` with `action: \"claim\"` and \
         `namespace: \"{ns}\"`. If it is refused, stop: another session drives this run.\n\
         2. Make at most {MAX_ATTEMPTS_PER_RUN} attempts, numbered 01 to \
         {MAX_ATTEMPTS_PER_RUN:02}; attempt NN has the id `{run}-aNN`. Start each from {from}.\n\
         3. For each attempt, make one focused improvement, commit it and push the branch \
         `improve/<attempt-id>` (e.g. `improve/{run}-a01`). Then report it with `improve_run` \
         `action: \"attempt\"`, `namespace: \"{ns}\"`, `head_sha` (the pushed commit) and \
         `summary` (what it changes, in a line). Its score must arrive within {deadline_min} \
         minutes of the report, or the attempt times out and is reverted.\n\
         4. Never create, edit, rename or delete a path matching a `protected_path` pattern \
         above (regular expressions, matched case-insensitively): tests, scoring, CI and lock \
         files. An attempt touching one is reverted whatever its score.\n\
         5. Stop by {ends} (the run's six-hour cap), after the last attempt, or when an attempt \
         is refused.\n\
         6. Release the lease at the end, also when stopping early or on failure: \
         `improve_run` `action: \"claim\"`, `namespace: \"{ns}\"`, `release: true`.\n",
        date = one_line(&t.date),
        head = head.join("\n"),
    )
}

/// The head of a task body, as `(key, value)` lines in order; `None` when the body has no
/// closed `capsid-task` block.
pub fn task_head(body: &str) -> Option<Vec<(&str, &str)>> {
    let start = body.find(&format!("{TASK_HEAD_FENCE}\n"))? + TASK_HEAD_FENCE.len() + 1;
    let rest = &body[start..];
    let end = rest.find("\n```")?;
    Some(
        rest[..end]
            .lines()
            .filter_map(|l| l.split_once(": "))
            .collect(),
    )
}

/// The first value of `key` in a parsed head.
pub fn head_value<'a>(head: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    head.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> TaskFacts {
        TaskFacts {
            namespace: "capsid".into(),
            run_id: "capsid-2026-12-01T09-00-00".into(),
            base_sha: Some("0123456789abcdef0123456789abcdef01234567".into()),
            date: "2026-12-01".into(),
            mode: "subscription".into(),
            condition: "full".into(),
            started: Timestamp::parse("2026-12-01T09:00:00Z").expect("instant"),
        }
    }

    #[test]
    fn the_path_is_the_night_under_improve() {
        assert_eq!(
            task_document_path("2026-12-01"),
            "improve/run-2026-12-01.md"
        );
        assert_eq!(
            task_document_date("improve/run-2026-12-01.md"),
            Some("2026-12-01")
        );
        for bad in [
            "improve/run-2026-02-30.md",
            "improve/run-2026-12-1.md",
            "improve/run-20261201.md",
            "improve/run-2026-12-01.txt",
            "improve/archive/run-2026-12-01.md",
            "capsid/improve/run-2026-12-01.md",
            "improve/run-2026-12-01.md/x",
            "improve/run-+026-12-01.md",
        ] {
            assert_eq!(task_document_date(bad), None, "{bad}");
        }
        assert!(valid_task_date("2028-02-29"));
        assert!(!valid_task_date("2027-02-29"));
        assert!(!valid_task_date("2026-13-01"));
    }

    #[test]
    fn the_head_carries_the_run_and_its_rules() {
        let body = task_body(&facts());
        let head = task_head(&body).expect("a head");
        let get = |k| head_value(&head, k);
        assert_eq!(get("namespace"), Some("capsid"));
        assert_eq!(get("run_id"), Some("capsid-2026-12-01T09-00-00"));
        assert_eq!(
            get("base_sha"),
            Some("0123456789abcdef0123456789abcdef01234567")
        );
        assert_eq!(get("date"), Some("2026-12-01"));
        assert_eq!(get("mode"), Some("subscription"));
        assert_eq!(get("condition"), Some("full"));
        assert_eq!(get("branch"), Some("improve/<attempt-id>"));
        assert_eq!(get("attempt_limit"), Some("10"));
        assert_eq!(
            get("attempt_ids"),
            Some("capsid-2026-12-01T09-00-00-a01 .. capsid-2026-12-01T09-00-00-a10")
        );
        assert_eq!(get("score_deadline_minutes"), Some("20"));
        assert_eq!(get("run_ends_by"), Some("2026-12-01T15:00:00.000Z"));
        assert_eq!(get("driver_lease"), Some("improve:driver:capsid"));
        let patterns: Vec<&str> = head
            .iter()
            .filter(|(k, _)| *k == "protected_path")
            .map(|(_, v)| *v)
            .collect();
        let want: Vec<&str> = PROTECTED_PATH_PATTERNS.iter().map(|p| p.source).collect();
        assert_eq!(patterns, want);
    }

    #[test]
    fn the_instructions_name_the_lease_the_attempt_report_and_the_release() {
        let body = task_body(&facts());
        for needle in [
            "`improve_run` with `action: \"claim\"` and `namespace: \"capsid\"`",
            "push the branch `improve/<attempt-id>` (e.g. `improve/capsid-2026-12-01T09-00-00-a01`)",
            "`action: \"attempt\"`, `namespace: \"capsid\"`, `head_sha`",
            "`summary`",
            "Start each from commit `0123456789abcdef0123456789abcdef01234567`",
            "Never create, edit, rename or delete a path matching a `protected_path` pattern",
            "within 20 minutes",
            "Stop by 2026-12-01T15:00:00.000Z",
            "`release: true`",
        ] {
            assert!(body.contains(needle), "missing {needle:?} in\n{body}");
        }
        assert!(body.starts_with("# Improve run capsid-2026-12-01T09-00-00\n"));
    }

    #[test]
    fn no_base_starts_from_the_default_branch() {
        let mut t = facts();
        t.base_sha = None;
        let body = task_body(&t);
        assert_eq!(
            head_value(&task_head(&body).expect("head"), "base_sha"),
            Some("none")
        );
        assert!(
            body.contains("Start each from the default branch."),
            "{body}"
        );
    }

    #[test]
    fn a_fact_with_a_newline_cannot_forge_a_head_line() {
        let mut t = facts();
        t.condition = "full\nnamespace: other".into();
        let body = task_body(&t);
        let head = task_head(&body).expect("head");
        assert_eq!(head_value(&head, "namespace"), Some("capsid"));
        assert_eq!(
            head_value(&head, "condition"),
            Some("full namespace: other")
        );
        assert_eq!(head.iter().filter(|(k, _)| *k == "namespace").count(), 1);
    }

    #[test]
    fn the_body_is_deterministic_and_not_an_envelope() {
        assert_eq!(task_body(&facts()), task_body(&facts()));
        assert!(crate::jobs::signature::split_signed(&task_body(&facts())).is_err());
        assert_eq!(task_head("no head here"), None);
        assert_eq!(task_head("```capsid-task\nnamespace: x\n"), None);
    }
}
