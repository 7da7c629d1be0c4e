"""The server at the connection, over raw sockets: a head over the cap is refused (431) without
being buffered whole, a client that never completes its request or stalls its body is closed
(408), and meanwhile other clients are served; a slow but steady client is not cut off."""

import json
import socket
import time

import httpx
import pytest

from tests.conftest import ServerThread

HEAD_CAP = 8 * 1024


@pytest.fixture(scope="module")
def guarded(settings, bootstrapped):
    limits = {"max_header_bytes": HEAD_CAP, "header_timeout_seconds": 1.0, "idle_timeout_seconds": 1.5}
    with ServerThread(settings.model_copy(update=limits), bootstrapped) as running:
        yield running


def _connect(server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    sock.settimeout(20)
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict]:
    """The status and JSON body of the response, read until the server closes."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body) if body else {}


def _healthy(server) -> bool:
    return httpx.get(f"{server.url}/healthz", timeout=20).status_code == 200


def test_a_head_over_the_cap_is_refused_before_it_is_all_sent(guarded):
    sock = _connect(guarded)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
    sent, refused = 0, False
    try:
        while sent < 50 * 1024 * 1024:  # 50 MB, unless the server stops it first
            sock.sendall(b"a" * 65536)
            sent += 65536
    except (BrokenPipeError, ConnectionResetError):
        refused = True
    assert refused and sent < 4 * 1024 * 1024, sent  # stopped near the cap, not at 50 MB
    sock.close()
    assert _healthy(guarded)


def test_a_long_request_line_or_many_headers_get_431_in_engrams_shape(guarded):
    for head in (
        b"GET /healthz?" + b"q" * (HEAD_CAP + 1) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(2000)) + b"\r\n",
    ):
        sock = _connect(guarded)
        sock.sendall(head)
        status, body = _answer(sock)
        assert status == 431 and body["error"]["code"] == "too_large", body
    headers = {"X-Cookie": "c" * (HEAD_CAP // 2)}  # under the cap: served
    assert httpx.get(f"{guarded.url}/healthz", headers=headers, timeout=20).status_code == 200


def test_a_client_that_sends_nothing_or_dribbles_its_head_is_closed(guarded):
    silent = _connect(guarded)
    dribbling = _connect(guarded)
    started = time.monotonic()
    for byte in b"GET /healthz HTTP/1.1\r\nHost: ":
        try:
            dribbling.sendall(bytes([byte]))
        except OSError:
            break
        time.sleep(0.2)
        if time.monotonic() - started > 10:
            break
    assert _healthy(guarded)  # others are served meanwhile
    for sock in (silent, dribbling):
        status, body = _answer(sock)
        assert status == 408 and body["error"]["code"] == "timeout", body
        sock.close()


async def test_a_stalled_body_is_closed_and_a_steady_one_is_not(guarded, tenant):
    ctx, key = tenant
    stalled = _connect(guarded)  # admitted (its key is good), then its body stops coming
    stalled.sendall(
        b"POST /t/%s/v1/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
        b'Content-Length: 1000\r\n\r\n{"q' % (ctx.name.encode(), key.encode())
    )
    status, body = _answer(stalled)
    assert status == 408 and body["error"]["code"] == "timeout", body
    stalled.close()

    steady = _connect(guarded)
    payload = json.dumps({"query": "what does the user drink in the morning", "top_k": 3}).encode()
    steady.sendall(
        b"POST /t/%s/v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % (ctx.name.encode(), key.encode(), len(payload))
    )
    step = len(payload) // 10 + 1
    for i in range(0, len(payload), step):  # 10 chunks, one every 0.3 s: 3 s in all, never 1.5 s idle
        steady.sendall(payload[i : i + step])
        time.sleep(0.3)
    status, data = _answer_first(steady)
    assert status == 200, data  # read to its end and answered
    steady.close()


def _answer_first(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return int(data.split()[1]), data


def test_keep_alive_requests_on_one_connection_still_work(guarded):
    with httpx.Client(base_url=guarded.url, timeout=20) as client:
        for _ in range(5):
            assert client.get("/healthz").status_code == 200
