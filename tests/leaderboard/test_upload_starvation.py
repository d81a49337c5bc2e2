"""Uploads cannot starve the site (issue 18, point 3): while two 100 MB files of blank lines
stream in, other pages answer in under a second (all but at most one of about ten answers, and
that one is no stall), and each junk upload is refused after a few lines were read (it held a
sync worker ~47 s, and two stalled the site for 44 s). Both are over
CONCORD_INLINE_VALIDATION_BYTES, so each is staged (202) and refused by its job."""

import http.client
import json
import threading
import time
from urllib.parse import urlparse

import pytest
from rest_framework.authtoken.models import Token

from evaluation.models import Submission
from tests.support.submissions import stored_files

pytestmark = pytest.mark.django_db(transaction=True)

SIZE = 100 * 1024 * 1024
CHUNK = 1024 * 1024


def _upload_junk(base: str, token: str, system: str, outcome: dict) -> None:
    boundary = "concordjunkboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"system\"\r\n\r\n{system}\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"benchmark\"\r\n\r\ntiny\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"junk.jsonl\"\r\nContent-Type: application/octet-stream\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    url = urlparse(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    started = time.monotonic()
    conn.putrequest("POST", "/api/submissions/")
    conn.putheader("Authorization", f"Token {token}")
    conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
    conn.putheader("Content-Length", str(len(head) + SIZE + len(tail)))
    conn.endheaders()
    conn.send(head)
    block = b"\n" * CHUNK
    for _ in range(SIZE // CHUNK):
        conn.send(block)
        time.sleep(0.03)  # a client on a fast line (~30 MB/s), not a local memcpy
    conn.send(tail)
    response = conn.getresponse()
    outcome.update(status=response.status, body=json.loads(response.read()),
                   seconds=time.monotonic() - started)
    conn.close()


def test_other_pages_answer_while_two_junk_uploads_are_in_flight(live_server, tiny_benchmark,
                                                                 researcher, settings, tmp_path):
    import urllib.request

    from evaluation.services.submissions import system_create

    settings.MEDIA_ROOT = tmp_path / "media"
    token = Token.objects.create(user=researcher).key
    system = system_create(name="Junk", owner=researcher)
    outcomes = [{}, {}]
    threads = [threading.Thread(target=_upload_junk,
                                args=(live_server.url, token, system.slug, outcome))
               for outcome in outcomes]
    for thread in threads:
        thread.start()
    time.sleep(1)  # both uploads are streaming now
    latencies = []
    while any(thread.is_alive() for thread in threads) and len(latencies) < 20:
        started = time.monotonic()
        with urllib.request.urlopen(live_server.url + "/benchmarks/tiny/", timeout=10) as page:
            assert page.status == 200
        latencies.append(time.monotonic() - started)
        time.sleep(0.2)
    for thread in threads:
        thread.join(timeout=180)
    assert len(latencies) >= 5, "the uploads ended before the site was asked enough"
    # Every answer is under a second but one, and none is a stall: on a loaded 2-core CI
    # machine one answer of ten once took 1.25 s while its neighbours took 0.05 s (the live
    # server shares its process with the test run, a long-lived one there), a pause that a
    # starved site (44 s before issue 18) could never be mistaken for.
    assert len([seconds for seconds in latencies if seconds >= 1.0]) <= 1, latencies
    assert max(latencies) < 3.0, latencies
    for outcome in outcomes:
        # 100 MB is over CONCORD_INLINE_VALIDATION_BYTES: staged, and checked by a worker
        # (here in-process, eagerly) from the staged file, as the same validator refuses it
        assert outcome["status"] == 202, outcome
        request = urllib.request.Request(live_server.url + outcome["body"]["url"],
                                         headers={"Authorization": f"Token {token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            staged = json.loads(answer.read())
        assert staged["status"] == "failed" and staged["submission"] is None, staged
        messages = [error["message"] for error in staged["errors"]]
        assert messages[0] == "blank line"
        assert messages[-1] == "reading stopped at line 49 after 49 problems"
    assert not Submission.objects.exists()
    assert not stored_files(tmp_path / "media")  # the staged files are deleted
