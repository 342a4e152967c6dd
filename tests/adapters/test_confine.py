"""adapters._confine: opening beneath a directory, symlinks resolved by hand, races refused."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters._confine import EscapeError, open_beneath, read_beneath, write_beneath


@pytest.fixture
def box(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret")
    return root, outside


def test_plain_paths_and_dot(box: tuple[Path, Path]) -> None:
    root, _ = box
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.txt").write_text("hello")
    assert read_beneath(root, "a/b/f.txt") == b"hello"
    assert read_beneath(root, "./a//b/../b/f.txt") == b"hello"
    fd = open_beneath(root, ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert sorted(os.listdir(fd)) == ["a"]
    finally:
        os.close(fd)
    with pytest.raises(FileNotFoundError):
        read_beneath(root, "a/missing.txt")
    with pytest.raises(NotADirectoryError):
        read_beneath(root, "a/b/f.txt/x")


def test_root_as_fd(box: tuple[Path, Path]) -> None:
    root, _ = box
    (root / "f").write_text("x")
    rfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert read_beneath(rfd, "f") == b"x"
        assert write_beneath(rfd, "g", b"y")
        os.fstat(rfd)  # still open: the caller owns it
    finally:
        os.close(rfd)
    assert (root / "g").read_bytes() == b"y"


@pytest.mark.parametrize("path", ["/etc/passwd", "..", "../outside/secret.txt", "a/../../x"])
def test_lexical_escapes(box: tuple[Path, Path], path: str) -> None:
    root, _ = box
    (root / "a").mkdir()
    with pytest.raises(EscapeError) as info:
        open_beneath(root, path)
    assert info.value.errno == errno.EXDEV
    assert "outside the allowed directory" in str(info.value)


def test_symlinks_inside_are_followed(box: tuple[Path, Path]) -> None:
    root, _ = box
    (root / "docs").mkdir()
    (root / "docs" / "README.md").write_text("readme")
    (root / "README").symlink_to("docs/README.md")
    (root / "d").symlink_to("docs")
    (root / "docs" / "up").symlink_to("../docs/README.md")
    (root / "self").symlink_to(".")
    assert read_beneath(root, "README") == b"readme"
    assert read_beneath(root, "d/README.md") == b"readme"
    assert read_beneath(root, "docs/up") == b"readme"
    assert read_beneath(root, "self/self/docs/README.md") == b"readme"


def test_symlinks_out_are_refused(box: tuple[Path, Path]) -> None:
    root, outside = box
    (root / "abs").symlink_to(outside / "secret.txt")
    (root / "rel").symlink_to("../outside/secret.txt")
    (root / "dir").symlink_to("../outside")
    (root / "sub").mkdir()
    (root / "sub" / "deep").symlink_to("../../outside")
    for path in ("abs", "rel", "dir/secret.txt", "sub/deep/secret.txt"):
        with pytest.raises(EscapeError):
            read_beneath(root, path)
    for path in ("abs", "rel", "dir/new.txt", "sub/deep/new.txt"):
        with pytest.raises(EscapeError):
            write_beneath(root, path, b"pwned")
    assert (outside / "secret.txt").read_text() == "outside secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlink_loop(box: tuple[Path, Path]) -> None:
    root, _ = box
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    with pytest.raises(OSError, match="symbolic links") as info:
        read_beneath(root, "a")
    assert info.value.errno == errno.ELOOP


def test_write_creates_dirs_and_reports_creation(box: tuple[Path, Path]) -> None:
    root, _ = box
    assert write_beneath(root, "x/y/z.txt", b"one") is True
    assert write_beneath(root, "x/y/z.txt", b"2") is False
    assert (root / "x" / "y" / "z.txt").read_bytes() == b"2"
    with pytest.raises(FileNotFoundError):
        write_beneath(root, "p/q.txt", b"", mkdirs=False)
    with pytest.raises(IsADirectoryError):
        write_beneath(root, "x", b"")


def test_nul_byte_refused(box: tuple[Path, Path]) -> None:
    root, _ = box
    with pytest.raises(ValueError, match="NUL"):
        open_beneath(root, "a\x00b")


def _race(
    swap: Callable[[], object], attempt: Callable[[], object], rounds: int
) -> tuple[int, int]:
    """Run ``swap`` in a loop in a thread while ``attempt`` runs at least ``rounds`` times (and
    until both a refusal and a success were seen, within 60 s); count refusals and successes."""
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            swap()

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    refused = succeeded = attempts = 0
    deadline = time.monotonic() + 60
    try:
        while attempts < rounds or not (refused and succeeded):
            attempts += 1
            try:
                attempt()
                succeeded += 1
            except EscapeError:
                refused += 1
            except OSError:
                pass  # mid-swap (missing, or a directory where a file was): not an escape
            if time.monotonic() > deadline:
                break
    finally:
        stop.set()
        thread.join(5)
    return refused, succeeded


def test_directory_swapped_for_symlink_never_escapes(box: tuple[Path, Path]) -> None:
    root, outside = box
    (root / "d").mkdir()
    state = {"link": False}

    def swap() -> None:  # alternate: a real directory, then a symlink to the outside
        try:
            if state["link"]:
                os.unlink(root / "d")
                os.rename(root / "d.real", root / "d")
            else:
                os.rename(root / "d", root / "d.real")
                os.symlink(outside, root / "d")
            state["link"] = not state["link"]
        except OSError:
            pass

    refused, succeeded = _race(
        swap, lambda: write_beneath(root, "d/pwned.txt", b"x", mkdirs=False), 3000
    )
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"], "a write escaped"
    # the race was really exercised: both outcomes happened
    assert refused > 0
    assert succeeded > 0


def test_file_swapped_for_symlink_never_escapes(box: tuple[Path, Path]) -> None:
    root, outside = box
    (root / "f.txt").write_text("inside")
    (root / "evil").symlink_to(outside / "secret.txt")
    state = {"link": False}

    def swap() -> None:  # alternate: the real file, then a symlink to the outside file
        try:
            if state["link"]:
                os.rename(root / "f.txt", root / "evil")
                os.rename(root / "f.real", root / "f.txt")
            else:
                os.rename(root / "f.txt", root / "f.real")
                os.rename(root / "evil", root / "f.txt")
            state["link"] = not state["link"]
        except OSError:
            pass

    refused, succeeded = _race(swap, lambda: write_beneath(root, "f.txt", b"pwned"), 3000)
    assert (outside / "secret.txt").read_text() == "outside secret", "a write escaped"
    assert refused > 0
    assert succeeded > 0
