//! Blocking on a human gate and the retry cap (reference 6.5).
//!
//! A blocked job carries the exact command the human must run in its summary, after a
//! fixed marker, so the console, the driver and the gate policy read it back the same way.
//! The work may be sent back for correction at most [`CORRECTION_CAP`] times.

/// The one spelling of the resume instruction; [`command_from_summary`] reads after it.
pub const RESUME_MARKER: &str = "Run this, then send it back in with jobs action 'resume':";

/// The prefix a block summary gets once the correction budget is spent.
pub const RETRY_CAP_REASON: &str = "retry cap; human decision required";

/// Corrections allowed before a human must decide.
pub const CORRECTION_CAP: u32 = 2;

/// The summary `block` stores: the reason, then the marker and the indented command when
/// one was given, prefixed by [`RETRY_CAP_REASON`] and a blank line when at the cap.
/// A blank command counts as none.
pub fn block_summary(reason: &str, command: Option<&str>, at_cap: bool) -> String {
    let summary = match command.filter(|c| !c.trim().is_empty()) {
        Some(command) => format!("{reason}\n\n{RESUME_MARKER}\n\n    {command}"),
        None => reason.to_owned(),
    };
    if !at_cap {
        return summary;
    }
    match summary.trim() {
        "" => RETRY_CAP_REASON.to_owned(),
        said => format!("{RETRY_CAP_REASON}\n\n{said}"),
    }
}

/// The command a blocked job waits on: the trimmed text after the first marker, if any.
pub fn command_from_summary(summary: &str) -> Option<&str> {
    let (_, after) = summary.split_once(RESUME_MARKER)?;
    Some(after.trim()).filter(|c| !c.is_empty())
}

/// Whether the work has spent its correction budget. Fails closed: a count that is not a
/// finite number at or above zero is treated as at the cap.
pub fn at_correction_cap(corrections: f64) -> bool {
    !corrections.is_finite() || corrections < 0.0 || corrections >= f64::from(CORRECTION_CAP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn summaries() {
        assert_eq!(
            block_summary("needs a deploy", None, false),
            "needs a deploy"
        );
        assert_eq!(
            block_summary("needs a deploy", Some("  "), false),
            "needs a deploy"
        );
        assert_eq!(
            block_summary("needs a deploy", Some("wrangler deploy"), false),
            "needs a deploy\n\nRun this, then send it back in with jobs action 'resume':\n\n    wrangler deploy"
        );
        assert_eq!(
            block_summary(" stuck ", Some("git push --force"), true),
            "retry cap; human decision required\n\nstuck \n\nRun this, then send it back in with jobs action 'resume':\n\n    git push --force"
        );
        assert_eq!(
            block_summary("stuck", None, true),
            "retry cap; human decision required\n\nstuck"
        );
    }

    #[test]
    fn commands_read_back() {
        let summary = "Finished up to the push.\n\nRun this, then send it back in with jobs action 'resume':\n\n    git push origin main\n";
        assert_eq!(command_from_summary(summary), Some("git push origin main"));
        assert_eq!(command_from_summary("no command here"), None);
        assert_eq!(
            command_from_summary(&format!("x {RESUME_MARKER}   \n ")),
            None
        );
        assert_eq!(command_from_summary(""), None);
    }

    #[test]
    fn correction_cap_fails_closed() {
        let cases: &[(f64, bool)] = &[
            (0.0, false),
            (1.0, false),
            (1.999, false),
            (2.0, true),
            (3.0, true),
            (-1.0, true),
            (-0.5, true),
            (f64::NAN, true),
            (f64::INFINITY, true),
            (f64::NEG_INFINITY, true),
        ];
        for (n, want) in cases {
            assert_eq!(at_correction_cap(*n), *want, "{n}");
        }
    }

    proptest! {
        #[test]
        fn command_round_trips(reason in any::<String>(), command in any::<String>(), cap in any::<bool>()) {
            prop_assume!(!reason.contains(RESUME_MARKER) && !command.contains(RESUME_MARKER));
            prop_assume!(!command.trim().is_empty());
            let summary = block_summary(&reason, Some(&command), cap);
            prop_assert_eq!(command_from_summary(&summary), Some(command.trim()));
            prop_assert_eq!(summary.starts_with(RETRY_CAP_REASON), cap || reason.starts_with(RETRY_CAP_REASON));
        }

        #[test]
        fn no_command_reads_back_none(reason in any::<String>(), cap in any::<bool>()) {
            prop_assume!(!reason.contains(RESUME_MARKER));
            let summary = block_summary(&reason, None, cap);
            prop_assert_eq!(command_from_summary(&summary), None);
        }
    }
}
