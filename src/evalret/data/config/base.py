"""What every config model shares: strict, frozen models with no unknown key, the path type,
and ``AtKey`` (a model's problem reported at one key below it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Strict


def _usable_path(path: Path) -> Path:
    """``path`` if the operating system can take it: no NUL, nothing the file system cannot
    encode (a lone surrogate from a YAML escape)."""
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise ValueError("not a usable path: characters the file system cannot encode") from None
    if "\x00" in str(path):
        raise ValueError("not a usable path: a NUL character")
    return path


# a path is written as a YAML string: the one field type the strict models take from a str
UsablePath = Annotated[Path, Strict(False), AfterValidator(_usable_path)]


# strict: no value is converted to another type (``queries: true`` is no 1, ``'10'`` no 10,
# ``"0.5"`` no float, 1 no boolean); an integer is still a float. No NaN or infinity anywhere: a
# NaN floor passes every check (nothing is below NaN)
MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


# the base of every config model: MODEL_CONFIG's rules
class StrictModel(BaseModel):
    model_config = MODEL_CONFIG


class AtKey(ValueError):
    """A validation problem of a whole model that belongs to one key below it: ``loc`` is that
    key's path from the model (parse_config reports the line of that key)."""

    def __init__(self, message: str, loc: tuple[int | str, ...]) -> None:
        super().__init__(message)
        self.loc = loc
