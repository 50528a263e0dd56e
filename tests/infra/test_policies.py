"""G4 at synth: the endpoint's policy files are validated against its catalog's schema, so a bad
policy fails `cdk synth` naming it; none, nothing is checked or imported; they ship in the
endpoint's code, where the function reads them at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from stacks import policies as synth_policies
from stacks.app_builder import build_app
from stacks.config import ContextError
from tests.infra.synth import NO_BUNDLING

GOOD = 'permit(principal, action in Action::"call_tool", resource);\n'
BAD = '@id("typo")\nforbid(principal, action == Action::"echo", resource) when { context.arguments.txt == "x" };\n'


def test_a_bad_policy_fails_synth_naming_it_and_good_ones_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synth_policies, "POLICIES_DIR", tmp_path)
    assert synth_policies.check_policies() == 0  # no policy file: nothing to check
    (tmp_path / "all.cedar").write_text(GOOD)
    assert synth_policies.check_policies() == 1
    (tmp_path / "typo.cedar").write_text(BAD)
    with pytest.raises(ContextError, match=r"typo: .*arguments\.txt"):
        build_app(NO_BUNDLING, nag=False)


def test_the_policies_folder_is_inside_the_endpoints_code_asset() -> None:
    assert synth_policies.POLICIES_DIR.parent == synth_policies.ENDPOINT_CODE == synth_policies.FEATURES_DIR.parent
