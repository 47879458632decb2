"""One owner per directory (`aps_teach.infra.locks`): a second process is refused with one line naming the
owner's pid and the directory unchanged; the operating system frees the lock of a process that dies, and the
next owner says it takes it over; a refusal inside the block leaves no directory or lock file behind."""

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

import aps_teach
from aps_teach.infra.locks import LOCK_FILE, OWNER_FILE, DirectoryBusy, holds, owning

HOLDER = """
import sys
from aps_teach.infra.locks import owning
with owning(sys.argv[1]):
    print("owned", flush=True)
    sys.stdin.read()
"""


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@contextmanager
def held_by_another_process(directory: Path):
    """A second Python process that owns `directory` until the block ends; yields its pid."""
    env = {**os.environ, "PYTHONPATH": str(Path(aps_teach.__file__).parents[1])}
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env)
    try:
        assert child.stdout.readline() == b"owned\n"
        yield child.pid
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def test_a_second_owner_is_refused_naming_the_first_and_nothing_is_touched(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.json").write_text("{}")
    with held_by_another_process(out) as pid:
        before = files(out)
        with pytest.raises(DirectoryBusy) as refused:
            with owning(out):
                raise AssertionError("never entered")
        assert files(out) == before
    message = str(refused.value)
    assert message == (f"{out} is in use by another aps-teach process (pid {pid}): wait for it to end or "
                       "stop it, then run this again (or give another --out)")
    assert isinstance(refused.value, ValueError)  # the commands report it as one line, exit status 2
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE, "config.json"]  # the owner's record is gone
    with owning(out):  # free again
        assert holds(out)


def test_the_lock_of_a_killed_owner_is_taken_over_with_a_message(tmp_path, capfd):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(Path(aps_teach.__file__).parents[1])}
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env)
    assert child.stdout.readline() == b"owned\n"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert (out / OWNER_FILE).read_text().split()[0] == str(child.pid)  # it never released it
    capfd.readouterr()
    with owning(out):
        assert (out / OWNER_FILE).read_text().split()[0] == str(os.getpid())
    assert capfd.readouterr().err == (f"taking over {out}: its last owner (pid {child.pid}) ended without "
                                      "releasing it\n")
    assert not (out / OWNER_FILE).exists()


def test_ownership_is_reentrant_and_a_failure_inside_leaves_nothing_it_made(tmp_path):
    out = tmp_path / "a" / "b"
    with owning(out):
        with owning(out / ".." / "b"):  # the same directory, by another path: this process owns it already
            assert holds(out)
        assert holds(out) and (out / LOCK_FILE).exists() and (out / OWNER_FILE).exists()
    assert not holds(out) and [p.name for p in out.iterdir()] == [LOCK_FILE]  # filelock's file stays
    with pytest.raises(ValueError, match="refused"), owning(tmp_path / "c" / "d"):
        raise ValueError("refused")
    assert not (tmp_path / "c").exists()  # both directories it made are gone
    with pytest.raises(KeyboardInterrupt), owning(tmp_path / "e"):
        (tmp_path / "e" / "kept.txt").write_text("work")
        raise KeyboardInterrupt
    assert files(tmp_path / "e") == {"kept.txt": b"work"}  # what the block wrote stays


def test_a_file_where_the_directory_should_be_is_refused(tmp_path):
    (tmp_path / "out").write_text("not a directory")
    with pytest.raises(ValueError, match="is a file, not a directory; give another --out"), \
            owning(tmp_path / "out"):
        pass
