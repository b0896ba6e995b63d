"""Loading the packaged model prints nothing, also in a process that imported transformers before
evalret set the Hugging Face environment (its "Loading weights" bar once reached `evalret run`'s
output in such a process, which is how a test worker that loaded another model first saw it)."""

from __future__ import annotations

import pytest

from evalret.data.config import Config
from evalret.engines.embedders import make_embedder

pytestmark = pytest.mark.model


def test_loading_the_model_after_transformers_prints_no_bar(
    capfd: pytest.CaptureFixture[str],
) -> None:
    import transformers  # noqa: F401  # imported first, before evalret's environment

    embedder = make_embedder(Config().model)
    assert embedder.model is not None
    out, err = capfd.readouterr()
    assert "Loading weights" not in out + err, out + err
