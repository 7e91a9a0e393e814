"""Export files: the default name, the two-space content, atomic writes, and names that cannot escape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentreview.model.attestation import Attestation
from agentreview.store.export import export_path, write_export

HEAD = "0123456789abcdef" * 2 + "01234567"


def make_att(review_id: str = "widgets", binding: str = "default", head: str = HEAD) -> Attestation:
    return Attestation.build(
        run_id="review-0001", review_id=review_id, manifest_sha="a" * 64, binding=binding,
        repo_remote="github.com/acme/widgets", base_sha="1" * 40, head_sha=head,
        lanes=[{"id": "types", "kind": "command", "status": "pass", "blocking": True, "findings": [],
                "durationMs": 3, "summary": "naïve ✓"}],
        daemon="agentreview-test@host", rubrics=[],
    )


def test_export_path_is_review_binding_and_twelve_hex_of_head(tmp_path: Path) -> None:
    assert export_path(make_att(), tmp_path / ".reviews") == tmp_path / ".reviews" / "widgets-default-0123456789ab.json"
    assert export_path(make_att(binding="ci"), tmp_path).name == "widgets-ci-0123456789ab.json"


@pytest.mark.parametrize(
    "kwargs", [{"review_id": "../../etc/x"}, {"review_id": ".hidden"}, {"head": "abc/../../../../tmp/x"}]
)
def test_an_export_name_that_is_not_one_plain_file_name_is_refused(tmp_path: Path, kwargs: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="not a plain file name"):
        export_path(make_att(**kwargs), tmp_path)


def test_write_export_creates_directories_and_writes_two_space_json(tmp_path: Path) -> None:
    att = make_att()
    target = tmp_path / "deep" / "er" / "widgets-default-0123456789ab.json"
    assert write_export(att, target) == target
    text = target.read_text(encoding="utf-8")
    assert text == json.dumps(att.to_json_dict(), indent=2, ensure_ascii=False) + "\n"
    assert "naïve ✓" in text  # non-ASCII written literally, as JSON.stringify does
    assert Attestation.read_json(text).attestation_sha256() == att.attestation_sha256()
    assert "host" not in json.loads(text)
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no temp file left


def test_write_export_replaces_an_existing_export_whole(tmp_path: Path) -> None:
    target = tmp_path / "x.json"
    target.write_text("old and much longer content " * 1000)
    write_export(make_att(), target)
    assert Attestation.read_json(target.read_text()).runId == "review-0001"
