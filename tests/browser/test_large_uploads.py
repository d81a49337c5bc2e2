"""Uploads of any size (issue 16, item 5): a file over the limit is refused before it is read
whole — by the browser before it is sent, and by the server from the request's Content-Length
before anything reads the body — and an upload within the limit shows its progress."""

import re
import socket
import time

import pytest

from evaluation.models import Submission
from tests.browser.test_leaderboard import log_in
from tests.support.submissions import tiny_lines, write_lines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DECLARED = 300 * 1000 * 1000  # a 300 MB upload, of which only the headers are ever sent


@pytest.fixture
def system(researcher, tiny_benchmark, settings, tmp_path):
    from evaluation.services.submissions import system_create

    settings.MEDIA_ROOT = tmp_path / "media"
    return system_create(name="Big Files", owner=researcher, family="LLM")


def raw_post(live_server, path: str, *, headers: str = "") -> tuple[str, float]:
    """POST PATH declaring a 300 MB body but sending 10 bytes of it; the answer and how long it
    took. A server that read the body first would wait for the rest until the timeout."""
    host, port = live_server.thread.host, live_server.thread.port
    started = time.perf_counter()
    with socket.create_connection((host, port), timeout=10) as connection:
        connection.sendall((f"POST {path} HTTP/1.1\r\nHost: {host}\r\n"
                            "Content-Type: multipart/form-data; boundary=x\r\n"
                            f"Content-Length: {DECLARED}\r\n{headers}\r\n").encode()
                           + b"--x\r\nabc\r\n")
        answer = b""
        while not _complete(answer):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer.decode(errors="replace"), time.perf_counter() - started


def _complete(answer: bytes) -> bool:
    """Whether ANSWER holds the headers and the whole body they announce."""
    head, separator, body = answer.partition(b"\r\n\r\n")
    if not separator:
        return False
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return length is not None and len(body) >= int(length[1])


def test_the_server_refuses_an_oversized_body_from_its_length_without_reading_it(
        live_server, system, client, researcher):
    answer, seconds = raw_post(live_server, f"/systems/{system.slug}/submit/")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert "File too large" in answer and "286.1 MB" in answer and "200.0 MB" in answer
    assert seconds < 5  # answered at once, not after a 10 s read timeout
    answer, _ = raw_post(live_server, "/api/submissions/")
    assert answer.startswith("HTTP/1.1 413") and "application/json" in answer
    assert '"detail": "The upload is 286.1 MB; the limit is 200.0 MB per file.' in answer
    # htmx gets the fragment it swaps into the form's result (base.html: 413 is swapped)
    client.force_login(researcher)
    fragment = client.post(f"/systems/{system.slug}/submit/", data=b"", content_type="text/plain",
                           CONTENT_LENGTH=str(DECLARED), HTTP_HX_REQUEST="true")
    assert fragment.status_code == 413
    assert fragment.content.decode().startswith(
        '<p class="bad" role="alert" id="upload-too-large">')
    assert not Submission.objects.exists()


def test_the_browser_refuses_a_file_over_the_limit_and_shows_an_uploads_progress(
        page, system, settings, tmp_path):
    settings.MAX_UPLOAD_BYTES = 200_000
    log_in(page)
    page.goto(f"/systems/{system.slug}/submit/")
    sent = []
    page.on("request", lambda request: sent.append(request.url) if request.method == "POST"
            else None)
    big = tmp_path / "big.jsonl"
    big.write_text("x" * 300_000)
    page.set_input_files("input[name=file]", str(big))
    message = page.eval_on_selector("input[name=file]", "input => input.validationMessage")
    assert message == ("This file is 0.3 MB; the limit is 0.2 MB per file. Nothing was sent.")
    page.click("#submission-form button[type=submit]")
    page.wait_for_timeout(500)
    assert sent == []

    lines = tiny_lines()
    lines[0]["dialogue_id"] = "nope"  # refused by validation, after the upload
    lines[1]["response"] = "Quiet and close to the sea. " * 5000  # ≈ 140 kB: within the limit
    page.set_input_files("input[name=file]", str(write_lines(tmp_path / "ok.jsonl", lines)))
    assert page.eval_on_selector("input[name=file]", "input => input.validationMessage") == ""
    page.click("#submission-form button[type=submit]")
    page.locator("#validation-report").wait_for()
    progress = page.locator("#submission-form .upload-progress")
    assert progress.is_visible()
    assert progress.locator("span").inner_text().endswith("MB sent; checking every line…")
    assert progress.locator("progress").get_attribute("aria-label") == "Upload progress"
    assert len(sent) == 1 and not Submission.objects.exists()
