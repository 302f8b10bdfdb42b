"""One exception tree for the whole service, named by what failed.

Errors carry data, not wire formats. Each wire surface maps them in exactly one place
(the API to RFC 9457 problems, the token endpoint to RFC 6749 errors, the edge to OCPP
CALLERROR codes, the CLI to a message and an exit code); the most specific class wins.
"""

from __future__ import annotations

from dataclasses import dataclass


class ChargenetError(Exception):
    """Base of every error chargenet raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigurationError(ChargenetError):
    """A setting is missing or invalid; the message names the setting and the bad value."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(f"{setting}: {message}")
        self.setting = setting


class StoreError(ChargenetError):
    """The database cannot be used as it is."""


class StoreUnreachable(StoreError):
    pass


class StoreCorrupt(StoreError):
    pass


class SchemaOutdated(StoreError):
    """The store's schema is older than the code; `chargenet migrate` upgrades it."""


class SchemaTooNew(StoreError):
    """The store was written by a newer chargenet; this version refuses to touch it."""


class KeysMismatch(StoreError):
    """The keys folder does not hold the keys this database was set up with."""


class InvalidInput(ChargenetError):
    """A value from outside is malformed; `field` names where."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.detail = message


@dataclass(frozen=True, slots=True)
class RowFault:
    """One bad row of a bulk input: its line (0: the input as a whole), the field at fault, what is wrong."""

    line: int
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "input"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class ImportRefused(InvalidInput):
    """A bulk input with bad rows; nothing of it was written. `faults` names each (the first 100)."""

    def __init__(self, faults: list[RowFault]) -> None:
        more = f" (and {len(faults) - 1} more)" if len(faults) > 1 else ""
        super().__init__(f"nothing was imported: {faults[0]}{more}")
        self.faults = faults


class UnreadableInput(InvalidInput):
    """Input that cannot be read as text: a charset other than UTF-8, bytes that are not UTF-8, a string holding a
    lone surrogate or U+0000 (decisions.md "Input the service refuses"). A 400, not a 422: nothing was read."""


class InputTooLarge(InvalidInput):
    """A request body over the size a surface accepts."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is over {limit} bytes")
        self.limit = limit


class LogUploadRefused(ChargenetError):
    """An upload to a log location whose token is unknown (`unknown`), or that took its file already or expired
    (`used`, `expired`): nothing is stored."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"this upload location is {reason}")
        self.reason = reason


class NotFound(ChargenetError):
    def __init__(self, kind: str, identifier: str) -> None:
        super().__init__(f"{kind} {identifier!r} not found")
        self.kind = kind
        self.identifier = identifier


class Conflict(ChargenetError):
    """The request contradicts the current state (a duplicate id, a session that cannot be stopped)."""


class ImportClash(Conflict):
    """A bulk input whose rows are well formed but clash with what the store holds (a station that exists);
    nothing of it was written. `faults` names each (the first 100)."""

    def __init__(self, faults: list[RowFault]) -> None:
        more = f" (and {len(faults) - 1} more)" if len(faults) > 1 else ""
        super().__init__(f"nothing was imported: {faults[0]}{more}")
        self.faults = faults


class Forbidden(ChargenetError):
    """The caller is known but not allowed to do this."""


class StationCommandError(ChargenetError):
    """A command to a station that did not end as asked. `request_id` names the session request it was sent for
    when it started a session over the API (decisions.md §5), so that the answer tells the partner which."""

    request_id: str | None = None


class StationNotConnected(StationCommandError):
    """A command needs a station that has no OCPP connection to this service right now; `why` may say more."""

    def __init__(self, station_id: str, why: str | None = None) -> None:
        super().__init__(f"station {station_id!r} is not connected" + (f": {why}" if why else ""))
        self.station_id = station_id


class StationRejected(Conflict, StationCommandError):
    """The station answered a command with a refusal (`status` is what it said)."""

    def __init__(self, station_id: str, action: str, status: str) -> None:
        super().__init__(f"station {station_id!r} answered {action} with {status}")
        self.station_id = station_id
        self.action = action
        self.status = status


class CommandNotForGeneration(Conflict):
    """A command worded for the other OCPP generation than the one the station's connection speaks (it reconnected
    speaking the other one since its presence was read)."""

    def __init__(self, station_id: str, action: str, generation: str) -> None:
        super().__init__(f"station {station_id!r} speaks {generation} now; {action} was worded for the other one")
        self.station_id = station_id
        self.action = action


class StationDidNotAnswer(StationCommandError):
    """The station did not answer a command in time, or the connection went away before it did."""

    def __init__(self, station_id: str, action: str, reason: str) -> None:
        super().__init__(f"station {station_id!r} did not answer {action}: {reason}")
        self.station_id = station_id
        self.action = action
        self.reason = reason


class StationAnswerFailed(StationCommandError):
    """The station answered a command, but with no usable result: a CALLERROR (`code` and `description` as it sent
    them), or an answer that breaks the command's OCPP schema (`code` None, `description` says how)."""

    def __init__(self, station_id: str, action: str, code: str | None, description: str) -> None:
        what = f"CALLERROR {code}" if code is not None else "an answer that breaks its schema"
        super().__init__(
            f"station {station_id!r} answered {action} with {what}" + (f": {description}" if description else "")
        )
        self.station_id = station_id
        self.action = action
        self.code = code
        self.description = description


class InvalidCredentials(ChargenetError):
    """A sign-in failed. Deliberately one error for an unknown account, a wrong password, a disabled account
    and an account or address over its failure limit, so the answer tells an attacker nothing."""

    def __init__(self) -> None:
        super().__init__("the e-mail address or the password is wrong")


class EmailTaken(Conflict):
    """Another operator already signs in with this e-mail address."""

    def __init__(self, email: str) -> None:
        super().__init__(f"{email!r} is already used by another operator")
        self.field = "email"
        self.detail = "is already used by another operator"


class StaleChange(Conflict):
    """The object changed since the form was shown; applying the change would overwrite someone else's."""
