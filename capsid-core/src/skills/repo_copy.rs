//! A skill's reviewable repository copy (reference 9: "the repo copy is the reviewable source;
//! the stored copy is what the machine acts on"): where it lives in a namespace's repository
//! (`skills/<id>/SKILL.md`), its text (YAML front matter holding the declared fields, then the
//! instruction body), the parse of a copy a person edited (every refusal naming the field and
//! the rule, never a panic), when a copy says something other than the stored skill, how far a
//! caller may read one back, and the settings key that spends one read-back content so it
//! becomes a candidate once.

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

use super::abstraction::{BODY_MAX_BYTES, SkillProposal, validate_proposal};
use crate::crypto::sha256_hex;
use crate::ports::SkillRow;
use crate::scope::Scopes;

/// The folder of the repository the copies live in, one folder per skill.
pub const REPO_SKILLS_DIR: &str = "skills";
/// The file name of a copy inside its skill's folder.
pub const SKILL_FILE: &str = "SKILL.md";
/// A copy larger than this (the body's bound and room for the front matter) is refused
/// unread.
pub const SKILL_FILE_MAX_BYTES: usize = BODY_MAX_BYTES + 16 * 1024;
/// At most this many copies are read back in one call.
pub const SKILL_FILES_MAX: usize = 100;
/// The front matter's keys, in the order a copy is written: the skill it mirrors and the
/// version exported (provenance), then the declared fields.
pub const FRONT_MATTER_KEYS: [&str; 7] = [
    "id",
    "version",
    "title",
    "trigger_condition",
    "namespaces",
    "termination_test",
    "composition_interface",
];

/// `skills/<id>/SKILL.md`.
pub fn skill_file_path(id: &str) -> String {
    format!("{REPO_SKILLS_DIR}/{id}/{SKILL_FILE}")
}

/// The branch the export commits a namespace's copies to: `capsid-skills/<ns>`.
pub fn export_branch(namespace: &str) -> String {
    format!("capsid-skills/{namespace}")
}

/// The settings key that marks `skill`'s content (from any copy of `namespace`) read back:
/// `skills:repo-copy:<ns>:<digest>`, the digest over the declared fields and the body, so the
/// same edit is a candidate once however often it is read.
pub fn read_back_key(namespace: &str, skill: &SkillProposal) -> String {
    let canonical = render_skill_md(&SkillFile {
        id: None,
        version: None,
        skill: skill.clone(),
    });
    let digest = sha256_hex(&canonical);
    format!("skills:repo-copy:{namespace}:{}", &digest[..32])
}

/// One copy: what it mirrors and the skill it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFile {
    /// The skill it mirrors; absent in a copy a person wrote from scratch.
    pub id: Option<String>,
    /// The version exported (provenance only: a copy read back is a new candidate).
    pub version: Option<i64>,
    /// The declared fields and the body.
    pub skill: SkillProposal,
}

/// The skill a stored row, its declared termination test and composition interface and its
/// body document make, in the shape a copy holds.
pub fn stored_skill(
    row: &SkillRow,
    termination_test: Option<&str>,
    composition_interface: Option<&str>,
    body: &str,
) -> SkillProposal {
    let namespaces = row
        .namespaces
        .as_deref()
        .and_then(|n| serde_json::from_str::<Vec<String>>(n).ok());
    SkillProposal {
        title: row.title.clone(),
        trigger_condition: row.trigger_condition.clone().unwrap_or_default(),
        namespaces,
        termination_test: termination_test.map(str::to_owned),
        composition_interface: composition_interface.map(str::to_owned),
        body: body.to_owned(),
    }
}

/// Whether a copy says what the stored skill says: every declared field equal, and the body
/// equal but for trailing line ends (a copy always ends with one; editors add or drop them).
pub fn same_skill(copy: &SkillProposal, stored: &SkillProposal) -> bool {
    let body = |s: &SkillProposal| s.body.trim_end_matches(['\n', '\r']).to_owned();
    copy.title == stored.title
        && copy.trigger_condition == stored.trigger_condition
        && copy.namespaces == stored.namespaces
        && copy.termination_test == stored.termination_test
        && copy.composition_interface == stored.composition_interface
        && body(copy) == body(stored)
}

/// Whether `scopes` may read back a copy whose skill applies in `skill.namespaces`: a candidate
/// is offered wherever its namespaces admit it, so a caller narrowed to some namespaces may
/// not make one that reaches beyond them (no `namespaces`, meaning any, needs `*`). The
/// refusal names the field.
pub fn read_back_reach(scopes: &Scopes, skill: &SkillProposal) -> Result<(), String> {
    let held = scopes.namespaces.describe();
    match &skill.namespaces {
        None if !scopes.reaches_every_namespace() => Err(format!(
            "namespaces: absent means every namespace, beyond this caller's namespaces ({held}); name them"
        )),
        Some(list) => match list.iter().find(|n| !scopes.namespaces.allows(n)) {
            Some(n) => Err(format!(
                "namespaces: {n} is outside this caller's namespaces ({held})"
            )),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

fn scalar(value: Option<&str>) -> String {
    value.map_or_else(|| "null".to_owned(), |v| Value::from(v).to_string())
}

/// The copy's text: `---`, the front matter (each string written as a double-quoted scalar,
/// which is JSON's escaping and YAML's alike, so any text survives), `---`, a blank line, the
/// body ending with one line end.
pub fn render_skill_md(file: &SkillFile) -> String {
    let s = &file.skill;
    let mut out = String::from("---\n");
    if let Some(id) = &file.id {
        out.push_str(&format!("id: {}\n", scalar(Some(id))));
    }
    if let Some(v) = file.version {
        out.push_str(&format!("version: {v}\n"));
    }
    let namespaces = s
        .namespaces
        .as_ref()
        .map_or_else(|| "null".to_owned(), |n| Value::from(n.clone()).to_string());
    out.push_str(&format!(
        "title: {}\ntrigger_condition: {}\nnamespaces: {namespaces}\ntermination_test: {}\ncomposition_interface: {}\n---\n\n",
        scalar(Some(&s.title)),
        scalar(Some(&s.trigger_condition)),
        scalar(s.termination_test.as_deref()),
        scalar(s.composition_interface.as_deref()),
    ));
    out.push_str(s.body.trim_end_matches(['\n', '\r']));
    out.push('\n');
    out
}

fn json_of(key: &str, y: &Yaml) -> Result<Value, String> {
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or_else(|| Value::String(r.clone()), Value::Number),
        Yaml::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| json_of(key, i))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(_) => return Err(format!("{key}: must not be a mapping")),
        Yaml::Alias(_) | Yaml::BadValue => return Err(format!("{key}: unreadable value")),
    })
}

/// Reads a copy: the front matter between a first line `---` and the next `---` line (line
/// ends `\r\n` read as `\n`), one YAML mapping of the known keys; `id` a non-empty string,
/// `version` a whole number, the declared fields as `propose_skill` checks them; the body is
/// everything after, less one blank line. The first broken rule is the answer, naming its
/// field (`front matter` when there is none to read).
pub fn parse_skill_md(text: &str) -> Result<SkillFile, String> {
    if text.len() > SKILL_FILE_MAX_BYTES {
        return Err(format!(
            "file: at most {SKILL_FILE_MAX_BYTES} bytes (got {})",
            text.len()
        ));
    }
    let text = text.replace("\r\n", "\n");
    let Some(rest) = text.strip_prefix("---\n") else {
        return Err("front matter: the file must start with a line `---`".into());
    };
    let (front, body) = if let Some(body) = rest.strip_prefix("---\n") {
        ("", body)
    } else {
        match rest.split_once("\n---\n") {
            Some((front, body)) => (front, body),
            None => match rest.strip_suffix("\n---") {
                Some(front) => (front, ""),
                None => return Err("front matter: no closing line `---`".into()),
            },
        }
    };
    let body = body.strip_prefix('\n').unwrap_or(body);
    let docs =
        YamlLoader::load_from_str(front).map_err(|e| format!("front matter: not YAML ({e})"))?;
    let hash = match docs.as_slice() {
        [Yaml::Hash(h)] => h,
        [] => return Err("title: required, one non-empty line".into()),
        _ => return Err("front matter: must be one mapping of field: value".into()),
    };
    let mut fields = Map::new();
    for (k, v) in hash {
        let Yaml::String(key) = k else {
            return Err("front matter: every key must be a field name".into());
        };
        if !FRONT_MATTER_KEYS.contains(&key.as_str()) {
            return Err(format!(
                "{key}: not a field of a skill (the fields are {})",
                FRONT_MATTER_KEYS.join(", ")
            ));
        }
        fields.insert(key.clone(), json_of(key, v)?);
    }
    let id = match fields.remove("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() && s.len() <= 64 => Some(s.trim().into()),
        Some(_) => return Err("id: the skill's id, a non-empty string of at most 64".into()),
    };
    let version = match fields.remove("version") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_i64()
                .filter(|v| *v >= 1)
                .ok_or("version: a whole number of at least 1")?,
        ),
    };
    fields.insert("body".into(), Value::String(body.to_owned()));
    let skill = validate_proposal(&fields)?;
    Ok(SkillFile { id, version, skill })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill() -> SkillProposal {
        SkillProposal {
            title: "Shrink bundles: drop \"dead\" exports".into(),
            trigger_condition: "bundle size regression\nor a slow page: #1".into(),
            namespaces: Some(vec!["proj".into(), "site".into()]),
            termination_test: Some("bundle_kb drops — é ✓".into()),
            composition_interface: None,
            body: "1. Find dead exports.\n\n---\n2. Remove them: `x: y`.\n".into(),
        }
    }

    fn file() -> SkillFile {
        SkillFile {
            id: Some("skill_0a1b2c3d4e5f".into()),
            version: Some(3),
            skill: skill(),
        }
    }

    #[test]
    fn a_copy_round_trips_through_its_text() {
        let text = render_skill_md(&file());
        assert!(text.starts_with("---\nid: \"skill_0a1b2c3d4e5f\"\nversion: 3\ntitle: "));
        assert!(text.contains("namespaces: [\"proj\",\"site\"]\n"), "{text}");
        assert!(text.contains("composition_interface: null\n---\n\n1. Find"));
        assert_eq!(parse_skill_md(&text), Ok(file()));
        let mut any = file();
        any.skill.namespaces = None;
        any.skill.termination_test = None;
        any.skill.body = "no trailing line end".into();
        let back = parse_skill_md(&render_skill_md(&any)).expect("parses");
        assert_eq!(back.skill.namespaces, None);
        assert_eq!(back.skill.body, "no trailing line end\n");
        assert!(
            same_skill(&back.skill, &any.skill),
            "trailing line ends are not a change"
        );
    }

    #[test]
    fn a_hand_written_copy_reads_plain_yaml_and_crlf() {
        let text = "---\r\ntitle: Retry flaky tests\r\ntrigger_condition: >\r\n  a test that\r\n  fails once\r\nnamespaces:\r\n  - proj\r\n---\r\nRun it twice.\r\n";
        let f = parse_skill_md(text).expect("parses");
        assert_eq!(f.id, None);
        assert_eq!(f.skill.title, "Retry flaky tests");
        assert_eq!(f.skill.trigger_condition, "a test that fails once");
        assert_eq!(f.skill.namespaces, Some(vec!["proj".to_owned()]));
        assert_eq!(f.skill.body, "Run it twice.\n");
    }

    #[test]
    fn a_malformed_copy_names_its_field() {
        let good = render_skill_md(&file());
        let table: Vec<(String, &str)> = vec![
            ("no front matter\n".into(), "front matter"),
            ("---\ntitle: t\n".into(), "front matter"),
            ("---\ntitle: [a\n---\nbody\n".into(), "front matter"),
            ("---\n- a\n- b\n---\nbody\n".into(), "front matter"),
            (good.replace("title: ", "titel: "), "titel"),
            (good.replace("version: 3", "version: three"), "version"),
            (good.replace("version: 3", "version: 0"), "version"),
            (good.replace("id: \"skill_0a1b2c3d4e5f\"", "id: 7"), "id"),
            (
                good.replace("id: \"skill_0a1b2c3d4e5f\"", "id: \" \""),
                "id",
            ),
            (
                good.replace(
                    "id: \"skill_0a1b2c3d4e5f\"",
                    &format!("id: {}", "s".repeat(65)),
                ),
                "id",
            ),
            (
                good.replace(
                    "title: \"Shrink bundles: drop \\\"dead\\\" exports\"",
                    "title: \"\"",
                ),
                "title",
            ),
            (
                good.replace(
                    "trigger_condition: \"bundle size regression\\nor a slow page: #1\"",
                    "trigger_condition: {a: b}",
                ),
                "trigger_condition",
            ),
            (
                good.replace("namespaces: [\"proj\",\"site\"]", "namespaces: [\"a/b\"]"),
                "namespaces",
            ),
            (
                format!("{}\n", good.split("\n---\n").next().unwrap_or_default()) + "---\n\n  \n",
                "body",
            ),
            ("---\n---\nbody only\n".into(), "title"),
            (
                format!("---\ntitle: t\n---\n{}", "b".repeat(SKILL_FILE_MAX_BYTES)),
                "file",
            ),
        ];
        for (text, field) in table {
            let why = parse_skill_md(&text).expect_err("refused");
            assert!(
                why.starts_with(&format!("{field}:")),
                "{field} wanted, got {why:?} for {text:?}"
            );
        }
    }

    #[test]
    fn the_bounds_themselves_are_allowed() {
        // A YAML comment pads the front matter so the file is exactly at its bound, the body
        // at its own.
        let head = "---\nid: ";
        let id = "s".repeat(64);
        let rest = "\ntitle: t\ntrigger_condition: x\n# ";
        let tail = "\n---\n";
        let body = "b".repeat(BODY_MAX_BYTES);
        let pad =
            SKILL_FILE_MAX_BYTES - head.len() - id.len() - rest.len() - tail.len() - body.len();
        let text = format!("{head}{id}{rest}{}{tail}{body}", "p".repeat(pad));
        assert_eq!(text.len(), SKILL_FILE_MAX_BYTES);
        let f = parse_skill_md(&text).expect("at the bounds");
        assert_eq!(f.id.as_deref(), Some(id.as_str()));
        assert_eq!(f.skill.body.len(), BODY_MAX_BYTES);
    }

    #[test]
    fn a_copy_differs_on_any_declared_field_or_the_body() {
        let base = skill();
        assert!(same_skill(&base, &base));
        let changes: [fn(&mut SkillProposal); 6] = [
            |s| s.title.push('!'),
            |s| s.trigger_condition.push('!'),
            |s| s.namespaces = None,
            |s| s.termination_test = None,
            |s| s.composition_interface = Some("x".into()),
            |s| s.body.insert(0, '#'),
        ];
        for change in changes {
            let mut other = base.clone();
            change(&mut other);
            assert!(!same_skill(&other, &base), "{other:?}");
        }
    }

    #[test]
    fn a_narrowed_caller_reads_back_only_within_its_namespaces() {
        let scopes = |ns: &[&str]| {
            let namespaces = if ns == ["*"] {
                crate::scope::Axis::All
            } else {
                crate::scope::Axis::Only(ns.iter().map(|n| (*n).to_owned()).collect())
            };
            Scopes::mint_defaults(namespaces)
        };
        let mut s = skill();
        assert_eq!(read_back_reach(&scopes(&["proj", "site"]), &s), Ok(()));
        assert_eq!(read_back_reach(&scopes(&["*"]), &s), Ok(()));
        let why = read_back_reach(&scopes(&["proj"]), &s).expect_err("site is not held");
        assert!(why.starts_with("namespaces: site is outside"), "{why}");
        s.namespaces = None;
        assert_eq!(read_back_reach(&scopes(&["*"]), &s), Ok(()));
        let why = read_back_reach(&scopes(&["proj", "site"]), &s).expect_err("any is not held");
        assert!(
            why.starts_with("namespaces: absent means every namespace"),
            "{why}"
        );
    }

    #[test]
    fn paths_branches_and_keys() {
        assert_eq!(skill_file_path("skill_ab"), "skills/skill_ab/SKILL.md");
        assert_eq!(export_branch("proj"), "capsid-skills/proj");
        let k = read_back_key("proj", &skill());
        assert!(k.starts_with("skills:repo-copy:proj:"), "{k}");
        assert_eq!(k.len(), "skills:repo-copy:proj:".len() + 32);
        let mut other = skill();
        other.body.push('x');
        assert_ne!(read_back_key("proj", &other), k);
        assert_ne!(read_back_key("site", &skill()), k);
    }

    #[test]
    fn the_stored_skill_reads_the_rows_namespaces() {
        let row = SkillRow {
            id: "skill_1".into(),
            source_namespace: "proj".into(),
            title: "T".into(),
            body_ref: "improve/skills/skill_1.md".into(),
            version: 2,
            status: "live".into(),
            wins: 0,
            losses: 0,
            trigger_condition: Some("flaky".into()),
            namespaces: Some("[\"proj\"]".into()),
        };
        let s = stored_skill(&row, Some("done"), None, "Body");
        assert_eq!(s.namespaces, Some(vec!["proj".to_owned()]));
        assert_eq!(s.termination_test.as_deref(), Some("done"));
        assert_eq!(s.body, "Body");
    }
}
