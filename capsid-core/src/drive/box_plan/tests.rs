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

fn strings(args: &[OsString]) -> Vec<String> {
    args.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

#[test]
fn the_argv_is_exactly_the_isolation_then_the_entries_by_depth_then_the_doors() {
    let spec = BoxSpec::new()
        .tmpfs("/home/agent/tmp")
        .read_write("/h/home", "/home/agent")
        .read_only("/usr", "/usr")
        .symlink("usr/bin", "/bin")
        .door("model", "/run/capsid/model.sock")
        .env("HOME", "/home/agent")
        .cwd("/home/agent")
        .user(0, 100);
    let expected = [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        "box",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        "0",
        "--gid",
        "100",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--bind",
        "/h/home",
        "/home/agent",
        "--tmpfs",
        "/home/agent/tmp",
        "--ro-bind",
        "/run/capsid/model.sock",
        "/run/doors/model.sock",
        "--remount-ro",
        "/",
        "--chdir",
        "/home/agent",
    ];
    assert_eq!(strings(&spec.to_bwrap_args()), expected);
    let checked = spec.validate(&forbidden()).expect("a well-formed box");
    assert_eq!(checked.spec(), &spec);
    assert_eq!(strings(&checked.bwrap_args()), expected);
    // The user is set after the entries were named: it keeps them.
    assert_eq!(checked.spec().mounts().len(), 4);
    assert_eq!(
        strings(&BoxSpec::new().to_bwrap_args())[11..15],
        ["--uid", "1000", "--gid", "1000"]
    );
    assert_eq!(
        strings(&BoxSpec::new().user(1, 2).to_bwrap_args())[11..15],
        ["--uid", "1", "--gid", "2"]
    );
}

#[test]
fn the_accessors_return_exactly_what_was_named() {
    let spec = BoxSpec::new()
        .read_only("/usr", "/usr")
        .door("model", "/run/capsid/model.sock")
        .door("git-2_x", "/run/capsid/git.sock")
        .env("HOME", "/home/agent")
        .env("LANG", "C")
        .env("HOME", "/home/box");
    assert_eq!(
        spec.mounts(),
        [Mount::ReadOnly {
            host: "/usr".into(),
            inside: "/usr".into()
        }]
    );
    assert_eq!(
        spec.doors(),
        [
            DoorMount {
                name: "model".into(),
                host: "/run/capsid/model.sock".into()
            },
            DoorMount {
                name: "git-2_x".into(),
                host: "/run/capsid/git.sock".into()
            },
        ]
    );
    assert_eq!(
        spec.doors()[1].inside(),
        Path::new("/run/doors/git-2_x.sock")
    );
    let env: BTreeMap<String, String> = [("HOME", "/home/box"), ("LANG", "C")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(spec.environment(), &env);
    assert_eq!(spec.working_directory(), Path::new("/"));
    assert_eq!(
        spec.exposed(),
        vec![
            ("read-only bind".to_owned(), Path::new("/usr")),
            (
                "door 'model'".to_owned(),
                Path::new("/run/capsid/model.sock")
            ),
            (
                "door 'git-2_x'".to_owned(),
                Path::new("/run/capsid/git.sock")
            ),
        ]
    );
    let checked = spec.validate(&forbidden()).expect("well-formed");
    assert_eq!(checked.spec(), &spec);
    assert_eq!(checked.environment(), &env);
    assert_eq!(checked.spec().doors().len(), 2);
}

#[test]
fn mapping_host_paths_changes_the_hosts_only() {
    let spec = BoxSpec::new()
        .read_only("/link/usr", "/usr")
        .read_write("/link/clone", "/work")
        .tmpfs("/tmp")
        .symlink("usr/bin", "/bin")
        .door("model", "/link/model.sock")
        .env("A", "b")
        .cwd("/work")
        .user(7, 8);
    let mut seen = Vec::new();
    let mapped = spec.clone().map_host_paths(|p| {
        seen.push(p.to_path_buf());
        Path::new("/real").join(p.strip_prefix("/link").expect("under /link"))
    });
    assert_eq!(
        seen,
        [
            PathBuf::from("/link/usr"),
            "/link/clone".into(),
            "/link/model.sock".into()
        ]
    );
    assert_eq!(
        mapped,
        BoxSpec::new()
            .read_only("/real/usr", "/usr")
            .read_write("/real/clone", "/work")
            .tmpfs("/tmp")
            .symlink("usr/bin", "/bin")
            .door("model", "/real/model.sock")
            .env("A", "b")
            .cwd("/work")
            .user(7, 8)
    );
    // A link that resolves into a forbidden path is refused once resolved.
    let refusal = spec
        .map_host_paths(|_| PathBuf::from("/srv/capsid/data"))
        .validate(&forbidden())
        .expect_err("resolved into the data folder");
    assert_eq!(
        refusal,
        BoxRefusal::Exposes {
            field: "read-only bind".into(),
            host: "/srv/capsid/data".into(),
            forbidden: "/srv/capsid/data".into(),
            how: Exposure::Same,
        }
    );
}

#[test]
fn an_exposure_is_worded_and_a_refusal_says_which_entry_path_and_how() {
    assert_eq!(Exposure::Same.to_string(), "it is that path");
    assert_eq!(Exposure::Ancestor.to_string(), "it holds that path");
    assert_eq!(Exposure::Inside.to_string(), "it lies inside that path");
    let cases = [
        (
            BoxSpec::new().read_only("/srv", "/x"),
            "the box's read-only bind /srv exposes the forbidden path /srv/capsid/data (it holds that path)",
        ),
        (
            BoxSpec::new().read_write("/srv/capsid/signing.key", "/k"),
            "the box's read-write bind /srv/capsid/signing.key exposes the forbidden path /srv/capsid/signing.key (it is that path)",
        ),
        (
            BoxSpec::new().door("model", "/srv/runs/job-2/clone/m.sock"),
            "the box's door 'model' /srv/runs/job-2/clone/m.sock exposes the forbidden path /srv/runs/job-2/clone (it lies inside that path)",
        ),
    ];
    for (spec, text) in cases {
        let refusal = spec.validate(&forbidden()).expect_err(text);
        assert_eq!(refusal.to_string(), text);
    }
}

fn refused(field: &str, value: &str, rule: &'static str) -> BoxRefusal {
    BoxRefusal::Invalid {
        field: field.into(),
        value: value.into(),
        rule,
    }
}

#[test]
fn each_malformed_entry_is_refused_with_its_field_value_and_rule() {
    const TEXT: &str = "must be non-empty and hold no NUL";
    const DOOR: &str = "must be 1 to 32 of a-z, 0-9, '-', '_'";
    const VARIABLE: &str = "must be non-empty, not start with a digit, and hold no '=' or NUL";
    let long = "a".repeat(33);
    let cases: Vec<(BoxSpec, BoxRefusal)> = vec![
        (
            BoxSpec::new().symlink("", "/bin"),
            refused("symlink target", "", TEXT),
        ),
        (
            BoxSpec::new().symlink("usr/\0bin", "/bin"),
            refused("symlink target", "usr/\0bin", TEXT),
        ),
        (
            BoxSpec::new().read_only("/usr\0/x", "/usr"),
            refused("read-only bind", "/usr\0/x", TEXT),
        ),
        (
            BoxSpec::new().read_write("/h/home", "/home/\0"),
            refused("read-write bind", "/home/\0", TEXT),
        ),
        (BoxSpec::new().tmpfs(""), refused("tmpfs", "", TEXT)),
        (
            BoxSpec::new().door("model", "/run/\0.sock"),
            refused("door 'model'", "/run/\0.sock", TEXT),
        ),
        (
            BoxSpec::new().cwd("/work\0"),
            refused("working directory", "/work\0", TEXT),
        ),
        (
            BoxSpec::new().tmpfs("tmp"),
            refused("tmpfs", "tmp", "must be an absolute path"),
        ),
        (
            BoxSpec::new().symlink("usr/bin", "/usr/../bin"),
            refused("symlink", "/usr/../bin", "must not contain '..'"),
        ),
        (
            BoxSpec::new().tmpfs("/"),
            refused("tmpfs", "/", "must not replace the root"),
        ),
        (
            BoxSpec::new().read_only("/usr", "/x").tmpfs("/x/"),
            refused(
                "tmpfs",
                "/x/",
                "another entry already uses this inside path",
            ),
        ),
        (
            BoxSpec::new()
                .tmpfs("/run/doors/git.sock")
                .door("git", "/run/g.sock"),
            refused(
                "door 'git'",
                "/run/doors/git.sock",
                "another entry already uses this inside path",
            ),
        ),
        (
            BoxSpec::new().door("", "/run/x.sock"),
            refused("door name", "", DOOR),
        ),
        (
            BoxSpec::new().door(long.clone(), "/run/x.sock"),
            refused("door name", &long, DOOR),
        ),
        (
            BoxSpec::new().door("a.b", "/run/x.sock"),
            refused("door name", "a.b", DOOR),
        ),
        (
            BoxSpec::new().env("1A", "x"),
            refused("variable name", "1A", VARIABLE),
        ),
        (
            BoxSpec::new().env("A\0", "x"),
            refused("variable name", "A\0", VARIABLE),
        ),
        (
            BoxSpec::new().env("S", "\0"),
            refused("variable S", "(not shown)", "must hold no NUL"),
        ),
    ];
    for (spec, refusal) in cases {
        assert_eq!(spec.validate(&[]), Err(refusal), "{spec:?}");
    }
    assert_eq!(
        BoxSpec::new().validate(&[PathBuf::from("/srv/\0")]),
        Err(refused("forbidden path", "/srv/\0", TEXT))
    );
    assert_eq!(
        refused("door name", "A", DOOR).to_string(),
        "the box's door name \"A\" must be 1 to 32 of a-z, 0-9, '-', '_'"
    );
}

#[test]
fn door_names_of_one_to_32_of_the_alphabet_are_accepted() {
    for name in ["a", "0", "-", "_", "model", "git-2_x", &"z".repeat(32)] {
        let checked = BoxSpec::new()
            .door(name, "/run/x.sock")
            .validate(&[])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(checked.spec().doors()[0].name, name);
    }
}

/// The model of a door name: 1 to 32 bytes of `a-z`, `0-9`, `-`, `_`.
fn door_name_ok(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_'))
}

proptest! {
    #[test]
    fn a_door_name_is_accepted_exactly_when_the_model_accepts_it(
        name in "[a-zA-Z0-9_./ é-]{0,40}",
    ) {
        let result = BoxSpec::new().door(name.clone(), "/run/x.sock").validate(&[]);
        prop_assert_eq!(result.is_ok(), door_name_ok(&name), "{:?}", result);
        if let Err(refusal) = result {
            let expected = refused("door name", &name, "must be 1 to 32 of a-z, 0-9, '-', '_'");
            prop_assert_eq!(refusal, expected);
        }
    }

    #[test]
    fn mapping_with_the_identity_changes_nothing(
        entries in prop::collection::vec(entry(), 0..6),
    ) {
        let spec = build(&entries);
        prop_assert_eq!(spec.clone().map_host_paths(Path::to_path_buf), spec);
    }
}
