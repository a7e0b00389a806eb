"""The build backend of ``mha_lib`` (``pyproject.toml`` names it): setuptools'
own, with every file of the wheel dated 1980-01-01, the earliest time a zip
file records, so that the same sources give the same bytes. Setuptools dates
each file by its modification time, which a checkout, an edit or a copy
changes; it takes ``SOURCE_DATE_EPOCH`` instead where that is set, so this
sets it where it is not (a distribution's own setting wins)."""

import os

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 (the hooks a build calls)

EPOCH = "315532800"  # 1980-01-01 00:00:00 UTC


def build_wheel(
    wheel_directory, config_settings=None, metadata_directory=None
):
    os.environ.setdefault("SOURCE_DATE_EPOCH", EPOCH)
    return build_meta.build_wheel(
        wheel_directory, config_settings, metadata_directory
    )
