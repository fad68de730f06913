"""Environment comparison: the same search on several server variants, and where to deploy."""
