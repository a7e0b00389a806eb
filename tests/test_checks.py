"""The shared input checks: what they accept, and what they refuse with a
clear message."""

import math

import numpy
import pytest

from mha_lib.checks import (
    check_bool,
    check_int,
    check_positive_int,
    check_positive_number,
)

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    "value", [3, numpy.int64(3), numpy.int32(3), numpy.uint8(3)]
)
def test_integers_of_any_kind_are_sizes_and_come_back_as_ints(value):
    for check in (check_int, check_positive_int):
        got = check("size", value)
        assert got == 3 and type(got) is int


@pytest.mark.parametrize("value", [True, 3.0, "3", numpy.float64(3)])
def test_what_is_not_an_integer_is_refused(value):
    with pytest.raises(TypeError, match="size must be an int"):
        check_int("size", value)


def test_only_true_and_false_are_flags():
    assert check_bool("is_causal", False) is False
    for value in ("no", "False", 0, None):
        with pytest.raises(TypeError, match="is_causal must be True or False"):
            check_bool("is_causal", value)


def test_positive_numbers_are_finite_and_not_flags():
    assert check_positive_number("scale", numpy.float32(0.5)) == 0.5
    assert check_positive_number("scale", 2) == 2.0
    for value in (math.inf, math.nan, 0.0, -1.0):
        with pytest.raises(ValueError, match="scale must be a positive, fin"):
            check_positive_number("scale", value)
    for value in (True, "0.5", None):
        with pytest.raises(TypeError, match="scale must be a number"):
            check_positive_number("scale", value)
