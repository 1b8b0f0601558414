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
    /// command names one (`gh pr merge 12`, or its URL), and `gh api` calls that merge a pull
    /// request (`PUT .../pulls/N/merge`, the GraphQL `mergePullRequest` mutation).
    PrMerge {
        /// The number named, if any (none: the current branch's pull request).
        number: Option<u64>,
        /// The repository named (`-R owner/name`, or the `gh api` path's), if any.
        repo: Option<String>,
    },
    /// A push or merge whose target the hook cannot read from the text (the shell computes
    /// it: a variable, a command substitution, `xargs`, `eval`): refused, failing closed.
    Unreadable {
        /// What made it unreadable.
        why: String,
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
        return classify_gh(args);
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

/// `gh`'s options (global, `pr merge`'s and `api`'s) that take the next word as their value.
const GH_VALUED: &[&str] = &[
    "-R",
    "--repo",
    "-t",
    "--subject",
    "-b",
    "--body",
    "-F",
    "--body-file",
    "--match-head-commit",
    "-A",
    "--author-email",
    "-X",
    "--method",
    "-f",
    "--raw-field",
    "--field",
    "-H",
    "--header",
    "--hostname",
    "--input",
    "-q",
    "--jq",
    "--template",
    "--cache",
    "-p",
    "--preview",
];

/// What a `gh` command does, if the hooks gate it: `gh pr merge [<number>|<url>|<branch>]`,
/// and `gh api` calls that merge (a `PUT` to `.../pulls/N/merge`, or a GraphQL query naming
/// `mergePullRequest`).
fn classify_gh(args: &[String]) -> Option<Gated> {
    let mut positional: Vec<&str> = Vec::new();
    let mut method: Option<String> = None;
    let mut repo: Option<String> = None;
    let mut values: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if let Some((flag, value)) = a.split_once('=').filter(|(f, _)| f.starts_with("--")) {
            if flag == "--method" {
                method = Some(value.to_ascii_uppercase());
            }
            if flag == "--repo" {
                repo = Some(value.to_owned());
            }
            values.push(value);
            i += 1;
        } else if GH_VALUED.contains(&a) {
            if let Some(v) = args.get(i + 1) {
                if a == "-X" || a == "--method" {
                    method = Some(v.to_ascii_uppercase());
                }
                if a == "-R" || a == "--repo" {
                    repo = Some(v.clone());
                }
                values.push(v);
            }
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            positional.push(a);
            i += 1;
        }
    }
    if positional.starts_with(&["pr", "merge"]) {
        let named = positional.get(2).copied();
        let number = named.and_then(|p| {
            let tail = p.trim_end_matches('/').rsplit('/').next().unwrap_or(p);
            tail.trim_start_matches('#').parse::<u64>().ok()
        });
        // A pull request's URL names its repository too.
        if let Some(url) = named.and_then(|p| p.split_once("://").map(|(_, rest)| rest)) {
            let parts: Vec<&str> = url.split('/').collect();
            if parts.len() >= 5 && parts[3] == "pull" {
                repo = Some(format!("{}/{}", parts[1], parts[2]));
            }
        }
        return Some(Gated::PrMerge { number, repo });
    }
    if positional.first() == Some(&"api") {
        let endpoint = positional.get(1).copied().unwrap_or("");
        let graphql_merge = values
            .iter()
            .chain(positional.iter())
            .any(|v| v.contains("mergePullRequest"));
        if graphql_merge {
            return Some(Gated::PrMerge {
                number: None,
                repo: None,
            });
        }
        let parts: Vec<&str> = endpoint.trim_matches('/').split('/').collect();
        if parts.len() >= 3
            && parts[parts.len() - 1] == "merge"
            && parts[parts.len() - 3] == "pulls"
        {
            // `gh api` defaults to GET (POST with fields); a merge endpoint is refused for
            // any method but an explicit GET, failing closed.
            if method.as_deref() != Some("GET") {
                let repo = (parts.len() >= 6 && parts[parts.len() - 6] == "repos")
                    .then(|| format!("{}/{}", parts[parts.len() - 5], parts[parts.len() - 4]));
                return Some(Gated::PrMerge {
                    number: parts[parts.len() - 2].parse().ok(),
                    repo,
                });
            }
        }
    }
    None
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
            // git expands `heads/main` and `refs/heads/main` to the same ref as `main`.
            let strip = |r: &str| {
                let r = r.strip_prefix("refs/").unwrap_or(r);
                r.strip_prefix("heads/").unwrap_or(r).to_owned()
            };
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

/// Shells whose `-c` argument is a command line of its own.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ash", "fish"];

/// Everything `line` does that the hooks gate, in order. A command line inside `sh -c`,
/// `bash -c` and the like is read too; git or gh found after any wrapper (`timeout 60`,
/// `nice`, `xargs`, ...) counts; a push or merge whose arguments come from the shell
/// (`$VAR`, `$(...)`, backticks), from `xargs` or from `eval` is [`Gated::Unreadable`].
pub fn classify(line: &str) -> Vec<Gated> {
    classify_depth(line, 0)
}

fn classify_depth(line: &str, depth: usize) -> Vec<Gated> {
    if depth > 8 {
        return vec![Gated::Unreadable {
            why: "shells nested too deep to read".into(),
        }];
    }
    let computed = line.contains('$') || line.contains('`');
    let mut out = Vec::new();
    for words in simple_commands(line) {
        let words = program_words(&words);
        let Some(first) = words.first() else { continue };
        let base = first.rsplit('/').next().unwrap_or(first);
        if SHELLS.contains(&base) {
            if let Some(pos) = words.iter().position(|w| {
                w == "-c" || (w.starts_with('-') && !w.starts_with("--") && w.contains('c'))
            }) && let Some(code) = words.get(pos + 1)
            {
                out.extend(classify_depth(code, depth + 1));
            }
            continue;
        }
        if base == "eval" {
            let code = words[1..].join(" ");
            for g in classify_depth(&code, depth + 1) {
                out.push(match g {
                    Gated::Unreadable { .. } => g,
                    _ => Gated::Unreadable {
                        why: "a push or merge run through `eval`".into(),
                    },
                });
            }
            continue;
        }
        // git or gh anywhere in the command (after a wrapper such as `timeout 60` or `nice`).
        let Some(pos) = words
            .iter()
            .position(|w| is_program(w, "git") || is_program(w, "gh"))
        else {
            continue;
        };
        let Some(g) = classify_words(&words[pos..]) else {
            continue;
        };
        let via_xargs = words[..pos]
            .iter()
            .any(|w| w.rsplit('/').next() == Some("xargs"));
        out.push(if via_xargs {
            Gated::Unreadable {
                why: "`xargs` supplies the push's or merge's arguments from its input".into(),
            }
        } else if computed {
            Gated::Unreadable {
                why: "the command line computes words with `$` or backticks, so where it pushes or what it merges cannot be read".into(),
            }
        } else {
            g
        });
    }
    out
}

/// Why `line` would skip or rewire git's own hooks or redirect a push, if it would: the
/// PreToolUse gate refuses these outright, anywhere in the command line (`--no-verify`,
/// `core.hooksPath`, git's plumbing that pushes without hooks, `-c` overrides of push, alias,
/// remote, url or core settings, git's configuration through the environment, another git
/// directory). Fails closed: a mention inside quotes counts, so does one in the words as the
/// shell reads them, in a command line run by `sh -c` or `eval`, and a `git config` whose
/// words the shell or `xargs` computes.
pub fn hook_bypass(line: &str) -> Option<String> {
    hook_bypass_depth(line, 0)
}

fn hook_bypass_depth(line: &str, depth: usize) -> Option<String> {
    if depth > 8 {
        return Some("shells nested too deep to read".into());
    }
    // The text as written, and as the shell reads its words (quotes and backslashes gone:
    // `core.hooks''Path` is `core.hooksPath`).
    let words = simple_commands(line);
    let lower = format!(
        "{}\n{}",
        line.to_ascii_lowercase(),
        words
            .iter()
            .map(|w| w.join(" "))
            .collect::<Vec<_>>()
            .join("\n")
            .to_ascii_lowercase()
    );
    // git takes any unambiguous prefix of a long option: `--no-veri` is `--no-verify`.
    if let Some(w) = words.iter().flatten().find(|w| {
        let w = w.split('=').next().unwrap_or(w);
        w.len() > "--no-v".len() && "--no-verify".starts_with(w)
    }) {
        return Some(format!(
            "`{w}` is git's `--no-verify`, which skips git's pre-push hook"
        ));
    }
    for (needle, what) in [
        ("--no-verify", "`--no-verify` skips git's pre-push hook"),
        ("core.hookspath", "`core.hooksPath` rewires git's hooks"),
        (
            "send-pack",
            "`git send-pack` pushes without git's pre-push hook",
        ),
        (
            "receive-pack",
            "`receive-pack` pushes without git's pre-push hook",
        ),
        (
            "http-push",
            "`git http-push` pushes without git's pre-push hook",
        ),
        (
            "git_config_parameters",
            "`GIT_CONFIG_PARAMETERS` rewrites git's configuration",
        ),
        (
            "git_config_count",
            "`GIT_CONFIG_COUNT` rewrites git's configuration",
        ),
        (
            "git_config_key_",
            "`GIT_CONFIG_KEY_n` rewrites git's configuration",
        ),
        (
            "git_config_global",
            "`GIT_CONFIG_GLOBAL` swaps git's configuration",
        ),
        (
            "git_config_system",
            "`GIT_CONFIG_SYSTEM` swaps git's configuration",
        ),
        ("git_dir=", "`GIT_DIR` points git at another repository"),
        (
            "git_work_tree=",
            "`GIT_WORK_TREE` points git at another checkout",
        ),
        ("--git-dir", "`--git-dir` points git at another repository"),
        (
            "--work-tree",
            "`--work-tree` points git at another checkout",
        ),
        (
            "--config-env",
            "`--config-env` overrides git's configuration",
        ),
        (
            "extensions.worktreeconfig",
            "`extensions.worktreeConfig` rewires the worktree's configuration",
        ),
        (
            "--worktree",
            "`git config --worktree` rewires the worktree's configuration",
        ),
    ] {
        if lower.contains(needle) {
            return Some(what.to_owned());
        }
    }
    for words in words {
        // A command line of its own, inside `sh -c` or `eval`, is read the same way.
        let program = program_words(&words);
        if let Some(first) = program.first() {
            let base = first.rsplit('/').next().unwrap_or(first);
            let code = if SHELLS.contains(&base) {
                program
                    .iter()
                    .position(|w| {
                        w == "-c" || (w.starts_with('-') && !w.starts_with("--") && w.contains('c'))
                    })
                    .and_then(|pos| program.get(pos + 1))
                    .cloned()
            } else if base == "eval" {
                Some(program[1..].join(" "))
            } else {
                None
            };
            if let Some(why) = code.and_then(|c| hook_bypass_depth(&c, depth + 1)) {
                return Some(why);
            }
        }
        let mut rest = words.as_slice();
        while let Some(pos) = rest.iter().position(|w| is_program(w, "git")) {
            let via_xargs = rest[..pos]
                .iter()
                .any(|w| w.rsplit('/').next() == Some("xargs"));
            let after = &rest[pos + 1..];
            let mut i = 0;
            while i < after.len() {
                let a = after[i].as_str();
                if a == "-c" {
                    let key = after
                        .get(i + 1)
                        .map(|k| k.to_ascii_lowercase())
                        .unwrap_or_default();
                    let key = key.split('=').next().unwrap_or("");
                    if [
                        "alias.",
                        "remote.",
                        "push.",
                        "url.",
                        "core.",
                        "branch.",
                        "include",
                        "credential.",
                    ]
                    .iter()
                    .any(|p| key.starts_with(p))
                    {
                        return Some(format!(
                            "`git -c {key}=...` overrides what a push sends or where it goes"
                        ));
                    }
                    i += 2;
                } else if GIT_VALUED.contains(&a) {
                    i += 2;
                } else if a.starts_with('-') {
                    i += 1;
                } else {
                    break;
                }
            }
            // `git config ... alias.x push` / `remote.*.push` / `push.*` written for later.
            if after.get(i).map(String::as_str) == Some("config") {
                // Words the shell or `xargs` computes could name any key.
                if via_xargs || line.contains('$') || line.contains('`') {
                    return Some(
                        "`git config` with words computed by the shell or `xargs` could rewire git's hooks".into(),
                    );
                }
                let keys = after[i + 1..].iter().map(|w| w.to_ascii_lowercase());
                for k in keys {
                    if k.starts_with("alias.")
                        || k.starts_with("include")
                        || k.starts_with("push.")
                        || k.starts_with("url.")
                        || (k.starts_with("remote.")
                            && (k.ends_with(".push")
                                || k.ends_with(".url")
                                || k.ends_with(".pushurl")))
                        || (k.starts_with("branch.") && k.ends_with(".merge"))
                    {
                        return Some(format!(
                            "`git config {k}` changes what a later push sends or where it goes"
                        ));
                    }
                }
            }
            rest = after;
        }
    }
    None
}

/// The folders `line` moves to or points git at (`cd DIR`, `pushd DIR`, `git -C DIR`), as
/// written, and whether it moves somewhere the text does not say (`cd` alone, `cd -`, `~`).
pub fn places(line: &str) -> (Vec<String>, bool) {
    let mut dirs = Vec::new();
    let mut unknown = false;
    for words in simple_commands(line) {
        let words = program_words(&words);
        if let Some("cd" | "pushd" | "popd") = words.first().map(String::as_str) {
            let args: Vec<&String> = words[1..]
                .iter()
                .filter(|w| !w.starts_with('-') || w.as_str() == "-")
                .collect();
            match args.first() {
                Some(d) if d.as_str() != "-" && !d.starts_with('~') && !d.contains('$') => {
                    dirs.push((*d).clone())
                }
                _ => unknown = true,
            }
        }
        let mut i = 0;
        while i < words.len() {
            if is_program(&words[i], "git") {
                let mut j = i + 1;
                while j < words.len() && words[j].starts_with('-') {
                    if words[j] == "-C" {
                        match words.get(j + 1) {
                            Some(d) if !d.starts_with('~') && !d.contains('$') => {
                                dirs.push(d.clone())
                            }
                            _ => unknown = true,
                        }
                    }
                    j += if GIT_VALUED.contains(&words[j].as_str()) {
                        2
                    } else {
                        1
                    };
                }
            }
            i += 1;
        }
    }
    (dirs, unknown)
}

/// `dir` (absolute, or relative to `cwd`) with `.` and `..` resolved as text.
pub fn resolve_path(cwd: &str, dir: &str) -> String {
    let joined = if dir.starts_with('/') {
        dir.to_owned()
    } else {
        format!("{}/{dir}", cwd.trim_end_matches('/'))
    };
    let mut parts: Vec<&str> = Vec::new();
    for p in joined.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether `path` is `root` or inside it (both resolved as text).
pub fn inside(root: &str, path: &str) -> bool {
    let root = resolve_path("/", root);
    let path = resolve_path("/", path);
    path == root || path.starts_with(&format!("{}/", root.trim_end_matches('/')))
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
            ("git push -o ci.skip origin w", push(&["w"])),
            ("git push origin :old", push_from("", "old")),
            ("sudo -E git push origin q", push(&["q"])),
        ] {
            assert_eq!(classify(line), vec![want], "{line}");
        }
        assert!(matches!(
            classify("echo $(git push origin z)").as_slice(),
            [Gated::Unreadable { .. }]
        ));
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
            vec![Gated::PrMerge {
                number: Some(12),
                repo: None
            }]
        );
        assert_eq!(
            classify("gh pr merge https://github.com/a/b/pull/31"),
            vec![Gated::PrMerge {
                number: Some(31),
                repo: Some("a/b".into())
            }]
        );
        assert_eq!(
            classify("gh --repo a/b pr merge"),
            vec![Gated::PrMerge {
                number: None,
                repo: Some("a/b".into())
            }]
        );
        assert_eq!(
            classify("gh api -X PUT repos/o/r/pulls/12/merge"),
            vec![Gated::PrMerge {
                number: Some(12),
                repo: Some("o/r".into())
            }]
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
