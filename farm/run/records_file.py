"""A run's records files, the one home of their format: each pytest worker appends the record of
every case it ran to ``<run dir>/records/<worker>.jsonl`` as one JSON line (the plugin's
farm_records fixture), and farm run, farm merge and the next command after a killed run read
them back (a later line of a case amends an earlier one: the plugin appends an amended record
when a suite check fails after the first)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from farm.agent.record import JSON_FORM, ResultRecord
from farm.util import run_dir as run_dir_mod

RECORDS_DIR = "records"


def records_path(run_dir: Path, worker: str) -> Path:
    """The records file of pytest worker ``worker`` ("gw0", or "main" without xdist)."""
    return run_dir / RECORDS_DIR / f"{worker}.jsonl"


class RecordWriter:
    """Append-only JSON lines, one open-write-close per record: a killed worker loses nothing
    written, and a refused write (a full or read-only runs directory) leaves every record before
    it whole and is a RunDirUnwritable. The file is opened as the operating system's, without
    Python's buffered text layers (their look-ups are four more system calls a record)."""

    def __init__(self, path: Path):
        self.path = path
        self._dir_made = False

    def write(self, record: ResultRecord) -> None:
        line = json.dumps(record, allow_nan=False, default=str, **JSON_FORM) + "\n"
        try:
            if not self._dir_made:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._dir_made = True
            run_dir_mod.append(self.path, line.encode("utf-8"))
        except OSError as exc:
            if not run_dir_mod.is_fault(exc):
                raise
            raise run_dir_mod.unwritable(exc) from None


def read_records(run_dir: Path) -> tuple[dict[str, dict], list[str]]:
    """The records a run's workers wrote (<run_dir>/records/*.jsonl), the last one of each case
    (the plugin appends an amended record when a suite check fails after the first), and notes
    on what could not be read (a worker killed mid-write leaves a partial line)."""
    files = RecordFiles(run_dir)
    return files.read(final=True)


class RecordFiles:
    """A run's records files, read as they grow (farm run reads them while its cases run, so
    that little is left to parse once the last case is done): each complete line is parsed
    once; :meth:`read` with ``final`` also takes what follows the last newline (a partial line
    is then a note). The result is read_records': files in name order, a later record of a
    case replacing an earlier one."""

    def __init__(self, run_dir: Path):
        self.dir = run_dir / RECORDS_DIR if str(run_dir) else None
        self._read: dict[Path, tuple[int, int]] = {}  # file -> (bytes parsed, lines parsed)
        self._by_file: dict[Path, dict[str, dict]] = {}
        # file -> case id -> where its record's line is (offset, length): the store keeps the
        # line as it is (texts), not a second encoding of the record it was parsed into.
        self._spans: dict[Path, dict[str, tuple[int, int]]] = {}
        self._notes: dict[Path, list[str]] = {}

    def read(self, final: bool = False) -> tuple[dict[str, dict], list[str]]:
        """Parse what was appended since the last call; returns (records by case id, notes)."""
        paths = sorted(self.dir.glob("*.jsonl")) if self.dir is not None else []
        for path in paths:
            self._read_file(path, final)
        by_id: dict[str, dict] = {}
        notes: list[str] = []
        for path in paths:
            by_id.update(self._by_file.get(path, {}))
            notes += self._notes.get(path, [])
        return by_id, notes

    @contextmanager
    def following(self, every: float = 2.0) -> Iterator[RecordFiles]:
        """Read what the workers append every `every` seconds, in a thread, until the block
        ends. A file it cannot read stops it quietly: the final read (in the caller) says why."""
        stop = threading.Event()

        def follow() -> None:
            while not stop.wait(every):
                try:
                    self.read()
                except (OSError, KeyError, TypeError):
                    return

        thread = threading.Thread(target=follow, name="farm-records", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()

    def _read_file(self, path: Path, final: bool) -> None:
        done, line_no = self._read.get(path, (0, 0))
        with open(path, "rb") as f:
            f.seek(done)
            chunk = f.read()
        end = len(chunk) if final else chunk.rfind(b"\n") + 1
        records = self._by_file.setdefault(path, {})
        spans = self._spans.setdefault(path, {})
        at = done
        for line in chunk[:end].split(b"\n")[: None if final else -1]:
            line_no += 1
            start, at = at, at + len(line) + 1
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:  # JSONDecodeError, or bytes that are not UTF-8
                self._notes.setdefault(path, []).append(
                    f"{path.name}:{line_no}: unreadable record (a worker died mid-write)"
                )
                continue
            records[record["case_id"]] = record  # a later record amends an earlier one
            spans[record["case_id"]] = (start, len(line))
        self._read[path] = (done + end, line_no)

    def texts(self, records: Iterable[Mapping]) -> dict[str, str]:
        """case id -> the JSON line each of `records` was parsed from, for the records read
        here (the very objects :meth:`read` returned; any other record, a lost case's say, has
        none): what the store keeps of them, without encoding them again (2.7 s of CPU for the
        full tier's 31,831, after its last case). Lines are read back from their files; those of
        a file that cannot be read again are left to the store to encode."""
        wanted: dict[Path, list[tuple[int, int, str]]] = {}
        for record in records:
            cid = record["case_id"]
            for path, by_id in self._by_file.items():
                if by_id.get(cid) is record:
                    start, length = self._spans[path][cid]
                    wanted.setdefault(path, []).append((start, length, cid))
                    break
        texts: dict[str, str] = {}
        for path, spans in wanted.items():
            try:
                with open(path, "rb") as f:
                    for start, length, cid in sorted(spans):
                        f.seek(start)
                        text = f.read(length).decode("utf-8")
                        # Still the line that was parsed (the file is only ever appended to).
                        if text[:1] == "{" and text[-1:] == "}" and json.dumps(cid) in text:
                            texts[cid] = text
            except (OSError, UnicodeDecodeError):
                continue
        return texts
