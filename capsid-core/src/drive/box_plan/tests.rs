use super::*;
use proptest::prelude::*;

fn forbidden() -> Vec<PathBuf> {
    [
        "/srv/capsid/data",
        "/srv/capsid/signing.key",
        "/srv/runs/job-2/clone",
    ]
    .iter()
    .map(PathBuf::from)
    .collect()
}

#[test]
fn an_empty_box_shows_nothing_and_sets_nothing() {
    let spec = BoxSpec::new();
    assert!(spec.mounts().is_empty() && spec.doors().is_empty());
    assert!(spec.environment().is_empty());
    let checked = spec
        .validate(&forbidden())
        .expect("an empty box exposes nothing");
    let args: Vec<String> = checked
        .bwrap_args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert!(!args.iter().any(|a| a == "--bind" || a == "--ro-bind"));
    for flag in [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--die-with-parent",
        "--new-session",
    ] {
        assert!(args.iter().any(|a| a == flag), "{flag} in {args:?}");
    }
    let uid = args.iter().position(|a| a == "--uid").expect("--uid");
    assert_eq!(args[uid + 1], "1000");
}

#[test]
fn a_bind_of_a_forbidden_path_its_ancestor_or_its_inside_is_refused_by_name() {
    let cases = [
        ("/", Exposure::Ancestor),
        ("/srv", Exposure::Ancestor),
        ("/srv/capsid/data", Exposure::Same),
        ("/srv/capsid/data/", Exposure::Same),
        ("/srv/capsid/./data", Exposure::Same),
        ("/srv/capsid/data/blobs", Exposure::Inside),
        ("/srv/runs/job-2", Exposure::Ancestor),
    ];
    for (host, how) in cases {
        let refusal = BoxSpec::new()
            .read_only(host, "/x")
            .validate(&forbidden())
            .expect_err(host);
        match &refusal {
            BoxRefusal::Exposes { how: got, .. } => assert_eq!(*got, how, "{host}"),
            other => panic!("{host}: {other:?}"),
        }
        let text = refusal.to_string();
        assert!(
            text.contains("read-only bind") && text.contains("/srv/"),
            "{text}"
        );
    }
    let refusal = BoxSpec::new()
        .door("model", "/srv/capsid/data/model.sock")
        .validate(&forbidden())
        .expect_err("a door inside the data folder");
    assert!(refusal.to_string().contains("door 'model'"), "{refusal}");
    let refusal = BoxSpec::new()
        .read_write("/srv/runs", "/work")
        .validate(&forbidden())
        .expect_err("the folder of every clone");
    assert!(
        refusal.to_string().contains("/srv/runs/job-2/clone"),
        "{refusal}"
    );
}

#[test]
fn a_sibling_with_a_shared_prefix_is_not_exposure() {
    BoxSpec::new()
        .read_only("/srv/capsid/database", "/a")
        .read_write("/srv/runs/job-1/clone", "/srv/runs/job-1/clone")
        .read_only("/srv/capsid/signing.key.pub", "/b")
        .validate(&forbidden())
        .expect("siblings are not the forbidden paths");
}

#[test]
fn malformed_entries_are_refused_naming_the_field_and_rule() {
    let cases: Vec<(BoxSpec, &str)> = vec![
        (BoxSpec::new().read_only("usr", "/usr"), "absolute"),
        (BoxSpec::new().read_only("/usr/../srv", "/usr"), "'..'"),
        (BoxSpec::new().read_write("/tmp/x", "/"), "root"),
        (BoxSpec::new().tmpfs("/tmp").tmpfs("/tmp/"), "inside path"),
        (BoxSpec::new().env("A=B", "c"), "variable name"),
        (BoxSpec::new().env("", "c"), "variable name"),
        (BoxSpec::new().env("A", "c\0d"), "NUL"),
        (BoxSpec::new().door("Model", "/run/x.sock"), "door name"),
        (BoxSpec::new().door("a/b", "/run/x.sock"), "door name"),
        (BoxSpec::new().cwd("work"), "working directory"),
    ];
    for (spec, words) in cases {
        let refusal = spec.validate(&[]).expect_err(words);
        assert!(matches!(refusal, BoxRefusal::Invalid { .. }), "{refusal:?}");
        assert!(
            refusal.to_string().contains(words),
            "{refusal} lacks {words}"
        );
    }
    let refusal = BoxSpec::new()
        .validate(&[PathBuf::from("data")])
        .expect_err("a relative forbidden path");
    assert!(refusal.to_string().contains("forbidden path"), "{refusal}");
}

#[test]
fn a_secret_value_is_never_on_the_argv_nor_in_a_refusal() {
    let spec = BoxSpec::new()
        .env("CAPSID_TOKEN", "s3cr3t-value")
        .env("BAD", "x\0s3cr3t-value");
    let refusal = spec.validate(&[]).expect_err("NUL");
    assert!(!refusal.to_string().contains("s3cr3t"), "{refusal}");
    let args = BoxSpec::new()
        .env("CAPSID_TOKEN", "s3cr3t-value")
        .to_bwrap_args();
    assert!(!args.iter().any(|a| a.to_string_lossy().contains("s3cr3t")));
}

#[test]
fn parents_mount_before_children_whatever_the_order_named() {
    let args: Vec<String> = BoxSpec::new()
        .read_write("/h/home", "/home/agent")
        .tmpfs("/home")
        .to_bwrap_args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let tmpfs = args.iter().position(|a| a == "/home").expect("tmpfs");
    let bind = args.iter().position(|a| a == "/home/agent").expect("bind");
    assert!(tmpfs < bind, "{args:?}");
}

#[test]
fn the_system_base_binds_usr_read_only_and_only_the_etc_the_host_has() {
    let spec = BoxSpec::system(|p| p == Path::new("/etc/ssl/certs"));
    assert!(spec.mounts().contains(&Mount::ReadOnly {
        host: "/usr".into(),
        inside: "/usr".into()
    }));
    let etc: Vec<&Path> = spec
        .exposed()
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p.starts_with("/etc"))
        .collect();
    assert_eq!(etc, vec![Path::new("/etc/ssl/certs")]);
    assert!(!spec.exposed().iter().any(|(f, _)| f == "read-write bind"));
    assert!(spec.environment().is_empty());
}

fn segment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "srv", "capsid", "data", "runs", "job-1", "job-2", "key", "d",
    ])
}

fn path() -> impl Strategy<Value = PathBuf> {
    prop::collection::vec(segment(), 0..4).prop_map(|segs| {
        let mut p = PathBuf::from("/");
        for s in segs {
            p.push(s);
        }
        p
    })
}

#[derive(Clone, Debug)]
enum Entry {
    Ro(PathBuf),
    Rw(PathBuf),
    Door(PathBuf),
    Tmpfs,
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        path().prop_map(Entry::Ro),
        path().prop_map(Entry::Rw),
        path().prop_map(Entry::Door),
        Just(Entry::Tmpfs),
    ]
}

fn build(entries: &[Entry]) -> BoxSpec {
    entries
        .iter()
        .enumerate()
        .fold(BoxSpec::new(), |spec, (i, e)| match e {
            Entry::Ro(p) => spec.read_only(p, format!("/in/{i}")),
            Entry::Rw(p) => spec.read_write(p, format!("/in/{i}")),
            Entry::Door(p) => spec.door(format!("d{i}"), p),
            Entry::Tmpfs => spec.tmpfs(format!("/in/{i}")),
        })
}

/// The model: a path shows a forbidden one when either is a prefix of the other, segment-wise.
fn shows(host: &Path, forbidden: &Path) -> bool {
    host.starts_with(forbidden) || forbidden.starts_with(host)
}

proptest! {
    #[test]
    fn a_checked_spec_never_exposes_a_forbidden_path(
        entries in prop::collection::vec(entry(), 0..6),
        forbidden in prop::collection::vec(path(), 0..4),
    ) {
        let spec = build(&entries);
        let hosts: Vec<PathBuf> = entries.iter().filter_map(|e| match e {
            Entry::Ro(p) | Entry::Rw(p) | Entry::Door(p) => Some(p.clone()),
            Entry::Tmpfs => None,
        }).collect();
        let model_refuses = hosts.iter().any(|h| forbidden.iter().any(|f| shows(h, f)));
        match spec.validate(&forbidden) {
            Ok(checked) => {
                prop_assert!(!model_refuses);
                let args = checked.bwrap_args();
                for (i, a) in args.iter().enumerate() {
                    if a == "--bind" || a == "--ro-bind" {
                        let host = Path::new(&args[i + 1]);
                        prop_assert!(!forbidden.iter().any(|f| shows(host, f)), "{host:?}");
                    }
                }
            }
            Err(BoxRefusal::Exposes { host, forbidden: f, .. }) => {
                prop_assert!(model_refuses);
                prop_assert!(shows(&host, &f));
            }
            Err(other) => prop_assert!(false, "unexpected {other}"),
        }
    }

    #[test]
    fn the_environment_is_exactly_what_was_set(
        sets in prop::collection::vec(("[A-Z_]{1,3}", "[a-z0-9]{0,6}"), 0..12),
    ) {
        let mut model = BTreeMap::new();
        let mut spec = BoxSpec::system(|_| true);
        for (name, value) in &sets {
            model.insert(name.clone(), value.clone());
            spec = spec.env(name.clone(), format!("v-{value}"));
        }
        let model: BTreeMap<String, String> =
            model.into_iter().map(|(k, v)| (k, format!("v-{v}"))).collect();
        let checked = spec.validate(&[]).expect("well-formed");
        prop_assert_eq!(checked.environment(), &model);
        for arg in checked.bwrap_args() {
            prop_assert!(!arg.to_string_lossy().starts_with("v-"), "a value on the argv: {arg:?}");
        }
    }
}
