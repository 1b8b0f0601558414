//! The optimizer's bounded-edit prompt and the reading of its answer (reference 9): the
//! skill's body with numbered lines, its newest failure notes, and every earlier rejected
//! proposal with its reason, so a refused proposal is not proposed again.

use crate::skills::EditOp;
use crate::skills::edits::allowed_lines;

/// The most tokens an edit answer may take.
pub const EDIT_MAX_TOKENS: u32 = 4_000;
/// The most rejected proposals the prompt carries.
pub const REJECTED_SHOWN: usize = 20;
/// The most characters of one failure note or rejected proposal shown.
const NOTE_CHARS: usize = 1_000;

/// A rejected proposal as the prompt shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejected {
    /// The version it was proposed against.
    pub from_version: i64,
    /// The ops, as stored (JSON).
    pub ops: String,
    /// Why it was rejected.
    pub reason: String,
}

/// What the optimizer is told.
pub struct EditBrief<'a> {
    /// The skill.
    pub skill: &'a str,
    /// Its current version.
    pub version: i64,
    /// Its current body.
    pub body: &'a str,
    /// The newest failure notes, newest first.
    pub failures: &'a [String],
    /// Earlier rejected proposals, newest first.
    pub rejected: &'a [Rejected],
}

fn clip(s: &str) -> String {
    s.chars().take(NOTE_CHARS).collect()
}

/// The system and user messages of an edit request.
pub fn edit_prompt(b: &EditBrief<'_>) -> (String, String) {
    let lines: Vec<&str> = b.body.split('\n').collect();
    let allowed = allowed_lines(lines.len());
    let system = format!(
        "You improve one instruction document (a skill) by a bounded edit. Answer with JSON only: \
         {{\"ops\": [{{\"op\": \"add\"|\"delete\"|\"replace\", \"line\": <1-based line of the current body>, \
         \"text\": \"<one line, for add and replace>\"}}]}}. `add` inserts after its line. Touch at most \
         {allowed} distinct line(s). The edit is measured against the current version and kept only if it \
         scores strictly better. Do not propose again an edit listed as rejected."
    );
    let mut user = format!("Skill {} at version {}.\n\n## Body\n", b.skill, b.version);
    for (i, line) in lines.iter().enumerate() {
        user.push_str(&format!("{:>4} | {line}\n", i + 1));
    }
    user.push_str("\n## Newest failure notes\n");
    for f in b.failures {
        user.push_str(&format!("- {}\n", clip(f)));
    }
    user.push_str("\n## Rejected proposals (do not repeat)\n");
    if b.rejected.is_empty() {
        user.push_str("(none)\n");
    }
    for r in b.rejected.iter().take(REJECTED_SHOWN) {
        user.push_str(&format!(
            "- from version {}: {} (rejected: {})\n",
            r.from_version,
            clip(&r.ops),
            clip(&r.reason)
        ));
    }
    (system, user)
}

/// The ops of an answer: the JSON object from its first `{` to its last `}` with an `ops`
/// array of edit operations.
pub fn parse_edit_answer(text: &str) -> Result<Vec<EditOp>, String> {
    let (Some(start), Some(end)) = (text.find('{'), text.rfind('}')) else {
        return Err("the answer holds no JSON object".into());
    };
    if end < start {
        return Err("the answer holds no JSON object".into());
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        ops: Vec<EditOp>,
    }
    serde_json::from_str::<Answer>(&text[start..=end])
        .map(|a| a.ops)
        .map_err(|e| format!("the answer is not {{\"ops\": [...]}} of add|delete|replace: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_numbers_lines_and_carries_failures_and_rejections() {
        let rejected = [Rejected {
            from_version: 1,
            ops: r#"[{"op":"delete","line":2}]"#.into(),
            reason: "tie: 0.25 is not strictly greater than 0.25".into(),
        }];
        let failures = ["the retry loop never ended".to_owned()];
        let (system, user) = edit_prompt(&EditBrief {
            skill: "s1",
            version: 2,
            body: "alpha\nbeta",
            failures: &failures,
            rejected: &rejected,
        });
        assert!(system.contains("at most 1 distinct"), "{system}");
        assert!(user.contains("   1 | alpha\n   2 | beta\n"), "{user}");
        assert!(user.contains("the retry loop never ended"));
        assert!(
            user.contains(r#"[{"op":"delete","line":2}] (rejected: tie"#),
            "{user}"
        );
    }

    #[test]
    fn answers_parse_or_say_why_not() {
        let ops = parse_edit_answer(
            "Here:\n```json\n{\"ops\":[{\"op\":\"replace\",\"line\":1,\"text\":\"x\"}]}\n```",
        )
        .expect("ops");
        assert_eq!(
            ops,
            vec![EditOp::Replace {
                line: 1,
                text: "x".into()
            }]
        );
        assert!(parse_edit_answer("no").is_err());
        assert!(parse_edit_answer("} {").is_err());
        assert!(parse_edit_answer(r#"{"ops":[{"op":"rewrite","line":1}]}"#).is_err());
    }
}
