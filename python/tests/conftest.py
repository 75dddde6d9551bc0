"""Where the tests find the model and the CLI they compare with: STATICLM_MODEL and
STATICLM_CLI, else the repository's default model and build/tools/staticlm."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _existing(env, default):
    path = Path(os.environ.get(env, default))
    if not path.exists():
        pytest.fail(f"{path} not found (set {env})")
    return path


@pytest.fixture(scope="session")
def model_path():
    return _existing("STATICLM_MODEL", ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="session")
def cli():
    return _existing("STATICLM_CLI", ROOT / "build" / "tools" / "staticlm")


@pytest.fixture(scope="session")
def model(model_path):
    import staticlm

    with staticlm.Model(model_path, ctx=2048, backend="cpu") as m:
        yield m
