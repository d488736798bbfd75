"""Reading a big JSON object member by member.

GQA's files are one top-level object (``{questionId: question}``, ``{imageId: scene
graph}``, ``{imageId: feature index}``) of up to hundreds of MB. ``json.load`` would build
every member at once; :func:`iter_object_members` instead yields ``(key, value)`` pairs,
decoding one member at a time with the C decoder (``json.JSONDecoder.raw_decode``) over a
buffer refilled in chunks, so memory stays at one chunk plus one member.

A member cut by a chunk boundary fails to decode at (or a few characters before) the end
of the buffer; the reader then reads more and retries. A decode error anywhere else, or at
the end of the file, is a real error and is reported with its line and column.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO, Any, Iterator

from nablafol.data.fields import json_type
from nablafol.data.files import not_text, open_text
from nablafol.errors import InputFileError

CHUNK_CHARS = 1 << 20
# An error (or a value's end) this close to the buffer's end may be an artefact of the
# chunk boundary: the longest cut token is a ``\uXXXX\uXXXX`` escape pair (12 characters).
_CUT_MARGIN = 16
_WHITESPACE = re.compile(r"[ \t\n\r]*")


class RepeatedKey(ValueError):
    """A JSON object gives one key twice (which value would count?): raised by the decoders
    below, turned into one :class:`InputFileError` line naming the record by the readers."""

    def __init__(self, key: str, pairs: list):
        self.key = key
        self.record = _record_name(pairs)
        super().__init__(f"key {key!r} given twice in one object")

    def message(self) -> str:
        return f"{self.record} gives {json.dumps(self.key, ensure_ascii=False)} twice: which value counts " \
               f"is unclear; keep one"


_NAMING_KEYS = ("questionId", "imageId", "question_id", "image_id", "id", "name")


def _record_name(pairs: list) -> str:
    """An object of a file, named by its id where it has one (as the user finds it again)."""
    for name in _NAMING_KEYS:
        for key, value in pairs:
            if key == name and isinstance(value, (str, int)) and not isinstance(value, bool):
                return f"the object with {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}"
    return "an object"


def unique_object(pairs: list) -> dict:
    """``object_pairs_hook`` of every decoder of the user's JSON: a key given twice is refused
    (:class:`RepeatedKey`) where ``json`` would keep the last silently (an object id twice in
    one image flipped an answer). A length comparison per object: the C scanner still reads."""
    record = dict(pairs)
    if len(record) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKey(key, pairs)
            seen.add(key)
    return record


_DECODER = json.JSONDecoder(object_pairs_hook=unique_object)
_SCAN = _DECODER.scan_once  # (text, index) -> (value, end), as raw_decode calls it
_PLAIN_KEY = re.compile(r'[ \t\n\r]*"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*').match  # a key without escapes
_SEPARATOR = re.compile(r"[ \t\n\r]*([,}])").match


class _ObjectReader:
    """Cursor over one file's text, holding only the unread part of the current chunk."""

    def __init__(self, stream: IO[str], path: Path, chunk_chars: int):
        self.stream = stream
        self.path = path
        self.chunk_chars = chunk_chars
        self.buffer = ""
        self.pos = 0
        self.eof = False
        self.start = 0  # where the last decoded value began
        self.lines_before = 0  # newlines in text already dropped from the buffer
        self.column_before = 0  # characters since the last dropped newline

    # -- buffer --------------------------------------------------------------------------
    def _fill(self) -> None:
        """Append at least one chunk (more when the pending member is large: O(n) total)."""
        pending = len(self.buffer) - self.pos
        try:
            text = self.stream.read(max(self.chunk_chars, pending))
        except UnicodeDecodeError as error:
            raise not_text(self.path, error) from None
        except OSError as error:
            raise InputFileError(self.path, f"cannot be read ({error.strerror or error})") from None
        if not text:
            self.eof = True
            return
        self._drop_consumed()
        self.buffer += text

    def _drop_consumed(self) -> None:
        # lines counted as text is dropped (counted in C, no copy): a path may be a pipe, which
        # cannot be read again to say where an error is
        newlines = self.buffer.count("\n", 0, self.pos)
        if newlines:
            self.lines_before += newlines
            self.column_before = self.pos - self.buffer.rfind("\n", 0, self.pos) - 1
        else:
            self.column_before += self.pos
        self.buffer = self.buffer[self.pos:]
        self.pos = 0

    def _location(self, index: int) -> str:
        newlines = self.buffer.count("\n", 0, index)
        line = self.lines_before + newlines + 1
        if newlines:
            column = index - self.buffer.rfind("\n", 0, index)
        else:
            column = self.column_before + index + 1
        return f"line {line}, column {column}"

    def error(self, message: str, index: int | None = None) -> InputFileError:
        where = self._location(self.pos if index is None else index)
        return InputFileError(self.path, f"not valid JSON at {where}: {message}")

    # -- tokens --------------------------------------------------------------------------
    def peek(self) -> str:
        """Skip whitespace and return the next character ('' at the end of the file)."""
        while True:
            self.pos = _WHITESPACE.match(self.buffer, self.pos).end()
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if self.eof:
                return ""
            self._fill()

    def take(self, expected: str, what: str) -> None:
        found = self.peek()
        if found != expected:
            shown = repr(found) if found else "end of file"
            raise self.error(f"expected {what}, found {shown}")
        self.pos += 1

    def value(self) -> Any:
        """Decode the JSON value starting at the cursor (after :meth:`peek`)."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as error:
                near_end = error.pos >= len(self.buffer) - _CUT_MARGIN
                if not self.eof and (near_end or error.msg.startswith("Unterminated string")):
                    self._fill()
                    continue
                raise self.error(error.msg, error.pos) from None
            except RepeatedKey:
                raise
            except (RecursionError, ValueError) as error:  # too deep, or an integer too long
                raise self.error(decoder_limit(error)) from None
            # a number near the buffer's end may continue after it ("10" of "10.5", "1" of
            # "1e5"): accept a value only when the rest of the buffer cannot extend it
            if len(self.buffer) - end < _CUT_MARGIN and not self.eof:
                self._fill()
                continue
            self.start, self.pos = self.pos, end  # the value's text is buffer[start:pos]
            return value

    def compact(self) -> None:
        if self.pos > self.chunk_chars:
            self._drop_consumed()


def decoder_limit(error: Exception) -> str:
    """The message for JSON that is valid but beyond the decoder's limits (Python's ``json``
    recurses once per nesting level and refuses integers of more than 4300 digits)."""
    if isinstance(error, RecursionError):
        return "values nested too deeply (lists or objects inside each other beyond Python's limit)"
    return f"a number too long to read ({str(error).split(';')[0]})"


def json_line(text: str, path: str | Path, where: str | None = None) -> Any:
    """One JSON value (a line of a JSON-lines file), with every failure as one InputFileError."""
    try:
        return json.loads(text, object_pairs_hook=unique_object)
    except json.JSONDecodeError as error:
        raise InputFileError(path, f"not valid JSON at column {error.colno}: {error.msg}", where) from None
    except RepeatedKey as error:
        raise InputFileError(path, error.message(), where) from None
    except (RecursionError, ValueError) as error:  # after its subclass above
        raise InputFileError(path, f"cannot be used: {decoder_limit(error)}", where) from None


def iter_object_members(path: str | Path, *, expected: str,
                        chunk_chars: int = CHUNK_CHARS) -> Iterator[tuple[str, Any]]:
    """Yield the ``(key, value)`` members of the JSON object in file ``path``, in file order.

    ``expected`` names the content for the message when the file is not an object, e.g.
    ``"{questionId: question}"``. Every problem raises :class:`InputFileError` naming the
    file, with line and column for syntax errors. Duplicate keys are yielded as they come
    (the caller decides).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    ...     _ = f.write('{"a": [1, 2], "b": {"c": null}}')
    >>> list(iter_object_members(f.name, expected="{key: value}"))
    [('a', [1, 2]), ('b', {'c': None})]
    >>> os.unlink(f.name)
    """
    for key, value, _ in _members(Path(path), expected, chunk_chars, texts=False):
        yield key, value


def iter_object_member_texts(path: str | Path, *, expected: str,
                             chunk_chars: int = CHUNK_CHARS) -> Iterator[tuple[str, Any, str]]:
    """Like :func:`iter_object_members`, with each value's JSON text as a third item (to keep
    the text and decode it again later, e.g. in another process).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    ...     _ = f.write('{"a": [1, 2], "b": {"c": null}}')
    >>> list(iter_object_member_texts(f.name, expected="{key: value}"))
    [('a', [1, 2], '[1, 2]'), ('b', {'c': None}, '{"c": null}')]
    >>> os.unlink(f.name)
    """
    return _members(Path(path), expected, chunk_chars, texts=True)


def _value_starting_with(char: str) -> str:
    """What a JSON value that begins with ``char`` is, in words (``'n'`` said as ``null``)."""
    kinds = {"[": "a list", '"': "a string", "n": "null", "t": "true", "f": "false"}
    if char in kinds:
        return kinds[char]
    return "a number" if char == "-" or char.isdigit() else repr(char)


def _members(path: Path, expected: str, chunk_chars: int, texts: bool) -> Iterator[tuple[str, Any, Any]]:
    with open_text(path) as stream:
        reader = _ObjectReader(stream, path, chunk_chars)
        first = reader.peek()
        if first != "{":
            if not first:
                raise InputFileError(path, f"is empty, expected a JSON object {expected}")
            raise InputFileError(path, f"expected a JSON object {expected} at the top level, "
                                       f"found {_value_starting_with(first)}")
        reader.pos += 1
        if reader.peek() == "}":
            reader.pos += 1
        else:
            while True:
                # a member whose key has no escapes, followed by its separator in the buffer (so no part
                # of it was cut by the chunk's end): read with two regular expressions and one call of
                # the C scanner; anything else (cut, escaped, malformed) is read again below, token by token
                buffer = reader.buffer
                key_match = _PLAIN_KEY(buffer, reader.pos)
                if key_match is not None:
                    start = key_match.end()
                    try:
                        value, end = _SCAN(buffer, start)
                        separator = _SEPARATOR(buffer, end)
                    except RepeatedKey as error:
                        raise InputFileError(path, error.message(), f"record {key_match.group(1)}") from None
                    except (StopIteration, ValueError, RecursionError):
                        separator = None
                    if separator is not None:
                        reader.start, reader.pos = start, separator.end()
                        yield key_match.group(1), value, (buffer[start:end] if texts else None)
                        if separator.group(1) == "}":
                            break
                        reader.compact()
                        continue
                if reader.peek() != '"':
                    raise reader.error("expected a string key")
                key = reader.value()
                reader.take(":", "':' after a key")
                if not reader.peek():
                    raise reader.error("expected a value, found end of file")
                try:
                    value = reader.value()
                except RepeatedKey as error:
                    raise InputFileError(path, error.message(), f"record {key}") from None
                yield key, value, (reader.buffer[reader.start:reader.pos] if texts else None)
                reader.compact()
                separator = reader.peek()
                if separator == ",":
                    reader.pos += 1
                    continue
                if separator == "}":
                    reader.pos += 1
                    break
                shown = repr(separator) if separator else "end of file"
                raise reader.error(f"expected ',' or '}}' after a member, found {shown}")
        if reader.peek():
            raise reader.error("unexpected text after the top-level object")


def load_json(path: str | Path, *, expected_type: type, expected: str) -> Any:
    """``json.load`` of a small file, with every failure as one InputFileError line."""
    path = Path(path)
    with open_text(path) as stream:
        try:
            value = json.load(stream, object_pairs_hook=unique_object)
        except RepeatedKey as error:
            raise InputFileError(path, error.message()) from None
        except json.JSONDecodeError as error:
            if not error.doc.strip():
                raise InputFileError(path, f"is empty, expected {expected}") from None
            if not error.doc[:error.pos].strip():  # not JSON from its first character: CSV, TSV, text
                raise InputFileError(path, f"is not JSON (line {error.lineno}, column {error.colno}: {error.msg}); "
                                           f"expected {expected}") from None
            raise InputFileError(path, f"not valid JSON at line {error.lineno}, column "
                                       f"{error.colno}: {error.msg}") from None
        except UnicodeDecodeError as error:
            raise not_text(path, error) from None
        except (RecursionError, ValueError) as error:  # after its subclasses above
            raise InputFileError(path, f"cannot be used: {decoder_limit(error)}") from None
    if not isinstance(value, expected_type):
        raise InputFileError(path, f"expected {expected} at the top level, found {json_type(value)}")
    return value
