"""Sending straight through geventhttpclient: a real request on a real socket, and what each
failure before or during the response is called in the record."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import gevent
import gevent.server
import gevent.socket
from geventhttpclient.client import HTTPClientPool
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError
from geventhttpclient.url import URL

from loadgen.traffic.http_send import broken, no_response, post, release, short, socket_alive


def _serve(reply: bytes) -> tuple[gevent.server.StreamServer, list[bytes]]:
    seen: list[bytes] = []

    def handle(sock, _address):
        seen.append(sock.recv(65536))
        sock.sendall(reply)

    server = gevent.server.StreamServer(("127.0.0.1", 0), handle)
    server.start()
    return server, seen


def test_post_sends_the_body_and_headers_and_keeps_the_connection():
    body = b"data: {}\n\ndata: [DONE]\n\n"
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    server, seen = _serve(reply)
    pool = HTTPClientPool(concurrency=1)
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1/chat/completions"
        response = post(pool, url, b'{"a":1}', {"Accept-Encoding": "identity", "X-Try": "1"})
        assert response.status_code == 200
        assert response.read() == body
        release(response, drop=False)
    finally:
        pool.close()
        server.stop()
    head, _, sent = seen[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"X-Try: 1" in head and b"Content-Length: 7" in head
    assert sent == b'{"a":1}'


def test_post_sends_the_very_bytes_geventhttpclient_would(monkeypatch):
    body = b"data: [DONE]\n\n"
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    server, seen = _serve(reply)
    pool = HTTPClientPool(concurrency=1)
    url = f"http://127.0.0.1:{server.server_port}/v1/completions?x=1"
    headers = {"Accept-Encoding": "identity", "Authorization": "Bearer k"}
    client = pool.get_client(URL(url))
    build, made = client._build_request, []

    def noting(*args: Any, **kwargs: Any) -> Any:
        made.append(args)
        return build(*args, **kwargs)

    monkeypatch.setattr(client, "_build_request", noting)
    try:
        for data in (b'{"prompt":"\xc3\xa9"}', b"", b"x" * 70_000):
            release(post(pool, url, data, headers), drop=True)
        assert len(made) == 1  # the head is made once for the client
        for data in (b'{"prompt":"\xc3\xa9"}', b"", b"x" * 70_000):
            release(client.request("POST", "/v1/completions?x=1", body=data, headers=headers), drop=True)
        # a header that sets the length itself: the client's request is sent as it is
        own = {"Content-Length": "3"}
        release(post(pool, url, b"abc", own), drop=True)
        release(client.request("POST", "/v1/completions?x=1", body=b"abc", headers=own), drop=True)
    finally:
        pool.close()
        server.stop()
    ours, theirs = [*seen[:3], seen[6]], [*seen[3:6], seen[7]]
    assert ours[:2] == theirs[:2] and ours[3] == theirs[3]  # the big body: its first receive
    assert ours[2].partition(b"\r\n\r\n")[0] == theirs[2].partition(b"\r\n\r\n")[0]
    assert b"Content-Length: 70000\r\n" in ours[2] and b"Content-Length: 3\r\n" in ours[3]


def test_a_body_larger_than_the_send_buffer_is_sent_whole():
    """The first send takes what the socket's buffer holds; the rest follows."""
    body = bytes(range(256)) * (16 * 4096)  # 16 MiB: more than a loopback socket buffers
    got: list[int] = []

    def handle(sock, _address):
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        received = bytearray(rest)
        while len(received) < length:
            received += sock.recv(1 << 20)
        got.append(len(received))
        got.append(int(bytes(received) == body))
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

    server = gevent.server.StreamServer(("127.0.0.1", 0), handle)
    server.start()
    pool = HTTPClientPool(concurrency=1)
    try:
        response = post(pool, f"http://127.0.0.1:{server.server_port}/v1/completions", body, {})
        assert response.status_code == 200
        release(response, drop=False)
    finally:
        pool.close()
        server.stop()
    assert got == [len(body), 1]


def test_each_users_client_makes_its_head_once(monkeypatch):
    body = b"data: [DONE]\n\n"
    server, _ = _serve(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    url = f"http://127.0.0.1:{server.server_port}/v1/chat/completions"
    pools = [HTTPClientPool(concurrency=1), HTTPClientPool(concurrency=1)]  # two users' own
    made: list[str] = []
    headers = {"Accept": "*/*"}  # a run's headers: one dict for all its requests
    for pool in pools:
        client = pool.get_client(URL(url))

        def noting(*args: Any, build: Callable[..., Any] = client._build_request, **kwargs: Any) -> Any:
            made.append(args[1])
            return build(*args, **kwargs)

        monkeypatch.setattr(client, "_build_request", noting)
    try:
        for turn in range(6):  # the users take turns
            release(post(pools[turn % 2], url, b"{}", headers), drop=True)
    finally:
        for pool in pools:
            pool.close()
        server.stop()
    assert made == ["/v1/chat/completions"] * 2


def test_a_refused_connection_is_a_connection_failure():
    pool = HTTPClientPool(concurrency=1)
    timeout = gevent.Timeout(5)
    try:
        post(pool, "http://127.0.0.1:9/x", b"{}", {})
    except OSError as exc:
        status, kind, error = no_response(exc, timeout, 5)
    finally:
        pool.close()
    assert (status, kind) == ("error", "connection")
    assert error.startswith("connection failed: ")


def test_the_deadline_before_any_response_and_a_malformed_one_are_named():
    timeout = gevent.Timeout(2.5)
    assert no_response(timeout, timeout, 2.5) == ("timeout", None, "timeout: no response within 2.5s")
    status, kind, error = no_response(HTTPParseError("bad status line"), timeout, 2.5)
    assert (status, kind, error) == ("error", "protocol", "malformed HTTP response: bad status line")
    # a server that closed before answering is the connection, not the protocol
    assert no_response(HTTPConnectionClosed("closed"), timeout, 2.5)[1] == "connection"


def test_a_response_cut_mid_body():
    assert broken(ConnectionResetError("reset"))[0] == "connection"
    assert broken(HTTPParseError("Incomplete response"))[0] == "connection"
    assert broken(HTTPParseError("invalid chunk size")) == (
        "protocol",
        "malformed HTTP response: invalid chunk size",
    )


def test_short_keeps_one_line_of_at_most_200_characters():
    assert short("a\n  b") == "a b"
    assert len(short("x" * 500)) == 200 and short("x" * 500).endswith("…")


def test_a_kept_connection_is_alive_only_while_idle_and_open():
    """What the pool's own check (a select) says, said by a peek: readable means dead."""
    for make in (socket.socketpair, gevent.socket.socketpair):
        ours, peer = make()
        assert socket_alive(ours)
        peer.sendall(b"HTTP/1.1 408 Request Timeout\r\n\r\n")  # an answer nobody asked for
        gevent.sleep(0.01)
        assert not socket_alive(ours)
        assert ours.recv(100)  # the peek left the bytes where they were
        assert socket_alive(ours)
        peer.close()  # the server closed the kept connection: an end of file
        gevent.sleep(0.01)
        assert not socket_alive(ours)
        ours.close()
        assert not socket_alive(ours)
    assert not socket_alive(None)


def test_a_connection_the_server_closed_is_replaced_before_the_send(monkeypatch):
    """The pool runs our check: a request after the server closed the kept connection goes
    out on a new one (sent on the old one, it would fail as a reset or a closed connection)."""
    body = b"data: [DONE]\n\n"
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    connections: list[int] = []

    def handle(sock, _address):  # answers one request, then closes: a server's idle timeout
        connections.append(1)
        sock.recv(65536)
        sock.sendall(reply)
        gevent.sleep(0.01)
        sock.close()

    server = gevent.server.StreamServer(("127.0.0.1", 0), handle)
    server.start()
    pool = HTTPClientPool(concurrency=1)
    url = f"http://127.0.0.1:{server.server_port}/v1/completions"
    checked: list[bool] = []
    try:
        for turn in range(3):
            response = post(pool, url, b"{}", {})
            assert response.status_code == 200 and response.read() == body
            release(response, drop=False)
            gevent.sleep(0.05)  # the server closes the connection the pool kept
            if turn == 0:  # the check post() gave the pool, seen from outside
                connection_pool = pool.get_client(URL(url))._connection_pool
                check = connection_pool._is_socket_alive
                assert check is socket_alive

                def noting(sock: Any, check: Callable[[Any], bool] = check) -> bool:
                    checked.append(check(sock))
                    return checked[-1]

                monkeypatch.setattr(connection_pool, "_is_socket_alive", noting)
    finally:
        pool.close()
        server.stop()
    assert len(connections) == 3
    assert checked == [False, False]  # each kept connection was found closed by socket_alive
