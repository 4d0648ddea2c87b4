"""Writes TypedDicts for the components.schemas of an OpenAPI 3.0 document (make gen).

Usage: python3 gen_types.py spec/openapi-control-plane.yaml OUT.py

Standard library plus PyYAML (Debian's python3-yaml). The output depends only on the
document (schemas in document order, properties in document order), so `make gen-check`
can compare it byte for byte.

Mapping: an object schema with properties becomes a TypedDict (required properties plain,
the others NotRequired; an inline object property becomes a nested TypedDict named after
its parent and property); `allOf` of a $ref and an object becomes a subclass; a schema
that is not an object with properties (an id string, an enum, a map) becomes a type alias;
`nullable` adds `| None`; `enum` becomes a Literal; `additionalProperties` alone is a dict.
Aliases are written as strings, so the order of the document never matters at import time.
"""
from __future__ import annotations

import keyword
import re
import sys

import yaml

SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


class Gen:
    def __init__(self, schemas: dict) -> None:
        self.schemas = schemas
        self.blocks: list[str] = []

    def ref_name(self, ref: str) -> str:
        prefix = "#/components/schemas/"
        if not ref.startswith(prefix):
            raise SystemExit(f"unsupported $ref {ref}")
        return ref[len(prefix):]

    def expr(self, s: dict, hint: str) -> str:
        """The Python type of schema `s`; inline objects become TypedDicts named `hint`."""
        if "$ref" in s:
            t = self.ref_name(s["$ref"])
        elif "allOf" in s or "oneOf" in s or "anyOf" in s:
            parts = s.get("allOf") or s.get("oneOf") or s.get("anyOf")
            if "allOf" in s and len(parts) == 1:
                t = self.expr(parts[0], hint)
            elif "allOf" in s:
                t = self.typed_dict(hint, s)
            else:
                t = " | ".join(self.expr(p, f"{hint}{i}") for i, p in enumerate(parts))
        elif "enum" in s:
            t = "Literal[" + ", ".join(repr(v) for v in s["enum"]) + "]"
        elif s.get("type") == "array":
            t = f"list[{self.expr(s.get('items', {}), hint + 'Item')}]"
        elif s.get("type") == "object" or "properties" in s or "additionalProperties" in s:
            if s.get("properties"):
                t = self.typed_dict(hint, s)
            else:
                extra = s.get("additionalProperties", True)
                value = self.expr(extra, hint + "Value") if isinstance(extra, dict) else "Any"
                t = f"dict[str, {value}]"
        elif s.get("type") in SCALARS:
            t = SCALARS[s["type"]]
        else:
            t = "Any"
        if s.get("nullable") and t != "Any" and None not in s.get("enum", []):
            t = f"{t} | None"
        return t

    def typed_dict(self, name: str, s: dict) -> str:
        """Writes a TypedDict for an object schema (or an allOf of one) and returns its name."""
        bases: list[str] = []
        props: dict = {}
        required: set = set()
        for part in s.get("allOf", [s]):
            if "$ref" in part:
                bases.append(self.ref_name(part["$ref"]))
                continue
            props.update(part.get("properties") or {})
            required.update(part.get("required") or [])
        fields = []
        for prop, ps in props.items():
            t = self.expr(ps, name + "".join(w.capitalize() for w in re.split(r"[^A-Za-z0-9]", prop) if w))
            fields.append((prop, t if prop in required else f"NotRequired[{t}]", ps.get("description")))
        doc = (s.get("description") or "").strip().splitlines()
        lines: list[str] = []
        if any(keyword.iskeyword(p) or not p.isidentifier() for p, _, _ in fields):
            # A key that is not an identifier: the functional form.
            base = "TypedDict" if not bases else bases[0]
            items = ", ".join(f"{p!r}: {t!r}" for p, t, _ in fields)
            lines.append(f"{name} = TypedDict({name!r}, {{{items}}})  # type: ignore[misc]")
        else:
            lines.append(f"class {name}({', '.join(bases) or 'TypedDict'}):")
            if len(doc) == 1:
                lines.append(f'    """{doc[0]}"""')
            elif doc:
                lines.append('    """')
                lines.extend(f"    {d}".rstrip() for d in doc)
                lines.append('    """')
            for p, t, _ in fields:
                lines.append(f"    {p}: {t}")
            if not doc and not fields:
                lines.append("    pass")
        self.blocks.append("\n".join(lines))
        return name

    def run(self) -> str:
        aliases: list[str] = []
        for name, s in self.schemas.items():
            is_object = "allOf" in s and any("$ref" in p for p in s["allOf"]) or (s.get("properties") and "enum" not in s)
            if is_object:
                self.typed_dict(name, s)
            else:
                t = self.expr(s, name)
                # An alias naming another schema is a string (a forward reference); one of
                # builtins only is written plainly.
                names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t)) & set(self.schemas)
                aliases.append(f"{name}: TypeAlias = {t!r}" if names else f"{name}: TypeAlias = {t}")
        head = [
            '"""TypedDicts of spec/openapi-control-plane.yaml (components.schemas).',
            "",
            "Generated by clients/python/gen_types.py (make gen): do not edit.",
            '"""',
            "from __future__ import annotations",
            "",
            "from typing import Any, Literal, NotRequired, TypeAlias, TypedDict",
            "",
            "",
        ]
        return "\n".join(head) + "\n" + "\n\n\n".join(self.blocks) + "\n\n\n" + "\n".join(aliases) + "\n"


def main() -> None:
    src, out = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    text = Gen(doc["components"]["schemas"]).run()
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
