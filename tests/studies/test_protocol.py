"""What the pre-registered studies share (`aps_teach.studies.protocol`): a page's protocol block read with the
file's digest, the check that results were started under that text, a part found by name. Each study's own
reading of its block: `tests/studies/test_held_out.py`, `tests/studies/test_atari_study.py`."""

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from aps_teach.studies.protocol import Parts, check_digest, read_block

PAGE = ("# A pre-registration\n\nWords.\n\n"
        "<!-- protocol -->\n```json\n{\"seeds\": [0, 1]}\n```\n<!-- /protocol -->\n")


def test_the_block_is_read_with_the_digest_of_the_whole_file(tmp_path):
    path = tmp_path / "prereg.md"
    path.write_text(PAGE)
    block, sha256 = read_block(path, "the study", "this study")
    assert json.loads(block) == {"seeds": [0, 1]}
    assert sha256 == hashlib.sha256(PAGE.encode()).hexdigest()
    path.write_text(PAGE.replace("Words.", "Other words."))  # the text around the block is registered too
    assert read_block(path, "the study", "this study")[1] != sha256


def test_a_missing_page_or_block_is_one_line_naming_the_file_and_the_study(tmp_path):
    path = tmp_path / "prereg.md"
    with pytest.raises(ValueError, match="^the pre-registration .*prereg.md is missing: an X runs only"):
        read_block(path, "an X", "a Y")
    path.write_text("# no block\n")
    with pytest.raises(ValueError, match="has no protocol block .*: not a pre-registration of a Y$"):
        read_block(path, "an X", "a Y")


def test_results_are_held_to_the_digest_their_record_holds(tmp_path):
    page, record = Path("docs/p.md"), tmp_path / "scores.sweep.json"
    check_digest(record, page, "a" * 64, tmp_path)  # no record yet: nothing to check
    record.write_text(json.dumps({"preregistration": "a" * 64}))
    check_digest(record, page, "a" * 64, tmp_path)
    with pytest.raises(ValueError, match=r"docs/p.md is not the text the results in .* were started under "
                                         r"\(SHA-256 aaaaaaaaaaaa there, bbbbbbbbbbbb now\)"):
        check_digest(record, page, "b" * 64, tmp_path)
    record.write_text(json.dumps({"budget": {}}))  # started under none
    with pytest.raises(ValueError, match=r"\(SHA-256 None there"):
        check_digest(record, page, "a" * 64, tmp_path)
    with pytest.raises(ValueError, match="^not registered$"):
        check_digest(record, page, "a" * 64, tmp_path, unregistered="not registered")
    record.write_text("not json")
    with pytest.raises(ValueError, match="is not a sweep record of this study"):
        check_digest(record, page, "a" * 64, tmp_path)


def test_a_part_is_found_by_name_and_an_unknown_one_names_the_parts():
    @dataclass(frozen=True)
    class Part:
        name: str

    @dataclass(frozen=True)
    class Protocol(Parts):
        path: Path
        parts: tuple[Part, ...]

    protocol = Protocol(Path("p.md"), (Part("a"), Part("b")))
    assert protocol.part("b") == Part("b")
    with pytest.raises(ValueError, match="^p.md: no part 'c'; its parts: a, b$"):
        protocol.part("c")
