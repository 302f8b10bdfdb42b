from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chargenet.meters.errors import MeterReplyInvalid
from chargenet.meters.profiles import DataType, WordOrder, decode_value, encode_value

_RANGES = {
    DataType.UINT16: (0, 0xFFFF),
    DataType.INT16: (-0x8000, 0x7FFF),
    DataType.UINT32: (0, 0xFFFFFFFF),
    DataType.INT32: (-0x80000000, 0x7FFFFFFF),
    DataType.UINT64: (0, 0xFFFFFFFFFFFFFFFF),
    DataType.INT64: (-0x8000000000000000, 0x7FFFFFFFFFFFFFFF),
}


@given(st.sampled_from(list(_RANGES)), st.sampled_from(list(WordOrder)), st.data())
def test_integers_round_trip_through_registers(datatype: DataType, order: WordOrder, data: st.DataObject) -> None:
    value = data.draw(st.integers(*_RANGES[datatype]))
    registers = encode_value(value, datatype, order)
    assert len(registers) == datatype.registers
    assert decode_value(registers, datatype, order) == value


@given(st.floats(width=32, allow_nan=False, allow_infinity=False), st.sampled_from(list(WordOrder)))
def test_float32_round_trips_through_registers(value: float, order: WordOrder) -> None:
    assert decode_value(encode_value(value, DataType.FLOAT32, order), DataType.FLOAT32, order) == value


def test_big_word_order_sends_the_high_word_first() -> None:
    assert encode_value(0x00010002, DataType.UINT32, WordOrder.BIG) == [0x0001, 0x0002]
    assert encode_value(0x00010002, DataType.UINT32, WordOrder.LITTLE) == [0x0002, 0x0001]


def test_float32_230_volts_is_0x4366_0x0000() -> None:
    assert decode_value([0x4366, 0x0000], DataType.FLOAT32, WordOrder.BIG) == 230.0


@pytest.mark.parametrize("registers", [[0x7FC0, 0x0000], [0x7F80, 0x0000], [0xFF80, 0x0000]])
def test_float_nan_and_infinity_are_no_value(registers: list[int]) -> None:
    assert decode_value(registers, DataType.FLOAT32, WordOrder.BIG) is None


def test_sentinel_counts_only_when_the_profile_uses_sentinels() -> None:
    assert decode_value([0xFFFF, 0xFFFF], DataType.UINT32, WordOrder.BIG, nan_sentinel=True) is None
    assert decode_value([0xFFFF, 0xFFFF], DataType.UINT32, WordOrder.BIG) == 0xFFFFFFFF


def test_signed_sentinel_is_the_maximum_positive_value() -> None:
    assert decode_value([0x7FFF], DataType.INT16, WordOrder.BIG, nan_sentinel=True) is None
    assert decode_value([0xFFFF], DataType.INT16, WordOrder.BIG, nan_sentinel=True) == -1


def test_register_over_sixteen_bits_is_invalid() -> None:
    with pytest.raises(MeterReplyInvalid):
        decode_value([0x10000, 0], DataType.UINT32, WordOrder.BIG)


def test_register_count_must_match_the_type() -> None:
    with pytest.raises(MeterReplyInvalid):
        decode_value([1], DataType.FLOAT32, WordOrder.BIG)


def test_finite_check_does_not_touch_integers() -> None:
    value = decode_value([0, 1], DataType.INT32, WordOrder.BIG)
    assert isinstance(value, int) and not math.isnan(value)


@given(st.floats(width=32, min_value=0, max_value=3e7), st.sampled_from([1, 10, 100, 1000]))
def test_whole_number_scaling_of_a_float32_counter_equals_exact_decimal_rounding(value: float, scale: int) -> None:
    from decimal import ROUND_HALF_EVEN, Decimal

    from chargenet.meters.profiles.base import _counter

    exact = int((Decimal(value) * scale).to_integral_value(rounding=ROUND_HALF_EVEN))
    assert _counter(value, Decimal(scale), scale) == exact
