"""Retrieval evaluation on public benchmarks (LoCoMo, MADial-Bench): `engram eval`."""
