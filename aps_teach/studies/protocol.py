"""What the pre-registered studies (`held_out`, `atari_study`) share: a pre-registration's protocol block,
JSON between `<!-- protocol -->` and `<!-- /protocol -->` in a committed page, read with the file's SHA-256
(`read_block`); the check that results were started under that very text (`check_digest`: a sweep's record
holds the digest); and finding one of a protocol's parts by name (`Parts`). Each study parses its own block
into its own `Protocol`. It imports no study."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from aps_teach.infra.files import read_json

BLOCK = re.compile(r"<!-- protocol -->\s*```json\s*(.*?)```\s*<!-- /protocol -->", re.DOTALL)
"""The protocol block of a pre-registration page, its JSON the first group."""


def read_block(path: str | Path, runner: str, study: str) -> tuple[str, str]:
    """(the protocol block's JSON text, the file's SHA-256) of the pre-registration at `path`; ValueError of
    one line naming the file when it is missing or holds no block. `runner` and `study` name what the file
    pre-registers in those lines ("<runner> runs only under the protocol...", "not a pre-registration of
    <study>")."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"the pre-registration {path} is missing: {runner} runs only under the protocol "
                         "committed before its runs (give --preregistration its path)")
    text = path.read_bytes()
    found = BLOCK.search(text.decode("utf-8", errors="replace"))
    if found is None:
        raise ValueError(f"{path} has no protocol block (```json between <!-- protocol --> and "
                         f"<!-- /protocol -->): not a pre-registration of {study}")
    return found.group(1), hashlib.sha256(text).hexdigest()


def check_digest(record: Path, path: Path, sha256: str, out: str | Path, *, unregistered: str | None = None
                 ) -> None:
    """ValueError of one line if the sweep `record` of the results in `out` holds another digest than
    `sha256`, that of the pre-registration at `path`: they were started under another text of it.
    `unregistered`: the line when the record names no pre-registration (default: that reads as another text).
    Nothing to check while there is no record."""
    if not record.is_file():
        return
    saved = read_json(record, "a sweep record of this study", "restore it, or give a fresh --out")
    recorded = saved.get("preregistration") if isinstance(saved, dict) else None
    if recorded is None and unregistered is not None:
        raise ValueError(unregistered)
    if recorded != sha256:
        raise ValueError(f"{path} is not the text the results in {out} were started under "
                         f"(SHA-256 {str(recorded)[:12]} there, {sha256[:12]} now): a registered "
                         f"protocol does not change after its runs; restore it (git checkout -- "
                         f"{path}) or write to a fresh --out")


class Parts:
    """A protocol of named parts (a frozen dataclass with `path` and `parts`, each part with a `name`)."""

    def part(self, name: str):
        """The part called `name`; ValueError naming the protocol's parts otherwise."""
        for part in self.parts:
            if part.name == name:
                return part
        raise ValueError(f"{self.path}: no part {name!r}; its parts: {', '.join(p.name for p in self.parts)}")
