"""Converting between the API's JSON and this package's dataclasses.

Every dataclass field is named in snake_case; a field whose JSON name differs (the API's search options and
a few response fields are camelCase) carries it in its metadata as ``wire``. Requests leave out the fields
that are ``None`` (the server's defaults apply); responses ignore fields this version does not know, so a
newer server does not break an older client.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

T = TypeVar("T")

_MISSING = dataclasses.MISSING


def wire(name: str, default: Any = None) -> Any:
    """An optional dataclass field whose JSON name is ``name``.

    (A required one is spelt ``field(metadata={"wire": name})``, which type checkers read as required.)
    """
    return dataclasses.field(default=default, metadata={"wire": name})


def wire_name(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("wire", f.name))


def to_wire(value: Any) -> Any:
    """A request value as JSON: dataclasses by their wire names, ``None`` fields left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if v is None:
                continue
            if f.metadata.get("flatten"):
                out.update(to_wire(v))
            else:
                out[wire_name(f)] = to_wire(v)
        return out
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [to_wire(v) for v in value]
    return value


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


class ResponseShapeError(ValueError):
    """A response did not have the shape this client expects (a field missing or of another type)."""


def from_wire(tp: Any, value: Any, path: str = "$") -> Any:
    """Builds ``tp`` (a dataclass, list/dict of them, a union, a literal or a plain type) from JSON."""
    if tp is Any:
        return value
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        args = get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise ResponseShapeError(f"{path}: null where a value was expected")
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return from_wire(a, value, path)
            except ResponseShapeError as e:
                errors.append(str(e))
        raise ResponseShapeError("; ".join(errors))
    if origin is Literal:
        if value not in get_args(tp):
            raise ResponseShapeError(f"{path}: {value!r} is not one of {get_args(tp)}")
        return value
    if origin in (list, typing.List):  # noqa: UP006
        if not isinstance(value, list):
            raise ResponseShapeError(f"{path}: expected an array")
        (item,) = get_args(tp) or (Any,)
        return [from_wire(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin in (dict, typing.Dict):  # noqa: UP006
        if not isinstance(value, dict):
            raise ResponseShapeError(f"{path}: expected an object")
        _, item = get_args(tp) or (str, Any)
        return {k: from_wire(item, v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ResponseShapeError(f"{path}: expected an object for {tp.__name__}")
        custom = getattr(tp, "_from_wire", None)
        if custom is not None:
            return custom(value, path)
        hints = _hints(tp)
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(tp):
            name = wire_name(f)
            if name in value:
                kwargs[f.name] = from_wire(hints[f.name], value[name], f"{path}.{name}")
            elif f.default is _MISSING and f.default_factory is _MISSING:
                raise ResponseShapeError(f"{path}: no field {name!r} in {tp.__name__}")
        return tp(**kwargs)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ResponseShapeError(f"{path}: expected a number")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise ResponseShapeError(f"{path}: expected an integer")
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise ResponseShapeError(f"{path}: expected a {tp.__name__}")
        return value
    if tp is object:
        return value
    raise TypeError(f"cannot read {tp!r} from JSON")  # a bug in this package's types
