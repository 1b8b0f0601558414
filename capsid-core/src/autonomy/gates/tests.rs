//! Gate tests: the command table, the migration parser, the preconditions, and the property
//! that a never-list match refuses whatever class the command would otherwise fit.

use super::*;
use proptest::prelude::*;

/// A class is shown (and recorded in the resume's audit row) by the id the policy document
/// spells.
#[test]
fn classes_display_as_the_policy_spells_them() {
    let shown: Vec<String> = GateClass::ALL.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["additive_migration", "push_branch", "open_pr"]);
}

fn policy(enabled: bool) -> GatePolicy {
    GatePolicy {
        version: "g1".into(),
        enabled,
    }
}

#[test]
fn command_table() {
    use ClassifiedCommand::*;
    let accepted: [(&str, ClassifiedCommand); 9] = [
        ("git push origin feature", PushBranch),
        ("  git push -u origin improve/capsid-a01  ", PushBranch),
        ("git push --set-upstream origin fix/lease_2.0", PushBranch),
        ("GIT PUSH ORIGIN Feature-X", PushBranch),
        ("gh pr create --fill", OpenPr),
        ("gh pr create --title \"Add index\" --body x", OpenPr),
        (
            "npx wrangler d1 execute capsid --remote --file=migrations/0018_add.sql",
            AdditiveMigration {
                path: "migrations/0018_add.sql".into(),
            },
        ),
        (
            "wrangler d1 execute DB --file \"db/migrations/0002.sql\"",
            AdditiveMigration {
                path: "db/migrations/0002.sql".into(),
            },
        ),
        (
            "wrangler d1 execute DB --local --file= 'migrations/0003.sql'",
            AdditiveMigration {
                path: "migrations/0003.sql".into(),
            },
        ),
    ];
    for (command, want) in accepted {
        assert_eq!(classify_command(command), Ok(want), "{command}");
    }

    let never: [(&str, &str); 22] = [
        ("git push --force origin x", "force-pushes"),
        ("git push origin x --force-with-lease", "force-pushes"),
        ("git push -f origin x", "force-pushes"),
        ("git push origin main", "default branch"),
        ("git push -u origin master", "default branch"),
        ("git push origin +refs/heads/x", "force-updates a ref"),
        ("gh pr merge 3", "the human's gate"),
        ("rm -rf /", "deletes files recursively"),
        ("rm -r build", "deletes files recursively"),
        ("npx wrangler secret put TOKEN", "secret"),
        ("wrangler secret delete TOKEN", "secret"),
        ("gh secret set X", "repository secret"),
        ("echo x | secret bulk", "secret"),
        ("capsid agents revoke bot", "revokes a credential"),
        ("npx wrangler deploy", "it deploys"),
        ("wrangler rollback", "changes what is deployed"),
        ("vim wrangler.jsonc", "deployment configuration"),
        ("improve_run --action mode", "the loop's mode"),
        (
            "wrangler d1 execute DB --command \"DROP TABLE jobs\"",
            "drops a database object",
        ),
        (
            "wrangler d1 execute DB --command \"delete from jobs\"",
            "deletes rows",
        ),
        (
            "wrangler d1 execute DB --command \"TRUNCATE jobs\"",
            "empties a table",
        ),
        (
            "gh pr create --title 'merge to main'; git push origin main",
            "default branch",
        ),
    ];
    for (command, cue) in never {
        let refusal = classify_command(command).unwrap_err();
        assert!(
            matches!(refusal, GateRefusal::NeverList { .. }),
            "{command}: {refusal:?}"
        );
        assert!(refusal.to_string().contains(cue), "{command}: {refusal}");
    }

    let refused: [(&str, GateRefusal); 8] = [
        ("", GateRefusal::NoCommand),
        ("   \n ", GateRefusal::NoCommand),
        ("gh pr list", GateRefusal::NoClass),
        ("git push upstream feature", GateRefusal::NoClass),
        ("git push origin feature extra", GateRefusal::NoClass),
        ("git push origin feat~1", GateRefusal::NoClass),
        ("cd web && gh pr create", GateRefusal::NoClass),
        (
            "wrangler d1 execute DB --file=seed/data.sql",
            GateRefusal::NotUnderMigrations {
                path: "seed/data.sql".into(),
            },
        ),
    ];
    for (command, want) in refused {
        assert_eq!(classify_command(command), Err(want), "{command:?}");
    }
}

#[test]
fn word_boundaries_are_ascii_as_in_javascript() {
    // `é` is not a JavaScript word character, so `\brevoke` matches right after it.
    assert!(never_list_reason("gh pr create --title érevoke").is_some());
    assert!(never_list_reason("gh pr create --title irrevocable").is_none());
}

fn tools(text: &str) -> MigrationTools {
    MigrationTools::parse(text).expect("tools")
}

/// The self-hosted migration tools (issue 56, item 13): each recognised only when the
/// namespace's setting names it, each reading a file or folder under `migrations/`.
#[test]
fn self_hosted_migration_commands_table() {
    use ClassifiedCommand::*;
    let all = tools("d1,psql,sqlx");
    let file = |p: &str| AdditiveMigration { path: p.into() };
    let folder = |d: &str| AdditiveMigrationFolder { dir: d.into() };
    let accepted: [(&str, ClassifiedCommand); 9] = [
        (
            "psql \"$DATABASE_URL\" -f migrations/0005_add.sql",
            file("migrations/0005_add.sql"),
        ),
        (
            "psql --file=migrations/0006.sql app",
            file("migrations/0006.sql"),
        ),
        (
            "psql -v ON_ERROR_STOP=1 --file 'db/migrations/0007.sql'",
            file("db/migrations/0007.sql"),
        ),
        (
            "  PSQL app -fmigrations/0008.sql ",
            file("migrations/0008.sql"),
        ),
        ("sqlx migrate run", folder("migrations")),
        (
            "sqlx migrate run --source db/migrations/",
            folder("db/migrations"),
        ),
        (
            "sqlx migrate run --source=\"migrations\" --database-url \"$DATABASE_URL\"",
            folder("migrations"),
        ),
        (
            "npx wrangler d1 execute capsid --file=migrations/0009.sql",
            file("migrations/0009.sql"),
        ),
        ("git push origin feature", PushBranch),
    ];
    for (command, want) in accepted {
        assert_eq!(classify_command_for(command, &all), Ok(want), "{command}");
    }
    let psql = GateRefusal::NotOneMigration {
        tool: MigrationTool::Psql,
    };
    let sqlx = GateRefusal::NotOneMigration {
        tool: MigrationTool::Sqlx,
    };
    let refused: [(&str, GateRefusal); 13] = [
        (
            "psql -f seed/data.sql",
            GateRefusal::NotUnderMigrations {
                path: "seed/data.sql".into(),
            },
        ),
        ("psql -f migrations/a.sql -f migrations/b.sql", psql.clone()),
        ("psql app < migrations/a.sql", psql.clone()),
        ("psql app", psql.clone()),
        ("psql -f migrations/a.sql; echo done", psql.clone()),
        ("psql -f migrations/a.sql | tee log", psql.clone()),
        ("psql -f migrations/a.sql && echo done", psql.clone()),
        (
            "psql -f migrations/$(ls migrations | tail -1)",
            psql.clone(),
        ),
        ("sqlx migrate run && echo done", sqlx.clone()),
        ("sqlx migrate run > log", sqlx),
        (
            "sqlx migrate run --source seeds",
            GateRefusal::NotUnderMigrations {
                path: "seeds".into(),
            },
        ),
        ("sqlx migrate runs", GateRefusal::NoClass),
        ("xpsql -f migrations/a.sql", GateRefusal::NoClass),
    ];
    for (command, want) in refused {
        assert_eq!(
            classify_command_for(command, &all),
            Err(want),
            "{command:?}"
        );
    }
    let psql_error = GateRefusal::NotOneMigration {
        tool: MigrationTool::Psql,
    }
    .to_string();
    assert!(
        psql_error.starts_with("this psql command runs more than the one migration"),
        "{psql_error}"
    );
}

#[test]
fn a_tool_the_namespace_does_not_name_matches_no_class() {
    let d1 = "wrangler d1 execute DB --file=migrations/0002.sql";
    let psql = "psql -f migrations/0002.sql";
    let sqlx = "sqlx migrate run";
    // The default is the Worker's: d1 only.
    assert!(classify_command(d1).is_ok());
    for other in [psql, sqlx] {
        assert_eq!(
            classify_command(other),
            Err(GateRefusal::NoClass),
            "{other}"
        );
    }
    let only_psql = tools("psql");
    assert_eq!(
        classify_command_for(d1, &only_psql),
        Err(GateRefusal::NoClass)
    );
    assert!(classify_command_for(psql, &only_psql).is_ok());
    assert_eq!(
        classify_command_for(sqlx, &only_psql),
        Err(GateRefusal::NoClass)
    );
    let only_sqlx = tools("sqlx");
    assert_eq!(
        classify_command_for(psql, &only_sqlx),
        Err(GateRefusal::NoClass)
    );
    assert!(classify_command_for(sqlx, &only_sqlx).is_ok());
}

#[test]
fn the_self_hosted_never_list() {
    let all = tools("d1,psql,sqlx");
    let never: [(&str, &str); 9] = [
        ("sqlx migrate revert", "reverts an applied migration"),
        ("sqlx database drop -y", "drops a database"),
        ("sqlx database reset", "drops a database"),
        ("dropdb app", "drops a database"),
        (
            "pg_restore --clean -d app dump",
            "overwrites a database from a dump",
        ),
        (
            "psql -c \"UPDATE jobs SET status = 'done'\" -f migrations/a.sql",
            "command line, which nobody parsed",
        ),
        ("psql app --command=\"select 1\"", "nobody parsed"),
        (
            "psql -f migrations/a.sql -c\"DROP SCHEMA x\"",
            "drops a database object",
        ),
        ("git checkout -f main", "forces a git command"),
    ];
    for (command, cue) in never {
        let refusal = classify_command_for(command, &all).unwrap_err();
        assert!(
            matches!(refusal, GateRefusal::NeverList { .. }),
            "{command}: {refusal:?}"
        );
        assert!(refusal.to_string().contains(cue), "{command}: {refusal}");
    }
    // `-f` away from git is psql's file flag, not a force.
    assert_eq!(never_list_reason("psql -f migrations/a.sql"), None);
    assert_eq!(never_list_reason("gh pr create -f"), None);
    assert!(never_list_reason("git push -f origin x").is_some());
}

#[test]
fn a_sqlx_folder_is_approved_only_when_every_forward_migration_is_additive() {
    for (name, forward) in [
        ("0001_init.sql", true),
        ("0002_add.up.SQL", true),
        ("0002_add.down.sql", false),
        ("0002_add.DOWN.sql", false),
        ("README.md", false),
        ("sql", false),
    ] {
        assert_eq!(is_forward_migration(name), forward, "{name}");
    }
    let file = |p: &str, sql: Option<&str>| (p.to_owned(), sql.map(str::to_owned));
    assert_eq!(
        approve_migration_folder("g1", "migrations", &[]),
        Err(GateRefusal::NoMigrations {
            dir: "migrations".into()
        })
    );
    assert_eq!(
        approve_migration_folder(
            "g1",
            "migrations",
            &[
                file("migrations/0001.sql", Some("CREATE TABLE IF NOT EXISTS t (id TEXT)")),
                file("migrations/0002.sql", Some("ALTER TABLE t ADD COLUMN x; CREATE INDEX i ON t(x)")),
            ]
        ),
        Ok(Approval {
            class: GateClass::AdditiveMigration,
            detail: "migrations/0001.sql: CREATE TABLE IF NOT EXISTS; migrations/0002.sql: ALTER TABLE ADD COLUMN, CREATE INDEX".into(),
            policy_version: "g1".into(),
        })
    );
    assert_eq!(
        approve_migration_folder(
            "g1",
            "migrations",
            &[
                file("migrations/0001.sql", Some("CREATE INDEX i ON t(x)")),
                file("migrations/0002.sql", None),
            ]
        ),
        Err(GateRefusal::MigrationUnreadable {
            path: "migrations/0002.sql".into()
        })
    );
    let refused = approve_migration_folder(
        "g1",
        "migrations",
        &[
            file("migrations/0001.sql", Some("CREATE INDEX i ON t(x)")),
            file("migrations/0002.sql", Some("UPDATE t SET x = 1")),
        ],
    );
    assert_eq!(
        refused,
        Err(GateRefusal::FolderNotAdditive {
            path: "migrations/0002.sql".into(),
            statement: "UPDATE t SET x = 1".into(),
        })
    );
    let shown = refused.unwrap_err().to_string();
    assert!(
        shown.starts_with("migrations/0002.sql contains a statement")
            && shown.contains("sqlx migrate run applies whichever migrations are pending"),
        "{shown}"
    );
    assert_eq!(
        approve_migration_folder(
            "g1",
            "migrations",
            &[file("migrations/0001.sql", Some("-- nothing"))]
        ),
        Err(GateRefusal::NoStatements)
    );
    assert_eq!(
        pre_approve(
            &policy(true),
            "g1",
            Some("sqlx migrate run"),
            &tools("sqlx")
        ),
        Ok(PreApproval::ReadMigrationFolder {
            dir: "migrations".into(),
            policy_version: "g1".into(),
        })
    );
    assert_eq!(
        pre_approve(
            &policy(true),
            "g1",
            Some("sqlx migrate run"),
            &MigrationTools::default()
        ),
        Err(GateRefusal::NoClass)
    );
}

#[test]
fn migration_statements_table() {
    use StatementKind::*;
    let sql = "-- 0018: add review columns; DROP TABLE nothing\n\
        CREATE TABLE IF NOT EXISTS reviews (id TEXT PRIMARY KEY);\n\
        /* a block; with DROP TABLE jobs; inside */\n\
        alter table jobs add column review TEXT;\n\
        ALTER TABLE jobs ADD reviewer TEXT;\n\
        create unique index if not exists idx_reviews on reviews(id);\n\
        CREATE INDEX idx_jobs ON jobs(review);;\n";
    assert_eq!(
        classify_migration_sql(sql),
        Ok(vec![
            CreateTableIfNotExists,
            AlterTableAddColumn,
            AlterTableAddColumn,
            CreateIndex,
            CreateIndex
        ])
    );

    assert_eq!(
        classify_migration_sql("-- only a comment\n/* and a block */ ;; "),
        Err(GateRefusal::NoStatements)
    );
    let long = format!(
        "UPDATE jobs SET status = 'x' WHERE id IN ({})",
        "'a',".repeat(40)
    );
    for bad in [
        "CREATE TABLE jobs (id TEXT)",
        "DROP INDEX idx",
        long.as_str(),
        "INSERT INTO t VALUES (1)",
    ] {
        let sql = format!("CREATE TABLE IF NOT EXISTS ok (id TEXT);\n{bad};");
        let Err(GateRefusal::NotAdditive { statement }) = classify_migration_sql(&sql) else {
            panic!("{bad} should refuse");
        };
        assert_eq!(statement, bad.chars().take(80).collect::<String>());
    }
    assert_eq!(
        split_statements("a -- x; y\n; /* ; */ b ;\n c"),
        vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]
    );
}

#[test]
fn preconditions_in_order() {
    let disabled =
        pre_approve(&policy(false), "other", None, &MigrationTools::default()).unwrap_err();
    assert_eq!(
        disabled,
        GateRefusal::PolicyDisabled {
            version: "g1".into()
        }
    );
    let mismatch = pre_approve(
        &policy(true),
        "g0",
        Some("gh pr create"),
        &MigrationTools::default(),
    )
    .unwrap_err();
    assert!(
        mismatch.to_string().contains("'g0'") && mismatch.to_string().contains("'g1'"),
        "{mismatch}"
    );
    assert_eq!(
        pre_approve(&policy(true), "g1", None, &MigrationTools::default()),
        Err(GateRefusal::NoCommand)
    );
    assert_eq!(
        pre_approve(&policy(true), "g1", Some(""), &MigrationTools::default()),
        Err(GateRefusal::NoCommand)
    );
    assert!(matches!(
        pre_approve(
            &policy(true),
            "g1",
            Some("rm -rf /"),
            &MigrationTools::default()
        ),
        Err(GateRefusal::NeverList { .. })
    ));
}

#[test]
fn approvals_carry_class_detail_and_version() {
    assert_eq!(
        pre_approve(
            &policy(true),
            "g1",
            Some("  gh pr create --fill \n"),
            &MigrationTools::default()
        ),
        Ok(PreApproval::Approved(Approval {
            class: GateClass::OpenPr,
            detail: "gh pr create --fill".into(),
            policy_version: "g1".into(),
        }))
    );
    let Ok(PreApproval::ReadMigration {
        path,
        policy_version,
    }) = pre_approve(
        &policy(true),
        "g1",
        Some("wrangler d1 execute DB --file=migrations/0019.sql"),
        &MigrationTools::default(),
    )
    else {
        panic!("a migration needs its file read");
    };
    assert_eq!(path, "migrations/0019.sql");
    assert_eq!(
        approve_migration(
            &policy_version,
            &path,
            Some("CREATE INDEX a ON t(x); ALTER TABLE t ADD COLUMN y")
        ),
        Ok(Approval {
            class: GateClass::AdditiveMigration,
            detail: "migrations/0019.sql: CREATE INDEX, ALTER TABLE ADD COLUMN".into(),
            policy_version: "g1".into(),
        })
    );
    assert_eq!(
        approve_migration("g1", &path, None),
        Err(GateRefusal::MigrationUnreadable {
            path: "migrations/0019.sql".into()
        })
    );
}

/// Fragments that each match a never-list entry on their own, whatever surrounds them.
const NEVER_FRAGMENTS: [&str; 28] = [
    "wrangler secret put X",
    "npx  wrangler secret",
    "gh secret set TOKEN",
    "secret delete",
    "revoke",
    "--force",
    "--force-with-lease",
    "git -f",
    "push x +refs/heads/y",
    "wrangler deploy",
    "npx wrangler rollback",
    "wrangler.json",
    "improve_mode",
    "improve_run",
    "drop column c",
    "delete from t",
    "truncate",
    "rm -rf",
    "rm -r",
    "gh pr merge",
    "git push origin main",
    "git push master",
    "drop database app",
    "sqlx migrate revert",
    "sqlx database reset",
    "dropdb app",
    "pg_restore dump",
    "psql db -c",
];

fn class_fitting_command() -> impl Strategy<Value = (String, GateClass)> {
    let branch = "[a-z][a-z0-9._/-]{0,20}";
    let words = prop::collection::vec("[a-z][a-z0-9]{0,8}", 0..4);
    prop_oneof![
        (
            prop_oneof![Just(""), Just("-u "), Just("--set-upstream ")],
            branch
        )
            .prop_map(|(flag, b)| (format!("git push {flag}origin {b}"), GateClass::PushBranch)),
        words.clone().prop_map(|w| (
            format!("gh pr create --title {}", w.join(" ")),
            GateClass::OpenPr
        )),
        (words, "[0-9]{4}_[a-z]{1,8}").prop_map(|(w, n)| (
            format!(
                "npx wrangler d1 execute db {} --file=migrations/{n}.sql",
                w.join(" ")
            ),
            GateClass::AdditiveMigration,
        )),
    ]
    // A generated word or branch may itself be on the never-list (`main`, `revoke`, ...).
    .prop_filter("fits its class", |(command, _)| {
        never_list_reason(command).is_none()
    })
}

fn case_shuffled(text: &str, upper: &[bool]) -> String {
    text.chars()
        .zip(upper.iter().cycle())
        .map(|(c, up)| if *up { c.to_ascii_uppercase() } else { c })
        .collect()
}

proptest! {
    #[test]
    fn a_never_list_match_refuses_whatever_class_the_command_fits(
        (command, class) in class_fitting_command(),
        fragment in prop::sample::select(NEVER_FRAGMENTS.to_vec()),
        upper in prop::collection::vec(any::<bool>(), 1..8),
        at in any::<prop::sample::Index>(),
    ) {
        prop_assert_eq!(classify_command(&command).map(|c| c.class()), Ok(class), "{}", command);
        let tokens: Vec<&str> = command.split(' ').collect();
        let at = at.index(tokens.len() + 1);
        let fragment = case_shuffled(fragment, &upper);
        let spliced = [&tokens[..at], &[fragment.as_str()], &tokens[at..]].concat().join(" ");
        let refusal = classify_command(&spliced);
        prop_assert!(matches!(refusal, Err(GateRefusal::NeverList { .. })), "{} -> {:?}", spliced, refusal);
    }

    #[test]
    fn classification_never_panics_and_approves_only_known_shapes(command in "\\PC{0,80}") {
        if let Ok(classified) = classify_command(&command) {
            let trimmed = command.trim().to_ascii_lowercase();
            let shaped = match classified.class() {
                GateClass::PushBranch => trimmed.starts_with("git"),
                GateClass::OpenPr => trimmed.starts_with("gh"),
                GateClass::AdditiveMigration => trimmed.contains("d1"),
            };
            prop_assert!(shaped, "{:?}", command);
            prop_assert!(never_list_reason(command.trim()).is_none());
        }
    }
}
