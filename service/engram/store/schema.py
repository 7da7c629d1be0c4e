"""The schema shared by every tenant (the control tables); a tenant's own schema is named by
domain/tenancy.py."""

from __future__ import annotations

CONTROL_SCHEMA = '"engram_control"'
