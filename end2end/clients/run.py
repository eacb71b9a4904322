"""Real clients through the gateway (`cargo xtask e2e-clients`).

Each scenario makes one client complete a request, and a tool round trip,
through OmniRoute to a fake upstream that speaks a *different* protocol
than the client:

* Claude Code (`claude -p`, Anthropic Messages)  -> OpenAI-compatible upstream
* Codex CLI (`codex exec`, Responses API)         -> Anthropic upstream
* openai Python SDK (Chat Completions)            -> Anthropic upstream
* anthropic Python SDK (Messages)                 -> OpenAI-compatible upstream

Claude Code and Codex also make a tool round trip through a subscription
imported from the file each CLI writes (a Claude Pro/Max account, a
ChatGPT account) against the fake's subscription backends, which check the
bearer token, the OAuth beta, the account header and Codex's wire;
and Claude Code and Codex complete their turn when the first connection of
their upstream stalls — before its response headers, and after its first
event — while a second connection is healthy (xtask sets short stream
budgets for this); and the turns of one Claude Code or Codex conversation
stay on the connection that served its first request (session affinity).

The tool round trip: the fake answers the first call of the conversation
with a tool call (scripted through its control API), the client runs the
tool (or the test plays the tool for the SDKs) and sends the result; the
fake must receive that result, then answers with text.

Environment (set by xtask): OMNIROUTE_URL, FAKE_URL, OMNIROUTE_MANAGEMENT_KEY,
CLIENTS_BIN (node_modules/.bin), WORK_DIR (scratch).
"""

import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

GW = os.environ["OMNIROUTE_URL"]
FAKE = os.environ["FAKE_URL"]
MGMT = os.environ["OMNIROUTE_MANAGEMENT_KEY"]
BIN = os.environ["CLIENTS_BIN"]
WORK = os.environ["WORK_DIR"]
TEXT = "Hello from fake-upstream."
TIMEOUT = 180


def http(method, url, body=None, key=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    if key:
        req.add_header("authorization", f"Bearer {key}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
        return json.loads(raw) if raw else None


def setup():
    """Two connections per upstream (OpenAI-compatible and Anthropic; the
    second by priority is the healthy sibling of the stall scenarios) and a
    client key."""
    for n, priority in (("", 0), ("-2", 1)):
        http("POST", f"{GW}/api/providers", {"provider": "openai", "name": f"fake-openai{n}",
                                              "apiKey": f"sk-fake-openai{n}", "baseUrl": f"{FAKE}/v1",
                                              "priority": priority}, MGMT)
        http("POST", f"{GW}/api/providers", {"provider": "anthropic", "name": f"fake-anthropic{n}",
                                              "apiKey": f"sk-fake-ant{n}", "baseUrl": FAKE, "priority": priority}, MGMT)
    return http("POST", f"{GW}/api/keys", {"name": "e2e-clients"}, MGMT)["key"]


def script_tool_call(path, name, arguments):
    """The next request on `path` is answered with a call of `name`."""
    http("DELETE", f"{FAKE}/_control/rules")
    http("POST", f"{FAKE}/_control/rules", {"path": path, "times": 1,
                                             "toolCall": {"name": name, "arguments": arguments}})


def requests_on(path):
    return [r for r in http("GET", f"{FAKE}/_control/requests") if r["path"].startswith(path)]


def reset():
    http("DELETE", f"{FAKE}/_control/rules")
    http("DELETE", f"{FAKE}/_control/requests")


def tool_result_reached(path, marker):
    """Whether a request on `path` carried the tool's output `marker`."""
    return any(marker in r["body"] for r in requests_on(path))


def run(cmd, env, cwd):
    started = time.time()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    return p, time.time() - started


def claude_home(key):
    """A scratch home for Claude Code and its environment, pointed at the gateway."""
    home = tempfile.mkdtemp(dir=WORK)
    env = dict(os.environ, HOME=home, ANTHROPIC_BASE_URL=GW, ANTHROPIC_API_KEY=key,
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
               ANTHROPIC_SMALL_FAST_MODEL="openai/fake-model-mini", CI="1")
    return home, env


def codex_home(key, model="anthropic/fake-model"):
    """A scratch CODEX_HOME whose config routes Codex through the gateway."""
    home = tempfile.mkdtemp(dir=WORK)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(f'''model = "{model}"
model_provider = "omniroute"
check_for_update_on_startup = false

[model_providers.omniroute]
name = "OmniRoute"
base_url = "{GW}/v1"
env_key = "OMNIROUTE_TEST_KEY"
wire_api = "responses"
''')
    return home, dict(os.environ, CODEX_HOME=home, OMNIROUTE_TEST_KEY=key, HOME=home)


def claude_code(key):
    home, env = claude_home(key)
    claude = os.path.join(BIN, "claude")
    base = [claude, "-p", "--output-format", "json", "--model", "openai/fake-model"]
    results = []
    reset()
    p, secs = run(base + ["Say hello"], env, home)
    ok = p.returncode == 0 and TEXT in p.stdout
    results.append(("Claude Code -> OpenAI upstream: prompt", ok, secs, p.stdout[-400:] + p.stderr[-400:]))
    reset()
    # The marker only exists in the tool's output, not in its arguments.
    script_tool_call("/v1/chat/completions", "Bash", {"command": "echo tool-$((40+2))", "description": "print a marker"})
    p, secs = run(base + ["Run the echo command", "--allowedTools", "Bash(echo:*)"], env, home)
    ok = p.returncode == 0 and TEXT in p.stdout and tool_result_reached("/v1/chat/completions", "tool-42")
    results.append(("Claude Code -> OpenAI upstream: Bash tool round trip", ok, secs, p.stdout[-400:] + p.stderr[-400:]))
    return results


def codex(key):
    home, env = codex_home(key)
    codex = os.path.join(BIN, "codex")
    base = [codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    results = []
    reset()
    p, secs = run(base + ["Say hello"], env, home)
    ok = p.returncode == 0 and TEXT in p.stdout + p.stderr
    results.append(("Codex -> Anthropic upstream: prompt", ok, secs, p.stdout[-400:] + p.stderr[-400:]))
    # Codex names and shapes its shell tool differently across versions:
    # take it from the tools the prompt above sent (as the upstream saw them).
    name, arguments = shell_call(requests_on("/v1/messages"), "echo tool-$((40+2))")
    CODEX_SHELL.update(name=name, arguments=arguments)
    reset()
    script_tool_call("/v1/messages", name, arguments)
    p, secs = run(base + ["Run echo"], env, home)
    ok = p.returncode == 0 and tool_result_reached("/v1/messages", "tool-42")
    results.append((f"Codex -> Anthropic upstream: {name} tool round trip", ok, secs, p.stdout[-400:] + p.stderr[-400:]))
    return results


# Codex's shell tool as its first scenario saw it (name, arguments).
CODEX_SHELL = {}

CLAUDE_TOKEN = "sk-ant-oat01-e2e-clients"
CODEX_ACCOUNT = "acct-fake-codex"


def jwt(claims):
    part = lambda o: base64.urlsafe_b64encode(json.dumps(o).encode()).decode().rstrip("=")
    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


def import_subscriptions():
    """A Claude and a ChatGPT subscription, imported from the files their
    CLIs write, pointed at the fake's subscription backends."""
    claude = {"claudeAiOauth": {"accessToken": CLAUDE_TOKEN, "refreshToken": "sk-ant-ort01-e2e-clients",
                                "expiresAt": int(time.time() * 1000) + 3_600_000, "subscriptionType": "max"}}
    codex = {"tokens": {"access_token": jwt({"https://api.openai.com/auth": {"chatgpt_account_id": CODEX_ACCOUNT}}),
                        "refresh_token": "rt-e2e-clients", "account_id": CODEX_ACCOUNT}}
    for fmt, name, file in (("claude-code", "e2e-claude-max", claude), ("codex", "e2e-chatgpt", codex)):
        made = http("POST", f"{GW}/api/providers/import", {"format": fmt, "name": name, "credentials": file}, MGMT)
        http("PUT", f"{GW}/api/providers/{made['connection']['id']}", {"baseUrl": FAKE}, MGMT)


def claude_code_subscription(key):
    """Claude Code through an imported Claude subscription: a bearer token
    with the OAuth beta, never an API key, and a Bash round trip."""
    home, env = claude_home(key)
    cmd = [os.path.join(BIN, "claude"), "-p", "--output-format", "json", "--model", "claude/fake-model",
           "Run the echo command", "--allowedTools", "Bash(echo:*)"]
    reset()
    script_tool_call("/v1/messages", "Bash", {"command": "echo tool-$((40+2))", "description": "print a marker"})
    p, secs = run(cmd, env, home)
    sent = [r for r in requests_on("/v1/messages") if r["path"] == "/v1/messages"]
    bearer = bool(sent) and all(r["headers"].get("authorization") == f"Bearer {CLAUDE_TOKEN}"
                                and "x-api-key" not in r["headers"] for r in sent)
    ok = p.returncode == 0 and TEXT in p.stdout and bearer and tool_result_reached("/v1/messages", "tool-42")
    detail = f"bearer on every call: {bearer}\n" + p.stdout[-400:] + p.stderr[-400:]
    return [("Claude Code -> imported Claude subscription: Bash tool round trip", ok, secs, detail)]


def codex_subscription(key):
    """Codex through an imported ChatGPT subscription: the Codex backend
    with the account header, and a shell round trip."""
    home, env = codex_home(key, model="codex/fake-model")
    cmd = [os.path.join(BIN, "codex"), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
           "Run echo"]
    reset()
    script_tool_call("/codex/responses", CODEX_SHELL["name"], CODEX_SHELL["arguments"])
    p, secs = run(cmd, env, home)
    sent = requests_on("/codex/responses")
    account = bool(sent) and all(r["headers"].get("chatgpt-account-id") == CODEX_ACCOUNT for r in sent)
    ok = p.returncode == 0 and account and tool_result_reached("/codex/responses", "tool-42")
    detail = f"account header on every call: {account}\n" + p.stdout[-400:] + p.stderr[-400:]
    return [(f"Codex -> imported ChatGPT subscription: {CODEX_SHELL['name']} tool round trip", ok, secs, detail)]


def shell_call(recorded, command):
    """A call of the shell-like tool offered in `recorded` (Anthropic
    requests), with `command` shaped as its schema wants."""
    tools = json.loads(recorded[-1]["body"]).get("tools", [])
    names = [t["name"] for t in tools]
    for t in tools:
        props = t.get("input_schema", {}).get("properties", {})
        for field in ("command", "cmd"):
            if t["name"] in ("shell", "exec_command", "local_shell", "shell_command") and field in props:
                if props[field].get("type") == "array":
                    return t["name"], {field: ["bash", "-lc", command]}
                return t["name"], {field: command}
    raise RuntimeError(f"no shell tool among {names}")


# (when, the fault, whether the sibling must serve: after the first event
# the stream was already committed, so the client's own retry may go to
# the first connection again — a stall does not cool it by default).
STALLS = (("before its headers", {"latencyMs": 600000}, True),
          ("after its first event", {"stallAfterChunks": 1}, False))


def stalls(name, cmd, env, cwd, first_key, sibling_key, ok_output):
    """`cmd` completes while the first connection's next request stalls."""
    results = []
    for when, fault, sibling_serves in STALLS:
        reset()
        # The stall before the headers cooled the first connection: start over.
        http("POST", f"{GW}/api/resilience/cooldowns", {"all": True}, MGMT)
        http("POST", f"{GW}/api/resilience/reset", {}, MGMT)
        http("POST", f"{FAKE}/_control/rules", dict(fault, apiKey=first_key, times=1))
        p, secs = run(cmd, env, cwd)
        seen = [json.dumps(r["headers"]) for r in http("GET", f"{FAKE}/_control/requests")]
        # Exact values: the first key is a prefix of its sibling's.
        stalled = any(f'"{first_key}"' in h or f'Bearer {first_key}"' in h for h in seen)
        sibling = any(sibling_key in h for h in seen)
        ok = p.returncode == 0 and ok_output(p) and stalled and (sibling or not sibling_serves)
        results.append((f"{name}: first connection stalls {when}", ok, secs, p.stdout[-400:] + p.stderr[-400:]))
    return results


def claude_code_stalls(key):
    home, env = claude_home(key)
    cmd = [os.path.join(BIN, "claude"), "-p", "--output-format", "json", "--model", "openai/fake-model", "Say hello"]
    return stalls("Claude Code -> OpenAI upstream", cmd, env, home, "sk-fake-openai", "sk-fake-openai-2",
                  lambda p: TEXT in p.stdout)


def codex_stalls(key):
    home, env = codex_home(key)
    cmd = [os.path.join(BIN, "codex"), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
           "Say hello"]
    return stalls("Codex -> Anthropic upstream", cmd, env, home, "sk-fake-ant", "sk-fake-ant-2",
                  lambda p: TEXT in p.stdout + p.stderr)


def key_of(recorded):
    h = recorded["headers"]
    return h.get("x-api-key") or h.get("authorization", "").removeprefix("Bearer ")


def session_pins(name, cmd, env, cwd, path, first_key, sibling_key, tool):
    """The turns of one conversation land on one connection: its first
    request meets a 429 on the first connection and fails over to the
    second, which answers with a tool call; the turn carrying the tool's
    output follows the session's pin to the second connection although the
    first is healthy again (cooldowns are off for this scenario). With
    affinity off (TTL 0) the same turn goes back to the first: the check
    can tell."""
    results = []
    for ttl, expected, label in ((3600000, sibling_key, "stay on its connection"),
                                 (0, first_key, "follow the priority order with affinity off")):
        reset()
        http("POST", f"{GW}/api/resilience/cooldowns", {"all": True}, MGMT)
        http("PATCH", f"{GW}/api/resilience", {"sessionAffinityTtlMs": ttl,
                                                "connectionCooldown": {"apikey": {"baseCooldownMs": 0}}}, MGMT)
        try:
            # The fake takes the newest matching rule first.
            http("POST", f"{FAKE}/_control/rules", {"path": path, "model": "fake-model", "times": 1, "toolCall": tool})
            http("POST", f"{FAKE}/_control/rules", {"path": path, "model": "fake-model", "apiKey": first_key,
                                                     "times": 1, "status": 429})
            p, secs = run(cmd, env, cwd)
        finally:
            http("PATCH", f"{GW}/api/resilience", {"sessionAffinityTtlMs": 3600000,
                                                    "connectionCooldown": {"apikey": {"baseCooldownMs": 3000}}}, MGMT)
        turns = [key_of(r) for r in requests_on(path) if "tool-42" in r["body"]]
        ok = p.returncode == 0 and len(turns) > 0 and all(k == expected for k in turns)
        detail = f"tool-output turns served by {turns}\n" + p.stdout[-400:] + p.stderr[-400:]
        results.append((f"{name}: a conversation's turns {label}", ok, secs, detail))
    return results


def claude_code_pins(key):
    home, env = claude_home(key)
    cmd = [os.path.join(BIN, "claude"), "-p", "--output-format", "json", "--model", "openai/fake-model",
           "Run the echo command", "--allowedTools", "Bash(echo:*)"]
    tool = {"name": "Bash", "arguments": {"command": "echo tool-$((40+2))", "description": "print a marker"}}
    return session_pins("Claude Code -> OpenAI upstream", cmd, env, home, "/v1/chat/completions",
                        "sk-fake-openai", "sk-fake-openai-2", tool)


def codex_pins(key):
    home, env = codex_home(key)
    cmd = [os.path.join(BIN, "codex"), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
           "Run echo"]
    tool = {"name": CODEX_SHELL["name"], "arguments": CODEX_SHELL["arguments"]}
    return session_pins("Codex -> Anthropic upstream", cmd, env, home, "/v1/messages", "sk-fake-ant",
                        "sk-fake-ant-2", tool)


def openai_sdk(key):
    import openai
    client = openai.OpenAI(base_url=f"{GW}/v1", api_key=key)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    results = []
    reset()
    r = client.chat.completions.create(model="anthropic/fake-model", messages=msgs)
    results.append(("openai SDK -> Anthropic upstream: chat", r.choices[0].message.content == TEXT, 0, str(r)[:300]))
    streamed = "".join(c.choices[0].delta.content or "" for c in
                       client.chat.completions.create(model="anthropic/fake-model", messages=msgs, stream=True)
                       if c.choices)
    results.append(("openai SDK -> Anthropic upstream: stream", streamed == TEXT, 0, streamed))
    script_tool_call("/v1/messages", "get_weather", {"city": "Paris"})
    r = client.chat.completions.create(model="anthropic/fake-model", messages=msgs, tools=tools)
    call = r.choices[0].message.tool_calls[0]
    msgs += [r.choices[0].message.model_dump(exclude_none=True),
             {"role": "tool", "tool_call_id": call.id, "content": "tool-ran-ok"}]
    r2 = client.chat.completions.create(model="anthropic/fake-model", messages=msgs, tools=tools)
    ok = (call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
          and r2.choices[0].message.content == TEXT and tool_result_reached("/v1/messages", "tool-ran-ok"))
    results.append(("openai SDK -> Anthropic upstream: tool round trip", ok, 0, str(r2)[:300]))
    return results


def anthropic_sdk(key):
    import anthropic
    client = anthropic.Anthropic(base_url=GW, api_key=key)
    tools = [{"name": "get_weather", "description": "Weather now",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    results = []
    reset()
    r = client.messages.create(model="openai/fake-model", max_tokens=256, messages=msgs)
    results.append(("anthropic SDK -> OpenAI upstream: message", r.content[0].text == TEXT, 0, str(r)[:300]))
    with client.messages.stream(model="openai/fake-model", max_tokens=256, messages=msgs) as s:
        streamed = "".join(s.text_stream)
    results.append(("anthropic SDK -> OpenAI upstream: stream", streamed == TEXT, 0, streamed))
    script_tool_call("/v1/chat/completions", "get_weather", {"city": "Paris"})
    r = client.messages.create(model="openai/fake-model", max_tokens=256, messages=msgs, tools=tools)
    use = next(b for b in r.content if b.type == "tool_use")
    msgs += [{"role": "assistant", "content": [b.model_dump() for b in r.content]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "tool-ran-ok"}]}]
    r2 = client.messages.create(model="openai/fake-model", max_tokens=256, messages=msgs, tools=tools)
    ok = (r.stop_reason == "tool_use" and use.input == {"city": "Paris"} and r2.content[0].text == TEXT
          and tool_result_reached("/v1/chat/completions", "tool-ran-ok"))
    results.append(("anthropic SDK -> OpenAI upstream: tool round trip", ok, 0, str(r2)[:300]))
    return results


def main():
    key = setup()
    import_subscriptions()
    results = []
    for scenario in (anthropic_sdk, openai_sdk, claude_code, codex, claude_code_subscription, codex_subscription,
                     claude_code_stalls, codex_stalls, claude_code_pins, codex_pins):
        try:
            results += scenario(key)
        except Exception as e:  # a client that crashes is a failed scenario, not a crashed run
            results.append((f"{scenario.__name__}: crashed", False, 0, repr(e)[:600]))
    print("\n== real clients through OmniRoute ==")
    for name, ok, secs, detail in results:
        print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f"  ({secs:.1f} s)" if secs else ""))
        if not ok:
            print("      " + detail.replace("\n", "\n      "))
    failed = [r for r in results if not r[1]]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
