"""The embedded backend: SQLite (WAL) for records, files for blobs, in-process index and jobs."""
