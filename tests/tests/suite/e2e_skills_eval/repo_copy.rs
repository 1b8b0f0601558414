//! A skill's reviewable repository copy (issue 56, item 14) through a real MCP client against
//! the fake GitHub: `export_skills` commits each live skill of the namespace (and nothing
//! else) as `skills/<id>/SKILL.md` to `capsid-skills/<ns>` and opens one pull request, an
//! unchanged export commits nothing and says so; `import_skills` leaves a copy that says what
//! its skill says and reads an edited one back as a candidate (once, however often it is
//! read), which the evaluation cycle then probes and makes live; a malformed copy or one
//! naming another namespace's skill is refused naming the file and the field, and nothing is
//! written, as is a copy whose skill would be offered beyond the caller's namespaces; a caller
//! without the namespace's write scope is refused by the one check.

use capsid_core::ports::AuditFilter;
use capsid_tests::server::{Client, TestServer};
use serde_json::{Value, json};

use super::{BODY, Env, NS, REPO, audit, dispatch_of, later_days, row, score, skill, tick};

const BRANCH: &str = "capsid-skills/proj";

/// The copy `export_skills` writes of a skill made by [`live_skill`].
fn exported(id: &str) -> String {
    format!(
        "---\nid: \"{id}\"\nversion: 1\ntitle: \"Skill {id}\"\ntrigger_condition: \"flaky test\"\n\
         namespaces: [\"proj\"]\ntermination_test: null\ncomposition_interface: null\n---\n\n{BODY}\n"
    )
}

/// A live skill of `proj` that applies there only.
async fn live_skill(s: &TestServer, id: &str) {
    skill(s, id, Some(r#"["proj"]"#)).await;
    let now = s.service.now();
    let moved = s
        .store
        .set_skill_status(id, "candidate", "live", now, audit("skill-live", "x", now))
        .await
        .expect("status");
    assert!(moved);
}

async fn writer(s: &TestServer, name: &str, namespaces: &[&str], grants: &[&str]) -> Client {
    let axes = json!({"namespaces": namespaces, "grants": grants});
    s.client(&s.mint(name, "session", axes).await).await
}

async fn audits(s: &TestServer, action: &str) -> Vec<Value> {
    s.store
        .recent_audit(&AuditFilter::default(), 1_000)
        .await
        .expect("audit")
        .into_iter()
        .filter(|r| r.action.as_deref() == Some(action))
        .map(|r| {
            r.params
                .and_then(|p| serde_json::from_str(&p).ok())
                .unwrap_or(Value::Null)
        })
        .collect()
}

async fn skill_count(s: &TestServer) -> usize {
    s.store.skills(None).await.expect("skills").len()
}

fn export() -> Value {
    json!({"action": "export_skills", "namespace": NS})
}

fn import() -> Value {
    json!({"action": "import_skills", "namespace": NS})
}

pub(crate) async fn an_edited_copy_comes_back_as_a_candidate(env: &Env) {
    let (s, g) = (&env.s, &env.g);
    live_skill(s, "sk-r").await;
    skill(s, "sk-c", None).await;
    let w = writer(s, "skills-owner", &[NS], &["read", "write"]).await;
    let path = "skills/sk-r/SKILL.md";

    // A dry run says what would be committed and writes nothing.
    let dry = w
        .ok(
            "improve_run",
            json!({"action": "export_skills", "namespace": NS, "dry_run": true}),
        )
        .await;
    assert_eq!(dry["committed"], json!([path]), "{dry}");
    assert_eq!(dry["dry_run"], true);
    assert!(!g.branch_names(REPO).iter().any(|b| b == BRANCH));
    assert!(g.pulls(REPO).is_empty());

    // The first export: one commit of the live skill only, and a pull request.
    let first = w.ok("improve_run", export()).await;
    assert_eq!(first["ok"], true, "{first}");
    assert_eq!(first["pull"], "opened", "{first}");
    assert_eq!(
        first["files"],
        json!([path]),
        "the candidate is not exported"
    );
    assert_eq!(first["committed"], json!([path]), "{first}");
    assert_eq!(
        g.file(REPO, BRANCH, path).as_deref(),
        Some(exported("sk-r").as_str())
    );
    assert_eq!(g.file(REPO, BRANCH, "skills/sk-c/SKILL.md"), None);
    assert_eq!(
        g.file(REPO, "main", path),
        None,
        "only through the pull request"
    );
    let pulls = g.pulls(REPO);
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let number = pulls[0].0;
    assert_eq!(first["pull_request"], number);
    let (state, _, head, title) = g.pull(REPO, number).expect("the pull request");
    assert_eq!(
        (state.as_str(), head.as_str(), title.as_str()),
        ("open", BRANCH, "skills: the live skills of proj")
    );
    let exports = audits(s, "skills-exported").await;
    assert_eq!(exports.len(), 1, "{exports:?}");
    assert_eq!(exports[0]["committed"], json!([path]));
    assert_eq!(exports[0]["pull_request"], number);

    // Nothing changed: no commit, no second pull request, and it says so.
    let head_before = g.branch_head(REPO, BRANCH);
    let again = w.ok("improve_run", export()).await;
    assert_eq!(again["pull"], "unchanged", "{again}");
    assert_eq!(again["committed"], json!([]));
    assert!(
        again["note"]
            .as_str()
            .is_some_and(|n| n.contains("nothing committed")),
        "{again}"
    );
    assert_eq!(g.branch_head(REPO, BRANCH), head_before);
    assert_eq!(g.pulls(REPO).len(), 1);
    assert_eq!(audits(s, "skills-exported").await.len(), 1);

    // Merged: the default branch holds the copy, so the export has nothing to do.
    g.merge(REPO, number);
    let merged = w.ok("improve_run", export()).await;
    assert_eq!(merged["pull"], "none", "{merged}");
    assert_eq!(merged["committed"], json!([]));
    assert_eq!(g.pulls(REPO).len(), 1);

    // A copy as stored is not read back.
    let count = skill_count(s).await;
    let same = w.ok("improve_run", import()).await;
    assert_eq!(same["ok"], true, "{same}");
    assert_eq!(same["unchanged"], json!([path]), "{same}");
    assert_eq!(same["candidates"], json!([]));
    assert_eq!(skill_count(s).await, count);

    // A person edits the copy on the default branch: it comes back as a candidate, the live
    // skill untouched.
    let edited = exported("sk-r").replace("Step three.", "Step three, twice over.");
    g.commit(REPO, "main", &[(path, Some(&edited))], "tighten step three");
    // Not read back yet: the export leaves the person's edit alone.
    let unread = w.ok("improve_run", export()).await;
    assert_eq!(unread["unread"], json!([path]), "{unread}");
    assert_eq!(unread["committed"], json!([]));
    assert_eq!(g.pulls(REPO).len(), 1);
    let dry = w
        .ok(
            "improve_run",
            json!({"action": "import_skills", "namespace": NS, "dry_run": true}),
        )
        .await;
    assert_eq!(
        dry["candidates"],
        json!([{"file": path, "skill": null, "from_skill": "sk-r"}]),
        "{dry}"
    );
    assert_eq!(skill_count(s).await, count, "a dry run writes nothing");
    let read = w.ok("improve_run", import()).await;
    assert_eq!(read["ok"], true, "{read}");
    let candidates = read["candidates"].as_array().expect("candidates").clone();
    assert_eq!(candidates.len(), 1, "{read}");
    assert_eq!(candidates[0]["file"], path);
    assert_eq!(candidates[0]["from_skill"], "sk-r");
    let id = candidates[0]["skill"].as_str().expect("an id").to_owned();
    let new = row(s, &id).await;
    assert_eq!(new.status, "candidate", "never live directly");
    assert_eq!(new.source_namespace, NS);
    assert_eq!(new.title, "Skill sk-r");
    assert_eq!(new.trigger_condition.as_deref(), Some("flaky test"));
    assert_eq!(new.version, 1);
    let body = s
        .store
        .document(NS, &new.body_ref)
        .await
        .expect("read")
        .and_then(|d| d.body)
        .expect("the candidate's body document");
    assert!(body.contains("Step three, twice over."), "{body}");
    assert_eq!(row(s, "sk-r").await.status, "live");
    let old = s
        .store
        .document(NS, "improve/skills/sk-r.md")
        .await
        .expect("read")
        .and_then(|d| d.body);
    assert_eq!(old.as_deref(), Some(BODY));
    let read_back = audits(s, "skill-read-back").await;
    assert_eq!(read_back.len(), 1, "{read_back:?}");
    assert_eq!(read_back[0]["skill"], id.as_str());
    assert_eq!(read_back[0]["from_skill"], "sk-r");

    // Read again: the same edit is not a second candidate.
    let twice = w.ok("improve_run", import()).await;
    assert_eq!(twice["candidates"], json!([]), "{twice}");
    assert_eq!(twice["already"], json!([{"file": path, "skill": id}]));
    assert_eq!(skill_count(s).await, count + 1);

    // Read back, the edit is a candidate's; the export writes the live skill as stored again,
    // in a new pull request a person reviews.
    let after = w.ok("improve_run", export()).await;
    assert_eq!(after["unread"], json!([]), "{after}");
    assert_eq!(after["committed"], json!([path]));
    assert_eq!(after["pull"], "opened");
    assert_eq!(
        g.file(REPO, BRANCH, path).as_deref(),
        Some(exported("sk-r").as_str())
    );

    // The candidate goes live the way every candidate does: two positive evaluations.
    for want in ["candidate", "live"] {
        assert_eq!(tick(s).await["cycle"], "ran");
        let answer = score(
            env,
            &dispatch_of(env, &id, false),
            0.75,
            0.5,
            &format!("rc-{want}"),
        )
        .await;
        assert_eq!(answer["status"], want, "{answer}");
        later_days(s, 14);
    }
}

pub(crate) async fn a_malformed_copy_is_refused_whole(env: &Env) {
    let (s, g) = (&env.s, &env.g);
    live_skill(s, "sk-m").await;
    let w = writer(s, "skills-owner", &[NS], &["read", "write"]).await;
    let fresh = "---\ntitle: Retry flaky tests\ntrigger_condition: a test that fails once\n---\n\nRun it twice.\n";
    let misspelt = exported("sk-m").replace("title:", "titel:");
    g.commit(
        REPO,
        "main",
        &[
            ("skills/a-new/SKILL.md", Some(fresh)),
            ("skills/sk-m/SKILL.md", Some(&misspelt)),
        ],
        "two copies",
    );
    let count = skill_count(s).await;
    let refused = w.ok("improve_run", import()).await;
    assert_eq!(refused["ok"], false, "{refused}");
    let why = refused["refusal"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("skills/sk-m/SKILL.md: titel: not a field of a skill"),
        "{why}"
    );
    assert!(why.ends_with("nothing was read back"), "{why}");
    assert_eq!(
        skill_count(s).await,
        count,
        "the good copy is not read either"
    );
    assert!(audits(s, "skill-read-back").await.is_empty());

    // A copy naming a skill of no namespace of ours is refused on its id.
    let stranger = exported("sk-nobody");
    g.commit(
        REPO,
        "main",
        &[("skills/sk-m/SKILL.md", Some(&stranger))],
        "a stranger",
    );
    let refused = w.ok("improve_run", import()).await;
    let why = refused["refusal"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("skills/sk-m/SKILL.md: id: no skill sk-nobody of proj"),
        "{refused}"
    );
    assert_eq!(skill_count(s).await, count);

    // Fixed: the copy a person wrote from scratch is a candidate of its own, the copy as
    // stored is left.
    g.commit(
        REPO,
        "main",
        &[("skills/sk-m/SKILL.md", Some(&exported("sk-m")))],
        "fixed",
    );
    // The copy written from scratch names no namespaces, so it would be offered in every
    // one: beyond a caller narrowed to proj, and refused naming the field.
    let narrow = w.ok("improve_run", import()).await;
    let why = narrow["refusal"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("skills/a-new/SKILL.md: namespaces: absent means every namespace"),
        "{narrow}"
    );
    assert_eq!(skill_count(s).await, count);
    let owner = writer(s, "every-ns-owner", &["*"], &["read", "write"]).await;
    let read = owner.ok("improve_run", import()).await;
    assert_eq!(read["unchanged"], json!(["skills/sk-m/SKILL.md"]), "{read}");
    assert_eq!(read["candidates"][0]["file"], "skills/a-new/SKILL.md");
    assert_eq!(read["candidates"][0]["from_skill"], Value::Null);
    let id = read["candidates"][0]["skill"].as_str().expect("an id");
    let new = row(s, id).await;
    assert_eq!(
        (new.status.as_str(), new.title.as_str()),
        ("candidate", "Retry flaky tests")
    );
    assert_eq!(skill_count(s).await, count + 1);
}

pub(crate) async fn only_the_namespaces_writers_copy_its_skills(env: &Env) {
    let (s, g) = (&env.s, &env.g);
    live_skill(s, "sk-w").await;
    s.namespace("other").await;
    let reader = writer(s, "reader", &[NS], &["read"]).await;
    let stranger = writer(s, "stranger", &["other"], &["read", "write"]).await;
    for (c, why) in [
        (&reader, "improve_run needs the write grant"),
        (
            &stranger,
            "namespace \"proj\" is outside this caller's namespaces",
        ),
    ] {
        for args in [export(), import()] {
            let denied = c.err("improve_run", args.clone()).await;
            assert!(denied.contains(why), "{args}: {denied}");
        }
    }
    assert!(!g.branch_names(REPO).iter().any(|b| b == BRANCH));
    assert!(g.pulls(REPO).is_empty());
    assert!(audits(s, "skills-exported").await.is_empty());
    // Without a repository the namespace maps, both say what they need.
    let o = writer(s, "other-owner", &["other"], &["read", "write"]).await;
    let none = o
        .ok(
            "improve_run",
            json!({"action": "export_skills", "namespace": "other"}),
        )
        .await;
    assert_eq!(none["ok"], false, "{none}");
    assert!(
        none["refusal"]
            .as_str()
            .is_some_and(|r| r.starts_with("export_skills: GitHub: not found")),
        "{none}"
    );
}
