"""OpenAI-compatible backend against a real HTTP server on 127.0.0.1 (canned answers, counted requests)."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import TOY

from grpo_wb.config import from_dict
from grpo_wb.errors import UserError
from grpo_wb.rollouts.openai_backend import OpenAIBackend, OpenAIConfig
from grpo_wb.rollouts.sampling import CLIPPED_RATIO, MEAN_LENGTH, request_seed
from grpo_wb.rollouts.types import RolloutRequest
from grpo_wb.tasks.records import load_tasks

SECRET = "sk-test-not-a-real-key-4242"


class FakeServer:
    """Serves /v1/completions and /v1/chat/completions; behaviour set per test, every request recorded."""

    def __init__(self):
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.requests = []  # (path, body, lower-cased headers)
        self.in_flight = 0
        self.max_in_flight = 0
        self.n_mode = "support"  # support | reject (400 when n > 1) | ignore (always one choice)
        self.fail_first = []  # statuses answered to the first requests, in order
        self.status = None  # answer every request with this status (401, 404, 503, ...)
        self.delay = 0.0  # seconds before answering
        self.length_index = 0  # choice index answered with finish_reason "length" (None: never)
        self.html = False  # answer 200 with an HTML page
        self.refuse = None  # body -> a status to answer that request with (None: answer it)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def bodies(self, path=None):
        return [b for p, b, _ in self.requests if path is None or p == path]

    def _answer(self, path, body):
        """(status, payload) for one request; called under no lock."""
        with self.lock:
            status = self.fail_first.pop(0) if self.fail_first else self.status
        if status is None and self.refuse is not None and (status := self.refuse(body)) is not None:
            return status, {
                "error": {
                    "message": "This model's maximum context length is 32 tokens",
                    "type": "BadRequestError",
                    "code": status,
                }
            }
        if status == 404:
            return 404, {
                "error": {
                    "message": f"The model `{body.get('model')}` does not exist.",
                    "type": "NotFoundError",
                    "code": 404,
                }
            }
        if status is not None:
            return status, {"error": {"message": f"canned failure {status}", "type": "error", "code": status}}
        n = int(body.get("n") or 1)
        if n > 1 and self.n_mode == "reject":
            return 400, {"error": {"message": "n > 1 is not supported", "type": "BadRequestError"}}
        if self.n_mode == "ignore":
            n = 1
        chat = path.endswith("/chat/completions")
        choices = []
        for i in range(n):
            text = f"    return {body.get('seed')}+{i}\n"
            fr = "length" if i == self.length_index else "stop"
            choices.append(
                {
                    "index": i,
                    "finish_reason": fr,
                    "logprobs": None,
                    **({"message": {"role": "assistant", "content": text}} if chat else {"text": text}),
                }
            )
        return 200, {
            "id": f"cmpl-{len(self.requests)}",
            "object": "chat.completion" if chat else "text_completion",
            "created": 0,
            "model": body.get("model"),
            "choices": choices,
            "usage": {"prompt_tokens": 11, "completion_tokens": 7 * n, "total_tokens": 11 + 7 * n},
        }

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server.lock:
                    server.requests.append((self.path, body, {k.lower(): v for k, v in self.headers.items()}))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                done = False

                def leave():  # before the answer goes out: the client may send its next request at once
                    nonlocal done
                    with server.lock:
                        if not done:
                            server.in_flight -= 1
                            done = True

                try:
                    if server.delay:
                        server.release.wait(server.delay)
                    if server.html:
                        leave()
                        return self._send(200, b"<html>hello</html>", "text/html")
                    status, payload = server._answer(self.path, body)
                    leave()
                    self._send(status, json.dumps(payload).encode(), "application/json")
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    leave()

            def _send(self, status, data, ctype):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """No proxy may route these requests off the machine."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def server():
    s = FakeServer()
    s.thread.start()
    yield s
    s.release.set()
    s.httpd.shutdown()
    s.httpd.server_close()


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(TOY)


def make(url, **kw):
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("timeout_s", 5.0)
    return OpenAIBackend(OpenAIConfig(base_url=url, model="tiny-coder", **kw))


def reqs(tasks, g=4, step=0, k=3):
    return [RolloutRequest(t, g, step, 0) for t in tasks[:k]]


def test_one_request_with_n_equal_g_per_group_and_metadata_on_every_completion(server, tasks):
    b = make(server.url, temperature=0.7, top_p=0.9, max_tokens=64, seed=5, stop=["\ndef "])
    groups = b.generate(reqs(tasks))
    bodies = server.bodies("/v1/completions")
    assert len(server.requests) == 3 and len(bodies) == 3 and all(x["n"] == 4 for x in bodies)
    assert sorted(x["prompt"] for x in bodies) == sorted(t.prompt for t in tasks[:3])
    for x in bodies:
        assert (x["model"], x["temperature"], x["top_p"], x["max_tokens"], x["stop"]) == (
            "tiny-coder",
            0.7,
            0.9,
            64,
            ["\ndef "],
        )
    for t, grp in zip(tasks, groups):
        seed = request_seed(5, RolloutRequest(t, 4, 0, 0))
        assert [c.sample_index for c in grp] == [0, 1, 2, 3]
        assert [c.text for c in grp] == [f"    return {seed}+{i}\n" for i in range(4)]
        for c in grp:
            assert (c.task_id, c.backend, c.model, c.seed) == (t.task_id, "openai", "tiny-coder", seed)
            assert c.sampling == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 64, "stop": ["\ndef "]}
            assert c.extra["prompt_tokens"] == 11 and c.extra["request_completion_tokens"] == 28
            assert c.extra["completion_tokens"] is None  # n > 1: the server reports only the sum
            assert c.extra["request_n"] == 4 and c.extra["attempts"] == 1 and c.extra["latency_s"] >= 0
        assert [c.finish_reason for c in grp] == ["length", "stop", "stop", "stop"]
    st = b.last_stats
    assert st[CLIPPED_RATIO] == 0.25 and st[MEAN_LENGTH] == 7.0
    assert (st["requests"], st["retries"], st["num_completions"]) == (3, 0, 12)
    assert (st["prompt_tokens"], st["completion_tokens"]) == (33, 84)
    assert st["finish_reasons"] == {"length": 3, "stop": 9}


def test_seeds_are_reproducible_and_vary_with_step_occurrence_and_task(tasks):
    t0, t1 = tasks[:2]
    s = request_seed(0, RolloutRequest(t0, 4, 2, 1))
    assert s == request_seed(0, RolloutRequest(t0, 8, 2, 1)) and 0 <= s < 2**31
    others = [
        request_seed(1, RolloutRequest(t0, 4, 2, 1)),
        request_seed(0, RolloutRequest(t0, 4, 3, 1)),
        request_seed(0, RolloutRequest(t0, 4, 2, 0)),
        request_seed(0, RolloutRequest(t1, 4, 2, 1)),
        request_seed(0, RolloutRequest(t0, 4, 2, 1), 0),
    ]
    assert len({s, *others}) == 6
    assert request_seed(None, RolloutRequest(t0, 4, 2, 1)) is None


def test_n_rejected_falls_back_to_g_single_requests_then_stops_asking(server, tasks):
    server.n_mode = "reject"
    b = make(server.url, seed=1)
    groups = b.generate(reqs(tasks, g=4, k=2))
    ns = [x["n"] for x in server.bodies()]
    assert sorted(ns) == [1] * 8 + [4, 4]
    for t, grp in zip(tasks, groups):
        seeds = [request_seed(1, RolloutRequest(t, 4, 0, 0), i) for i in range(4)]
        assert [c.seed for c in grp] == seeds and len(set(seeds)) == 4
        assert [c.text for c in grp] == [f"    return {s}+0\n" for s in seeds]
        assert all(c.extra["completion_tokens"] == 7 and c.extra["request_n"] == 1 for c in grp)
    assert b.last_stats["requests"] == 10 and b.last_stats["n_per_request"] is False
    assert b.describe()["n_per_request"] is False
    server.requests.clear()
    b.generate(reqs(tasks, g=4, step=1, k=2))
    assert [x["n"] for x in server.bodies()] == [1] * 8


def test_fewer_choices_than_asked_are_topped_up_with_single_requests(server, tasks):
    server.n_mode = "ignore"
    (grp,) = make(server.url).generate(reqs(tasks, g=3, k=1))
    assert sorted(x["n"] for x in server.bodies()) == [1, 1, 3]
    assert [c.sample_index for c in grp] == [0, 1, 2] and len({c.seed for c in grp}) == 3


def test_n_per_request_off_sends_single_requests_only(server, tasks):
    make(server.url, n_per_request=False).generate(reqs(tasks, g=2, k=2))
    assert [x["n"] for x in server.bodies()] == [1] * 4


def test_chat_mode_sends_system_and_user_messages(server, tasks):
    t = tasks[0]
    (grp,) = make(server.url, mode="chat", system_prompt="Be terse.").generate(reqs(tasks, g=2, k=1))
    (body,) = server.bodies("/v1/chat/completions")
    sys_msg, user = body["messages"]
    assert sys_msg == {"role": "system", "content": "Be terse."} and user["role"] == "user"
    assert t.prompt.rstrip("\n") in user["content"] and f"`{t.entry_point}`" in user["content"]
    assert "prompt" not in body and [c.extra["mode"] for c in grp] == ["chat", "chat"]
    assert grp[1].text.startswith("    return ")
    server.requests.clear()
    make(server.url, mode="chat", system_prompt=None, user_template="Write {entry_point}:\n{prompt}").generate(
        reqs(tasks, g=2, k=1)
    )
    (body,) = server.bodies("/v1/chat/completions")
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][0]["content"] == f"Write {t.entry_point}:\n{t.prompt.rstrip()}"


@pytest.mark.parametrize("failures", [[429], [500], [503, 429]])
def test_transient_failures_are_retried_then_succeed(server, tasks, failures):
    server.fail_first = list(failures)
    b = make(server.url)
    (grp,) = b.generate(reqs(tasks, g=2, k=1))
    assert len(server.requests) == len(failures) + 1 and len(grp) == 2
    assert grp[0].extra["attempts"] == len(failures) + 1
    assert b.last_stats["retries"] == len(failures) and b.last_stats["requests"] == len(failures) + 1


def test_retries_are_bounded(server, tasks):
    server.status = 503
    with pytest.raises(UserError) as e:
        make(server.url, max_attempts=3).generate(reqs(tasks, g=2, k=1))
    assert len(server.requests) == 3
    assert str(e.value) == f"server error at {server.url} (HTTP 503) after 3 attempts: canned failure 503"


def test_refused_connection_is_one_line(tasks):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(UserError) as e:
        make(f"http://127.0.0.1:{port}/v1", max_attempts=2).generate(reqs(tasks, g=2, k=1))
    msg = str(e.value)
    assert msg.startswith(f"cannot connect to http://127.0.0.1:{port}/v1: ") and "(2 attempts)" in msg
    assert "refused" in msg.lower() and "\n" not in msg


def test_bad_key_is_one_line_and_names_the_variable_not_the_key(server, tasks, monkeypatch):
    monkeypatch.setenv("MY_SERVER_KEY", SECRET)
    server.status = 401
    with pytest.raises(UserError) as e:
        make(server.url, api_key_env="MY_SERVER_KEY").generate(reqs(tasks, g=2, k=1))
    msg = str(e.value)
    assert msg.startswith(f"{server.url} rejected the API key (HTTP 401") and "$MY_SERVER_KEY" in msg
    assert SECRET not in msg and "\n" not in msg and len(server.requests) == 1


def test_unknown_model_is_one_line(server, tasks):
    server.status = 404
    with pytest.raises(UserError) as e:
        make(server.url).generate(reqs(tasks, g=2, k=1))
    msg = str(e.value)
    assert msg.startswith(f"model 'tiny-coder' not found at {server.url} (HTTP 404: The model `tiny-coder`")
    assert "\n" not in msg and len(server.requests) == 1


def test_timeout_is_retried_then_one_line(server, tasks):
    """The server answers only after 60 s (or at teardown): an error at all means the 0.2 s timeout applied."""
    server.delay = 60.0
    with pytest.raises(UserError) as e:
        make(server.url, timeout_s=0.2, max_attempts=2).generate(reqs(tasks, g=2, k=1))
    assert len(server.requests) == 2
    assert str(e.value) == (
        f"no answer from {server.url} within the 0.2s request timeout (2 attempts); "
        "raise timeout_s or lower max_concurrency"
    )


def test_a_server_that_is_not_openai_compatible_is_one_line(server, tasks):
    server.html = True
    with pytest.raises(UserError) as e:
        make(server.url).generate(reqs(tasks, g=2, k=1))
    assert "did not answer like an OpenAI-compatible server" in str(e.value)


def test_key_goes_in_the_authorization_header_and_never_into_describe(server, tasks, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    b = make(server.url, extra_body={"top_k": 20})
    b.generate(reqs(tasks, g=2, k=1))
    (headers,) = [h for _, _, h in server.requests]
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert server.bodies()[0]["top_k"] == 20
    d = b.describe()
    assert SECRET not in json.dumps(d) and SECRET not in repr(b.config)
    assert d["backend"] == "openai" and d["model"] == "tiny-coder" and d["base_url"] == server.url
    assert d["mode"] == "completions" and d["api_key_env"] == "OPENAI_API_KEY" and d["api_key_set"] is True
    assert d["sampling"] == {"temperature": 1.0, "top_p": 1.0, "max_tokens": 512, "stop": [], "top_k": 20}


def test_without_a_key_a_dummy_one_is_sent(server, tasks):
    b = make(server.url)
    b.generate(reqs(tasks, g=2, k=1))
    assert server.requests[0][2]["authorization"] == "Bearer EMPTY" and b.describe()["api_key_set"] is False


def test_groups_run_in_parallel_with_a_bounded_number_in_flight(server, tasks):
    """The server holds every request until three are in flight at once (then answers all): parallelism shown
    by the requests themselves, not by the wall time (a serial client would wait out the 30 s hold)."""
    server.delay = 30.0

    def open_at_three():
        give_up = time.monotonic() + 20  # a serial client fails the assertion below, it does not hang
        while not server.release.is_set():
            with server.lock:
                if server.in_flight >= 3 or time.monotonic() > give_up:
                    server.release.set()
            time.sleep(0.005)

    threading.Thread(target=open_at_three, daemon=True).start()
    b = make(server.url, max_concurrency=3, timeout_s=60.0)
    groups = b.generate([RolloutRequest(tasks[i % len(tasks)], 2, 0, i // len(tasks)) for i in range(9)])
    assert len(groups) == 9 and len(server.requests) == 9
    assert server.max_in_flight == 3


def test_single_request_fallback_respects_the_bound_too(server, tasks):
    server.delay = 0.05
    server.n_mode = "reject"
    make(server.url, max_concurrency=2).generate(reqs(tasks, g=4, k=3))
    assert len(server.requests) == 3 + 12 and server.max_in_flight <= 2


def test_the_bound_holds_across_generate_calls_made_at_once(server, tasks):
    """A streaming caller (grpo-wb sample, the overlapped smoke loop) makes one generate call per group, several at
    once; with single requests each call fans out to G of them: the backend as a whole keeps to max_concurrency."""
    server.delay = 0.05
    server.n_mode = "reject"
    b = make(server.url, max_concurrency=2)
    threads = [threading.Thread(target=b.generate, args=([RolloutRequest(t, 4, 0, 0)],)) for t in tasks[:3]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert server.max_in_flight <= 2 and len(server.requests) >= 12


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ({"mode": "edit"}, "unknown mode 'edit'"),
        ({"temperature": -1.0}, "temperature must be >= 0"),
        ({"max_concurrency": 0}, "max_concurrency must be at least 1"),
        ({"base_url": "localhost:8000/v1"}, "base_url must start with http://"),
        ({"user_template": "no placeholder"}, "user_template must contain {prompt}"),
    ],
)
def test_config_mistakes_are_user_errors(bad, fragment):
    with pytest.raises(UserError, match="^" + fragment.replace("{", r"\{").replace("(", r"\(")):
        from_dict(OpenAIConfig, {"base_url": "http://127.0.0.1:1/v1", "model": "m", **bad})


def test_config_builds_from_a_plain_dict():
    c = from_dict(
        OpenAIConfig, {"base_url": "http://127.0.0.1:8000/v1/", "model": "m", "stop": ["\nclass "], "temperature": 1}
    )
    assert c.base_url == "http://127.0.0.1:8000/v1" and c.stop == ("\nclass ",) and c.temperature == 1.0


# ---------------------------------------------------------------- the prompt the trainer's rollout sends


def _row_task(messages=None, prompt="Read n numbers\nfrom standard input and print their sum.\n"):
    from grpo_wb.tasks.records import Task, TestCase

    meta = {"messages": messages} if messages is not None else {}
    return Task(
        task_id="row/0",
        prompt=prompt,
        entry_point="",
        tests=(TestCase(name="io_0", type="stdio", input="2\n1 2\n", output="3\n"),),
        metadata=meta,
    )


ROW_MESSAGES = [
    {"role": "system", "content": "Think first, then answer in ```python."},
    {"role": "user", "content": "Read n numbers from standard input and print their sum."},
]


@pytest.mark.parametrize("mode", ["auto", "chat"])
def test_a_rows_own_messages_are_sent_as_they_are(server, mode):
    """verl / TRL conversational rows: the row's messages, system message included, through the chat endpoint
    (the server applies the model's chat template, as the trainer's rollout does); no template added."""
    (grp,) = make(server.url, mode=mode).generate([RolloutRequest(_row_task(ROW_MESSAGES), 2, 0, 0)])
    (body,) = server.bodies("/v1/chat/completions")
    assert body["messages"] == ROW_MESSAGES
    assert {c.extra["prompt_source"] for c in grp} == {"row"} and {c.extra["mode"] for c in grp} == {"chat"}


def test_a_statement_without_messages_is_asked_as_text_not_as_a_function(server):
    """A stdin problem with only text: its statement is the user message, never wrapped in a python fence with
    an empty entry point; --user-template / --system-prompt change it."""
    t = _row_task()
    (grp,) = make(server.url, mode="auto").generate([RolloutRequest(t, 1, 0, 0)])
    (body,) = server.bodies("/v1/chat/completions")
    assert body["messages"] == [
        {"role": "system", "content": "You are an expert Python programmer."},
        {"role": "user", "content": t.prompt.rstrip()},
    ]
    assert grp[0].extra["prompt_source"] == "template"
    server.requests.clear()
    make(server.url, mode="auto", system_prompt=None, user_template="Solve:\n{prompt}").generate(
        [RolloutRequest(t, 1, 0, 0)]
    )
    (body,) = server.bodies("/v1/chat/completions")
    assert body["messages"] == [{"role": "user", "content": "Solve:\n" + t.prompt.rstrip()}]


def test_auto_continues_a_code_prompt(server, tasks):
    (grp,) = make(server.url, mode="auto").generate(reqs(tasks, g=1, k=1))
    (body,) = server.bodies("/v1/completions")
    assert body["prompt"] == tasks[0].prompt and grp[0].extra["prompt_source"] == "text"


def test_malformed_row_messages_are_one_line_naming_the_task(server):
    with pytest.raises(UserError, match=r"task row/0: metadata.messages must be"):
        make(server.url, mode="auto").generate([RolloutRequest(_row_task([{"role": "user"}]), 1, 0, 0)])
    assert server.requests == []


def test_a_refused_request_names_its_task_and_other_errors_stay_the_servers(server):
    from grpo_wb.rollouts.types import RequestRejected

    server.refuse = lambda body: 400
    with pytest.raises(RequestRejected, match=r"rejected the request for task row/0 \(HTTP 400\): This model's") as e:
        make(server.url, mode="auto", n_per_request=False).generate([RolloutRequest(_row_task(ROW_MESSAGES), 1, 0, 0)])
    assert e.value.task_id == "row/0"
    server.refuse, server.status = None, 401
    with pytest.raises(UserError) as e2:
        make(server.url).generate([RolloutRequest(_row_task(ROW_MESSAGES), 1, 0, 0)])
    assert not isinstance(e2.value, RequestRejected)
