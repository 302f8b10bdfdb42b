"""Errors become kinds that say what failed and carry none of the error's text."""

from __future__ import annotations

import errno
import socket
import sqlite3

from sqlalchemy.exc import OperationalError

from chargenet.observability.error_kinds import error_kind


def test_a_timeout_is_timeout() -> None:
    assert error_kind(TimeoutError()) == "timeout"


def test_a_refused_connection_is_connection_refused() -> None:
    assert error_kind(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")) == "connection_refused"


def test_asyncios_connect_call_failed_is_connection_refused() -> None:
    assert error_kind(OSError(errno.ECONNREFUSED, "Connect call failed ('10.0.0.5', 5432)")) == "connection_refused"


def test_an_unresolvable_name_is_name_unresolved() -> None:
    assert error_kind(socket.gaierror(socket.EAI_NONAME, "Name or service not known")) == "name_unresolved"


def test_sqlalchemys_wrapper_is_seen_through_to_the_cause() -> None:
    wrapped = OperationalError("SELECT 1", {}, ConnectionRefusedError(errno.ECONNREFUSED, "refused"))
    assert error_kind(wrapped) == "connection_refused"


def test_a_database_error_without_a_known_cause_is_database_error() -> None:
    wrapped = OperationalError("SELECT 1", {}, sqlite3.OperationalError("unable to open database file /srv/db"))
    assert error_kind(wrapped) == "database_error"


def test_an_error_of_chargenet_itself_is_internal_error() -> None:
    assert error_kind(ValueError("/home/operator/secret")) == "internal_error"
