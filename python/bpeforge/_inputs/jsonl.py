"""Documents of JSONL files: a field of each line's object, streamed line by line; bad lines
named, or skipped and counted."""

from __future__ import annotations

import json
from typing import Iterator, List, Optional

from .._errors import InputError
from .files import BATCH_CHARS, BATCH_DOCS, BadLines, decompression_errors, describe_error, open_binary
from .sources import Source


def _decode_line(line: bytes, lineno: int) -> str:
    """A JSONL line as str; raises UnicodeDecodeError unless it is UTF-8 (a BOM may open the file)."""
    if lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
        try:
            return line[3:].decode("utf-8")
        except UnicodeDecodeError as e:
            raise UnicodeDecodeError("utf-8", line, e.start + 3, e.end + 3, e.reason) from None
    return line.decode("utf-8")


def _lone_surrogate(text: str, field: str) -> Optional[str]:
    """A bad-line message if ``text`` holds a lone surrogate (from a ``\\ud800`` escape), else None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"field {field!r} holds a lone surrogate {text[e.start]!a} at character {e.start} (not valid Unicode)"
    return None


def read_jsonl(
    source: Source, text_column: str = "text", skip_bad_lines: bool = False, bad_lines: Optional[BadLines] = None
) -> Iterator[List[str]]:
    """Documents of a JSONL file, streamed line by line: the ``text_column`` field of each object."""
    batch: List[str] = []
    chars = 0
    with open_binary(source) as f:
        lineno = 0
        try:
            for lineno, line in enumerate(f, 1):
                if not (line[3:] if lineno == 1 and line.startswith(b"\xef\xbb\xbf") else line).strip():
                    continue  # blank (the first line may be only a byte-order mark)
                problem = None
                try:
                    # Decoded here, strictly: json.loads(bytes) would let the UTF-8 encoding of
                    # a surrogate (ED A0 80) through as a lone surrogate.
                    # Without its line end: a line cut inside a string is then "Unterminated
                    # string", not an "Invalid control character" (the \n).
                    obj = json.loads(_decode_line(line, lineno).rstrip("\r\n"))
                except UnicodeDecodeError as e:
                    problem = f"not valid UTF-8 ({e.reason} at byte {e.start})"
                except ValueError as e:
                    problem = f"not valid JSON ({e})"
                except RecursionError:
                    problem = "not readable JSON (nested too deeply)"
                else:
                    if not isinstance(obj, dict):
                        problem = f"expected a JSON object, got {type(obj).__name__}"
                    elif text_column not in obj:
                        fields = ", ".join(list(map(str, obj))[:10]) or "none"
                        problem = f"no {text_column!r} field (fields: {fields}); choose one with --text-column"
                    else:
                        text = obj[text_column]
                        if text is None:
                            continue
                        if not isinstance(text, str):
                            problem = f"field {text_column!r} is a {type(text).__name__}, expected a string"
                        elif b"\\u" in line and not text.isascii():
                            problem = _lone_surrogate(text, text_column)  # a "\ud800" escape
                if problem is not None:
                    message = f"{source.path}:{lineno}: {problem}"
                    if not skip_bad_lines:
                        raise InputError(message + " (skip such lines with --skip-bad-lines, or skip_bad_lines=True in Python)")
                    if bad_lines is not None:
                        bad_lines.add(message)
                    continue
                if not text:
                    continue
                batch.append(text)
                chars += len(text)
                if len(batch) >= BATCH_DOCS or chars >= BATCH_CHARS:
                    yield batch
                    batch, chars = [], 0
        except decompression_errors() as e:
            where = f" after line {lineno}" if lineno else ""
            raise InputError(f"{source.path}: cannot read{where} ({describe_error(e)})") from None
    if batch:
        yield batch
