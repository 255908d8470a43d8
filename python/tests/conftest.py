"""Shared fixtures: the repository's samples, and whether a GPU is here."""
import os

import pytest

import minijit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sample(name):
    return os.path.join(REPO, "samples", name)


@pytest.fixture
def gpu():
    """Device 0, or SKIPPED without a GPU."""
    if minijit.device_count() == 0:
        pytest.skip("no GPU (no CUDA driver found): the GPU run path is not tested here")
    return 0
