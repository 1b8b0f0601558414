//! MCP prompts (reference 2.7): every `prompt` document is a template whose `{{var}}`
//! placeholders are its (required) arguments, named `<namespace>/<path without .md>`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use thiserror::Error;

use super::JS_SPACE_CLASS;
use crate::paths::js_len;

// `\{\{\s*([A-Za-z0-9_]+)\s*\}\}` with JavaScript's `\s`.
static PLACEHOLDER: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let s = format!("[{JS_SPACE_CLASS}]");
    Regex::new(&format!(r"\{{\{{{s}*([A-Za-z0-9_]+){s}*\}}\}}")).ok()
});

/// `prompts/get` was missing values for some placeholders.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("missing arguments for prompt: {}", names.join(", "))]
pub struct MissingArguments {
    /// The placeholders with no value, in order of first appearance.
    pub names: Vec<String>,
}

/// The most characters (UTF-16 units) a rendered prompt may have: the body bound, so one
/// `prompts/get` of a small prompt with a large argument cannot render gigabytes.
pub const RENDERED_PROMPT_MAX: usize = super::bounds::BODY;

/// Why a prompt could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RenderError {
    /// Some placeholders have no value.
    #[error(transparent)]
    Missing(#[from] MissingArguments),
    /// The rendered text would pass [`RENDERED_PROMPT_MAX`].
    #[error(
        "the rendered prompt would be longer than {RENDERED_PROMPT_MAX} characters (the body bound); pass shorter arguments"
    )]
    TooLong,
}

/// The distinct placeholder names in `body`, in order of first appearance.
pub fn prompt_variables(body: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let Some(placeholder) = PLACEHOLDER.as_ref() else {
        return names;
    };
    for caps in placeholder.captures_iter(body) {
        let name = &caps[1];
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
    }
    names
}

/// Substitutes every placeholder in one pass (a value containing `{{x}}` stays literal), or
/// refuses naming every placeholder without a value. Extra arguments are ignored. Rendering
/// stops as soon as the text passes [`RENDERED_PROMPT_MAX`].
pub fn render_prompt(body: &str, args: &BTreeMap<String, String>) -> Result<String, RenderError> {
    let Some(placeholder) = PLACEHOLDER.as_ref() else {
        return Ok(body.to_owned());
    };
    let missing: Vec<String> = prompt_variables(body)
        .into_iter()
        .filter(|name| !args.contains_key(name))
        .collect();
    if !missing.is_empty() {
        return Err(MissingArguments { names: missing }.into());
    }
    let mut out = String::new();
    let mut len = 0usize;
    let mut push = |out: &mut String, text: &str| {
        len += js_len(text);
        if len > RENDERED_PROMPT_MAX {
            return Err(RenderError::TooLong);
        }
        out.push_str(text);
        Ok(())
    };
    let mut last = 0;
    for caps in placeholder.captures_iter(body) {
        let (Some(whole), Some(name)) = (caps.get(0), caps.get(1)) else {
            continue;
        };
        push(&mut out, &body[last..whole.start()])?;
        push(&mut out, args.get(name.as_str()).map_or("", String::as_str))?;
        last = whole.end();
    }
    push(&mut out, &body[last..])?;
    Ok(out)
}

/// The prompt's name: `<namespace>/<path without a trailing .md>`.
pub fn prompt_name(namespace: &str, path: &str) -> String {
    format!("{namespace}/{}", path.strip_suffix(".md").unwrap_or(path))
}

/// Splits a prompt name at its first slash into namespace and path (the path may lack
/// `.md`; the lookup tries it with and without). `None` when the slash is missing, first or
/// last. The refusal text is [`bad_prompt_name`].
pub fn parse_prompt_name(name: &str) -> Option<(&str, &str)> {
    let (namespace, path) = name.split_once('/')?;
    if namespace.is_empty() || path.is_empty() {
        return None;
    }
    Some((namespace, path))
}

/// The refusal for a malformed prompt name.
pub fn bad_prompt_name(name: &str) -> String {
    format!(
        "prompt name must be \"<namespace>/<path>\", got \"{name}\". Call prompts/list for the available names."
    )
}

/// A prompt's description, derived from its title. Titles are stored text that reaches the
/// client's model as trusted UI text, so only a character allowlist passes: anything else
/// becomes a space, runs of whitespace collapse, and the result is cut at 200 characters.
pub fn prompt_description(title: Option<&str>) -> Option<String> {
    let title = title?;
    let allowed = |c: char| c.is_ascii_alphanumeric() || " ,.;:()'\"!?_/-".contains(c);
    let replaced: String = title
        .chars()
        .map(|c| if allowed(c) { c } else { ' ' })
        .collect();
    let collapsed = replaced.split_whitespace().collect::<Vec<_>>().join(" ");
    // Every kept character is ASCII, so characters and UTF-16 units agree.
    let cut: String = collapsed.chars().take(200).collect();
    let trimmed = cut.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn placeholder_pattern_compiles() {
        assert!(PLACEHOLDER.is_some());
    }

    #[test]
    fn variables_are_distinct_in_order_of_first_appearance() {
        let body = "Hi {{ name }}, see {{topic}} and {{name}} again; {{bad-name}} {{ }} {{x_1}}";
        assert_eq!(prompt_variables(body), ["name", "topic", "x_1"]);
        assert!(prompt_variables("no placeholders").is_empty());
    }

    #[test]
    fn render_substitutes_every_placeholder_once() {
        let got = render_prompt(
            "{{a}} and {{ a }} then {{b}}",
            &args(&[("a", "{{b}}"), ("b", "B"), ("c", "unused")]),
        );
        assert_eq!(got.unwrap(), "{{b}} and {{b}} then B");
    }

    #[test]
    fn render_refuses_listing_every_missing_argument() {
        let err = render_prompt("{{a}} {{b}} {{c}} {{b}}", &args(&[("a", "1")])).unwrap_err();
        let RenderError::Missing(missing) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(missing.names, ["b", "c"]);
        assert!(
            err.to_string()
                .contains("missing arguments for prompt: b, c")
        );
    }

    #[test]
    fn rendering_stops_at_the_body_bound() {
        let bomb = "{{a}}".repeat(20_000);
        let err = render_prompt(&bomb, &args(&[("a", &"x".repeat(5_000))])).unwrap_err();
        assert_eq!(err, RenderError::TooLong);
        assert!(err.to_string().contains("1000000"), "{err}");
        let exact = render_prompt("{{a}}{{a}}", &args(&[("a", &"y".repeat(500_000))])).unwrap();
        assert_eq!(exact.len(), RENDERED_PROMPT_MAX);
        assert_eq!(
            render_prompt("{{a}}{{a}}!", &args(&[("a", &"y".repeat(500_000))])),
            Err(RenderError::TooLong)
        );
    }

    #[test]
    fn names_round_trip() {
        assert_eq!(
            prompt_name("capsid", "prompts/brief.md"),
            "capsid/prompts/brief"
        );
        assert_eq!(
            prompt_name("capsid", "prompts/brief.txt"),
            "capsid/prompts/brief.txt"
        );
        assert_eq!(prompt_name("capsid", "a.md.md"), "capsid/a.md");
        assert_eq!(
            parse_prompt_name("capsid/prompts/brief"),
            Some(("capsid", "prompts/brief"))
        );
        for bad in ["", "noslash", "/lead", "trail/", "/"] {
            assert_eq!(parse_prompt_name(bad), None, "{bad:?}");
        }
        assert!(bad_prompt_name("x").contains("\"<namespace>/<path>\", got \"x\""));
    }

    #[test]
    fn descriptions_pass_the_allowlist() {
        assert_eq!(
            prompt_description(Some("Plan: the {{day}} `run`")),
            Some("Plan: the day run".into())
        );
        assert_eq!(prompt_description(Some("  ***  ")), None);
        assert_eq!(prompt_description(None), None);
        assert_eq!(
            prompt_description(Some(&"a".repeat(300))).map(|d| d.len()),
            Some(200)
        );
        assert_eq!(prompt_description(Some("é\ncafé")), Some("caf".into()));
    }

    proptest! {
        #[test]
        fn render_with_every_variable_supplied_leaves_no_placeholder(
            parts in proptest::collection::vec(("[a-z ]{0,8}", "[A-Za-z0-9_]{1,6}", " {0,2}"), 0..8),
            value in "[a-z ]{0,8}"
        ) {
            let body: String = parts.iter().map(|(text, name, pad)| format!("{text}{{{{{pad}{name}{pad}}}}}")).collect();
            let vars = prompt_variables(&body);
            let supplied: BTreeMap<String, String> = vars.iter().map(|v| (v.clone(), value.clone())).collect();
            let rendered = render_prompt(&body, &supplied).unwrap();
            prop_assert!(prompt_variables(&rendered).is_empty());
            prop_assert_eq!(vars.len(), parts.iter().map(|p| &p.1).collect::<std::collections::BTreeSet<_>>().len());
        }
    }
}
