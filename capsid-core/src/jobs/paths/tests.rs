use super::*;
use proptest::prelude::*;
use serde_json::json;

fn lease(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| (*p).to_owned()).collect()
}

#[test]
fn disjoint_folders_files_and_extensions_do_not_overlap() {
    for (a, b) in [
        ("src/api/**", "src/web/**"),
        ("docs/*.md", "docs/*.rs"),
        ("src/api", "src/apis"),
        ("a/b/c.rs", "a/b/d.rs"),
        ("crates/x-*/**", "docs/**"),
        ("src/[ab].rs", "src/c.rs"),
        ("src/{api,web}/**", "src/cli/**"),
        ("test_*.py", "main_*.py"),
    ] {
        assert!(!overlap(a, b), "{a} and {b} are disjoint");
        assert!(!overlap(b, a), "{b} and {a} are disjoint");
    }
}

#[test]
fn patterns_that_share_a_path_overlap() {
    for (a, b) in [
        ("src/**", "src/api/x.rs"),
        ("**/*.md", "src/api"),
        ("*.md", "README.md"),
        ("src", "src/a.rs"),
        ("src/api/**", "src/api/**"),
        ("src/*/mod.rs", "src/api/**"),
        ("src/a*", "src/*b"),
        ("src/[ab].rs", "src/a.rs"),
        ("src/{api,web}/**", "src/web/x"),
    ] {
        assert!(overlap(a, b), "{a} and {b} overlap");
        assert!(overlap(b, a), "{b} and {a} overlap");
    }
}

#[test]
fn a_pattern_covers_what_it_matches_and_everything_below() {
    assert!(covers("src/api", "src/api/x.rs"));
    assert!(covers("src/api/**", "src/api/deep/x.rs"));
    assert!(covers("*.md", "README.md"));
    assert!(!covers("*.md", "docs/a.md"), "'*' stays within a segment");
    assert!(covers("**/*.md", "docs/a.md"));
    assert!(!covers("src/api", "src/apis/x.rs"));
    assert!(Lease::Whole.covers("anything/at/all"));
    let held = lease(&["src/api/**", "docs/api.md"]);
    let l = Lease::Paths(&held);
    assert!(l.covers("docs/api.md") && l.covers("src/api/v1/x.rs"));
    assert!(!l.covers("src/web/x.rs"));
    assert_eq!(l.describe(), "`src/api/**`, `docs/api.md`");
}

#[test]
fn paths_are_read_checked_and_refused_by_field_and_rule() {
    assert_eq!(parse_paths(None), Ok(None));
    assert_eq!(parse_paths(Some(&json!(null))), Ok(None));
    assert_eq!(
        parse_paths(Some(&json!(["src/api/", "docs/*.md"]))),
        Ok(Some(lease(&["src/api", "docs/*.md"]))),
        "a trailing slash names the folder"
    );
    assert_eq!(
        parse_paths(Some(&json!("src/**"))),
        Err(PathsError::NotList)
    );
    assert_eq!(parse_paths(Some(&json!([1]))), Err(PathsError::NotList));
    assert_eq!(parse_paths(Some(&json!([]))), Err(PathsError::Empty));
    let many: Vec<String> = (0..=MAX_PATHS).map(|i| format!("p{i}")).collect();
    assert_eq!(
        parse_paths(Some(&json!(many))),
        Err(PathsError::TooMany { n: MAX_PATHS + 1 })
    );
    for (bad, rule) in [
        ("/etc/passwd", "starts with '/'"),
        ("src/../secrets", "'..'"),
        ("src//x", "empty segment"),
        ("src\\x", "backslash"),
        ("src/a**", "'**' inside a segment"),
        ("src/{a,b", "not a glob"),
        ("src/{a,b/c}", "not a glob"),
        ("", "is empty"),
    ] {
        let err = parse_paths(Some(&json!(["ok/**", bad]))).expect_err(bad);
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("paths[1] {bad:?} ")) && text.contains(rule),
            "{bad}: {text}"
        );
    }
}

fn live(id: &str, title: &str, paths: Option<&[&str]>) -> LiveLease {
    LiveLease {
        job_id: id.to_owned(),
        title: title.to_owned(),
        leased: paths.map_or_else(|| vec![WHOLE.to_owned()], lease),
    }
}

#[test]
fn a_job_waits_on_the_live_lease_it_overlaps_and_names_it() {
    let mut job = crate::jobs::model::tests::sample_job();
    job.paths = Some(lease(&["src/api/**"]));
    let held = [
        live("job_web", "Web", Some(&["src/web/**"])),
        live("job_api", "Api", Some(&["src/api/v1/**"])),
    ];
    assert_eq!(
        waiting_on(&job, true, &held).as_deref(),
        Some("waiting on job job_api ('Api') for `src/api/v1/**`")
    );
    assert_eq!(
        waiting_on(&job, true, &held[..1]),
        None,
        "disjoint paths run at once"
    );
    let whole = [live("job_all", "All", None)];
    assert_eq!(
        waiting_on(&job, true, &whole).as_deref(),
        Some("waiting on job job_all ('All') for the whole repository")
    );
    job.paths = None;
    assert_eq!(
        waiting_on(&job, true, &held[..1]).as_deref(),
        Some(
            "waiting on job job_web ('Web') for `src/web/**` (this job has no paths, so it leases the whole repository)"
        )
    );
    assert_eq!(
        waiting_on(&job, false, &held[..1]),
        None,
        "a claim outside a driver of a job without paths leases nothing, so it waits on nothing"
    );
    assert_eq!(lease_for_claim(&job, true), Some(vec![WHOLE.to_owned()]));
    assert_eq!(lease_for_claim(&job, false), None);
    let own = [live(&job.id, "Itself", None)];
    assert_eq!(
        waiting_on(&job, true, &own),
        None,
        "a job never waits on itself"
    );
}

fn segment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a", "b", "ab", "ba", "aab", "*", "a*", "*a", "*b*", "?", "a?", "[ab]", "[!a]b", "{a,ba}",
        "{ab,b}*", "**",
    ])
}

fn pattern() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 1..4).prop_map(|s| s.join("/"))
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "ab", "ba", "aa", "bab"]),
        1..5,
    )
    .prop_map(|s| s.join("/"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// The rule never calls two patterns disjoint when some path is covered by both.
    #[test]
    fn overlap_never_says_disjoint_for_patterns_sharing_a_path(
        a in pattern(), b in pattern(), p in path()
    ) {
        prop_assert!(check_pattern(&a).is_ok() && check_pattern(&b).is_ok());
        if covers(&a, &p) && covers(&b, &p) {
            prop_assert!(overlap(&a, &b), "{} and {} both cover {}", a, b, p);
        }
        prop_assert_eq!(overlap(&a, &b), overlap(&b, &a));
    }
}
