import sys

sys.exit(
    "engram-operator is not built yet: the MemoryTenant CRD is in crds/, "
    "the operator, its Helm chart and RBAC land with the platform work (see README)."
)
