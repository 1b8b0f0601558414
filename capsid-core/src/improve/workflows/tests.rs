//! The shipped templates against the names and inputs the dispatches send, and drift.

use yaml_rust2::{Yaml, YamlLoader};

use super::*;

fn yaml(w: Workflow) -> Yaml {
    let mut docs = YamlLoader::load_from_str(w.template())
        .unwrap_or_else(|e| panic!("{} is not YAML: {e}", w.file_name()));
    assert_eq!(docs.len(), 1, "{}: one document", w.file_name());
    docs.remove(0)
}

fn keys(map: &Yaml) -> Vec<String> {
    map.as_hash()
        .expect("a mapping")
        .keys()
        .map(|k| k.as_str().expect("a string key").to_owned())
        .collect()
}

fn job(w: Workflow, name: &str) -> Yaml {
    let doc = yaml(w);
    let job = doc["jobs"][name].clone();
    assert!(!job.is_badvalue(), "{} has a job {name}", w.file_name());
    job
}

/// The YAML text of one job (as the template spells it), for what a parse does not keep.
fn job_text(w: Workflow, name: &str) -> String {
    let head = format!("\n  {name}:\n");
    let text = w.template();
    let start = text.find(&head).expect("the job's line") + head.len();
    let mut out = String::new();
    for line in text[start..].lines() {
        let top = !line.is_empty() && !line.starts_with("   ");
        if top {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn each_template_takes_exactly_the_inputs_its_dispatch_sends() {
    for w in Workflow::ALL {
        let doc = yaml(w);
        let inputs = &doc["on"]["workflow_dispatch"]["inputs"];
        assert_eq!(keys(inputs), w.inputs(), "{}", w.file_name());
        for name in w.inputs() {
            assert_eq!(inputs[*name]["required"].as_bool(), Some(true), "{name}");
            assert_eq!(inputs[*name]["type"].as_str(), Some("string"), "{name}");
        }
        // No other trigger: the loop dispatches it, nothing else starts it.
        assert_eq!(keys(&doc["on"]), ["workflow_dispatch"], "{}", w.file_name());
        let stem = w.file_name().trim_end_matches(".yml");
        assert_eq!(doc["name"].as_str(), Some(stem));
        assert_eq!(w.path(), format!(".github/workflows/{}", w.file_name()));
    }
    let score = ScoreDispatch {
        namespace: "ns",
        run_id: "r",
        attempt_id: "a",
        head_sha: "h",
    }
    .inputs();
    assert_eq!(score.keys().collect::<Vec<_>>().len(), SCORE_INPUTS.len());
    assert!(SCORE_INPUTS.iter().all(|n| score.contains_key(*n)));
    assert_eq!(score["attempt_id"], "a");
    let probe = ProbeDispatch {
        namespace: "ns",
        skill: "s1",
        version: 3,
        probe_set_version: "sha256:00",
        edit: true,
        body_ref: "ns/improve/skills/s1.md",
    }
    .inputs();
    assert_eq!(probe.len(), PROBE_INPUTS.len());
    assert_eq!(probe["version"], "3");
    assert_eq!(probe["edit"], "true");
}

#[test]
fn a_template_reads_only_inputs_that_are_sent_and_only_through_the_environment() {
    let reference = regex::Regex::new(r"\$\{\{\s*inputs\.([a-z_]+)").unwrap();
    for w in Workflow::ALL {
        let used: Vec<&str> = reference
            .captures_iter(w.template())
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        assert!(!used.is_empty());
        for name in &used {
            assert!(w.inputs().contains(name), "{} reads {name}", w.file_name());
        }
        // Every input reaches the jobs that need it.
        for name in w.inputs() {
            assert!(used.contains(name), "{} never reads {name}", w.file_name());
        }
        // An expression inside a script is a script injection: inputs go through env.
        let doc = yaml(w);
        for (job, body) in doc["jobs"].as_hash().unwrap() {
            for step in body["steps"].as_vec().unwrap() {
                if let Some(run) = step["run"].as_str() {
                    assert!(!run.contains("${{"), "{job:?}: {run}");
                }
            }
        }
    }
}

#[test]
fn the_repositorys_own_job_stands_between_the_markers_and_holds_no_secret() {
    for w in Workflow::ALL {
        let c = cut(w.template()).expect("markers");
        let own: String = c.own.concat();
        assert!(
            own.lines().any(|l| l == format!("  {}:", w.own_job())),
            "{}: {own}",
            w.file_name()
        );
        assert!(!own.contains("secrets."), "{}: {own}", w.file_name());
        assert!(!job_text(w, w.own_job()).contains("secrets."));
        assert!(
            yaml(w)["jobs"][w.own_job()]["environment"]
                .as_str()
                .is_none()
        );
    }
}

#[test]
fn the_score_job_takes_the_default_branch_and_runs_the_suite_with_no_network_read_only() {
    let w = Workflow::Score;
    assert_eq!(keys(&yaml(w)["jobs"]), ["build", "score"]);
    let score = job(w, "score");
    assert_eq!(score["needs"].as_str(), Some("build"));
    assert_eq!(score["environment"].as_str(), Some("capsid-improve"));
    let steps = score["steps"].as_vec().unwrap();
    let checkout = &steps[0];
    assert!(
        checkout["uses"]
            .as_str()
            .unwrap()
            .starts_with("actions/checkout@")
    );
    assert_eq!(
        checkout["with"]["ref"].as_str(),
        Some("${{ github.event.repository.default_branch }}")
    );
    let scripts: String = steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for must in [
        "--network none",
        "--read-only",
        "attempt:/attempt:ro",
        "holdout:/holdout:ro",
        "--tmpfs /tmp",
        "CAPSID-$nonce-BEGIN",
        "/improve/holdout-credential",
        "/improve/score",
    ] {
        assert!(scripts.contains(must), "the score job has {must}");
    }
    // Every action is pinned to a commit.
    for w in Workflow::ALL {
        for line in w.template().lines().filter(|l| l.contains("uses: ")) {
            let at = line.split('@').nth(1).expect("pinned");
            assert_eq!(at.split_whitespace().next().unwrap().len(), 40, "{line}");
        }
    }
    // The build job gets no credential and is told the attempt's commit.
    let build = job(w, "build");
    assert_eq!(
        build["steps"][0]["with"]["ref"].as_str(),
        Some("${{ inputs.head_sha }}")
    );
    assert_eq!(
        build["steps"][0]["with"]["persist-credentials"].as_bool(),
        Some(false)
    );
}

#[test]
fn the_probe_workflow_fetches_probes_measures_then_reports() {
    let w = Workflow::Probe;
    assert_eq!(keys(&yaml(w)["jobs"]), ["fetch", "probe", "report"]);
    assert_eq!(job(w, "probe")["needs"].as_str(), Some("fetch"));
    assert_eq!(job(w, "report")["needs"].as_str(), Some("probe"));
    let report = job_text(w, "report");
    assert!(report.contains("/improve/probe"), "{report}");
    assert!(job_text(w, "fetch").contains("improve/probes.md"));
}

#[test]
fn drift_ignores_the_repositorys_own_job_and_names_the_first_line_of_capsids_that_differs() {
    for w in Workflow::ALL {
        let t = w.template();
        assert_eq!(drift(w, t), Drift::Same);
        // The repository's own job is its own.
        let own = t.replace(
            "\n    timeout-minutes: 30\n    permissions:\n      contents: read\n    steps:\n      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2\n        with:\n          ref: ${{ inputs.head_sha }}",
            "\n    timeout-minutes: 45\n    permissions:\n      contents: read\n    steps:\n      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2\n        with:\n          ref: ${{ inputs.head_sha }}",
        );
        let mut longer = t.to_owned();
        let end = longer.find(OWN_END).unwrap();
        longer.insert_str(end, "      - run: echo one more step of its own\n");
        assert_eq!(drift(w, &longer), Drift::Same, "{}", w.file_name());
        assert_eq!(drift(w, &own), Drift::Same);
        // Capsid's text before the markers.
        let edited = t.replacen("permissions: {}", "permissions: write-all", 1);
        let line = t
            .lines()
            .position(|l| l == "permissions: {}")
            .expect("top-level permissions")
            + 1;
        assert_eq!(
            drift(w, &edited),
            Drift::Differs {
                line,
                expected: Some("permissions: {}\n".into()),
                found: Some("permissions: write-all\n".into()),
            }
        );
        // And after them, counted in the file's own lines.
        let tail = longer.replace("--data-binary @report.json", "--data-binary @other.json");
        let Drift::Differs { line, found, .. } = drift(w, &tail) else {
            panic!("a changed line after the markers drifts");
        };
        assert_eq!(
            longer.lines().nth(line - 1),
            Some("            --data-binary @report.json"),
            "{line}"
        );
        assert!(found.unwrap().contains("other.json"));
        // A shorter file.
        let cut_short = &t[..t.rfind("--data-binary").unwrap()];
        let short = drift(w, cut_short);
        assert!(matches!(short, Drift::Differs { found: Some(_), .. }));
        assert!(matches!(
            drift(w, &t.replace(OWN_END, "")),
            Drift::Unmarked(MarkerProblem::Missing(_))
        ));
    }
}

#[test]
fn drift_says_which_line_and_both_texts() {
    let w = Workflow::Score;
    let t = w.template();
    assert_eq!(drift(w, t).to_string(), "same as the template");
    let line = t.lines().position(|l| l == "permissions: {}").unwrap() + 1;
    let edited = t.replacen("permissions: {}", "permissions: write-all", 1);
    assert_eq!(
        drift(w, &edited).to_string(),
        format!(
            "line {line}: the template has `permissions: {{}}`, the file has `permissions: write-all`"
        )
    );
    let mut longer = t.to_owned();
    longer.push_str("# one line more\n");
    assert_eq!(
        drift(w, &longer).to_string(),
        format!(
            "line {}: the template has the end of the file, the file has `# one line more`",
            t.lines().count() + 1
        )
    );
    assert_eq!(
        drift(w, "name: ours\n").to_string(),
        format!(
            "cannot be compared: the line `{}` is missing",
            OWN_BEGIN.trim()
        )
    );
}

#[test]
fn writing_keeps_the_repositorys_own_job_and_refuses_a_copy_without_markers() {
    for w in Workflow::ALL {
        let t = w.template();
        assert_eq!(written(w, None).unwrap(), t);
        let mut theirs = t.replacen("permissions: {}", "permissions: write-all", 1);
        let end = theirs.find(OWN_END).unwrap();
        theirs.insert_str(end, "      - run: make bench\n");
        let out = written(w, Some(&theirs)).unwrap();
        assert_eq!(drift(w, &out), Drift::Same);
        assert!(out.contains("      - run: make bench\n"));
        assert!(!out.contains("write-all"));
        assert_eq!(written(w, Some(&out)).unwrap(), out, "idempotent");
        let twice = format!("{t}{OWN_BEGIN}\n");
        assert_eq!(
            written(w, Some(&twice)),
            Err(MarkerProblem::Repeated(OWN_BEGIN, 2))
        );
        let swapped = t
            .replace(OWN_BEGIN, "@@")
            .replace(OWN_END, OWN_BEGIN)
            .replace("@@", OWN_END);
        assert_eq!(written(w, Some(&swapped)), Err(MarkerProblem::OutOfOrder));
        assert!(
            MarkerProblem::Missing(OWN_BEGIN)
                .to_string()
                .contains("# >>> capsid: this repository's own job")
        );
    }
}
