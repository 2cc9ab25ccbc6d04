"""The results tree of tests.helpers.make_tree, loaded as the reports load it."""

import pytest

from tests.helpers import _load, make_tree


@pytest.fixture
def res(tmp_path):
    return _load(make_tree(tmp_path))
