//! Abstraction (reference 9, issue 17): what a source of a skill is (an attempt that was kept,
//! a job done with the verifier's `verified-success`), the settings marker that spends a
//! source the model declined, the `abstract` stage's prompt, the subscription task that lists
//! sources for the driver, and the validation of a proposal (the model's answer or the
//! driver's `propose_skill`): every field bounded, a bad answer a reason naming the field,
//! never a panic. A proposal always becomes a `candidate`, never live.

use serde_json::{Map, Value};

use crate::ids::Entropy;
use crate::paths::Namespace;

/// What a skill is abstracted from.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// An `improve_attempts` row that was kept.
    Attempt,
    /// A job done with the verifier's `verified-success` on its outcome row.
    Job,
}

impl SourceKind {
    /// Both kinds.
    pub const ALL: [SourceKind; 2] = [SourceKind::Attempt, SourceKind::Job];

    /// The wire and key name.
    pub fn name(self) -> &'static str {
        match self {
            SourceKind::Attempt => "attempt",
            SourceKind::Job => "job",
        }
    }

    /// The kind named exactly `value`.
    pub fn parse(value: &str) -> Option<SourceKind> {
        SourceKind::ALL.into_iter().find(|k| k.name() == value)
    }
}

/// The verdict on a job's outcome row that makes the job a source.
pub const SOURCE_JOB_VERDICT: &str = "verified-success";
/// At most this many sources are abstracted on one tick (the model is asked once each).
pub const SOURCES_PER_TICK: usize = 3;
/// At most this many sources one subscription task lists.
pub const SOURCES_PER_TASK: usize = 10;
/// The `abstract` stage's answer budget.
pub const ABSTRACT_MAX_TOKENS: u32 = 8_000;
/// A title's bound, in characters.
pub const TITLE_MAX_CHARS: usize = 200;
/// A trigger condition's bound, in characters.
pub const TRIGGER_MAX_CHARS: usize = 1_000;
/// The termination test's and the composition interface's bound, in characters.
pub const FIELD_MAX_CHARS: usize = 2_000;
/// The instruction body's bound, in bytes.
pub const BODY_MAX_BYTES: usize = 64 * 1024;
/// At most this many namespaces a skill names.
pub const NAMESPACES_MAX: usize = 16;
/// Each part of a source put into the prompt is cut to this many bytes.
pub const SOURCE_PART_MAX_BYTES: usize = 16 * 1024;
/// A reason stored or audited is cut to this many characters.
pub const REASON_MAX_CHARS: usize = 500;

/// The settings-key prefix of a spent source of `kind`: `skills:abstracted:<kind>:`.
pub fn spent_prefix(kind: SourceKind) -> String {
    format!("skills:abstracted:{}:", kind.name())
}

/// The settings key marking `kind`/`id` spent because the model (or the driver) declined it.
pub fn spent_key(kind: SourceKind, id: &str) -> String {
    format!("{}{id}", spent_prefix(kind))
}

/// A skill's body document inside its source namespace: `improve/skills/<id>.md`.
pub fn skill_body_path(id: &str) -> String {
    format!("improve/skills/{id}.md")
}

/// A new skill id: `skill_` + 12 lower-case hex from the entropy port.
pub fn new_skill_id(entropy: &dyn Entropy) -> String {
    let mut buf = [0u8; 6];
    entropy.fill(&mut buf);
    format!("skill_{}", hex::encode(buf))
}

/// A validated proposal: the declared fields and the instruction body.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SkillProposal {
    /// One line, at most [`TITLE_MAX_CHARS`].
    pub title: String,
    /// What work the skill is offered for; non-empty.
    pub trigger_condition: String,
    /// The namespaces it applies to; `None` means any.
    pub namespaces: Option<Vec<String>>,
    /// How a run following it knows it is done.
    pub termination_test: Option<String>,
    /// What it takes and gives when composed with other skills.
    pub composition_interface: Option<String>,
    /// The instruction body (the document); non-empty, at most [`BODY_MAX_BYTES`].
    pub body: String,
}

impl SkillProposal {
    /// The row's `namespaces` column: a JSON array, or `None` for any.
    pub fn namespaces_json(&self) -> Option<String> {
        self.namespaces
            .as_ref()
            .map(|n| Value::from(n.clone()).to_string())
    }
}

fn text_field<'a>(fields: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(format!("{key}: must be a string")),
    }
}

fn bounded_chars(key: &str, value: &str, max: usize) -> Result<(), String> {
    let n = value.chars().count();
    if n > max {
        return Err(format!("{key}: at most {max} characters (got {n})"));
    }
    Ok(())
}

fn optional_text(fields: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    let Some(v) = text_field(fields, key)?.map(str::trim) else {
        return Ok(None);
    };
    bounded_chars(key, v, FIELD_MAX_CHARS)?;
    Ok((!v.is_empty()).then(|| v.to_owned()))
}

fn namespaces(fields: &Map<String, Value>) -> Result<Option<Vec<String>>, String> {
    let list = match fields.get("namespaces") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(list)) => list,
        Some(_) => return Err("namespaces: must be an array of namespace names".into()),
    };
    if list.is_empty() || list.len() > NAMESPACES_MAX {
        return Err(format!(
            "namespaces: 1 to {NAMESPACES_MAX} names, or null for any namespace (got {})",
            list.len()
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for v in list {
        let Some(name) = v.as_str() else {
            return Err("namespaces: every entry must be a string".into());
        };
        let ns = Namespace::parse(name.trim()).map_err(|e| format!("namespaces: {e}"))?;
        if !out.iter().any(|n| n == ns.as_str()) {
            out.push(ns.into_string());
        }
    }
    Ok(Some(out))
}

/// Validates a proposal's fields (an object): `title` one non-empty line of at most
/// [`TITLE_MAX_CHARS`], `trigger_condition` non-empty (at most [`TRIGGER_MAX_CHARS`]),
/// `namespaces` null or 1 to [`NAMESPACES_MAX`] valid names, `termination_test` and
/// `composition_interface` optional (at most [`FIELD_MAX_CHARS`]), `body` non-empty and at
/// most [`BODY_MAX_BYTES`]. The first broken rule is the answer.
pub fn validate_proposal(fields: &Map<String, Value>) -> Result<SkillProposal, String> {
    let title = text_field(fields, "title")?.map(str::trim).unwrap_or("");
    if title.is_empty() {
        return Err("title: required, one non-empty line".into());
    }
    if title.chars().any(char::is_control) {
        return Err("title: one line, without control characters".into());
    }
    bounded_chars("title", title, TITLE_MAX_CHARS)?;
    let trigger = text_field(fields, "trigger_condition")?
        .map(str::trim)
        .unwrap_or("");
    if trigger.is_empty() {
        return Err(
            "trigger_condition: required and non-empty (what work the skill is for)".into(),
        );
    }
    bounded_chars("trigger_condition", trigger, TRIGGER_MAX_CHARS)?;
    let namespaces = namespaces(fields)?;
    let termination_test = optional_text(fields, "termination_test")?;
    let composition_interface = optional_text(fields, "composition_interface")?;
    let body = text_field(fields, "body")?.unwrap_or("");
    if body.trim().is_empty() {
        return Err("body: required, the skill's instructions (non-empty)".into());
    }
    if body.len() > BODY_MAX_BYTES {
        return Err(format!(
            "body: at most {BODY_MAX_BYTES} bytes (got {})",
            body.len()
        ));
    }
    Ok(SkillProposal {
        title: title.to_owned(),
        trigger_condition: trigger.to_owned(),
        namespaces,
        termination_test,
        composition_interface,
        body: body.to_owned(),
    })
}

/// Reads the model's answer: the JSON object in it (from the first `{` to the last `}`).
/// `{"skill": null}` declines (`Ok(None)`); `{"skill": {...}}` or the fields at the top level
/// propose; anything else is the reason it is not an answer.
pub fn parse_answer(text: &str) -> Result<Option<SkillProposal>, String> {
    let none = || "the answer holds no JSON object".to_owned();
    let start = text.find('{').ok_or_else(none)?;
    let end = text.rfind('}').ok_or_else(none)?;
    let json = text.get(start..=end).ok_or_else(none)?;
    let value: Value = serde_json::from_str(json).map_err(|e| {
        let mut why = format!("the answer's JSON does not parse: {e}");
        why.truncate(REASON_MAX_CHARS);
        why
    })?;
    read_proposal(&value)
}

/// Reads a proposal given as JSON (the model's answer, the driver's `proposal`): an object;
/// `{"skill": null}` declines, `{"skill": {...}}` or the fields at the top level propose.
pub fn read_proposal(value: &Value) -> Result<Option<SkillProposal>, String> {
    let Value::Object(top) = value else {
        return Err("the proposal must be a JSON object".into());
    };
    match top.get("skill") {
        Some(Value::Null) => Ok(None),
        Some(Value::Object(inner)) => validate_proposal(inner).map(Some),
        Some(_) => Err("skill: must be an object or null".into()),
        None => validate_proposal(top).map(Some),
    }
}

/// What the prompt tells the model about one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceBrief<'a> {
    /// Attempt or job.
    pub kind: SourceKind,
    /// Its id.
    pub id: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// The job's title (none for an attempt).
    pub title: Option<&'a str>,
    /// The attempt's change summary or the job's result summary.
    pub summary: Option<&'a str>,
    /// The attempt's archive document or the job's body.
    pub text: Option<&'a str>,
}

/// `value` cut to at most `max` bytes on a character boundary.
pub fn cut(value: &str, max: usize) -> &str {
    if value.len() <= max {
        return value;
    }
    let mut end = max;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    &value[..end]
}

/// The `abstract` stage's system and user prompts for one source.
pub fn abstract_prompt(s: &SourceBrief<'_>) -> (String, String) {
    let system = format!(
        "You turn one piece of work that landed into a reusable skill for other agents, or \
         decline. Answer with exactly one JSON object and nothing else: either {{\"skill\": null}} \
         when the work holds no idea another project could reuse, or {{\"title\": one line of at \
         most {TITLE_MAX_CHARS} characters, \"trigger_condition\": what work the skill is for, in \
         words a job title or body would use, \"namespaces\": null for any namespace or a list of \
         namespace names, \"termination_test\": how a run following it knows it is done, \
         \"composition_interface\": what it takes and gives beside other skills, \"body\": the \
         instructions in markdown, at most {BODY_MAX_BYTES} bytes}}. The skill starts as a \
         candidate and is evaluated before anyone relies on it."
    );
    let part = |label: &str, v: Option<&str>| {
        v.map(|v| format!("\n## {label}\n{}\n", cut(v, SOURCE_PART_MAX_BYTES)))
            .unwrap_or_default()
    };
    let what = match s.kind {
        SourceKind::Attempt => "an attempt of the self-improvement loop that was kept",
        SourceKind::Job => "a job the verifier reported verified-success",
    };
    let user = format!(
        "Source: {what}.\n- kind: {}\n- id: {}\n- namespace: {}\n{}{}{}",
        s.kind.name(),
        s.id,
        s.namespace,
        part("Title", s.title),
        part("Summary", s.summary),
        part(
            match s.kind {
                SourceKind::Attempt => "Archive document",
                SourceKind::Job => "Job body",
            },
            s.text
        ),
    );
    (system, user)
}

/// The subscription task document's path for the night `date`: `improve/abstract-<date>.md`.
pub fn abstract_task_path(date: &str) -> String {
    format!("improve/abstract-{date}.md")
}

/// One line of the subscription task: a source to abstract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSource {
    /// Attempt or job.
    pub kind: SourceKind,
    /// Its id.
    pub id: String,
    /// What it was, in a line.
    pub label: String,
}

fn one_line(value: &str) -> String {
    value
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(TITLE_MAX_CHARS)
        .collect()
}

/// The subscription task's body (unsigned): the sources of `namespace` to abstract, each
/// reported back with `improve_run` action `propose_skill` by the driver-lease holder.
pub fn abstract_task_body(namespace: &str, date: &str, sources: &[TaskSource]) -> String {
    let ns = one_line(namespace);
    let lines: Vec<String> = sources
        .iter()
        .take(SOURCES_PER_TASK)
        .map(|s| {
            format!(
                "source: {} {} {}",
                s.kind.name(),
                one_line(&s.id),
                one_line(&s.label)
            )
        })
        .collect();
    format!(
        "# Skills to abstract in {ns} ({date})\n\n\
         Work that landed in `{ns}` which no skill names yet. Only the holder of the driver \
         lease of `{ns}` may report on it.\n\n\
         ```capsid-task\nnamespace: {ns}\ndate: {date}\n{}\n```\n\n\
         ## Instructions\n\n\
         For each source, read it (an attempt's archive document, a job's document) and decide \
         whether it holds an idea another project could reuse. Report each with `improve_run` \
         `action: \"propose_skill\"`, `namespace: \"{ns}\"`, `source_kind`, `source_id` and either \
         `decline: true` or the fields `title` (one line, at most {TITLE_MAX_CHARS} characters), \
         `trigger_condition`, `namespaces` (omit for any), `termination_test`, \
         `composition_interface` and `body` (markdown, at most {BODY_MAX_BYTES} bytes). A \
         proposal becomes a candidate skill; a source already abstracted or declined is \
         refused.\n",
        lines.join("\n"),
        date = one_line(date),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn good() -> Value {
        json!({"title": "Shrink bundles by dropping dead exports", "trigger_condition": "bundle size regression",
               "namespaces": ["capsid", "site", "capsid"], "termination_test": "bundle_kb drops",
               "composition_interface": "", "body": "1. Find dead exports.\n2. Remove them.\n"})
    }

    #[test]
    fn a_good_proposal_is_kept_trimmed_and_deduplicated() {
        let p = validate_proposal(&fields(good())).expect("valid");
        assert_eq!(p.title, "Shrink bundles by dropping dead exports");
        assert_eq!(
            p.namespaces,
            Some(vec!["capsid".to_owned(), "site".to_owned()])
        );
        assert_eq!(p.namespaces_json().as_deref(), Some(r#"["capsid","site"]"#));
        assert_eq!(p.termination_test.as_deref(), Some("bundle_kb drops"));
        assert_eq!(p.composition_interface, None, "blank is absent");
        let any = validate_proposal(&fields(
            json!({"title": "t", "trigger_condition": "x", "body": "b"}),
        ))
        .expect("valid");
        assert_eq!(any.namespaces, None);
        assert_eq!(any.namespaces_json(), None);
    }

    #[test]
    fn every_field_is_bounded_and_named() {
        let with = |key: &str, v: Value| {
            let mut f = fields(good());
            f.insert(key.into(), v);
            validate_proposal(&f).expect_err("refused")
        };
        let table = [
            ("title", json!(""), "title"),
            ("title", json!("two\nlines"), "title"),
            ("title", json!("x".repeat(TITLE_MAX_CHARS + 1)), "title"),
            ("title", json!(7), "title"),
            ("trigger_condition", json!("  "), "trigger_condition"),
            (
                "trigger_condition",
                json!("t".repeat(TRIGGER_MAX_CHARS + 1)),
                "trigger_condition",
            ),
            ("namespaces", json!([]), "namespaces"),
            ("namespaces", json!("capsid"), "namespaces"),
            ("namespaces", json!(["a/b"]), "namespaces"),
            ("namespaces", json!([1]), "namespaces"),
            (
                "namespaces",
                json!(
                    (0..=NAMESPACES_MAX)
                        .map(|i| format!("n{i}"))
                        .collect::<Vec<_>>()
                ),
                "namespaces",
            ),
            (
                "termination_test",
                json!("x".repeat(FIELD_MAX_CHARS + 1)),
                "termination_test",
            ),
            (
                "composition_interface",
                json!(["x"]),
                "composition_interface",
            ),
            ("body", json!(""), "body"),
            ("body", json!(" \n "), "body"),
            ("body", json!("b".repeat(BODY_MAX_BYTES + 1)), "body"),
        ];
        for (key, v, named) in table {
            let why = with(key, v.clone());
            assert!(why.starts_with(named), "{key}={v}: {why}");
        }
        let mut f = fields(good());
        f.remove("body");
        assert!(
            validate_proposal(&f)
                .expect_err("no body")
                .starts_with("body")
        );
        let exact = with("title", json!(null));
        assert!(exact.starts_with("title"), "{exact}");
        let mut f = fields(good());
        f.insert("title".into(), json!("é".repeat(TITLE_MAX_CHARS)));
        f.insert("body".into(), json!("b".repeat(BODY_MAX_BYTES)));
        assert!(
            validate_proposal(&f).is_ok(),
            "the bounds themselves are allowed"
        );
    }

    #[test]
    fn answers_decline_propose_or_say_why_not() {
        assert_eq!(parse_answer("Nothing here. {\"skill\": null}"), Ok(None));
        let wrapped = format!("ok {}", json!({"skill": good()}));
        assert!(parse_answer(&wrapped).expect("parses").is_some());
        assert!(parse_answer(&good().to_string()).expect("parses").is_some());
        for bad in [
            "",
            "no json",
            "{not json}",
            "[1]",
            "{\"skill\": 3}",
            "{\"title\": \"t\"}",
            "}{",
        ] {
            assert!(parse_answer(bad).is_err(), "{bad:?}");
        }
        let long = format!("{{\"x\": {}", "[".repeat(10_000));
        let why = parse_answer(&long).expect_err("refused");
        assert!(why.chars().count() <= REASON_MAX_CHARS, "{}", why.len());
    }

    #[test]
    fn keys_paths_and_ids() {
        assert_eq!(
            spent_key(SourceKind::Attempt, "r-a01"),
            "skills:abstracted:attempt:r-a01"
        );
        assert_eq!(
            spent_key(SourceKind::Job, "job_1"),
            "skills:abstracted:job:job_1"
        );
        assert!(spent_key(SourceKind::Job, "x").starts_with(&spent_prefix(SourceKind::Job)));
        assert_eq!(skill_body_path("skill_ab"), "improve/skills/skill_ab.md");
        assert_eq!(SourceKind::parse("job"), Some(SourceKind::Job));
        assert_eq!(SourceKind::parse("Job"), None);
        let e = crate::ids::CountingEntropy::default();
        let (a, b) = (new_skill_id(&e), new_skill_id(&e));
        assert_ne!(a, b);
        assert_eq!(a.len(), "skill_".len() + 12);
        assert!(a.starts_with("skill_"));
    }

    #[test]
    fn the_prompt_and_task_are_bounded() {
        let huge = "é".repeat(SOURCE_PART_MAX_BYTES);
        let (system, user) = abstract_prompt(&SourceBrief {
            kind: SourceKind::Job,
            id: "job_1",
            namespace: "capsid",
            title: Some("Fix the flaky test"),
            summary: Some("done"),
            text: Some(&huge),
        });
        assert!(system.contains("\"skill\": null"));
        assert!(user.contains("Fix the flaky test") && user.contains("Job body"));
        assert!(user.len() < SOURCE_PART_MAX_BYTES + 1_000, "{}", user.len());
        let sources: Vec<TaskSource> = (0..20)
            .map(|i| TaskSource {
                kind: SourceKind::Attempt,
                id: format!("r-a{i:02}"),
                label: "line\nforged: head".into(),
            })
            .collect();
        let body = abstract_task_body("capsid", "2026-12-01", &sources);
        assert_eq!(body.matches("\nsource: ").count(), SOURCES_PER_TASK);
        assert!(
            !body.contains("\nforged"),
            "a label cannot forge a head line"
        );
        assert!(body.contains("propose_skill"));
        assert_eq!(
            abstract_task_path("2026-12-01"),
            "improve/abstract-2026-12-01.md"
        );
    }
}
