"""Pure types and scoring: no I/O, no PostgreSQL, no HTTP."""
