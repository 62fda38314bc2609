"""What reaches a person's log is one line a failure: an exception as its type and message, its traceback
only at debug level (-vv), in the log lines and in an error reply (the editor logs both)."""

from __future__ import annotations

import json
import logging
import sys

import pytest
from pygls.exceptions import JsonRpcInternalError

from lsp_server.logs import OneLineFormatter
from lsp_server.server.language_server import RefactorServer


def failed_record() -> logging.LogRecord:
    try:
        json.loads("not json!")
    except ValueError:
        return logging.LogRecord(
            "lsp_server.x", logging.ERROR, __file__, 1, "Unable to handle message", (), sys.exc_info()
        )
    raise AssertionError("json.loads read it")


def test_an_exception_is_one_line_and_its_traceback_stays_for_the_debug_log_and_the_file() -> None:
    record = failed_record()
    line = OneLineFormatter("%(levelname)s %(message)s", tracebacks=False).format(record)
    assert line == "ERROR Unable to handle message (JSONDecodeError: Expecting value: line 1 column 1 (char 0))"
    # The record is shared with the other handlers: the log file still gets the whole traceback.
    assert "Traceback (most recent call last)" in logging.Formatter().format(record)
    assert "Traceback (most recent call last)" in OneLineFormatter("%(message)s", tracebacks=True).format(record)


class Written:
    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data


@pytest.mark.parametrize(("verbose", "traceback_sent"), [(0, False), (2, True)])
def test_an_error_reply_carries_the_traceback_only_at_debug_level(verbose: int, traceback_sent: bool) -> None:
    # pygls puts a failed handler's traceback in the reply's data, which Neovim logs at ERROR.
    server = RefactorServer()
    server.verbose = verbose
    written = Written()
    server.protocol.set_writer(written)
    try:
        raise KeyError("boom")
    except KeyError:
        error = JsonRpcInternalError.of(sys.exc_info()).to_response_error()
    server.protocol._send_response(7, error=error)
    reply = json.loads(written.data.partition(b"\r\n\r\n")[2])
    assert reply["error"]["code"] == -32603 and reply["error"]["message"] == "KeyError: 'boom'"
    assert ("traceback" in json.dumps(reply)) is traceback_sent
