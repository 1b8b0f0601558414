#!/usr/bin/env python3
"""Checks the repository's server.json against the MCP registry's published server schema.

The schema is the one server.json names in "$schema", as PyPI's skillsaw bundles it (copied
byte for byte from the registry's static-assets repository, so nothing is fetched from a URL
here). Every error is printed with the path of the field it concerns; the exit code is 1 when
there is one, 2 when the schema named is not a released one or not the newest released one (the
registry's publisher refuses a deprecated schema), 0 when server.json is valid.
"""

import json
import sys
from importlib import resources
from pathlib import Path

import jsonschema

PREFIX = "https://static.modelcontextprotocol.io/schemas/"
SUFFIX = "/server.schema.json"


def published_schema(url: str) -> dict:
    if not (url.startswith(PREFIX) and url.endswith(SUFFIX)):
        print(f"server.json: $schema {url!r} is not a published MCP registry schema", file=sys.stderr)
        sys.exit(2)
    version = url[len(PREFIX) : -len(SUFFIX)]
    package = "v" + version.replace("-", "_")
    try:
        text = (resources.files("skillsaw.schemas.mcp_registry") / package / "server.schema.json").read_text()
    except (FileNotFoundError, ModuleNotFoundError):
        print(f"server.json: no released schema {version} is bundled", file=sys.stderr)
        sys.exit(2)
    return json.loads(text)


def newest_released() -> str:
    """The newest schema version bundled, as server.json spells it (2025-12-11)."""
    bundled = resources.files("skillsaw.schemas.mcp_registry")
    versions = sorted(
        p.name[1:].replace("_", "-")
        for p in bundled.iterdir()
        if p.name.startswith("v") and (p / "server.schema.json").is_file()
    )
    return versions[-1]


def main() -> int:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "server.json")
    entry = json.loads(path.read_text())
    schema = published_schema(entry.get("$schema", ""))
    newest = newest_released()
    if entry["$schema"] != PREFIX + newest + SUFFIX:
        print(
            f"{path}: $schema names {entry['$schema']}, but the newest released schema is {newest}: "
            "the registry's publisher refuses a deprecated one; move to it",
            file=sys.stderr,
        )
        return 2
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(entry), key=lambda e: list(e.absolute_path))
    for error in errors:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        print(f"{path}: {where}: {error.message}", file=sys.stderr)
    if errors:
        return 1
    print(f"{path}: valid against {entry['$schema']} ({cls.__name__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
