"""One construct per capability: storage, search, api, indexer, summaries, compaction, monitoring."""
