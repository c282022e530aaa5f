"""``agentmem reindex`` on the embedded backend says what it did, not what the index holds in all."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentmem.adapters.embedded.vector_index import SqliteVectorIndex
from agentmem.bootstrap import build_container
from agentmem.cli import main
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings


def test_reindex_of_one_memory_reports_that_memory_s_entries_not_the_whole_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given 3 entries in `company` and 7 in `other`, all indexed by the hashing embedder
    monkeypatch.setenv("AGENTMEM_EMBEDDER", "hashing")
    monkeypatch.setenv("AGENTMEM_EMBEDDING_DIMENSION", "64")
    container = build_container(Settings(data_dir=tmp_path, embedder="hashing", embedding_dimension=64))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    for memory, count in (("company", 3), ("other", 7)):
        container.memories.create(account, memory)
        for n in range(count):
            container.entries.save(account, memory, f"note-{n}", SaveRequest(f"Note {n} about refunds.", "A"))
    index = container.search_index
    assert isinstance(index, SqliteVectorIndex)
    index.catch_up()
    assert index.vectors() == 10
    # When `agentmem reindex --memory company` runs
    with pytest.raises(SystemExit) as done:
        main(["reindex", "--data-dir", str(tmp_path), "--memory", "company"])
    assert done.value.code == 0
    out = capsys.readouterr()
    # Then it says it queued company's 3 entries, and gives the 10 vectors as the index's total, not as its work
    assert "queued 3 entries of memory 'company' for HashingEmbedder:64" in out.err
    said = "reindexed: queued 3 entries of memory 'company', applied 3 queued changes with HashingEmbedder:64"
    assert said in out.out
    assert "the index holds 10 vectors in all" in out.out
    assert "reindexed: 10 vectors" not in out.out
