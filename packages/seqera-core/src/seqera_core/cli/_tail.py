"""A job's log file copied onto one of our streams as it grows."""

from __future__ import annotations

from typing import IO

__all__ = ["Tail"]


class Tail:
    """Copies what a job appends to a log file onto one of our streams."""

    def __init__(self, path: str | None, stream: IO[str]) -> None:
        self.path, self.stream, self.offset = path, stream, 0

    def pump(self) -> None:
        if self.path is None:
            return
        try:
            with open(self.path, "rb") as file:
                file.seek(self.offset)
                data = file.read()
        except OSError:
            return  # not created yet (pending, or a shared file system lagging)
        if not data:
            return
        self.offset += len(data)
        self.stream.flush()
        binary = getattr(self.stream, "buffer", None)
        if binary is not None:
            binary.write(data)
            binary.flush()
        else:
            self.stream.write(data.decode(errors="replace"))
            self.stream.flush()
