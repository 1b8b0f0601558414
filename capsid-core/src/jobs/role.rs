//! Roles (the sister design's Phase 2): what kind of work a job is, as data. A job names its
//! role at post, inside its signed envelope ([`crate::jobs::signature::seal_job`]); the role
//! decides what the run may ship (a scout and a senior ship no code: the gateway refuses their
//! pushes), what "nothing shipped" means in the verdict (done for a role that ships nothing,
//! failed for one that ships code or a merge), the instructions the driver delivers to the agent
//! as a skill its CLI loads, and the cap a job of that role gets when it names none.
//!
//! A job without a role asks for a change: it is a junior's job in all but name, so a run that
//! ships nothing fails it. Only a job that says it is a scout is one.
//!
//! An owner defines more roles, or sets a built-in role's model and cap, in signed documents of
//! the `capsid` namespace, `policy/roles/<namespace>/<name>.md` (the autonomy policies'
//! envelope: unsigned or edited after signing defines nothing), read by [`parse_role_doc`]:
//!
//! ```text
//! # Role: docs-writer
//! - version: 1
//! - ships: code            (nothing, spec, code or merge)
//! - reviews: false         (true: its run may record review verdicts; only a role that ships nothing)
//! - model: claude-haiku-4-5 (optional: the model its runs ask for)
//! - max_cost_usd: 1.50     (optional: the cap a job of it gets when it names none; default 2.00)
//! - dispatches: 1          (optional: how many jobs one of its jobs may post; default 0)
//! - description: Writes and fixes the project's documentation.
//!
//! ## Instructions
//! The skill's body, Markdown, to the end of the document.
//! ```
//!
//! A document named after a built-in role sets only its `model` and `max_cost_usd` (and adds
//! its `## Instructions` after the built-in's): what a built-in role ships and may do is fixed.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::drive::ledger::Usd;

/// What a role's run may ship, which decides what "nothing shipped" means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ships {
    /// No code: a clean tree with no commit is a complete run, and every push is refused.
    Nothing,
    /// A spec document, committed on the job's branch.
    Spec,
    /// Code on the job's branch, in a pull request.
    Code,
    /// A merge of another job's reviewed pull request.
    Merge,
}

impl Ships {
    /// Whether a run of the role writes in the repository's tree (a spec or code); a role that
    /// ships nothing or merges another job's pull request leases no paths of its own.
    pub fn writes(self) -> bool {
        matches!(self, Ships::Spec | Ships::Code)
    }

    /// What the role ships, in a sentence's words.
    pub fn describe(self) -> &'static str {
        match self {
            Ships::Nothing => "no code",
            Ships::Spec => "a spec document on its branch",
            Ships::Code => "a branch and a pull request",
            Ships::Merge => "a merge of a reviewed pull request",
        }
    }

    /// The value `text` names in a role document, or why not.
    fn parse(text: &str) -> Result<Ships, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "nothing" => Ok(Ships::Nothing),
            "spec" => Ok(Ships::Spec),
            "code" => Ok(Ships::Code),
            "merge" => Ok(Ships::Merge),
            other => Err(format!(
                "{other:?} is not what a role ships; use nothing, spec, code or merge"
            )),
        }
    }
}

/// One role: its name, what it ships and may do, its instructions, model and default cap.
///
/// The same value travels to the driver on `jobs get` (`role_definition`), so the driver
/// writes the skill and judges the run from the server's definition, never from a name alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Role {
    /// The role's name (`scout`, `planner`, ...), as jobs name it.
    pub name: Cow<'static, str>,
    /// One line: when to use the skill (the skill's `description`).
    pub description: Cow<'static, str>,
    /// What a run of this role may ship.
    pub ships: Ships,
    /// Whether its run may record review verdicts (`jobs` `approve` / `reject`).
    pub reviews: bool,
    /// The instructions the agent reads (the skill's body, Markdown).
    pub instructions: Cow<'static, str>,
    /// The model its runs ask the runtime for (`None`: the driver's own choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Cow<'static, str>>,
    /// The cap a job of this role gets when it names none, in micro-dollars.
    pub max_cost_micros: u64,
    /// How many jobs one job of this role may dispatch, unless the namespace's
    /// `dispatch_limits` setting says otherwise (a scout dispatches one planner; a deploy
    /// dispatches nothing).
    pub dispatches: i64,
    /// Whether the role is one of [`BUILT_IN`] (an owner's document may only tune it).
    pub built_in: bool,
}

impl Role {
    /// The cap a job of this role gets when it names none.
    pub fn default_cap(&self) -> Usd {
        Usd::from_micros(self.max_cost_micros)
    }

    /// Whether its run keeps a scout's watermark (a namespace document under `scouts/`).
    pub fn keeps_watermark(&self) -> bool {
        self.built_in && self.name == "scout"
    }

    /// Whether its run may merge (through the gate, which still wants another agent's
    /// standing approval of the head).
    pub fn merges(&self) -> bool {
        self.ships == Ships::Merge
    }

    /// The skill's folder name in the clone (`capsid-<role>`), kept apart from a project's
    /// own skills.
    pub fn skill_name(&self) -> String {
        format!("capsid-{}", self.name)
    }

    /// The skill file the driver writes into the job's clone (`SKILL.md`: front matter with
    /// the skill's name and description, then the role's instructions).
    pub fn skill_md(&self) -> String {
        format!(
            "---\nname: {}\ndescription: {}\n---\n\n# The {} role\n\nThis job's role is **{}**: it ships {}.\n\n{}",
            self.skill_name(),
            self.description,
            self.name,
            self.name,
            self.ships.describe(),
            self.instructions
        )
    }

    /// The lines the driver puts before the job's body, naming the role and its skill.
    pub fn preamble(&self) -> String {
        format!(
            "Your role in this job is {} (it ships {}). Read the skill {} before you start, and follow it.\n\n",
            self.name,
            self.ships.describe(),
            self.skill_name()
        )
    }
}

const SCOUT: &str = "\
You look for work; you do not do it.

1. Read the namespace's watermark document (the job's body names it) with Capsid's `read` tool: it holds what earlier scouts already reported (it may not exist yet).
2. Look for what the job's brief asks about, and compare it with the watermark.
3. Nothing new: say so in one sentence and stop. That is a complete run; do not post a job.
4. Something new: post one planner job with `jobs` (action `post`, `parent` this job, `role` `planner`) describing what you found, then update the watermark document with Capsid's `write` tool (`confirm: true` when it exists).
5. Never edit, commit or push code: a scout ships nothing, and the gateway refuses a scout's push.
";

const PLANNER: &str = "\
You turn a finding into a spec a junior can build.

1. Read the finding in the job's body and the code it concerns.
2. Write the spec as one Markdown file under `specs/` (what to change, why, how to test it), commit it and push it to the job's branch.
3. Post one junior job with `jobs` (action `post`, `parent` this job, `role` `junior`) whose body points at the spec.
4. Do not change code: the junior does.
";

const JUNIOR: &str = "\
You build a change and open it for review.

1. Read the job's body (and the spec it points at, if any).
2. Make the change with tests, run the project's tests until they pass, commit, and push to the job's branch.
3. Do not merge and do not push to a protected branch: a senior reviews your work and a deploy job merges it.
";

const SENIOR: &str = "\
You review another agent's pull request; you do not change it.

1. Read the pull request the job's body names: its diff, its tests and what it claims.
2. Run the tests yourself in your clone.
3. Record your verdict (approve, or request changes with the lines concerned) as the job's result.
4. Never edit, commit or push: a senior ships nothing, and the gateway refuses a senior's push.
";

const DEPLOY: &str = "\
You merge a reviewed pull request and ship it.

1. Merge only a pull request with a standing approval from a different agent for its current head; the gate refuses anything else.
2. Run the namespace's deploy command after the merge, and report what it printed.
3. Do not change code.
";

/// The built-in roles.
pub const BUILT_IN: [Role; 5] = [
    Role {
        name: Cow::Borrowed("scout"),
        description: Cow::Borrowed(
            "Capsid's scout role: look for new work against the watermark; a quiet run changes nothing",
        ),
        ships: Ships::Nothing,
        instructions: Cow::Borrowed(SCOUT),
        reviews: false,
        model: None,
        built_in: true,
        dispatches: 1,
        max_cost_micros: 500_000,
    },
    Role {
        name: Cow::Borrowed("planner"),
        description: Cow::Borrowed(
            "Capsid's planner role: turn a finding into a committed spec and dispatch a junior",
        ),
        ships: Ships::Spec,
        instructions: Cow::Borrowed(PLANNER),
        reviews: false,
        model: None,
        built_in: true,
        dispatches: 3,
        max_cost_micros: 2_000_000,
    },
    Role {
        name: Cow::Borrowed("junior"),
        description: Cow::Borrowed(
            "Capsid's junior role: build the change with tests and push it for review",
        ),
        ships: Ships::Code,
        instructions: Cow::Borrowed(JUNIOR),
        reviews: false,
        model: None,
        built_in: true,
        dispatches: 3,
        max_cost_micros: 10_000_000,
    },
    Role {
        name: Cow::Borrowed("senior"),
        description: Cow::Borrowed(
            "Capsid's senior role: review another agent's pull request without changing it",
        ),
        ships: Ships::Nothing,
        instructions: Cow::Borrowed(SENIOR),
        reviews: true,
        model: None,
        built_in: true,
        dispatches: 1,
        max_cost_micros: 2_000_000,
    },
    Role {
        name: Cow::Borrowed("deploy"),
        description: Cow::Borrowed(
            "Capsid's deploy role: merge a reviewed pull request through the gate and ship it",
        ),
        ships: Ships::Merge,
        instructions: Cow::Borrowed(DEPLOY),
        reviews: false,
        model: None,
        built_in: true,
        dispatches: 0,
        max_cost_micros: 1_000_000,
    },
];

/// The longest role name a job may carry.
pub const ROLE_NAME_MAX: usize = 32;

/// Where an owner's role documents live in the `capsid` namespace.
pub const ROLE_DOC_DIR: &str = "policy/roles/";
/// The most role documents one namespace's book reads.
pub const ROLE_DOCS_MAX: usize = 50;
/// The longest instructions an owner's role may carry.
const INSTRUCTIONS_MAX: usize = 20_000;
/// The longest description.
const DESCRIPTION_MAX: usize = 300;
/// The cap an owner's role gets when its document names none, in micro-dollars.
const OWNER_ROLE_CAP_MICROS: u64 = 2_000_000;
/// The heading that starts an owner's instructions.
const INSTRUCTIONS_HEADING: &str = "## Instructions";

/// The built-in role `text` names (surrounding spaces ignored), or the refusal naming the
/// field and the roles there are.
pub fn parse(field: &str, text: &str) -> Result<&'static Role, String> {
    let t = text.trim();
    BUILT_IN.iter().find(|r| r.name == t).ok_or_else(|| {
        format!(
            "{field}: {t:?} is not a role; use one of {}",
            BUILT_IN.map(|r| r.name).join(", ")
        )
    })
}

/// What "nothing shipped" means for a job of `role` (`None`: no role, a change is asked for).
pub fn ships_nothing_by_design(role: Option<&Role>) -> bool {
    role.is_some_and(|r| r.ships == Ships::Nothing)
}

/// The role document's path for `name` in `namespace`.
pub fn role_doc_path(namespace: &str, name: &str) -> String {
    format!("{ROLE_DOC_DIR}{namespace}/{name}.md")
}

/// Whether `name` may name a role: 1 to [`ROLE_NAME_MAX`] lower-case letters, digits or dashes,
/// starting with a letter.
pub fn valid_role_name(name: &str) -> bool {
    name.len() <= ROLE_NAME_MAX
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// What is wrong with a role document, naming the field (or `path`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleDocError {
    /// `path`, `version`, `ships`, `reviews`, `model`, `max_cost_usd`, `dispatches`,
    /// `description` or `instructions`.
    pub field: &'static str,
    /// What is wrong with it.
    pub why: String,
}

impl std::fmt::Display for RoleDocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.why)
    }
}

fn bad<T>(field: &'static str, why: impl Into<String>) -> Result<T, RoleDocError> {
    Err(RoleDocError {
        field,
        why: why.into(),
    })
}

/// The namespace and role name of the document at `path`
/// (`policy/roles/<namespace>/<name>.md`).
pub fn role_doc_target(path: &str) -> Result<(String, String), RoleDocError> {
    let shape = "a role document is capsid/policy/roles/<namespace>/<name>.md";
    let Some((ns, name)) = path
        .strip_prefix(ROLE_DOC_DIR)
        .and_then(|r| r.strip_suffix(".md"))
        .and_then(|r| r.split_once('/'))
    else {
        return bad("path", format!("{path}: {shape}"));
    };
    if let Some(problem) = crate::paths::namespace_problem(ns) {
        return bad("path", format!("{path}: {problem}"));
    }
    if !valid_role_name(name) {
        return bad(
            "path",
            format!(
                "{path}: a role's name is 1 to {ROLE_NAME_MAX} lower-case letters, digits or dashes, starting with a letter"
            ),
        );
    }
    Ok((ns.to_owned(), name.to_owned()))
}

/// A model name as a role document may give it: 1 to 100 letters, digits and `.-_:/@`.
fn valid_model(m: &str) -> bool {
    (1..=100).contains(&m.len())
        && m.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:/@".contains(&b))
}

/// The role the signed document at `path` defines (an owner's role), or the built-in it tunes.
pub fn parse_role_doc(path: &str, body: &str) -> Result<Role, RoleDocError> {
    use crate::autonomy::policy::field;
    let (_, name) = role_doc_target(path)?;
    let (fields, instructions) = match body.find(INSTRUCTIONS_HEADING) {
        Some(at) => (
            &body[..at],
            body[at + INSTRUCTIONS_HEADING.len()..].trim().to_owned(),
        ),
        None => (body, String::new()),
    };
    if field(fields, "version").is_none_or(str::is_empty) {
        return bad("version", "missing (a `- version:` line)");
    }
    let model = match field(fields, "model").filter(|m| !m.is_empty()) {
        None => None,
        Some(m) if valid_model(m) => Some(Cow::Owned(m.to_owned())),
        Some(m) => {
            return bad(
                "model",
                format!("{m:?} is not a model name (1 to 100 letters, digits and .-_:/@)"),
            );
        }
    };
    let cap = match field(fields, "max_cost_usd").filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(
            super::budget::parse_job_cap(c.parse::<f64>().map_err(|_| RoleDocError {
                field: "max_cost_usd",
                why: format!("{c:?} is not a number of dollars"),
            })?)
            .map_err(|why| RoleDocError {
                field: "max_cost_usd",
                why: why.to_string(),
            })?
            .micros(),
        ),
    };
    if instructions.chars().count() > INSTRUCTIONS_MAX {
        return bad(
            "instructions",
            format!("longer than {INSTRUCTIONS_MAX} characters"),
        );
    }
    if let Some(built_in) = BUILT_IN.iter().find(|r| r.name == name) {
        for fixed in ["ships", "reviews", "dispatches", "description"] {
            if field(fields, fixed).is_some() {
                return bad(
                    fixed,
                    format!(
                        "{name} is a built-in role: its document sets only model, max_cost_usd and added instructions (its dispatch count is the namespace's dispatch_limits setting)"
                    ),
                );
            }
        }
        let mut role = built_in.clone();
        role.model = model;
        role.max_cost_micros = cap.unwrap_or(role.max_cost_micros);
        if !instructions.is_empty() {
            role.instructions = Cow::Owned(format!(
                "{}\nThis namespace adds:\n\n{instructions}\n",
                role.instructions
            ));
        }
        return Ok(role);
    }
    let Some(ships) = field(fields, "ships") else {
        return bad(
            "ships",
            "missing (a `- ships:` line: nothing, spec, code or merge)",
        );
    };
    let ships = Ships::parse(ships).map_err(|why| RoleDocError {
        field: "ships",
        why,
    })?;
    let reviews = match field(fields, "reviews")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("false") => false,
        Some("true") => true,
        Some(v) => return bad("reviews", format!("'{v}' is neither true nor false")),
    };
    if reviews && ships != Ships::Nothing {
        return bad(
            "reviews",
            "only a role that ships nothing may record review verdicts (a reviewer never reviews its own work)",
        );
    }
    let dispatches = match field(fields, "dispatches").filter(|d| !d.is_empty()) {
        None => 0,
        Some(d) => match d.parse::<i64>() {
            Ok(n) if (0..=super::dispatch::DISPATCH_LIMIT_MAX).contains(&n) => n,
            _ => {
                return bad(
                    "dispatches",
                    format!(
                        "{d:?} is not a count from 0 to {}",
                        super::dispatch::DISPATCH_LIMIT_MAX
                    ),
                );
            }
        },
    };
    let description = field(fields, "description").unwrap_or_default();
    if description.is_empty() || description.chars().count() > DESCRIPTION_MAX {
        return bad(
            "description",
            format!(
                "missing or longer than {DESCRIPTION_MAX} characters (one line: what the role does)"
            ),
        );
    }
    if instructions.is_empty() {
        return bad(
            "instructions",
            format!("missing (a `{INSTRUCTIONS_HEADING}` heading, then what the agent must do)"),
        );
    }
    Ok(Role {
        name: Cow::Owned(name),
        description: Cow::Owned(description.to_owned()),
        ships,
        reviews,
        instructions: Cow::Owned(format!("{instructions}\n")),
        model,
        max_cost_micros: cap.unwrap_or(OWNER_ROLE_CAP_MICROS),
        dispatches,
        built_in: false,
    })
}

/// A namespace's roles: the built-in ones (as its signed documents tune them) and its owner's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoleBook {
    /// The roles the namespace's signed documents define or tune, by name.
    defined: Vec<Role>,
    /// Role documents that define nothing (unsigned, edited, unparseable), with why.
    pub inert: Vec<String>,
}

impl RoleBook {
    /// The book of `defined` roles (each parsed from a signed document) and the documents
    /// that define nothing, with why.
    pub fn new(defined: Vec<Role>, inert: Vec<String>) -> RoleBook {
        RoleBook { defined, inert }
    }

    /// The role `name` names here, when there is one.
    pub fn get(&self, name: &str) -> Option<Role> {
        let name = name.trim();
        self.defined
            .iter()
            .find(|r| r.name == name)
            .or_else(|| BUILT_IN.iter().find(|r| r.name == name))
            .cloned()
    }

    /// Every role there is: the built-in ones (as the namespace's documents tune them), then
    /// the owner's.
    pub fn all(&self) -> Vec<Role> {
        let mut all: Vec<Role> = BUILT_IN
            .iter()
            .map(|b| self.get(&b.name).unwrap_or_else(|| b.clone()))
            .collect();
        all.extend(self.defined.iter().filter(|r| !r.built_in).cloned());
        all
    }

    /// The names of the roles there are: the built-in ones, then the owner's.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = BUILT_IN.iter().map(|r| &*r.name).collect();
        names.extend(
            self.defined
                .iter()
                .filter(|r| !r.built_in)
                .map(|r| &*r.name),
        );
        names
    }

    /// The role `text` names, or the refusal naming `field`, the roles there are and why a
    /// document of that name defines nothing.
    pub fn resolve(&self, field: &str, text: &str) -> Result<Role, String> {
        let t = text.trim();
        self.get(t).ok_or_else(|| {
            let why = self
                .inert
                .iter()
                .find(|n| n.starts_with(ROLE_DOC_DIR) && n.contains(&format!("/{t}.md")))
                .map_or(String::new(), |n| format!(" ({n})"));
            self.refusal(field, t, &why)
        })
    }

    /// The refusal of `name` in `field`, with `why` (text in brackets, or empty) and the roles
    /// there are.
    pub fn refusal(&self, field: &str, name: &str, why: &str) -> String {
        format!(
            "{field}: {name:?} is not a role{why}; use one of {}",
            self.names().join(", ")
        )
    }

    /// The role a stored job names (`None`: no role, or a name nothing defines now).
    pub fn of_job(&self, role: Option<&str>) -> Option<Role> {
        role.and_then(|r| self.get(r))
    }
}

#[cfg(test)]
mod tests;
