"""Every profile decoded against register images built from the register tables in notes/modbus-meters.md §2.

The images are packed here with `struct`, independently of the code under test, so a wrong address, word
order, data type or scale in a profile fails.
"""

from __future__ import annotations

import struct

import pytest

from chargenet.errors import InvalidInput
from chargenet.meters.errors import MeterReplyInvalid
from chargenet.meters.profiles import PROFILES, FunctionCode, Profile, get_profile
from chargenet.meters.readings import Quantity

Image = dict[int, int]


def put(image: Image, address: int, fmt: str, value: float, *, low_word_first: bool = False) -> None:
    packed = struct.pack(fmt, value)
    words = [int.from_bytes(packed[i : i + 2], "big") for i in range(0, len(packed), 2)]
    if low_word_first:
        words.reverse()
    for offset, word in enumerate(words):
        image[address + offset] = word


def read(profile: Profile, image: Image) -> list[list[int]]:
    # Unused registers inside a merged block read as a recognisable filler, never as part of a value.
    return [[image.get(a, 0x1234) for a in range(b.address, b.address + b.count)] for b in profile.read_plan]


def eastron_image(*, currents: tuple[float, ...], power: float, import_kwh: float, total_kwh: float) -> Image:
    image: Image = {}
    for address, current in zip((0x0006, 0x0008, 0x000A), currents, strict=False):
        put(image, address, ">f", current)
    put(image, 0x000C, ">f", power)  # P L1 (the SDM120's only power register)
    put(image, 0x0034, ">f", power)
    put(image, 0x0048, ">f", import_kwh)
    put(image, 0x004A, ">f", 1.5)  # export
    put(image, 0x0156, ">f", total_kwh)  # import + export: must not be used
    return image


@pytest.mark.parametrize("name", ["sdm630", "sdm72v2"])
def test_eastron_three_phase_decodes_currents_and_import_energy(name: str) -> None:
    profile = get_profile(name)
    image = eastron_image(currents=(16.0, 15.5, 0.25), power=7360.0, import_kwh=1234.5, total_kwh=1236.0)
    reading = profile.decode(read(profile, image))
    assert reading.currents_a == (16.0, 15.5, 0.25)
    assert reading.energy_wh == 1_234_500
    assert reading.sentinels == frozenset()


def test_sdm72v1_reads_power_because_it_has_no_currents() -> None:
    profile = get_profile("sdm72v1")
    reading = profile.decode(read(profile, eastron_image(currents=(), power=11000.0, import_kwh=42.0, total_kwh=43.0)))
    assert reading.currents_a is None
    assert reading.power_w == 11000.0
    assert reading.energy_wh == 42_000


def test_sdm120_decodes_one_phase() -> None:
    profile = get_profile("sdm120")
    reading = profile.decode(read(profile, eastron_image(currents=(7.5,), power=1725.0, import_kwh=0.75, total_kwh=1)))
    assert reading.currents_a == (7.5,)
    assert reading.power_w == 1725.0
    assert reading.energy_wh == 750


def test_eastron_uses_input_registers_and_abb_holding_registers() -> None:
    assert get_profile("sdm630").function_code is FunctionCode.READ_INPUT_REGISTERS
    assert get_profile("em340").function_code is FunctionCode.READ_INPUT_REGISTERS
    assert get_profile("abb-b23").function_code is FunctionCode.READ_HOLDING_REGISTERS


def test_float32_energy_rounds_to_whole_watt_hours() -> None:
    profile = get_profile("sdm630")
    # 98765.43 kWh is not exact in float32 (it is 98765.4296875); the Wh value is rounded once.
    image = eastron_image(currents=(0.0, 0.0, 0.0), power=0.0, import_kwh=98765.43, total_kwh=0)
    assert profile.decode(read(profile, image)).energy_wh == 98_765_430


def test_eastron_nan_is_no_value() -> None:
    profile = get_profile("sdm630")
    image = eastron_image(currents=(1.0, 1.0, 1.0), power=0.0, import_kwh=float("nan"), total_kwh=0)
    reading = profile.decode(read(profile, image))
    assert reading.energy_wh is None
    assert reading.sentinels == frozenset({Quantity.ENERGY})


def abb_image(*, currents: tuple[int, int, int], power: int, import_centi_kwh: int) -> Image:
    image: Image = {}
    put(image, 0x5000, ">Q", import_centi_kwh)
    put(image, 0x5004, ">Q", 777)  # export
    for address, current in zip((0x5B0C, 0x5B0E, 0x5B10), currents, strict=True):
        put(image, address, ">I", current)
    put(image, 0x5B14, ">i", power)
    return image


@pytest.mark.parametrize("name", ["abb-b23", "abb-b24"])
def test_abb_decodes_scaled_integers(name: str) -> None:
    profile = get_profile(name)
    reading = profile.decode(read(profile, abb_image(currents=(1600, 1612, 5), power=-1234, import_centi_kwh=123_456)))
    assert reading.currents_a == (16.0, 16.12, 0.05)
    assert reading.power_w == -12.34
    assert reading.energy_wh == 1_234_560


def test_abb_u64_all_ones_energy_is_a_sentinel() -> None:
    profile = get_profile("abb-b23")
    image = abb_image(currents=(0, 0, 0), power=0, import_centi_kwh=0xFFFFFFFFFFFFFFFF)
    reading = profile.decode(read(profile, image))
    assert reading.energy_wh is None
    assert Quantity.ENERGY in reading.sentinels


def test_abb_current_and_power_sentinels_are_reported() -> None:
    profile = get_profile("abb-b24")
    image = abb_image(currents=(0xFFFFFFFF, 0, 0), power=0x7FFFFFFF, import_centi_kwh=5)
    reading = profile.decode(read(profile, image))
    assert reading.sentinels == frozenset({Quantity.CURRENT_L1, Quantity.POWER})
    assert reading.energy_wh == 50


def carlo_gavazzi_image(
    *, import_address: int, currents_ma: tuple[int, int, int], power_dw: int, import_dkwh: int
) -> Image:
    image: Image = {}
    for address, current in zip((0x0C, 0x0E, 0x10), currents_ma, strict=True):
        put(image, address, ">i", current, low_word_first=True)
    put(image, 0x28, ">i", power_dw, low_word_first=True)
    put(image, import_address, ">i", import_dkwh, low_word_first=True)
    return image


@pytest.mark.parametrize(("name", "import_address"), [("em24", 0x42), ("em340", 0x34)])
def test_carlo_gavazzi_decodes_low_word_first_integers(name: str, import_address: int) -> None:
    profile = get_profile(name)
    # 70000 mA needs both words, so a wrong word order cannot pass.
    image = carlo_gavazzi_image(
        import_address=import_address, currents_ma=(70000, 16000, 0), power_dw=3, import_dkwh=98765
    )
    reading = profile.decode(read(profile, image))
    assert reading.currents_a == (70.0, 16.0, 0.0)
    assert reading.energy_wh == 9_876_500


def test_em340_reads_power_in_the_same_request_as_energy() -> None:
    profile = get_profile("em340")
    image = carlo_gavazzi_image(import_address=0x34, currents_ma=(0, 0, 0), power_dw=-5, import_dkwh=1)
    assert profile.decode(read(profile, image)).power_w == -0.5
    assert len(profile.read_plan) == 2


def test_eastron_poll_reads_currents_and_energy_in_two_requests() -> None:
    plan = get_profile("sdm630").read_plan
    assert [(block.address, block.count) for block in plan] == [(0x0006, 6), (0x0048, 2)]


def test_every_profile_fits_its_values_in_its_requests() -> None:
    for profile in PROFILES.values():
        covered = {a for block in profile.read_plan for a in range(block.address, block.address + block.count)}
        for register in profile.polled.values():
            assert set(range(register.address, register.end)) <= covered, profile.name


def test_unknown_profile_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(InvalidInput) as raised:
        get_profile("sdm999")
    assert raised.value.field == "profile"
    assert "sdm630" in raised.value.message


def test_short_reply_is_invalid() -> None:
    profile = get_profile("sdm630")
    with pytest.raises(MeterReplyInvalid):
        profile.decode([[0] * 6, [0]])


def test_wrong_number_of_replies_is_invalid() -> None:
    with pytest.raises(MeterReplyInvalid):
        get_profile("sdm630").decode([[0] * 6])


def test_meter_without_currents_or_power_cannot_be_declared() -> None:
    from chargenet.meters.profiles import DataType, Register, WordOrder

    with pytest.raises(ValueError, match="must declare power"):
        Profile(
            name="x",
            description="x",
            function_code=FunctionCode.READ_INPUT_REGISTERS,
            word_order=WordOrder.BIG,
            energy=Register(0, DataType.FLOAT32),
        )
