//! Which shell commands push or merge, read the way a shell would split them: a command line
//! is cut into simple commands at `;`, `&&`, `||`, `|`, `&` and newlines (outside quotes),
//! each is split into words with shell quoting, leading `VAR=value` assignments and wrappers
//! (`env`, `sudo`, `command`, `exec`, `nohup`, `time`) are skipped, and git's global options
//! (`-C dir`, `-c k=v`, `--git-dir`, ...) are stepped over before its subcommand. A command in
//! a subshell or `$(...)` is also found: parentheses and backticks cut like separators.

/// One thing a command line does that the hooks gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gated {
    /// `git push`: the branches it names on the remote (empty: the current branch), and
    /// whether it pushes every branch (`--all`, `--mirror`).
    Push {
        /// Destination branches named by refspecs (`refs/heads/` and `+` stripped).
        branches: Vec<String>,
        /// What each destination is pushed from, in the same order: `HEAD`, a local branch
        /// (a bare refspec pushes the branch of that name), or empty for a deletion.
        sources: Vec<String>,
        /// `--all` or `--mirror`.
        every_branch: bool,
    },
    /// `git merge` (into the current branch).
    GitMerge,
    /// `gh pr merge` (into the pull request's base), with the pull request's number when the
    /// command names one (`gh pr merge 12`, or its URL).
    PrMerge {
        /// The number named, if any (none: the current branch's pull request).
        number: Option<u64>,
    },
}

/// The simple commands of `line`, each as its words.
pub fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let end_word = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                word.push(n);
                            }
                        }
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next()
                    && n != '\n'
                {
                    word.push(n);
                }
            }
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '{' | '}' => {
                end_word(&mut word, &mut in_word, &mut words);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '$' if chars.peek() == Some(&'(') => {
                end_word(&mut word, &mut in_word, &mut words);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            c if c.is_whitespace() => end_word(&mut word, &mut in_word, &mut words),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut words);
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

/// The words of a simple command after assignments and wrappers.
fn program_words(words: &[String]) -> &[String] {
    let mut rest = words;
    loop {
        match rest.first().map(String::as_str) {
            Some(w) if is_assignment(w) => rest = &rest[1..],
            Some("env" | "sudo" | "command" | "exec" | "nohup" | "time" | "then" | "do" | "!") => {
                rest = &rest[1..];
                // Their own options (`sudo -u x` is rare enough to read as `-u` then a program).
                while rest.first().is_some_and(|w| w.starts_with('-')) {
                    rest = &rest[1..];
                }
            }
            _ => return rest,
        }
    }
}

fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// Whether `word` runs git or gh (by name or path).
fn is_program(word: &str, name: &str) -> bool {
    word == name || word.rsplit('/').next() == Some(name)
}

/// git's global options that take the next word as their value.
const GIT_VALUED: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--exec-path",
    "--config-env",
    "--super-prefix",
];

/// What one simple command does, if the hooks gate it.
pub fn classify_words(words: &[String]) -> Option<Gated> {
    let words = program_words(words);
    let (program, args) = words.split_first()?;
    if is_program(program, "gh") {
        let mut positional = Vec::new();
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "-R" | "--repo" => i += 2,
                a if a.starts_with('-') => i += 1,
                a => {
                    positional.push(a);
                    i += 1;
                }
            }
        }
        if !positional.starts_with(&["pr", "merge"]) {
            return None;
        }
        let number = positional.get(2).and_then(|p| {
            let tail = p.rsplit('/').next().unwrap_or(p);
            tail.trim_start_matches('#').parse::<u64>().ok()
        });
        return Some(Gated::PrMerge { number });
    }
    if !is_program(program, "git") {
        return None;
    }
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if GIT_VALUED.contains(&a) {
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    let sub = args.get(i)?.as_str();
    let rest = &args[i + 1..];
    match sub {
        "merge" => Some(Gated::GitMerge),
        "push" => Some(push_targets(rest)),
        _ => None,
    }
}

/// `git push`'s options that take the next word as their value.
const PUSH_VALUED: &[&str] = &["-o", "--push-option", "--repo", "--receive-pack", "--exec"];

fn push_targets(args: &[String]) -> Gated {
    let mut positional = Vec::new();
    let mut every_branch = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            positional.extend(args[i + 1..].iter().cloned());
            break;
        }
        if PUSH_VALUED.contains(&a) {
            i += 2;
            continue;
        }
        if a == "--all" || a == "--mirror" || a.starts_with("--branches") {
            every_branch = true;
        } else if !a.starts_with('-') {
            positional.push(args[i].clone());
        }
        i += 1;
    }
    // The first positional word is the remote; the rest are refspecs.
    let (sources, branches): (Vec<String>, Vec<String>) = positional
        .iter()
        .skip(1)
        .filter_map(|spec| {
            let spec = spec.trim_start_matches('+');
            let (src, dst) = spec.rsplit_once(':').unwrap_or((spec, spec));
            if dst.is_empty() {
                // `src:` is not a push of anything.
                return None;
            }
            let strip = |r: &str| r.strip_prefix("refs/heads/").unwrap_or(r).to_owned();
            Some((strip(src), strip(dst)))
        })
        .filter(|(_, b)| !b.is_empty() && !b.starts_with("refs/tags/"))
        .unzip();
    Gated::Push {
        branches,
        sources,
        every_branch,
    }
}

/// Everything `line` does that the hooks gate, in order.
pub fn classify(line: &str) -> Vec<Gated> {
    simple_commands(line)
        .iter()
        .filter_map(|w| classify_words(w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(branches: &[&str]) -> Gated {
        Gated::Push {
            branches: branches.iter().map(|b| (*b).to_owned()).collect(),
            sources: branches.iter().map(|b| (*b).to_owned()).collect(),
            every_branch: false,
        }
    }

    fn push_from(src: &str, dst: &str) -> Gated {
        Gated::Push {
            branches: vec![dst.to_owned()],
            sources: vec![src.to_owned()],
            every_branch: false,
        }
    }

    #[test]
    fn every_spelling_of_a_push_is_a_push() {
        for (line, want) in [
            ("git push", push(&[])),
            ("git push origin", push(&[])),
            ("git push -u origin feature", push(&["feature"])),
            (
                "git push --force-with-lease origin HEAD:main",
                push_from("HEAD", "main"),
            ),
            (
                "git -C /tmp/wt push origin +topic:refs/heads/main",
                push_from("topic", "main"),
            ),
            ("git -c push.default=current push", push(&[])),
            ("git --no-pager push origin a b", push(&["a", "b"])),
            ("/usr/bin/git push origin x", push(&["x"])),
            ("GIT_TRACE=1 git push origin x", push(&["x"])),
            ("cargo test && git push origin x", push(&["x"])),
            ("cd sub; git push", push(&[])),
            ("true || git 'push' origin x", push(&["x"])),
            ("(cd a && git push origin y)", push(&["y"])),
            ("echo $(git push origin z)", push(&["z"])),
            ("git push -o ci.skip origin w", push(&["w"])),
            ("git push origin :old", push_from("", "old")),
            ("sudo -E git push origin q", push(&["q"])),
        ] {
            assert_eq!(classify(line), vec![want], "{line}");
        }
        assert_eq!(
            classify("git push --all origin"),
            vec![Gated::Push {
                branches: vec![],
                sources: vec![],
                every_branch: true
            }]
        );
    }

    #[test]
    fn merges_are_found_and_other_commands_pass() {
        assert_eq!(
            classify("gh pr merge 12 --squash"),
            vec![Gated::PrMerge { number: Some(12) }]
        );
        assert_eq!(
            classify("gh pr merge https://github.com/a/b/pull/31"),
            vec![Gated::PrMerge { number: Some(31) }]
        );
        assert_eq!(
            classify("gh --repo a/b pr merge"),
            vec![Gated::PrMerge { number: None }]
        );
        assert_eq!(classify("git merge feature"), vec![Gated::GitMerge]);
        for line in [
            "git status",
            "echo 'git push'",
            "echo \"git push origin main\"",
            "git log --grep push",
            "grep -r push .",
            "git commit -m 'push later'",
            "gh pr view 3",
            "cargo test",
            "pushd dir",
            "git stash push",
        ] {
            assert_eq!(classify(line), vec![], "{line}");
        }
    }
}
