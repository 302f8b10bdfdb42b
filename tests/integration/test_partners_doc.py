"""docs/partners.md is run as written, against a real `chargenet serve`: its fenced blocks are read from the file
and executed (shell blocks by bash, Python blocks by Python, the JSON example parsed as an event), with the
variables the page names set to this service, its site and loopback receivers. Only the variables come from
here; a change to a command or program on the page is a change to what these tests run."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from chargenet.domain.events import StartTransactionEvent, parse_event
from chargenet.simulators.station import SimulatedStation
from tests.support.ports import free_port
from tests.support.receiver import Received, Reply, run_receiver

# Its tests share one module-scoped server: one worker runs them all (make test distributes by group).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("partners-doc")]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "partners.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
SCOPES = "charge-points:read sessions:write transactions:read webhooks:read webhooks:write"


@dataclass(frozen=True)
class Block:
    section: str
    language: str
    text: str


def doc_blocks() -> list[Block]:
    """Every fenced block of the page, with the `## ` heading it stands under."""
    text = DOC.read_text()
    headings = [(m.start(), m.group(1)) for m in re.finditer(r"^## (.+)$", text, re.MULTILINE)]
    found = []
    for match in FENCE.finditer(text):
        section = [title for start, title in headings if start < match.start()][-1]
        found.append(Block(section, match.group(1), match.group(2)))
    return found


def blocks(section: str, language: str) -> list[str]:
    chosen = [b.text for b in doc_blocks() if b.section.startswith(section) and b.language == language]
    assert chosen, f"no {language} block under {section!r}"
    return chosen


def block(section: str, language: str) -> str:
    (only,) = blocks(section, language)
    return only


def webhook_block(kind: str) -> str:
    """The webhook creation block whose `auth` is of `kind` (`none`: the one without `auth`)."""
    chosen = [
        text for text in blocks("3.", "sh") if (f'"type": "{kind}"' in text if kind != "none" else '"auth"' not in text)
    ]
    (only,) = chosen
    return only


@dataclass
class Service:
    env: dict[str, str]
    url: str

    def with_vars(self, **extra: str) -> dict[str, str]:
        return {**self.env, **extra}


def _base_env(data_dir: Path) -> dict[str, str]:
    # `chargenet` and `python3` as a partner's or operator's shell finds them: this environment's.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {
        **os.environ,
        "PATH": path,
        "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'sdk' / 'python'}",
        "CHARGENET_DATA_DIR": str(data_dir),
    }


def _cli(env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(["chargenet", *args, "--json"], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _bash(script: str, env: dict[str, str]) -> str:
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run([bash, "-euo", "pipefail", "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def _bash_async(script: str, env: dict[str, str]) -> str:
    """`script` in bash while this loop keeps serving the test's receivers."""
    process = await asyncio.create_subprocess_exec(
        "bash", "-euo", "pipefail", "-c", script, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


def _operator_commands(env: dict[str, str]) -> dict[str, str]:
    """Run section 0 command by command, as an operator would, taking each answer's ids for the next."""
    commands = block("0.", "sh").strip().splitlines()
    assert len(commands) == 3
    application = json.loads(_bash(commands[0], env))
    env = {**env, "CLIENT_ID": application["client_id"], "CLIENT_SECRET": application["client_secret"]}
    group = json.loads(_bash(commands[1], env))
    _bash(commands[2], {**env, "GROUP_ID": group["id"]})
    return env


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    data_dir = tmp_path_factory.mktemp("partners-doc")
    env = _base_env(data_dir)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        ["chargenet", "serve", "--port", str(port), "--webhook-allow-private", "--log-level", "error"],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, "chargenet serve exited early"
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code < 500:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "chargenet serve did not answer /health within 60 s"
            time.sleep(0.1)
        company = _cli(env, "admin", "company", "create", "Operator")["id"]
        site = _cli(env, "admin", "site", "create", "--company", company, "Depot")["id"]
        _cli(env, "admin", "station", "create", "--site", site, "ST-1")
        env = _operator_commands({**env, "CHARGENET": url, "COMPANY_ID": company, "SITE_ID": site})
        yield Service(env=env, url=url)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _token(service: Service) -> str:
    answer = httpx.post(
        f"{service.url}/auth/oauth2/token",
        data={"grant_type": "client_credentials"},
        auth=(service.env["CLIENT_ID"], service.env["CLIENT_SECRET"]),
    )
    token: str = answer.json()["access_token"]
    return token


async def _delivered(service: Service, path: str = "/hook", **webhook: str) -> Received:
    """A real test event, as the service signed and sent it to a loopback receiver at `path`."""
    headers = {"Authorization": f"Bearer {_token(service)}"}
    async with run_receiver(path=path) as receiver, httpx.AsyncClient(base_url=f"{service.url}/api/v1") as api:
        body = {"siteId": service.env["SITE_ID"], "url": receiver.url, "events": ["StartTransaction"], **webhook}
        created = await api.post("/webhooks", json=body, headers=headers)
        assert created.status_code == 201, created.text
        sent = await api.post(f"/webhooks/{created.json()['id']}/test", headers=headers)
        assert sent.json()["delivered"] is True, sent.text
        (request,) = receiver.received
        return request


def test_the_page_has_no_block_these_tests_do_not_run() -> None:
    assert [(b.section.split(".")[0], b.language) for b in doc_blocks()] == [
        ("0", "sh"),
        ("1", "sh"),
        ("2", "sh"),
        ("2", "python"),
        ("3", "sh"),
        ("3", "sh"),
        ("3", "sh"),
        ("3", "sh"),
        ("4", "sh"),
        ("5", "json"),
        ("5", "python"),
        ("6", "python"),
        ("7", "sh"),
        ("8", "python"),
        ("8", "sh"),
        ("8", "python"),
        ("9", "python"),
    ]


def test_the_operators_commands_give_the_application_its_scopes(service: Service) -> None:
    answer = httpx.post(
        f"{service.url}/auth/oauth2/token",
        data={"grant_type": "client_credentials"},
        auth=(service.env["CLIENT_ID"], service.env["CLIENT_SECRET"]),
    )
    assert answer.json()["scope"] == SCOPES


def test_the_token_command_gets_a_token_the_api_takes(service: Service) -> None:
    script = block("1.", "sh") + "\n" + block("2.", "sh")
    answer = json.loads(_bash(script, service.env))
    assert [item["id"] for item in answer["items"]] == ["ST-1"]
    assert answer["next"] is None


def test_the_sdk_program_lists_the_charge_points(service: Service) -> None:
    done = subprocess.run(
        [sys.executable, "-c", block("2.", "python")], env=service.env, capture_output=True, text=True, check=True
    )
    assert done.stdout == "ST-1 disconnected\n"


async def _create_and_test(service: Service, kind: str, receiver_url: str, **variables: str) -> dict[str, Any]:
    env = service.with_vars(HOOK_URL=receiver_url, **variables)
    created = json.loads(await _bash_async(block("1.", "sh") + "\n" + webhook_block(kind), env))
    assert created["url"] == receiver_url
    assert created["auth"] == kind
    test_event = block("1.", "sh") + "\n" + block("4.", "sh")
    answer: dict[str, Any] = json.loads(await _bash_async(test_event, {**env, "WEBHOOK_ID": created["id"]}))
    return answer


async def test_a_webhook_without_auth_gets_the_test_event_without_authorization(service: Service) -> None:
    async with run_receiver() as receiver:
        answer = await _create_and_test(service, "none", receiver.url)
        assert (answer["delivered"], answer["status"]) == (True, 204)
        (request,) = receiver.received
        assert "authorization" not in request.headers
        assert json.loads(request.body)["eventType"] == "WebhookTest"


async def test_a_basic_webhook_sends_its_user_and_password(service: Service) -> None:
    async with run_receiver() as receiver:
        answer = await _create_and_test(service, "basic", receiver.url, HOOK_PASSWORD="correct horse battery")
        assert answer["delivered"] is True
        (request,) = receiver.received
        assert request.headers["authorization"] == "Basic " + _b64("chargenet:correct horse battery")


async def test_a_token_webhook_sends_its_token(service: Service) -> None:
    async with run_receiver() as receiver:
        answer = await _create_and_test(service, "token", receiver.url, HOOK_TOKEN="partner-issued-token-1")
        assert answer["delivered"] is True
        (request,) = receiver.received
        assert request.headers["authorization"] == "Token partner-issued-token-1"


async def test_an_oauth2_webhook_sends_a_token_from_the_partners_token_endpoint(service: Service) -> None:
    def partner(request: Received) -> Reply:
        if request.path == "/token":
            token = {"access_token": "from-the-partner", "token_type": "Bearer", "expires_in": 3600}
            return Reply(200, json.dumps(token).encode(), {"Content-Type": "application/json"})
        return Reply(204)

    async with run_receiver(partner) as receiver:
        token_url = receiver.url.replace("/hook", "/token")
        variables = {"PARTNER_TOKEN_URL": token_url, "PARTNER_CLIENT_SECRET": "partner-client-secret"}
        answer = await _create_and_test(service, "oauth2", receiver.url, **variables)
        assert answer["delivered"] is True
        token_request, hook = receiver.received
        assert token_request.headers["authorization"] == "Basic " + _b64("chargenet:partner-client-secret")
        assert hook.headers["authorization"] == "Bearer from-the-partner"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_the_example_event_is_a_valid_start_transaction() -> None:
    assert isinstance(parse_event(json.loads(block("5.", "json"))), StartTransactionEvent)


@pytest.fixture
def sdk_receiver(service: Service) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = free_port()
    program = subprocess.Popen(
        [sys.executable, "-c", block("5.", "python")],
        env=service.with_vars(PORT=str(port)),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert program.poll() is None, "the receiver exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the receiver did not listen within 30 s"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/hooks/chargenet", program
    finally:
        program.terminate()
        program.wait(timeout=10)
        assert program.stdout is not None
        program.stdout.close()


def _line(program: subprocess.Popen[str]) -> str:
    assert program.stdout is not None
    return program.stdout.readline().strip()


def test_the_sdk_receiver_verifies_and_prints_a_test_event(
    service: Service, sdk_receiver: tuple[str, subprocess.Popen[str]]
) -> None:
    url, program = sdk_receiver
    headers = {"Authorization": f"Bearer {_token(service)}"}
    with httpx.Client(base_url=f"{service.url}/api/v1", headers=headers) as api:
        body = {"siteId": service.env["SITE_ID"], "url": url + "?partner=acme", "events": ["StopTransaction"]}
        webhook = api.post("/webhooks", json=body).json()
        sent = api.post(f"/webhooks/{webhook['id']}/test").json()
    assert (sent["delivered"], sent["status"]) == (True, 204)
    assert _line(program) == f"WebhookTest {sent['eventId']}"


async def test_the_sdk_receiver_refuses_a_changed_body(
    service: Service, sdk_receiver: tuple[str, subprocess.Popen[str]]
) -> None:
    url, program = sdk_receiver
    request = await _delivered(service, path=httpx.URL(url).path)
    changed = request.body.replace(b"WebhookTest", b"WebhookJest")
    async with httpx.AsyncClient() as client:
        answer = await client.post(url, content=changed, headers=_replayed_headers(request))
    assert answer.status_code == 401
    assert _line(program) == "refused: digest_mismatch"


def _replayed_headers(request: Received) -> dict[str, str]:
    return {name: value for name, value in request.headers.items() if name not in ("host", "content-length")}


def _no_sdk_verify() -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(block("6.", "python"), str(DOC), "exec"), namespace)
    return namespace["verify"]


async def test_verify_without_the_sdk_returns_a_delivered_ed25519_event(service: Service) -> None:
    request = await _delivered(service)
    assert "ed25519" in request.headers["signature-input"]
    jwks = httpx.get(f"{service.url}/auth/.well-known/jwks.json").json()
    event = _no_sdk_verify()("POST", request.path, request.headers, request.body, jwks)
    assert event == json.loads(request.body)
    assert event["eventType"] == "WebhookTest"


async def test_verify_without_the_sdk_returns_a_delivered_rsa_pss_sha512_event(service: Service) -> None:
    request = await _delivered(service, alg="rsa-pss-sha512")
    assert "rsa-pss-sha512" in request.headers["signature-input"]
    jwks = httpx.get(f"{service.url}/auth/.well-known/jwks.json").json()
    assert _no_sdk_verify()("POST", request.path, request.headers, request.body, jwks) == json.loads(request.body)


async def test_verify_without_the_sdk_refuses_a_changed_body(service: Service) -> None:
    request = await _delivered(service)
    jwks = httpx.get(f"{service.url}/auth/.well-known/jwks.json").json()
    changed = request.body.replace(b"WebhookTest", b"WebhookJest")
    with pytest.raises(ValueError, match="not the one that was signed"):
        _no_sdk_verify()("POST", request.path, request.headers, changed, jwks)


async def test_verify_without_the_sdk_refuses_another_path(service: Service) -> None:
    request = await _delivered(service)
    jwks = httpx.get(f"{service.url}/auth/.well-known/jwks.json").json()
    with pytest.raises(ValueError, match="does not verify"):
        _no_sdk_verify()("POST", "/other", request.headers, request.body, jwks)


def test_a_token_is_introspected_revoked_and_then_refused_by_the_api(service: Service) -> None:
    output = _bash(block("1.", "sh") + "\n" + block("7.", "sh"), service.env).splitlines()
    introspected = json.loads(output[0])
    assert introspected["active"] is True and introspected["client_id"] == service.env["CLIENT_ID"]
    assert introspected["scope"] == SCOPES
    assert output[1:] == ["200", "401"]


def test_a_key_made_registered_and_used_authenticates_without_the_secret(service: Service, tmp_path: Path) -> None:
    make_key, use_key = blocks("8.", "python")
    subprocess.run([sys.executable, "-c", make_key], env=service.env, cwd=tmp_path, check=True)
    assert "d" not in json.loads((tmp_path / "jwks.json").read_text())["keys"][0]
    # The operator runs the command where the partner's jwks.json was saved.
    shown = json.loads(_bash(f"cd {shlex.quote(str(tmp_path))}\n" + block("8.", "sh"), service.env))
    assert shown["jwks"] == json.loads((tmp_path / "jwks.json").read_text())
    without_secret = {k: v for k, v in service.env.items() if k != "CLIENT_SECRET"}
    done = subprocess.run(
        [sys.executable, "-c", use_key], env=without_secret, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout == "True\nFalse\n"


async def _until(condition: Callable[[], Awaitable[bool]], within: float = 30) -> None:
    """Poll `condition` until it holds: what the test waits for happens in another process."""
    deadline = time.monotonic() + within
    while not await condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def test_the_sdk_program_starts_a_session_and_follows_it_to_its_stop(service: Service) -> None:
    env = service.with_vars(CHARGE_POINT_ID="ST-1", ID_TAG="DRIVER-1")
    _cli(env, "admin", "localauth", "add", "--site", env["SITE_ID"], "DRIVER-1")
    station = SimulatedStation(service.url.replace("http://", "ws://") + "/ocpp", "ST-1", None)
    await station.connect()
    try:
        await station.boot()
        program = await asyncio.create_subprocess_exec(
            sys.executable, "-c", block("9.", "python"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

        async def asked() -> bool:
            return any(action == "RemoteStartTransaction" for action, _ in station.received_calls)

        await _until(asked)
        transaction_id = (await station.start(1, "DRIVER-1", 1000))["transactionId"]
        sampled_at = datetime.now(UTC) - timedelta(minutes=1)
        await station.meter_values(1, transaction_id, 2500, timestamp=sampled_at.isoformat())
        headers = {"Authorization": f"Bearer {_token(service)}"}
        async with httpx.AsyncClient(base_url=f"{service.url}/api/v1", headers=headers) as api:

            async def sampled() -> bool:
                return bool((await api.get(f"/transactions/{transaction_id}/samples")).json()["items"])

            await _until(sampled)  # the log writes samples in its batches, about every second
        await station.stop(transaction_id, 4000)
        out, err = await asyncio.wait_for(program.communicate(), timeout=60)
    finally:
        await station.close()
    assert program.returncode == 0, err.decode()
    requested, finished, sample = out.decode().splitlines()
    assert requested.startswith("requested sreq_")
    assert finished == f"transaction {transaction_id} delivered 3.0 kWh"
    assert sample == f"{sampled_at.isoformat()} 1.5 kWh"
