//! The workflow templates Capsid ships (`capsid_core::improve::workflows`) as a runner would
//! take them: the inputs a template declares, a job's environment for one recorded dispatch
//! (each `${{ inputs.<name> }}` from what the server sent, secrets and variables from the
//! test), and a step's script run with bash as GitHub's runner runs `run:` steps. The
//! end-to-end tests run the scorer's and the probe's own steps against a real server with it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use capsid_core::improve::workflows::Workflow;
use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

/// One shipped template, parsed.
#[derive(Debug)]
pub struct Template {
    doc: Yaml,
    workflow: Workflow,
}

impl Template {
    /// The template of `workflow`, as the binary embeds it.
    pub fn of(workflow: Workflow) -> Template {
        let mut docs = YamlLoader::load_from_str(workflow.template())
            .unwrap_or_else(|e| panic!("{} is not YAML: {e}", workflow.file_name()));
        Template {
            doc: docs.remove(0),
            workflow,
        }
    }

    /// The inputs its `workflow_dispatch` trigger declares, in order.
    pub fn inputs(&self) -> Vec<String> {
        self.doc["on"]["workflow_dispatch"]["inputs"]
            .as_hash()
            .expect("workflow_dispatch inputs")
            .keys()
            .map(|k| k.as_str().expect("an input's name").to_owned())
            .collect()
    }

    fn job(&self, job: &str) -> &Yaml {
        let j = &self.doc["jobs"][job];
        assert!(
            !j.is_badvalue(),
            "{} has no job {job}",
            self.workflow.file_name()
        );
        j
    }

    /// The environment `job` runs with for a dispatch whose inputs are `dispatched`: an
    /// `${{ inputs.<name> }}` takes the dispatched value (an input the dispatch did not send
    /// fails the test), a `${{ secrets.<X> }}` or `${{ vars.<X> }}` takes `given[X]`, and any
    /// other expression takes `given` by the variable's own name, or is left out.
    pub fn job_env(
        &self,
        job: &str,
        dispatched: &Value,
        given: &BTreeMap<&str, String>,
    ) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Some(env) = self.job(job)["env"].as_hash() else {
            return out;
        };
        for (k, v) in env {
            let name = k.as_str().expect("a variable's name");
            let raw = v.as_str().unwrap_or_default().trim();
            let inner = raw
                .strip_prefix("${{")
                .and_then(|r| r.strip_suffix("}}"))
                .map(str::trim);
            let value = match inner {
                None => Some(raw.to_owned()),
                Some(e) => {
                    if let Some(input) = e.strip_prefix("inputs.") {
                        let sent = dispatched[input].as_str().unwrap_or_else(|| {
                            panic!(
                                "{} job {job}: {name} reads inputs.{input}, which the dispatch did not send: {dispatched}",
                                self.workflow.file_name()
                            )
                        });
                        Some(sent.to_owned())
                    } else if let Some(x) = e
                        .strip_prefix("secrets.")
                        .or_else(|| e.strip_prefix("vars."))
                        .filter(|x| given.contains_key(x))
                    {
                        Some(given[x].clone())
                    } else {
                        given.get(name).cloned()
                    }
                }
            };
            if let Some(value) = value {
                out.insert(name.to_owned(), value);
            }
        }
        out
    }

    /// The script of `job`'s step named `step`.
    pub fn step(&self, job: &str, step: &str) -> String {
        self.job(job)["steps"]
            .as_vec()
            .expect("steps")
            .iter()
            .find(|s| s["name"].as_str() == Some(step))
            .and_then(|s| s["run"].as_str())
            .unwrap_or_else(|| panic!("job {job} has no step {step:?} with a script"))
            .to_owned()
    }
}

/// Runs `script` as GitHub's runner runs a bash `run:` step (`bash --noprofile --norc -eo
/// pipefail`), in `dir`, with `env` added and `bin` (fakes of runner tools) first on `PATH`.
pub async fn run_step(
    script: &str,
    dir: &Path,
    env: &BTreeMap<String, String>,
    bin: Option<&Path>,
) -> Output {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(dir)
        .envs(env);
    if let Some(bin) = bin {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", bin.display()));
    }
    cmd.output().await.expect("bash runs")
}
