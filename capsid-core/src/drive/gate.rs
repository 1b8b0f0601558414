//! Which test command and build check a run uses, in the one order `capsid drive` and every
//! `capsid hook` share: the flag or its environment variable, then the namespace's runner
//! setting, then the project's mise tasks (`mise run test`, `mise run build-image`). With no
//! test command at all the run is refused: a silently skipped test gate is no gate.

/// Where a command came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `--test-command` / `CAPSID_TEST_COMMAND` (or the build equivalents).
    Flag,
    /// The namespace's runner setting.
    Namespace,
    /// The project's mise task.
    Mise,
}

impl Source {
    /// How a log line names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Namespace => "namespace",
            Source::Mise => "mise",
        }
    }
}

/// A command to run in the worktree with `sh -c`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateCommand {
    /// The command line.
    pub command: String,
    /// Where it came from.
    pub source: Source,
}

/// The mise tasks a project defines (read from `mise.toml` / `.mise.toml`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MiseTasks {
    /// `[tasks.test]`.
    pub test: bool,
    /// `[tasks.build-image]`.
    pub build_image: bool,
}

impl MiseTasks {
    /// The tasks `toml` defines: `[tasks.NAME]` tables (quoted or not) and `NAME = ...`
    /// keys of a `[tasks]` table.
    pub fn read(toml: &str) -> MiseTasks {
        let mut tasks = MiseTasks::default();
        let mut in_tasks = false;
        for line in toml.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                let header = header.trim().trim_matches('[').trim_matches(']').trim();
                in_tasks = header == "tasks";
                if let Some(name) = header.strip_prefix("tasks.") {
                    tasks.note(name.trim().trim_matches('"').trim_matches('\''));
                }
                continue;
            }
            if in_tasks && let Some((key, _)) = line.split_once('=') {
                tasks.note(key.trim().trim_matches('"').trim_matches('\''));
            }
        }
        tasks
    }

    fn note(&mut self, name: &str) {
        match name {
            "test" => self.test = true,
            "build-image" => self.build_image = true,
            _ => {}
        }
    }

    /// Both files' tasks together.
    pub fn union(self, other: MiseTasks) -> MiseTasks {
        MiseTasks {
            test: self.test || other.test,
            build_image: self.build_image || other.build_image,
        }
    }
}

fn pick(flag: Option<&str>, namespace: Option<&str>) -> Option<GateCommand> {
    let given = |v: Option<&str>| {
        v.map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    given(flag)
        .map(|command| GateCommand {
            command,
            source: Source::Flag,
        })
        .or_else(|| {
            given(namespace).map(|command| GateCommand {
                command,
                source: Source::Namespace,
            })
        })
}

/// The test command, or the refusal that stops the run before anything is claimed.
pub fn test_command(
    flag: Option<&str>,
    namespace: Option<&str>,
    mise: MiseTasks,
) -> Result<GateCommand, String> {
    if let Some(c) = pick(flag, namespace) {
        return Ok(c);
    }
    if mise.test {
        return Ok(GateCommand {
            command: "mise run test".into(),
            source: Source::Mise,
        });
    }
    Err("no test command: pass --test-command (or CAPSID_TEST_COMMAND), set the namespace's test command (capsid namespaces update <ns> --test-command ...), or define [tasks.test] in the project's mise.toml. The run is refused rather than finished without a test gate.".into())
}

/// The build check, or `None` when it is to be recorded `skipped`.
pub fn build_command(
    flag: Option<&str>,
    namespace: Option<&str>,
    mise: MiseTasks,
) -> Option<GateCommand> {
    pick(flag, namespace).or_else(|| {
        mise.build_image.then(|| GateCommand {
            command: "mise run build-image".into(),
            source: Source::Mise,
        })
    })
}

/// What one gate run said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateRun {
    /// The command that ran.
    pub command: String,
    /// Its exit code (`None`: killed by a signal or could not start).
    pub exit_code: Option<i32>,
    /// Its output (stdout and stderr), as much as the runner kept.
    pub output: String,
}

impl GateRun {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0)
    }

    /// What failed and the tail of its output, bounded for a hook's reason.
    pub fn failure(&self, what: &str) -> String {
        let code = self.exit_code.map_or_else(
            || "no exit code (killed or not started)".to_owned(),
            |c| format!("exit code {c}"),
        );
        format!(
            "{what} failed: `{}` ended with {code}. The tail of its output:\n{}",
            self.command,
            super::tail(&self.output, super::REASON_MAX - 200)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_then_the_namespace_then_mise() {
        let mise = MiseTasks {
            test: true,
            build_image: true,
        };
        let t = test_command(Some("make check"), Some("cargo test"), mise).expect("flag");
        assert_eq!((t.command.as_str(), t.source), ("make check", Source::Flag));
        let t = test_command(Some("  "), Some("cargo test"), mise).expect("namespace");
        assert_eq!(
            (t.command.as_str(), t.source),
            ("cargo test", Source::Namespace)
        );
        let t = test_command(None, None, mise).expect("mise");
        assert_eq!(
            (t.command.as_str(), t.source),
            ("mise run test", Source::Mise)
        );
        let refused = test_command(None, None, MiseTasks::default()).expect_err("no command");
        assert!(refused.contains("--test-command"), "{refused}");
        assert_eq!(build_command(None, None, MiseTasks::default()), None);
        assert_eq!(
            build_command(None, None, mise).map(|b| b.command),
            Some("mise run build-image".to_owned())
        );
        assert_eq!(
            build_command(None, Some("docker build ."), mise).map(|b| b.source),
            Some(Source::Namespace)
        );
    }

    #[test]
    fn sources_name_themselves_for_the_log() {
        assert_eq!(Source::Flag.as_str(), "flag");
        assert_eq!(Source::Namespace.as_str(), "namespace");
        assert_eq!(Source::Mise.as_str(), "mise");
    }

    #[test]
    fn two_files_tasks_are_their_union() {
        let none = MiseTasks::default();
        let test = MiseTasks {
            test: true,
            build_image: false,
        };
        let build = MiseTasks {
            test: false,
            build_image: true,
        };
        let both = MiseTasks {
            test: true,
            build_image: true,
        };
        assert_eq!(none.union(none), none);
        assert_eq!(test.union(none), test);
        assert_eq!(none.union(test), test);
        assert_eq!(build.union(none), build);
        assert_eq!(none.union(build), build);
        assert_eq!(test.union(build), both);
        assert_eq!(both.union(both), both);
    }

    #[test]
    fn mise_tasks_are_read_from_tables_and_keys() {
        let t = MiseTasks::read("[tools]\nrust = \"1.94\"\n\n[tasks.test]\nrun = \"cargo test\"\n");
        assert_eq!(
            t,
            MiseTasks {
                test: true,
                build_image: false
            }
        );
        let t = MiseTasks::read("[tasks]\ntest = \"pytest\"\n\"build-image\" = \"buildah bud\"\n");
        assert_eq!(
            t,
            MiseTasks {
                test: true,
                build_image: true
            }
        );
        let t = MiseTasks::read(
            "[tasks.\"build-image\"]\nrun = 'x'\n# [tasks.test]\n[env]\ntest = 1\n",
        );
        assert_eq!(
            t,
            MiseTasks {
                test: false,
                build_image: true
            }
        );
    }

    #[test]
    fn a_failure_names_the_command_and_keeps_the_tail() {
        let run = GateRun {
            command: "cargo test".into(),
            exit_code: Some(101),
            output: format!("{}\ntest widgets ... FAILED", "x".repeat(10_000)),
        };
        let f = run.failure("tests");
        assert!(
            f.starts_with("tests failed: `cargo test` ended with exit code 101"),
            "{f}"
        );
        assert!(f.ends_with("test widgets ... FAILED"));
        assert!(f.chars().count() <= super::super::REASON_MAX);
        assert!(!run.passed());
    }
}
