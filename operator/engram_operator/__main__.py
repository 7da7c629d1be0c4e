import sys

sys.exit(
    "engram-operator cannot run yet: placement, provisioning and the child manifests are built "
    "(engram_operator.placement, .provision, .manifests), the Kopf handlers, Helm chart and RBAC are not."
)
