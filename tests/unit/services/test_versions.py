from __future__ import annotations

import pytest

from chargenet.errors import StaleChange
from chargenet.services.versions import check_version


def test_a_change_from_the_current_version_applies() -> None:
    check_version("site", "Depot", current=3, expected=3)


def test_a_change_that_names_no_version_applies() -> None:
    check_version("site", "Depot", current=3, expected=None)


def test_a_change_from_an_older_version_is_stale_and_names_the_object() -> None:
    with pytest.raises(StaleChange, match="site Depot was changed by someone else"):
        check_version("site", "Depot", current=4, expected=3)
