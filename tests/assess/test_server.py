"""reljudge assess over HTTP (real server processes on 127.0.0.1, real SQLite): the token,
the loopback Host check, what a write must look like, and concurrent writers on one store."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import aiohttp
import pytest

from reljudge.store import LabelStore
from tests.helpers import PAIRS, assess_server, make_store

ROUTES = ("", "api/state", "api/item/0", "static/app.js", "static/style.css")


def fetch(url: str, data: dict | bytes | None = None, headers: dict | None = None,
          content_type: str = "application/json") -> tuple[int, bytes, dict]:
    body = json.dumps(data).encode() if isinstance(data, dict) else data
    req = urllib.request.Request(url, data=body, headers={**(headers or {}),
                                 **({"Content-Type": content_type} if body is not None else {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)


@pytest.fixture
def store_path(tmp_path):
    return make_store(tmp_path / "labels.sqlite")


def test_with_host_every_request_needs_the_token(store_path):
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "a",
                       "--host", "127.0.0.1") as (url, _, lines):
        base, token = url.split("?token=")
        assert lines[-1].startswith(f"token: {token} ")
        for route in ROUTES:
            assert fetch(base + route)[0] == 403, route
            assert fetch(base + route + "?token=wrong")[0] == 403, route
            assert fetch(base + route, headers={"Cookie": "reljudge_token=wrong"})[0] == 403
            assert fetch(f"{base}{route}?token={token}")[0] == 200, route
            assert fetch(base + route, headers={"X-Reljudge-Token": token})[0] == 200, route
            assert fetch(base + route, headers={"Cookie": f"reljudge_token={token}"})[0] == 200
        assert fetch(base + "api/grade", {"index": 0, "grade": 1})[0] == 403
        status, _, head = fetch(f"{base}?token={token}")
        assert "reljudge_token=" in head["set-cookie"] and "HttpOnly" in head["set-cookie"]
        assert fetch(base + "api/grade", {"index": 0, "grade": 1},
                     headers={"X-Reljudge-Token": token})[0] == 200
    with LabelStore(store_path) as store:
        assert [(e.source_name, e.grade) for e in store.events(kind="human")] == [("a", 1)]


@pytest.mark.slow  # a server process (the token and origin tests stay fast)
def test_without_host_only_loopback_names_are_answered(store_path):
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "a") as (
            url, _, _):
        port = url.rsplit(":", 1)[1].strip("/")
        assert fetch(url)[0] == 200
        assert fetch(f"http://localhost:{port}/api/state")[0] == 200
        # a page on another site whose name resolves to 127.0.0.1 (DNS rebinding) is refused
        assert fetch(url + "api/state", headers={"Host": f"attacker.example:{port}"})[0] == 403
        status, body, head = fetch(url)
        assert b"static/app.js" in body and "script-src 'self'" in head[
            "content-security-policy"]


def test_a_write_must_be_a_json_object_with_a_valid_grade(store_path):
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "a") as (
            url, _, _):
        grade = url + "api/grade"
        # a form post (what a foreign page can send without asking) is refused
        assert fetch(grade, b"index=0&grade=1", content_type="text/plain")[0] == 415
        assert fetch(grade, b"index=0&grade=1",
                     content_type="application/x-www-form-urlencoded")[0] == 415
        assert fetch(grade, b"{not json")[0] == 400
        assert fetch(grade, b"[1, 2]")[0] == 400
        for bad in ({"index": 0, "grade": 4}, {"index": 0, "grade": "3"},
                    {"index": 99, "grade": 1}, {"index": 0}, {"grade": 1},
                    {"index": 0, "grade": 1, "seconds": -5}):
            status, body, _ = fetch(grade, bad)
            assert status == 400 and json.loads(body)["error"], bad
        assert fetch(url + "api/item/99")[0] == 404
        assert fetch(url + "api/item/-1")[0] == 404
        assert fetch(grade)[0] == 405  # GET
    with LabelStore(store_path) as store:
        assert list(store.events(kind="human")) == []


async def _grade_all(base: str, grades: list[int], clients: int) -> list[int]:
    """Send every grade, `clients` requests at a time; returns the HTTP statuses."""
    sem = asyncio.Semaphore(clients)
    async with aiohttp.ClientSession() as session:
        async def one(i: int, g: int) -> int:
            async with sem, session.post(base + "api/grade",
                                         json={"index": i, "grade": g, "seconds": 0.5}) as r:
                return r.status
        return await asyncio.gather(*(one(i, g) for i, g in enumerate(grades)))


@pytest.mark.slow  # two server processes
def test_two_annotators_on_two_servers_write_one_store_at_once(tmp_path):
    pairs = [(f"q{i % 7}", f"d{i}") for i in range(120)]
    store_path = make_store(tmp_path / "labels.sqlite", pairs)
    alice = [i % 4 for i in range(len(pairs))]
    bob = [(i * 7 + 1) % 4 for i in range(len(pairs))]
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator",
                       "alice") as (url_a, _, _), \
         assess_server("--store", str(store_path), "--sample", "s1", "--annotator",
                       "bob") as (url_b, _, _):
        async def both():
            return await asyncio.gather(_grade_all(url_a, alice, 4), _grade_all(url_b, bob, 4))
        statuses = asyncio.run(both())
        assert statuses == [[200] * len(pairs)] * 2
        state = json.loads(fetch(url_b + "api/state")[1])
        assert len(state["grades"]) == len(pairs)
    with LabelStore(store_path) as store:
        for name, grades in (("alice", alice), ("bob", bob)):
            got = {(lab.qid, lab.docid): lab.grade
                   for lab in store.merge(f"source={name}").labels}
            assert got == dict(zip(pairs, grades, strict=True))
        assert store.count() == 2 + 2 * len(pairs)  # the two LLM labels, then every grade


@pytest.mark.slow  # a killed server process, then a restart
def test_a_crashed_server_resumes_from_the_store(store_path):
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "a") as (
            url, proc, _):
        for i, g in enumerate([3, 2, 1]):
            assert fetch(url + "api/grade", {"index": i, "grade": g})[0] == 200
        assert json.loads(fetch(url + "api/undo", {})[1])["undone"] == 2
        proc.kill()  # a crash: what was answered is in the store
        proc.wait()
    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "a") as (
            url, _, lines):
        assert lines[0] == f"grading sample s1 as a: 2 of {len(PAIRS)} pairs graded so far"
        assert json.loads(fetch(url + "api/state")[1])["grades"] == {"0": 3, "1": 2}


@pytest.mark.slow  # a server process (the token and origin tests stay fast)
def test_a_pairs_file_with_text_files_needs_no_sample(tmp_path):
    store_path = tmp_path / "bare.sqlite"
    LabelStore(store_path).close()
    (tmp_path / "pairs.txt").write_text("q1 0 d1 2\nq1 0 d2 0\n")
    (tmp_path / "q.tsv").write_text("q1\twhat is <i>this</i>\n")
    (tmp_path / "p.jsonl").write_text('{"docid": "d1", "text": "one"}\n'
                                      '{"docid": "d2", "text": "two"}\n')
    with assess_server("--store", str(store_path), "--pairs", str(tmp_path / "pairs.txt"),
                       "--annotator", "ann", "--queries", str(tmp_path / "q.tsv"),
                       "--passages", str(tmp_path / "p.jsonl")) as (url, _, lines):
        assert lines[0].startswith(f"grading pairs {tmp_path / 'pairs.txt'} as ann: 0 of 2")
        item = json.loads(fetch(url + "api/item/1")[1])
        assert (item["query"], item["passage"]) == ("what is <i>this</i>", "two")
        assert fetch(url + "api/grade", {"index": 1, "grade": 2, "note": "ok"})[0] == 200
    with LabelStore(store_path) as store:
        (e,) = store.events()
        assert (e.qid, e.docid, e.grade, e.source_kind, e.source_name) == (
            "q1", "d2", 2, "human", "ann")
        assert e.meta == {"pairs": str(tmp_path / "pairs.txt"), "position": 1, "note": "ok"}


@pytest.mark.slow  # two server processes, one after the other
def test_pairs_come_a_query_at_a_time_by_default_and_the_same_after_a_restart(store_path):
    """--order query (the default): each query's passages together, queries and passages
    shuffled; a restart shows the same order; --order random mixes the queries."""
    orders = []
    for _ in range(2):
        with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "a",
                           "--order", "query") as (url, _, _):
            status, body, _ = fetch(url + "api/state")
            assert status == 200
            orders.append([(it["qid"], it["docid"]) for it in json.loads(body)["items"]])
    shown = orders[0]
    assert orders[1] == shown and sorted(shown) == sorted(PAIRS) and shown != PAIRS
    runs = [q for i, (q, _) in enumerate(shown) if i == 0 or shown[i - 1][0] != q]
    assert sorted(runs) == ["q1", "q2", "q3"]  # each query once: its passages in a row
    from reljudge.cli import build_parser

    args = build_parser().parse_args(["assess", "--store", "x", "--sample", "s1",
                                      "--annotator", "a"])
    assert args.order == "query"  # the command's default


def test_the_orders_of_a_task():
    from reljudge.assess.task import ordered

    pairs = [(f"q{i % 7}", f"d{i}") for i in range(70)]
    by_query = ordered(pairs, "query", "seed")
    assert sorted(by_query) == sorted(pairs)
    assert len([i for i in range(1, 70) if by_query[i][0] != by_query[i - 1][0]]) == 6
    assert by_query == ordered(pairs, "query", "seed") != ordered(pairs, "query", "other")
    mixed = ordered(pairs, "random", "seed")
    assert sorted(mixed) == sorted(pairs) and mixed != pairs
    assert len([i for i in range(1, 70) if mixed[i][0] != mixed[i - 1][0]]) > 20
    assert ordered(pairs, "given", "seed") == pairs


def test_without_a_token_a_write_from_another_origin_is_refused(store_path):
    """A browser names the page a write comes from (Origin): without a token, only the
    server's own page may write; clients that send no Origin (curl, scripts) still can."""
    with assess_server("--store", str(store_path), "--sample", "s1",
                       "--annotator", "a") as (url, _, _):
        own = url.rstrip("/")
        for origin, status in (("http://evil.example", 403), ("null", 403),
                               (own.replace("127.0.0.1", "localhost"), 403), (own, 200)):
            got = fetch(url + "api/grade", {"index": 0, "grade": 1}, {"Origin": origin})
            assert got[0] == status, (origin, got)
        assert fetch(url + "api/grade", {"index": 1, "grade": 2})[0] == 200
    with LabelStore(store_path) as store:
        assert [e.grade for e in store.events(kind="human")] == [1, 2]


@pytest.mark.slow  # a server process (the token and origin tests above stay fast)
def test_on_a_lan_the_addresses_to_open_are_this_machines_not_the_wildcard(store_path):
    """--host 0.0.0.0 listens everywhere; what is printed is an address a colleague can open
    (one line per LAN address of this machine), each answering with the token."""
    from reljudge.assess.server import lan_addresses

    with assess_server("--store", str(store_path), "--sample", "s1", "--annotator", "a",
                       "--host", "0.0.0.0") as (url, _, lines):
        opened = [line.split()[1] for line in lines if line.startswith("open ")]
        assert opened and not any("0.0.0.0" in u for u in opened)
        addresses = lan_addresses()
        if addresses:
            assert [u.split("//")[1].split(":")[0] for u in opened] == addresses
        for u in opened:
            status, body, _ = fetch(u.replace("/?", "/api/state?"))
            assert status == 200 and json.loads(body)["total"] == 10
