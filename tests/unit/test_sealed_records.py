"""One seal and one unseal (domain/signing.py) for every signed record bound to its run,
config and node or pair: rendezvous records, the collector's decisions, node and look
manifests."""

from __future__ import annotations

import pytest

from distkpi.domain.signing import BoundElsewhere, Unsealed, seal, signed_by, unseal

KEY = "k" * 64
RECORD = {"run_id": "r1", "config": "c", "node": 1, "port": 5000}


def test_a_sealed_record_unseals_where_it_belongs() -> None:
    sealed = seal(KEY, RECORD)
    assert signed_by(KEY, sealed)
    assert unseal(KEY, sealed, run_id="r1", config="c", node=1) == sealed


def test_with_no_key_a_record_is_left_as_it_is_and_still_bound() -> None:
    assert seal(None, RECORD) == RECORD
    assert unseal(None, RECORD, run_id="r1", config="c", node=1) == RECORD
    with pytest.raises(BoundElsewhere):
        unseal(None, RECORD, run_id="r1", config="c", node=2)


def test_a_record_signed_with_another_key_or_changed_is_refused() -> None:
    with pytest.raises(Unsealed, match="not signed with this config's key"):
        unseal(KEY, seal("o" * 64, RECORD), run_id="r1")
    with pytest.raises(Unsealed, match="not signed with this config's key"):
        unseal(KEY, seal(KEY, RECORD) | {"port": 6000}, run_id="r1")
    with pytest.raises(Unsealed, match="not a JSON object"):
        unseal(KEY, [RECORD])


def test_a_signed_record_copied_from_another_node_says_where_it_was_signed_for() -> None:
    with pytest.raises(BoundElsewhere) as copied:
        unseal(KEY, seal(KEY, RECORD), run_id="r1", config="c", node=0)
    assert copied.value.found == {"run_id": "r1", "config": "c", "node": 1}
