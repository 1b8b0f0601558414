//! What a job needs of the driver that claims it (reference 6.4, 3.3 `missingForJob`):
//! blast-radius flags, and a track-record bar of verified merged pull requests.
//!
//! Stored as two nullable text columns. Reading them is fail-closed (SPEC 8): a stored
//! requirement that cannot be read is corrupt, not absent, and the claim fails the job
//! rather than handing it to a driver that may lack what it needs. We are stricter than
//! the successor on one point: an object missing its field is corrupt too, because the
//! store never writes one, so a missing field can only be damage.

use serde_json::{Map, Value, json};

use super::evidence::whole_count;
use crate::scope::{Flag, Grant, Need, ScopeRefusal, Scopes, check_scope};

/// A job's requirements. Canonical form: flags without duplicates, and no bar of zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobRequirements {
    /// Flags the claimant must hold, in the order posted.
    pub required_flags: Vec<Flag>,
    /// The least number of verified merged pull requests on the claimant's record.
    pub min_prs_merged: Option<u64>,
    /// Actors that may not claim the job (`agent:<name>`): the pipeline's review of a pull
    /// request excludes the agent that wrote it, so a review is always another agent's. Set
    /// only by the server (stored as `not_by` beside `flags`).
    pub not_by: Vec<String>,
}

/// Why the requirement arguments of `post` were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// `required_flags` is not an array of strings.
    #[error("required_flags must be an array of flag names")]
    FlagsNotList,
    /// A name in `required_flags` is not a flag.
    #[error("required_flags names {name:?}, which is not a flag (flags: {known})", known = flag_names())]
    UnknownFlag {
        /// The name given.
        name: String,
    },
    /// `min_record` is not an object.
    #[error("min_record must be an object like {{\"prs_merged\": 3}}")]
    MinRecordNotObject,
    /// `min_record.prs_merged` is not a whole number of zero or more.
    #[error("min_record.prs_merged must be a whole number of zero or more")]
    PrsMergedInvalid,
}

/// A stored requirement that cannot be read. The claim fails the job; resume refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("this job's {which} {why}, so nothing can be checked against it")]
pub struct CorruptRequirement {
    /// The column: `required_scopes` or `min_record`.
    pub which: &'static str,
    /// What is wrong with it.
    pub why: String,
}

fn flag_names() -> String {
    Flag::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn corrupt(which: &'static str, why: impl Into<String>) -> CorruptRequirement {
    CorruptRequirement {
        which,
        why: why.into(),
    }
}

fn stored_object(
    which: &'static str,
    text: &str,
) -> Result<Map<String, Value>, CorruptRequirement> {
    match serde_json::from_str(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(corrupt(which, "is not a JSON object")),
        Err(_) => Err(corrupt(which, "is not JSON")),
    }
}

impl JobRequirements {
    /// Reads `post`'s `required_flags` (array of flag names) and `min_record`
    /// (`{prs_merged: int >= 0}`) arguments. Duplicates collapse; a bar of zero is no bar.
    pub fn from_input(
        required_flags: Option<&Value>,
        min_record: Option<&Value>,
    ) -> Result<Self, RequirementError> {
        let mut flags = Vec::new();
        match required_flags {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for item in items {
                    let name = item.as_str().ok_or(RequirementError::FlagsNotList)?;
                    let flag = Flag::parse(name).ok_or_else(|| RequirementError::UnknownFlag {
                        name: name.to_owned(),
                    })?;
                    if !flags.contains(&flag) {
                        flags.push(flag);
                    }
                }
            }
            Some(_) => return Err(RequirementError::FlagsNotList),
        }
        let min_prs_merged = match min_record {
            None | Some(Value::Null) => None,
            Some(Value::Object(fields)) => match fields.get("prs_merged") {
                None | Some(Value::Null) => None,
                Some(n) => Some(whole_count(n).ok_or(RequirementError::PrsMergedInvalid)?),
            },
            Some(_) => return Err(RequirementError::MinRecordNotObject),
        };
        Ok(JobRequirements {
            required_flags: flags,
            min_prs_merged: min_prs_merged.filter(|n| *n > 0),
            not_by: Vec::new(),
        })
    }

    /// `self`, not claimable by `actor` as well.
    pub fn not_by(mut self, actor: &str) -> Self {
        if !self.not_by.iter().any(|a| a == actor) {
            self.not_by.push(actor.to_owned());
        }
        self
    }

    /// Why `actor` may not claim the job, when it is one the job excludes.
    pub fn excluded(&self, actor: &str) -> Option<String> {
        self.not_by.iter().any(|a| a == actor).then(|| {
            format!(
                "this job reviews or follows the work of {actor}, so another agent must take it"
            )
        })
    }

    /// The `required_scopes` column: `{"flags":[...]}` (with `"not_by":[...]` when some actor
    /// is excluded), or NULL when neither is set.
    pub fn stored_required_scopes(&self) -> Option<String> {
        if self.required_flags.is_empty() && self.not_by.is_empty() {
            return None;
        }
        let names: Vec<&str> = self.required_flags.iter().map(|f| f.name()).collect();
        let mut stored = json!({ "flags": names });
        if !self.not_by.is_empty() {
            stored["not_by"] = json!(self.not_by);
        }
        Some(stored.to_string())
    }

    /// The `min_record` column: `{"prs_merged":n}`, or NULL when there is no bar above zero.
    pub fn stored_min_record(&self) -> Option<String> {
        self.min_prs_merged
            .filter(|n| *n > 0)
            .map(|n| json!({ "prs_merged": n }).to_string())
    }

    /// Reads the two stored columns, fail-closed: NULL is no requirement; anything that
    /// does not read cleanly is [`CorruptRequirement`], never a weaker requirement.
    pub fn from_stored(
        required_scopes: Option<&str>,
        min_record: Option<&str>,
    ) -> Result<Self, CorruptRequirement> {
        let (required_flags, not_by) = required_scopes
            .map(stored_flags)
            .transpose()?
            .unwrap_or_default();
        Ok(JobRequirements {
            required_flags,
            min_prs_merged: min_record.map(stored_bar).transpose()?.flatten(),
            not_by,
        })
    }
}

fn stored_flags(text: &str) -> Result<(Vec<Flag>, Vec<String>), CorruptRequirement> {
    const WHICH: &str = "required_scopes";
    let object = stored_object(WHICH, text)?;
    let items = match object.get("flags") {
        None => return Err(corrupt(WHICH, "has no flags list")),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(corrupt(WHICH, "has a flags value that is not an array")),
    };
    let mut flags = Vec::with_capacity(items.len());
    for item in items {
        let flag = item
            .as_str()
            .and_then(Flag::parse)
            .ok_or_else(|| corrupt(WHICH, format!("names {item}, which is not a flag")))?;
        if !flags.contains(&flag) {
            flags.push(flag);
        }
    }
    let not_by = match object.get("not_by") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str().map(str::to_owned).ok_or_else(|| {
                    corrupt(
                        WHICH,
                        format!("has a not_by entry {i} that is not an actor"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(corrupt(WHICH, "has a not_by value that is not an array")),
    };
    Ok((flags, not_by))
}

fn stored_bar(text: &str) -> Result<Option<u64>, CorruptRequirement> {
    const WHICH: &str = "min_record";
    let object = stored_object(WHICH, text)?;
    let bar = object
        .get("prs_merged")
        .ok_or_else(|| corrupt(WHICH, "has no prs_merged"))?;
    let n = whole_count(bar).ok_or_else(|| {
        corrupt(
            WHICH,
            format!("has prs_merged {bar}, not a whole number of zero or more"),
        )
    })?;
    Ok((n > 0).then_some(n))
}

/// `missingForJob`: what a claim or resume asks of the caller through the one scope check:
/// the `jobs` tool, the write grant, the job's namespace, and the job's flags.
pub fn missing_for_job(
    scopes: &Scopes,
    namespace: &str,
    requirements: &JobRequirements,
) -> Result<(), ScopeRefusal> {
    check_scope(
        scopes,
        &Need {
            tool: "jobs",
            namespace: Some(namespace),
            grant: Some(Grant::Write),
            flags: requirements.required_flags.clone(),
            ..Need::default()
        },
    )
}

#[cfg(test)]
mod tests;
