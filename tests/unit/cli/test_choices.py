"""What the parser offers without importing the use cases (their choices written out in the command line's
modules) is what the use cases accept."""

from __future__ import annotations

import argparse

from chargenet.auth.keyring import PUBLISH_AHEAD, WEBHOOK_NEXT_MIN_AGE
from chargenet.cli.admin import circuits, localauth, meters, webhooks
from chargenet.cli.main import build_parser
from chargenet.domain.circuits import PHASE_CHOICES
from chargenet.meters.profiles import PROFILES
from chargenet.services.localauth import ID_TOKEN_TYPES, LISTABLE_STATUSES
from chargenet.webhooks.signing import SignatureAlgorithm, SignatureFormat


def test_the_local_list_statuses_are_the_use_cases() -> None:
    assert [status.value for status in LISTABLE_STATUSES] == localauth.STATUSES
    assert list(ID_TOKEN_TYPES) == localauth.ID_TOKEN_TYPES


def test_the_meter_profiles_are_the_known_profiles() -> None:
    assert list(PROFILES) == meters.PROFILE_NAMES


def test_the_phases_are_the_circuits_rules() -> None:
    assert list(PHASE_CHOICES) == circuits.PHASE_CHOICES


def test_the_signature_algorithms_and_formats_are_the_signers() -> None:
    assert [algorithm.value for algorithm in SignatureAlgorithm] == webhooks.ALGORITHMS
    assert [signature_format.value for signature_format in SignatureFormat] == webhooks.SIGNATURE_FORMATS


def test_the_key_rotations_help_states_the_keyrings_delays() -> None:
    verbs = " ".join(str(verb.help) for verb in _subcommands("admin", "keys")._choices_actions)
    assert f"it signs after {int(PUBLISH_AHEAD.total_seconds())} s" in verbs
    assert f"after {int(WEBHOOK_NEXT_MIN_AGE.total_seconds() // 3600)} h" in verbs


def _subcommands(*command: str) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The subcommands of `chargenet COMMAND...`."""
    parser = build_parser(command)
    for name in command:
        parser = _subparsers(parser).choices[name]
    return _subparsers(parser)


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    return next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
