"""Use cases. Services get their ports through the constructor and hold no I/O of their own."""
