//! The two workflows the loop dispatches in a repository (reference 8.3 and 9): their file
//! names, the inputs each dispatch sends, the templates Capsid ships (embedded from
//! `templates/workflows/`), and what counts as drift from them.
//!
//! This is the one place the names and inputs live: the loop's dispatches build their inputs
//! here ([`ScoreDispatch`], [`ProbeDispatch`]), and the tests hold the templates to the same
//! lists. A template is Capsid's text but for one job the repository owns (the score
//! workflow's `build`, the probe workflow's `probe`: what differs between repositories),
//! which stands between [`OWN_BEGIN`] and [`OWN_END`] and is neither compared nor rewritten.
//! Everything else must be byte for byte what ships, so the scorer is the same in every
//! roster repository.

use std::collections::BTreeMap;

/// Where a repository keeps its workflows.
pub const WORKFLOWS_DIR: &str = ".github/workflows";
/// The line opening the job a repository owns.
pub const OWN_BEGIN: &str =
    "  # >>> capsid: this repository's own job (kept by `capsid improve workflows`, not compared)";
/// The line closing it.
pub const OWN_END: &str = "  # <<< capsid: end of this repository's own job";

/// The scorer's file name (the name `ci_dispatch` also refuses).
pub const SCORE_WORKFLOW: &str = "improve-score.yml";
/// The probe workflow's file name.
pub const PROBE_WORKFLOW: &str = "improve-probe.yml";

/// The inputs of a score dispatch, in the template's order.
pub const SCORE_INPUTS: [&str; 4] = ["namespace", "run_id", "attempt_id", "head_sha"];
/// The inputs of a probe dispatch, in the template's order.
pub const PROBE_INPUTS: [&str; 6] = [
    "namespace",
    "skill",
    "version",
    "probe_set_version",
    "edit",
    "body_ref",
];

/// A workflow Capsid ships.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workflow {
    /// `improve-score.yml`: an attempt's build, then its score against the hidden suite.
    Score,
    /// `improve-probe.yml`: one skill's probe set run with and without it.
    Probe,
}

impl Workflow {
    /// Every workflow, in the order the command writes them.
    pub const ALL: [Workflow; 2] = [Workflow::Score, Workflow::Probe];

    /// The file name the server dispatches.
    pub const fn file_name(self) -> &'static str {
        match self {
            Workflow::Score => SCORE_WORKFLOW,
            Workflow::Probe => PROBE_WORKFLOW,
        }
    }

    /// Its path in a repository.
    pub fn path(self) -> String {
        format!("{WORKFLOWS_DIR}/{}", self.file_name())
    }

    /// The inputs every dispatch of it sends (and nothing else).
    pub const fn inputs(self) -> &'static [&'static str] {
        match self {
            Workflow::Score => &SCORE_INPUTS,
            Workflow::Probe => &PROBE_INPUTS,
        }
    }

    /// The job the repository owns.
    pub const fn own_job(self) -> &'static str {
        match self {
            Workflow::Score => "build",
            Workflow::Probe => "probe",
        }
    }

    /// The template as it ships.
    pub const fn template(self) -> &'static str {
        match self {
            Workflow::Score => include_str!("../../../templates/workflows/improve-score.yml"),
            Workflow::Probe => include_str!("../../../templates/workflows/improve-probe.yml"),
        }
    }
}

fn named(names: &[&str], values: Vec<String>) -> BTreeMap<String, String> {
    names.iter().map(|n| (*n).to_owned()).zip(values).collect()
}

/// What a score dispatch tells the scorer.
#[derive(Clone, Copy, Debug)]
pub struct ScoreDispatch<'a> {
    /// The namespace (the report's and the key's).
    pub namespace: &'a str,
    /// The run.
    pub run_id: &'a str,
    /// The attempt.
    pub attempt_id: &'a str,
    /// The attempt's commit.
    pub head_sha: &'a str,
}

impl ScoreDispatch<'_> {
    /// The dispatch's inputs, named by [`SCORE_INPUTS`].
    pub fn inputs(&self) -> BTreeMap<String, String> {
        named(
            &SCORE_INPUTS,
            vec![
                self.namespace.to_owned(),
                self.run_id.to_owned(),
                self.attempt_id.to_owned(),
                self.head_sha.to_owned(),
            ],
        )
    }
}

/// What a probe dispatch tells the probe workflow.
#[derive(Clone, Copy, Debug)]
pub struct ProbeDispatch<'a> {
    /// The namespace whose probe set runs.
    pub namespace: &'a str,
    /// The skill.
    pub skill: &'a str,
    /// Its version.
    pub version: i64,
    /// The probe set's version.
    pub probe_set_version: &'a str,
    /// Whether the body is a pending edit.
    pub edit: bool,
    /// `<namespace>/<path>` of the body.
    pub body_ref: &'a str,
}

impl ProbeDispatch<'_> {
    /// The dispatch's inputs, named by [`PROBE_INPUTS`] (workflow inputs are strings).
    pub fn inputs(&self) -> BTreeMap<String, String> {
        named(
            &PROBE_INPUTS,
            vec![
                self.namespace.to_owned(),
                self.skill.to_owned(),
                self.version.to_string(),
                self.probe_set_version.to_owned(),
                self.edit.to_string(),
                self.body_ref.to_owned(),
            ],
        )
    }
}

/// Why a workflow file's own job cannot be told apart from Capsid's text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MarkerProblem {
    /// A marker line is missing.
    #[error("the line `{}` is missing", .0.trim())]
    Missing(&'static str),
    /// A marker line appears more than once.
    #[error("the line `{marker}` appears {count} times; once only", marker = .0.trim(), count = .1)]
    Repeated(&'static str, usize),
    /// The closing marker comes first.
    #[error("the line `{}` comes before `{}`", OWN_END.trim(), OWN_BEGIN.trim())]
    OutOfOrder,
}

/// A workflow text cut at its markers: Capsid's text before and after, and the repository's
/// own lines between (the markers belong to Capsid's text).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cut<'a> {
    before: Vec<&'a str>,
    own: Vec<&'a str>,
    after: Vec<&'a str>,
}

fn cut(text: &str) -> Result<Cut<'_>, MarkerProblem> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let at = |marker: &'static str| -> Result<usize, MarkerProblem> {
        let found: Vec<usize> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.trim_end_matches(['\n', '\r']) == marker)
            .map(|(i, _)| i)
            .collect();
        match found.as_slice() {
            [] => Err(MarkerProblem::Missing(marker)),
            [one] => Ok(*one),
            many => Err(MarkerProblem::Repeated(marker, many.len())),
        }
    };
    let (begin, end) = (at(OWN_BEGIN)?, at(OWN_END)?);
    // The two lines differ, so they never stand at one index.
    if end.checked_sub(begin).is_none() {
        return Err(MarkerProblem::OutOfOrder);
    }
    Ok(Cut {
        before: lines[..=begin].to_vec(),
        own: lines[begin + 1..end].to_vec(),
        after: lines[end..].to_vec(),
    })
}

/// How a repository's copy of a workflow stands against the template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Drift {
    /// Capsid's text is exactly the template's (the repository's own job aside).
    Same,
    /// The markers cannot be found, so nothing can be compared.
    Unmarked(MarkerProblem),
    /// The first line of Capsid's text that differs: its number in the repository's file
    /// (1-based), what ships there and what the file has (`None`: the file ends first, or the
    /// template does).
    Differs {
        /// The line number in the repository's file.
        line: usize,
        /// The template's line.
        expected: Option<String>,
        /// The file's line.
        found: Option<String>,
    },
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |l: &Option<String>| match l {
            Some(l) => format!("`{}`", l.trim_end_matches(['\n', '\r'])),
            None => "the end of the file".to_owned(),
        };
        match self {
            Drift::Same => write!(f, "same as the template"),
            Drift::Unmarked(why) => write!(f, "cannot be compared: {why}"),
            Drift::Differs {
                line,
                expected,
                found,
            } => write!(
                f,
                "line {line}: the template has {}, the file has {}",
                show(expected),
                show(found)
            ),
        }
    }
}

/// Compares a repository's `found` copy of `workflow` with the template.
pub fn drift(workflow: Workflow, found: &str) -> Drift {
    let shipped = cut(workflow.template()).expect("the shipped templates carry their markers");
    let theirs = match cut(found) {
        Ok(c) => c,
        Err(why) => return Drift::Unmarked(why),
    };
    let after_offset = theirs.before.len() + theirs.own.len();
    if let Some(d) = first_difference(&shipped.before, &theirs.before, 0) {
        return d;
    }
    first_difference(&shipped.after, &theirs.after, after_offset).unwrap_or(Drift::Same)
}

fn first_difference(expected: &[&str], found: &[&str], offset: usize) -> Option<Drift> {
    let n = expected.len().max(found.len());
    (0..n).find_map(|i| {
        let (e, f) = (expected.get(i), found.get(i));
        (e != f).then(|| Drift::Differs {
            line: offset + i + 1,
            expected: e.map(|s| (*s).to_owned()),
            found: f.map(|s| (*s).to_owned()),
        })
    })
}

/// What `capsid improve workflows` writes for `workflow`: the template, keeping the
/// repository's own job from `existing` when there is a copy. A copy whose markers cannot be
/// found is refused: its own job cannot be told from Capsid's text, and nothing is written.
pub fn written(workflow: Workflow, existing: Option<&str>) -> Result<String, MarkerProblem> {
    let shipped = cut(workflow.template()).expect("the shipped templates carry their markers");
    let Some(existing) = existing else {
        return Ok(workflow.template().to_owned());
    };
    let theirs = cut(existing)?;
    let mut out = String::with_capacity(existing.len().max(workflow.template().len()));
    for line in shipped
        .before
        .iter()
        .chain(&theirs.own)
        .chain(&shipped.after)
    {
        out.push_str(line);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
