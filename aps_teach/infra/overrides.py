"""Config overrides by dotted field name ("agent.k"), reaching into nested dataclass configs: `with_overrides`
applies (name, value) pairs, as a sweep's `RunSpec.overrides` holds them; `field_doc` reads a field's
docstring.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Iterable
from dataclasses import fields, is_dataclass, replace
from typing import Any


def with_overrides(config, overrides: Iterable[tuple[str, Any]]):
    """A copy of a (nested) dataclass config with `(dotted field name, value)` pairs applied."""
    for name, value in overrides:
        config = _set_field(config, name.split("."), value, name)
    return config


def _set_field(config, path: list[str], value, name: str):
    _check_field(config, path[0], name)
    if len(path) > 1:
        value = _set_field(getattr(config, path[0]), path[1:], value, name)
    return replace(config, **{path[0]: value})


def field_doc(config, name: str) -> str:
    """The docstring of a (nested) dataclass config field, by dotted name as in `with_overrides`: the
    string literal that follows the field in its class body ('' when it has none)."""
    *parents, leaf = name.split(".")
    for part in parents:
        _check_field(config, part, name)
        config = getattr(config, part)
    _check_field(config, leaf, name)
    return _field_docs(type(config)).get(leaf, "")


def _check_field(config, part: str, name: str) -> None:
    names = [f.name for f in fields(config)] if is_dataclass(config) else []
    if part not in names:
        raise ValueError(f"unknown config field {name!r}; fields here: {', '.join(names) or 'none'}")


@functools.cache
def _field_docs(cls: type) -> dict[str, str]:
    """Field name -> docstring for a dataclass and its dataclass bases (a subclass's docstring wins)."""
    docs: dict[str, str] = {}
    for klass in reversed([k for k in cls.__mro__ if is_dataclass(k)]):
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0].body
        for statement, following in zip(body, body[1:], strict=False):
            if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                    and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs
