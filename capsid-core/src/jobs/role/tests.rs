//! Tests of the roles: the built-in five, an owner's role documents and a namespace's book.

use super::*;

#[test]
fn built_in_roles_parse_and_unknown_names_are_refused_naming_the_field() {
    for r in &BUILT_IN {
        assert_eq!(parse("role", &r.name).unwrap().name, r.name);
        assert!(r.name.len() <= ROLE_NAME_MAX);
    }
    assert_eq!(parse("role", " scout ").unwrap().name, "scout");
    let e = parse("role", "Scout").unwrap_err();
    assert!(
        e.starts_with("role: \"Scout\" is not a role")
            && e.contains("scout, planner, junior, senior, deploy"),
        "{e}"
    );
    assert!(parse("role", "").is_err());
    let book = RoleBook::default();
    assert!(book.of_job(Some("wizard")).is_none());
    assert_eq!(book.of_job(Some("senior")).unwrap().ships, Ships::Nothing);
    assert!(book.of_job(None).is_none());
}

#[test]
fn only_scouts_and_seniors_ship_nothing_by_design() {
    let nothing: Vec<&str> = BUILT_IN
        .iter()
        .filter(|r| ships_nothing_by_design(Some(r)))
        .map(|r| &*r.name)
        .collect();
    assert_eq!(nothing, ["scout", "senior"]);
    assert!(!ships_nothing_by_design(None), "no role asks for a change");
}

#[test]
fn the_skill_names_the_role_and_carries_its_instructions() {
    let scout = parse("role", "scout").unwrap();
    assert!(scout.keeps_watermark() && !scout.merges() && !scout.reviews);
    for other in ["planner", "junior", "senior", "deploy"] {
        assert!(!parse("role", other).unwrap().keeps_watermark(), "{other}");
    }
    assert_eq!(
        role_doc_path("demo", "docs-writer"),
        "policy/roles/demo/docs-writer.md"
    );
    let e = parse_role_doc("policy/roles/demo/x.md", "- ships: code").unwrap_err();
    assert_eq!(e.to_string(), format!("version: {}", e.why));
    assert!(parse("role", "deploy").unwrap().merges());
    assert!(parse("role", "senior").unwrap().reviews);
    let md = scout.skill_md();
    assert!(
        md.starts_with("---\nname: capsid-scout\ndescription: Capsid's scout role"),
        "{md}"
    );
    assert!(
        md.contains("it ships no code") && md.contains("watermark"),
        "{md}"
    );
    assert!(scout.preamble().contains("capsid-scout"));
    assert_eq!(scout.default_cap().micros(), 500_000);
    assert_eq!(
        parse("role", "junior").unwrap().default_cap().micros(),
        10_000_000
    );
}

const DOCS_WRITER: &str = "# Role: docs-writer\n- version: 1\n- ships: code\n- model: claude-haiku-4-5\n- max_cost_usd: 1.50\n- dispatches: 1\n- description: Writes the project's documentation.\n\n## Instructions\nWrite docs, never code.\n";

#[test]
fn an_owner_defines_a_role_in_a_document() {
    let r = parse_role_doc("policy/roles/demo/docs-writer.md", DOCS_WRITER).unwrap();
    assert_eq!(r.name, "docs-writer");
    assert_eq!(r.ships, Ships::Code);
    assert_eq!(r.model.as_deref(), Some("claude-haiku-4-5"));
    assert_eq!(r.max_cost_micros, 1_500_000);
    assert_eq!(r.dispatches, 1);
    assert!(!r.built_in && !r.reviews && !r.merges() && !r.keeps_watermark());
    assert_eq!(r.instructions, "Write docs, never code.\n");
    assert!(
        r.skill_md()
            .starts_with("---\nname: capsid-docs-writer\ndescription: Writes")
    );
    let book = RoleBook::new(vec![r.clone()], Vec::new());
    assert_eq!(book.resolve("role", " docs-writer ").unwrap(), r);
    let e = book.resolve("role", "wizard").unwrap_err();
    assert!(
        e.contains("scout, planner, junior, senior, deploy, docs-writer"),
        "{e}"
    );
    // Defaults: no model, a $2 cap, no dispatches.
    let minimal = "- version: 1\n- ships: nothing\n- reviews: true\n- description: Reads.\n## Instructions\nRead.";
    let m = parse_role_doc("policy/roles/demo/reader.md", minimal).unwrap();
    assert_eq!(
        (m.model, m.max_cost_micros, m.dispatches, m.reviews),
        (None, 2_000_000, 0, true)
    );
}

#[test]
fn a_role_document_names_the_field_it_gets_wrong() {
    let path = "policy/roles/demo/docs-writer.md";
    let case = |from: &str, to: &str| {
        parse_role_doc(path, &DOCS_WRITER.replace(from, to))
            .unwrap_err()
            .field
    };
    assert_eq!(case("- version: 1\n", ""), "version");
    assert_eq!(case("- ships: code", "- ships: everything"), "ships");
    assert_eq!(case("- ships: code\n", ""), "ships");
    assert_eq!(
        case("- model: claude-haiku-4-5", "- model: a b;rm"),
        "model"
    );
    assert_eq!(
        case("- max_cost_usd: 1.50", "- max_cost_usd: -1"),
        "max_cost_usd"
    );
    assert_eq!(
        case("- max_cost_usd: 1.50", "- max_cost_usd: lots"),
        "max_cost_usd"
    );
    assert_eq!(case("- dispatches: 1", "- dispatches: 51"), "dispatches");
    assert_eq!(case("- dispatches: 1", "- dispatches: -1"), "dispatches");
    assert_eq!(
        case("- description: Writes the project's documentation.\n", ""),
        "description"
    );
    assert_eq!(
        case("## Instructions\nWrite docs, never code.\n", ""),
        "instructions"
    );
    assert_eq!(
        case("- ships: code", "- ships: code\n- reviews: true"),
        "reviews"
    );
    assert_eq!(
        case("- ships: code", "- ships: code\n- reviews: maybe"),
        "reviews"
    );
    for bad_path in [
        "policy/roles/demo/Docs.md",
        "policy/roles/demo/9x.md",
        "policy/roles/demo.md",
        "policy/scouts/demo/x.md",
        "policy/roles/demo/x.txt",
    ] {
        assert_eq!(
            parse_role_doc(bad_path, DOCS_WRITER).unwrap_err().field,
            "path",
            "{bad_path}"
        );
    }
}

#[test]
fn a_document_named_after_a_built_in_role_tunes_only_its_model_and_cap() {
    let doc = "- version: 2\n- model: haiku\n- max_cost_usd: 0.25\n## Instructions\nCheck the changelog too.";
    let scout = parse_role_doc("policy/roles/demo/scout.md", doc).unwrap();
    assert!(scout.built_in && scout.keeps_watermark());
    assert_eq!(scout.ships, Ships::Nothing);
    assert_eq!(scout.model.as_deref(), Some("haiku"));
    assert_eq!(scout.max_cost_micros, 250_000);
    assert!(scout.instructions.starts_with(SCOUT));
    assert!(
        scout
            .instructions
            .contains("This namespace adds:\n\nCheck the changelog too.")
    );
    for fixed in [
        "- ships: merge",
        "- reviews: true",
        "- dispatches: 9",
        "- description: x",
    ] {
        let e = parse_role_doc(
            "policy/roles/demo/scout.md",
            &format!("- version: 1\n{fixed}\n"),
        )
        .unwrap_err();
        assert!(e.why.contains("scout is a built-in role"), "{e}");
    }
    let book = RoleBook::new(vec![scout], Vec::new());
    assert_eq!(book.get("scout").unwrap().model.as_deref(), Some("haiku"));
    let all = book.all();
    assert_eq!(all.len(), 5);
    assert_eq!(
        all[0].model.as_deref(),
        Some("haiku"),
        "the tuned scout stands in"
    );
    assert_eq!(book.get("senior").unwrap().model, None);
}
