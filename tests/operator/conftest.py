"""Two real PostgreSQL servers for the operator: the suite's one (labelled test) and a prod one."""

import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import kmock
import pytest
from kmock import KubernetesError

from engram.runtime import bootstrap_database
from engram.store.embedded import EmbeddedPostgres
from engram_operator.config import Instance, OperatorConfig
from tests.operator.emulator import KubeEmulator
from tests.operator.harness import TENANTS, Cluster, OperatorThread, write_kubeconfig
from tests.operator.tls_proxy import TLSOnlyProxy

CLUSTER_UID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


@pytest.fixture(scope="session")
async def prod_dsn():
    root = Path(tempfile.mkdtemp(prefix="engram-test-prod-pg-"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root)
    dsn = server.start()
    await bootstrap_database(dsn, "prod")
    yield dsn
    server.destroy()


def _certificates(folder: Path) -> None:
    """A CA, and a certificate it signed for 127.0.0.1 (ca.crt, server.crt, server.key in ``folder``)."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=engram-test-ca",
    )
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=pg")
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "san.cnf",
    )


@pytest.fixture(scope="session")
async def tls_server(bootstrapped):
    """The suite's PostgreSQL (labelled test) reached over TLS only, through a proxy that terminates
    TLS as PostgreSQL does (the bundled server is built without it): (an admin DSN through it,
    without TLS parameters; the CA's file; the CA's PEM)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificates for a TLS-only PostgreSQL")
    certificates = Path(tempfile.mkdtemp(prefix="engram-test-tls-"))
    _certificates(certificates)
    backend = urlsplit(bootstrapped)
    proxy = TLSOnlyProxy((backend.hostname, backend.port), certificates / "server.crt", certificates / "server.key")
    port = await proxy.start()
    yield (
        backend._replace(netloc=f"{backend.username}:{backend.password}@127.0.0.1:{port}").geturl(),
        (certificates / "ca.crt"),
        (certificates / "ca.crt").read_text(),
    )
    await proxy.close()
    shutil.rmtree(certificates, ignore_errors=True)


@pytest.fixture(scope="session")
def tls_instance(tls_server) -> Instance:
    """An instance reached with verify-full (the operator's own CA file), giving its tenants the CA."""
    admin_dsn, ca_file, ca_pem = tls_server
    return Instance(
        name="pg-tls",
        environment="test",
        adminDsn=f"{admin_dsn}?sslmode=verify-full&sslrootcert={ca_file}",
        tls={"rootCert": ca_pem},
    )


@pytest.fixture(scope="session")
def test_instance(bootstrapped) -> Instance:
    return Instance(name="pg-test", environment="test", adminDsn=bootstrapped)


@pytest.fixture(scope="session")
def prod_instance(prod_dsn) -> Instance:
    return Instance(name="pg-prod", environment="prod", adminDsn=prod_dsn)


@pytest.fixture
async def emulator(tmp_path, monkeypatch):
    """The Kubernetes API emulator on a local port, with the MemoryTenant resource declared;
    $KUBECONFIG points at it. Fails the test if the emulator itself crashed on a request."""
    kube = KubeEmulator()
    kube.resources.load_bundled()
    kube.resources[TENANTS] = kmock.ResourceInfo(
        kind="MemoryTenant",
        singular="memorytenant",
        namespaced=True,
        shortnames={"mt"},
        verbs={"get", "list", "watch", "create", "patch", "delete"},
        subresources={"status"},
    )
    # Its uid names the cluster, as in a real one (kmock serves no cluster-scoped objects).
    kube["get /api/v1/namespaces/kube-system"] << {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "kube-system", "uid": CLUSTER_UID},
    }
    async with kube, kmock.Server(kube) as server:
        monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", str(server.url))))
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        yield kube
        # API answers such as 404 and 409 are recorded as errors too; a crash is anything else.
        crashes = [e for e in kube.errors if not isinstance(e, KubernetesError)]
        assert not crashes, f"the emulator crashed serving requests: {crashes}"


@pytest.fixture
def cluster(emulator) -> Cluster:
    return Cluster(emulator)


@pytest.fixture
def operator_config(test_instance, prod_instance) -> OperatorConfig:
    return OperatorConfig(image="engram:test", instances=[test_instance, prod_instance], driftIntervalSeconds=1)


@pytest.fixture
async def operator(emulator, operator_config):
    async with OperatorThread(operator_config) as running:
        yield running
