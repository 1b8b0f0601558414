//! The night of the loop as rules (reference 8.2 "Cadence", 8.3): when the opener is due (03:00
//! in the loop's time zone, once per local date), whether a namespace may run tonight, the
//! attempt prompt the `api` mode asks the model, what a model's answer may propose, and which
//! of an attempt's paths the protected-path guard refuses. Pure: times, documents and settings
//! are handed in.

use serde::Deserialize;

use crate::guards::protected_match;
use crate::improve::roster::ImproveMode;
use crate::improve::scores::{ScoresDoc, verify_anchor_pin};
use crate::time::Timestamp;

/// The loop's time zone when none is configured.
pub const DEFAULT_LOOP_ZONE: &str = "America/Chicago";
/// The local hour the nightly opener opens runs.
pub const OPENER_HOUR: i8 = 3;
/// The most files one attempt may change.
pub const MAX_ATTEMPT_FILES: usize = 20;
/// The largest file an attempt may write, in bytes.
pub const MAX_ATTEMPT_FILE_BYTES: usize = 256 * 1024;
/// The longest change summary kept, in characters.
pub const MAX_SUMMARY_CHARS: usize = 200;
/// The output tokens an attempt's completion may use.
pub const ATTEMPT_MAX_TOKENS: u32 = 16_000;
/// The workflow every roster repository runs to score an attempt (reference 8.3).
pub use super::workflows::SCORE_WORKFLOW;

/// The loop's time zone (`CAPSID_IMPROVE_TZ`), from the bundled IANA database.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopZone {
    name: String,
    zone: jiff::tz::TimeZone,
}

impl LoopZone {
    /// The zone named `name` (an IANA name such as `America/Chicago`), or why not.
    pub fn parse(name: &str) -> Result<LoopZone, String> {
        let zone = jiff::tz::TimeZone::get(name).map_err(|_| {
            format!("CAPSID_IMPROVE_TZ: '{name}' is not an IANA time zone (for example America/Chicago or UTC)")
        })?;
        Ok(LoopZone {
            name: name.to_owned(),
            zone,
        })
    }

    /// The default zone.
    pub fn chicago() -> LoopZone {
        LoopZone::parse(DEFAULT_LOOP_ZONE).unwrap_or_else(|_| LoopZone {
            name: "UTC".into(),
            zone: jiff::tz::TimeZone::UTC,
        })
    }

    /// Its IANA name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The local date (`YYYY-MM-DD`) and hour at `now`.
    pub fn local(&self, now: Timestamp) -> (String, i8) {
        let at = jiff::Timestamp::from_millisecond(now.as_millis())
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let local = self.zone.to_datetime(at);
        (local.date().to_string(), local.hour())
    }
}

impl Default for LoopZone {
    fn default() -> LoopZone {
        LoopZone::chicago()
    }
}

/// The local date the opener opens for at `now`, when it is the opener's hour; `None` at any
/// other hour. The caller opens at most once per namespace and date.
pub fn opener_date(zone: &LoopZone, now: Timestamp) -> Option<String> {
    let (date, hour) = zone.local(now);
    (hour == OPENER_HOUR).then_some(date)
}

/// What a namespace's eligibility is decided from.
#[derive(Clone, Copy, Debug)]
pub struct Standing<'a> {
    /// The namespace.
    pub namespace: &'a str,
    /// The loop's mode.
    pub mode: ImproveMode,
    /// Whether it is on the roster.
    pub on_roster: bool,
    /// Its pause reason, if paused.
    pub paused: Option<&'a str>,
    /// Its `improve/scores.md`, if any.
    pub scores_md: Option<&'a str>,
    /// The pinned Anchors checksum, if any.
    pub pin: Option<&'a str>,
    /// Why the month's budget stops the loop, if it does.
    pub over_budget: Option<&'a str>,
}

/// The scores document a namespace runs under tonight, or why it may not run (reference 8:
/// on the roster, not paused, within budget, `scores.md` parses and its Anchors match the pin).
pub fn may_run(s: &Standing<'_>) -> Result<ScoresDoc, String> {
    let ns = s.namespace;
    if s.mode == ImproveMode::Off {
        return Err("the loop is off (improve_run mode subscription or api turns it on)".into());
    }
    if let Some(over) = s.over_budget {
        return Err(format!("the loop is stopped: {over}"));
    }
    if !s.on_roster {
        return Err(format!(
            "{ns} is not on the roster (capsid improve roster add {ns})"
        ));
    }
    if let Some(reason) = s.paused {
        return Err(format!(
            "{ns} is paused: {reason} (improve_run unpause clears it)"
        ));
    }
    let Some(md) = s.scores_md else {
        return Err(format!("{ns} has no improve/scores.md"));
    };
    verify_anchor_pin(ns, md, s.pin).map_err(|e| e.to_string())
}

/// One file an attempt writes.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ProposedFile {
    /// Path from the repository root.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// What the model proposed for one attempt.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Proposal {
    /// What it changes, in a line.
    pub summary: String,
    /// The files it writes.
    pub files: Vec<ProposedFile>,
}

/// Reads the model's answer: the first JSON object in `text` with a `summary` and 1 to
/// [`MAX_ATTEMPT_FILES`] files, each a relative path that does not climb (`..`), is not under
/// `.git/`, and content within [`MAX_ATTEMPT_FILE_BYTES`]; the summary is cut to one line.
pub fn parse_proposal(text: &str) -> Result<Proposal, String> {
    let start = text.find('{').ok_or("the answer holds no JSON object")?;
    let end = text.rfind('}').ok_or("the answer holds no JSON object")?;
    let json = text
        .get(start..=end)
        .ok_or("the answer holds no JSON object")?;
    let mut p: Proposal = serde_json::from_str(json).map_err(|e| {
        format!("the answer's JSON is not a proposal {{summary, files:[{{path, content}}]}}: {e}")
    })?;
    if p.files.is_empty() || p.files.len() > MAX_ATTEMPT_FILES {
        return Err(format!(
            "a proposal changes 1 to {MAX_ATTEMPT_FILES} files (got {})",
            p.files.len()
        ));
    }
    for f in &p.files {
        let bad = f.path.is_empty()
            || f.path.len() > 256
            || f.path.starts_with('/')
            || f.path.contains('\\')
            || f.path
                .split('/')
                .any(|seg| seg.is_empty() || seg == "." || seg == "..")
            || f.path.starts_with(".git/");
        if bad {
            return Err(format!(
                "the proposal's path {:?} is not a plain relative path",
                f.path
            ));
        }
        if f.content.len() > MAX_ATTEMPT_FILE_BYTES {
            return Err(format!(
                "the proposal's {} is {} bytes (at most {MAX_ATTEMPT_FILE_BYTES})",
                f.path,
                f.content.len()
            ));
        }
    }
    let line = p.summary.lines().next().unwrap_or("").trim();
    p.summary = line.chars().take(MAX_SUMMARY_CHARS).collect();
    if p.summary.is_empty() {
        p.summary = "an attempt with no summary".into();
    }
    Ok(p)
}

/// The protected paths among `paths`, each with the pattern's reason: the deterministic half
/// of the reward-hacking monitor, which reverts an attempt regardless of its score.
pub fn protected_hits<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    paths
        .into_iter()
        .filter_map(|p| protected_match(p).map(|m| format!("{p}: {}", m.reason)))
        .collect()
}

/// What the attempt prompt is made of.
#[derive(Clone, Copy, Debug)]
pub struct AttemptBrief<'a> {
    /// The namespace.
    pub namespace: &'a str,
    /// The repository.
    pub repo: &'a str,
    /// The commit the attempt starts from.
    pub base_sha: &'a str,
    /// The namespace's `improve/scores.md`.
    pub scores_md: &'a str,
    /// This run's earlier attempts, one line each (empty under `no-memory`).
    pub history: &'a [String],
    /// The paths of the repository's tree (bounded by the caller).
    pub tree: &'a [String],
}

/// The system prompt and the user message of an attempt.
pub fn attempt_prompt(b: &AttemptBrief<'_>) -> (String, String) {
    let system = format!(
        "You improve the repository {repo} for the namespace {ns}. Propose ONE small change that \
         raises the secondary score of improve/scores.md without failing any anchor. Never touch \
         protected paths (CI workflows, scorer, lockfiles, migrations, the scores document). \
         Answer with exactly one JSON object: {{\"summary\": \"<one line>\", \"files\": \
         [{{\"path\": \"<relative path>\", \"content\": \"<the whole new file>\"}}]}}.",
        repo = b.repo,
        ns = b.namespace
    );
    let mut user = format!(
        "Base commit: {}\n\n## improve/scores.md\n{}\n",
        b.base_sha, b.scores_md
    );
    if !b.history.is_empty() {
        user.push_str("\n## Earlier attempts tonight\n");
        for h in b.history {
            user.push_str(&format!("- {h}\n"));
        }
    }
    user.push_str("\n## Files\n");
    for t in b.tree {
        user.push_str(&format!("- {t}\n"));
    }
    (system, user)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).expect("a time")
    }

    #[test]
    fn the_opener_is_due_at_three_in_chicago_in_winter_and_in_summer() {
        let zone = LoopZone::chicago();
        // CST is UTC-6 in December, CDT UTC-5 in July.
        assert_eq!(
            opener_date(&zone, at("2026-12-01T09:00:00Z")).as_deref(),
            Some("2026-12-01")
        );
        assert_eq!(
            opener_date(&zone, at("2026-12-01T09:59:59Z")).as_deref(),
            Some("2026-12-01")
        );
        assert_eq!(opener_date(&zone, at("2026-12-01T08:59:59Z")), None);
        assert_eq!(opener_date(&zone, at("2026-12-01T10:00:00Z")), None);
        assert_eq!(
            opener_date(&zone, at("2026-07-01T08:00:00Z")).as_deref(),
            Some("2026-07-01")
        );
        assert_eq!(opener_date(&zone, at("2026-07-01T09:00:00Z")), None);
    }

    #[test]
    fn another_zone_moves_the_opener_and_a_bad_name_is_refused() {
        let utc = LoopZone::parse("UTC").expect("utc");
        assert_eq!(
            opener_date(&utc, at("2026-12-01T03:10:00Z")).as_deref(),
            Some("2026-12-01")
        );
        assert_eq!(opener_date(&utc, at("2026-12-01T09:00:00Z")), None);
        let err = LoopZone::parse("Mars/Olympus").expect_err("refused");
        assert!(
            err.contains("Mars/Olympus") && err.contains("CAPSID_IMPROVE_TZ"),
            "{err}"
        );
        assert_eq!(LoopZone::default().name(), DEFAULT_LOOP_ZONE);
    }

    const SCORES: &str =
        "## Anchors\n- tests_pass: required\n\n## Secondary\n- bundle_kb: minimize weight 1\n";

    fn standing<'a>(pin: Option<&'a str>) -> Standing<'a> {
        Standing {
            namespace: "capsid",
            mode: ImproveMode::Api,
            on_roster: true,
            paused: None,
            scores_md: Some(SCORES),
            pin,
            over_budget: None,
        }
    }

    #[test]
    fn a_namespace_runs_only_when_every_condition_holds() {
        let pin = crate::improve::anchors::anchors_checksum(SCORES);
        assert!(may_run(&standing(Some(&pin))).is_ok());
        let refused = |s: Standing<'_>| may_run(&s).expect_err("refused");
        assert!(
            refused(Standing {
                mode: ImproveMode::Off,
                ..standing(Some(&pin))
            })
            .contains("off")
        );
        assert!(
            refused(Standing {
                on_roster: false,
                ..standing(Some(&pin))
            })
            .contains("roster")
        );
        assert!(
            refused(Standing {
                paused: Some("by hand"),
                ..standing(Some(&pin))
            })
            .contains("by hand")
        );
        assert!(
            refused(Standing {
                scores_md: None,
                ..standing(Some(&pin))
            })
            .contains("scores.md")
        );
        assert!(
            refused(Standing {
                over_budget: Some("model spend 5 of 4"),
                ..standing(Some(&pin))
            })
            .contains("model spend")
        );
        assert!(refused(standing(None)).contains("pin"));
        let other = "0".repeat(64);
        let mismatch = refused(standing(Some(&other)));
        assert!(mismatch.contains("capsid"), "{mismatch}");
    }

    #[test]
    fn a_proposal_is_read_from_the_answer_and_bad_ones_are_refused() {
        let p = parse_proposal("Here:\n{\"summary\": \"smaller bundle\\nmore\", \"files\": [{\"path\": \"src/a.ts\", \"content\": \"x\"}]}\nthanks")
            .expect("parsed");
        assert_eq!(p.summary, "smaller bundle");
        assert_eq!(p.files[0].path, "src/a.ts");
        for bad in [
            "no json here",
            "{\"summary\": \"s\", \"files\": []}",
            "{\"summary\": \"s\", \"files\": [{\"path\": \"../x\", \"content\": \"\"}]}",
            "{\"summary\": \"s\", \"files\": [{\"path\": \"/etc/x\", \"content\": \"\"}]}",
            "{\"summary\": \"s\", \"files\": [{\"path\": \".git/config\", \"content\": \"\"}]}",
            "{\"summary\": \"s\", \"files\": [{\"path\": \"a//b\", \"content\": \"\"}]}",
            "{\"summary\": \"s\"}",
        ] {
            assert!(parse_proposal(bad).is_err(), "{bad}");
        }
        let big = format!(
            "{{\"summary\": \"s\", \"files\": [{{\"path\": \"a\", \"content\": \"{}\"}}]}}",
            "x".repeat(MAX_ATTEMPT_FILE_BYTES + 1)
        );
        assert!(parse_proposal(&big).expect_err("too big").contains("bytes"));
    }

    #[test]
    fn protected_paths_are_named_and_ordinary_ones_pass() {
        let hits = protected_hits([".github/workflows/ci.yml", "src/app.ts"]);
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert!(
            hits[0].starts_with(".github/workflows/ci.yml: "),
            "{hits:?}"
        );
        assert!(protected_hits(["src/app.ts", "README.md"]).is_empty());
    }

    #[test]
    fn the_prompt_carries_the_scores_the_history_and_the_tree() {
        let history = vec!["a01 reverted: bundle grew".to_owned()];
        let tree = vec!["src/app.ts".to_owned()];
        let (system, user) = attempt_prompt(&AttemptBrief {
            namespace: "capsid",
            repo: "o/r",
            base_sha: "abc",
            scores_md: SCORES,
            history: &history,
            tree: &tree,
        });
        assert!(
            system.contains("o/r") && system.contains("JSON"),
            "{system}"
        );
        assert!(
            user.contains("abc")
                && user.contains("tests_pass")
                && user.contains("a01 reverted")
                && user.contains("src/app.ts"),
            "{user}"
        );
    }
}
