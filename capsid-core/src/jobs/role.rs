//! Roles (the sister design's Phase 2): what kind of work a job is, as data. A job names its
//! role at post, inside its signed envelope ([`crate::jobs::signature::seal_job`]); the role
//! decides what the run may ship (a scout and a senior ship no code: the gateway refuses their
//! pushes), what "nothing shipped" means in the verdict (done for a role that ships nothing,
//! failed for one that ships code or a merge), the instructions the driver delivers to the agent
//! as a skill its CLI loads, and the cap a job of that role gets when it names none.
//!
//! A job without a role asks for a change: it is a junior's job in all but name, so a run that
//! ships nothing fails it. Only a job that says it is a scout is one.

use crate::drive::ledger::Usd;

/// What a role's run may ship, which decides what "nothing shipped" means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// What the role ships, in a sentence's words.
    pub fn describe(self) -> &'static str {
        match self {
            Ships::Nothing => "no code",
            Ships::Spec => "a spec document on its branch",
            Ships::Code => "a branch and a pull request",
            Ships::Merge => "a merge of a reviewed pull request",
        }
    }
}

/// One role: its name, what it ships, its instructions and its default cap.
#[derive(Clone, Debug, PartialEq)]
pub struct Role {
    /// The role's name (`scout`, `planner`, ...), as jobs name it.
    pub name: &'static str,
    /// One line: when to use the skill (the skill's `description`).
    pub description: &'static str,
    /// What a run of this role may ship.
    pub ships: Ships,
    /// The instructions the agent reads (the skill's body, Markdown).
    pub instructions: &'static str,
    /// The cap a job of this role gets when it names none, in micro-dollars.
    pub max_cost_micros: u64,
    /// How many jobs one job of this role may dispatch, unless the namespace's
    /// `dispatch_limits` setting says otherwise (a scout dispatches one planner; a deploy
    /// dispatches nothing).
    pub dispatches: i64,
}

impl Role {
    /// The cap a job of this role gets when it names none.
    pub fn default_cap(&self) -> Usd {
        Usd::from_micros(self.max_cost_micros)
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
        name: "scout",
        description: "Capsid's scout role: look for new work against the watermark; a quiet run changes nothing",
        ships: Ships::Nothing,
        instructions: SCOUT,
        dispatches: 1,
        max_cost_micros: 500_000,
    },
    Role {
        name: "planner",
        description: "Capsid's planner role: turn a finding into a committed spec and dispatch a junior",
        ships: Ships::Spec,
        instructions: PLANNER,
        dispatches: 3,
        max_cost_micros: 2_000_000,
    },
    Role {
        name: "junior",
        description: "Capsid's junior role: build the change with tests and push it for review",
        ships: Ships::Code,
        instructions: JUNIOR,
        dispatches: 3,
        max_cost_micros: 10_000_000,
    },
    Role {
        name: "senior",
        description: "Capsid's senior role: review another agent's pull request without changing it",
        ships: Ships::Nothing,
        instructions: SENIOR,
        dispatches: 1,
        max_cost_micros: 2_000_000,
    },
    Role {
        name: "deploy",
        description: "Capsid's deploy role: merge a reviewed pull request through the gate and ship it",
        ships: Ships::Merge,
        instructions: DEPLOY,
        dispatches: 0,
        max_cost_micros: 1_000_000,
    },
];

/// The longest role name a job may carry.
pub const ROLE_NAME_MAX: usize = 32;

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

/// The role a stored job names (`None`: no role, or a name this build does not know, which
/// the claim refuses before a driver sees it).
pub fn of_job(role: Option<&str>) -> Option<&'static Role> {
    role.and_then(|r| parse("role", r).ok())
}

/// What "nothing shipped" means for a job of `role` (`None`: no role, a change is asked for).
pub fn ships_nothing_by_design(role: Option<&Role>) -> bool {
    role.is_some_and(|r| r.ships == Ships::Nothing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_roles_parse_and_unknown_names_are_refused_naming_the_field() {
        for r in &BUILT_IN {
            assert_eq!(parse("role", r.name).unwrap().name, r.name);
            assert!(r.name.len() <= ROLE_NAME_MAX);
        }
        assert_eq!(parse("role", " scout ").unwrap().name, "scout");
        let e = parse("role", "Scout").unwrap_err();
        assert!(
            e.starts_with("role: \"Scout\" is not a role")
                && e.contains("scout, planner, junior, senior, deploy"),
            "{e}"
        );
        assert!(parse("role", "").is_err());
        assert!(of_job(Some("wizard")).is_none());
        assert_eq!(of_job(Some("senior")).unwrap().ships, Ships::Nothing);
        assert!(of_job(None).is_none());
    }

    #[test]
    fn only_scouts_and_seniors_ship_nothing_by_design() {
        let nothing: Vec<&str> = BUILT_IN
            .iter()
            .filter(|r| ships_nothing_by_design(Some(r)))
            .map(|r| r.name)
            .collect();
        assert_eq!(nothing, ["scout", "senior"]);
        assert!(!ships_nothing_by_design(None), "no role asks for a change");
    }

    #[test]
    fn the_skill_names_the_role_and_carries_its_instructions() {
        let scout = parse("role", "scout").unwrap();
        let md = scout.skill_md();
        assert!(
            md.starts_with("---\nname: capsid-scout\ndescription: Capsid's scout role"),
            "{md}"
        );
        assert!(
            md.contains("it ships no code") && md.contains("watermark"),
            "{md}"
        );
        assert!(scout.preamble().contains("capsid-scout"));
        assert_eq!(scout.default_cap().micros(), 500_000);
        assert_eq!(
            parse("role", "junior").unwrap().default_cap().micros(),
            10_000_000
        );
    }
}
