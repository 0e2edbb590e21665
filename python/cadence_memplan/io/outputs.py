"""Output files written whole or not at all, and never over an input.

Every file this package writes goes through here. :class:`OutputFiles` holds the outputs
of one command: :meth:`~OutputFiles.check` refuses, before any work, a path that is a
directory, lies in a folder that does not exist or cannot take a new file, is a read-only
file, is one of the inputs, or is another output (paths are compared after resolving
links and ``.``/``..``, and existing files by device and inode, so a hard link or ``./x``
for ``x`` is caught). Inside :meth:`~OutputFiles.writing`, each output is written to a
temporary file in its own folder (``.NAME.partial-XXXXXXXX.SUFFIX``: the suffix is kept
because writers choose the format by it); only when every one is complete are they all
renamed into place, with Ctrl-C held off between the first rename and the last. On an
error or Ctrl-C before that, every temporary file is removed: no output appears half
written and no existing file is replaced. :func:`write_whole` is the same for one file,
for the library's own writers.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OutputError", "OutputFiles", "write_whole"]

PathLike = str | os.PathLike[str]


class OutputError(ValueError):
    """An output path that cannot or must not be written; the message names the option."""


@dataclass(frozen=True)
class _Output:
    option: str  # how the user named it, for messages: "--out", "--plot"
    path: Path  # as given
    real: str  # links and ./.. resolved: where the rename goes


def _partial_path(real: str) -> Path:
    target = Path(real)
    return target.with_name(f".{target.stem}.partial-{secrets.token_hex(4)}{target.suffix}")


def _same_file(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist (yet)
        return False


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (POSIX) so a set of renames is not cut in two; a signal
    that arrives meanwhile is delivered at the end."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class OutputFiles:
    """The output files of one command: checked up front, written all or none."""

    def __init__(self) -> None:
        self._outputs: list[_Output] = []

    def add(self, path: PathLike | None, option: str, suffixes: Sequence[str] = ()) -> None:
        """Register an output (``None``: not asked for). ``suffixes``, if given, are the
        endings allowed (``.json``); anything else is refused here."""
        if path is None:
            return
        target = Path(path)
        if suffixes and target.suffix.lower() not in suffixes:
            raise OutputError(f"{option} {path}: expected a file ending in {' or '.join(suffixes)}")
        self._outputs.append(_Output(option, target, os.path.realpath(target)))

    def check(self, inputs: Iterable[PathLike | None] = ()) -> None:
        """Refuse (OutputError) any output that cannot or must not be written; see the
        module's docstring. ``inputs``: the files the command reads (``None`` skipped)."""
        read = [(Path(path), os.path.realpath(path)) for path in inputs if path is not None]
        checked: list[_Output] = []
        for output in self._outputs:
            what, path = f"{output.option} {output.path}", output.path
            if path.is_dir():
                raise OutputError(f"{what}: is a directory")
            folder = path.parent
            if not folder.is_dir():
                raise OutputError(f"{what}: the folder {folder} does not exist")
            for input_path, input_real in read:
                if output.real == input_real or _same_file(path, input_path):
                    raise OutputError(
                        f"{what}: is the input {input_path}; writing it would destroy the"
                        " input, choose another file"
                    )
            for other in checked:
                if output.real == other.real or _same_file(path, other.path):
                    raise OutputError(
                        f"{what}: {other.option} {other.path} writes the same file; give each"
                        " output its own file"
                    )
            if path.exists() and not os.access(path, os.W_OK):
                raise OutputError(f"{what}: the file is not writable")
            probe = _partial_path(output.real)
            try:
                os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
                probe.unlink()
            except OSError as error:
                raise OutputError(
                    f"{what}: cannot create a file in {folder} ({error.strerror or error})"
                ) from error
            checked.append(output)

    @contextlib.contextmanager
    def writing(self) -> Iterator[Callable[[PathLike], Path]]:
        """Yield ``partial(path)``: the temporary file to write output ``path`` to (created
        on first call, empty). When the block ends without an exception, every output that
        was asked for is renamed into place; otherwise each temporary file is removed and
        no output is touched. An OSError about a temporary file is raised again naming the
        output."""
        by_path = {str(output.path): output for output in self._outputs}
        partials: list[tuple[Path, _Output]] = []

        def partial(path: PathLike) -> Path:
            output = by_path.get(str(Path(path)))
            if output is None:  # a programming error: every output is registered first
                raise KeyError(f"{path} is not a registered output")
            for existing, owner in partials:
                if owner is output:
                    return existing
            temporary = _partial_path(output.real)
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            partials.append((temporary, output))
            with contextlib.suppress(OSError):  # a replaced file keeps its permissions
                os.chmod(temporary, stat.S_IMODE(os.stat(output.real).st_mode))
            return temporary

        def output_named(error: OSError) -> Path | None:
            for temporary, output in partials:
                if error.filename is not None and Path(error.filename) == temporary:
                    return output.path
            return None

        try:
            yield partial
            with _interrupts_held():
                for temporary, output in partials:
                    os.replace(temporary, output.real)
        except OSError as error:
            path = output_named(error)
            if path is None:
                raise
            raise OSError(error.errno, error.strerror, str(path)) from error
        finally:
            for temporary, _ in partials:
                with contextlib.suppress(FileNotFoundError):
                    temporary.unlink()


@contextlib.contextmanager
def write_whole(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it becomes ``path`` when the block ends
    without an exception and is removed otherwise (:class:`OutputFiles` for one file,
    without the up-front checks)."""
    outputs = OutputFiles()
    outputs.add(path, "output")
    with outputs.writing() as partial:
        yield partial(path)
