"""How long a tag a command may send a station: 20 characters for OCPP 1.6 (idTag), 36 for 2.0.1 (idToken)."""

from __future__ import annotations

import pytest

from chargenet.domain.generations import OCPP16, OCPP201
from chargenet.errors import InvalidInput
from chargenet.services.localauth import validate_id_tag_for


@pytest.mark.parametrize(("generation", "longest"), [(OCPP16, 20), (OCPP201, 36)])
def test_a_tag_up_to_the_generations_limit_is_taken(generation: str, longest: int) -> None:
    assert validate_id_tag_for(generation, "T" * longest) == "T" * longest


@pytest.mark.parametrize(("generation", "longest"), [(OCPP16, 20), (OCPP201, 36)])
def test_a_tag_one_over_the_limit_is_refused_naming_the_limit_and_generation(generation: str, longest: int) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate_id_tag_for(generation, "T" * (longest + 1), "id-tag")
    assert (refused.value.detail, refused.value.field) == (
        f"must be 1 to {longest} characters for a station speaking {generation}",
        "id-tag",
    )


@pytest.mark.parametrize("generation", [OCPP16, OCPP201])
def test_an_empty_tag_is_refused(generation: str) -> None:
    with pytest.raises(InvalidInput):
        validate_id_tag_for(generation, "")
