"""A fleet on one machine: pagoda replicas and a router in front of them, for the fleet tests and benchmarks.

Used by scripts/fleet/smg_test.py and bench/fleet_routing.py. Standard library only (Debian's python3), so it
runs with /usr/bin/python3; the router (SGLang Model Gateway, `smg`) comes from its own venv
(scripts/install-fleet-tools.sh).
"""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url, body=None, timeout=120, method=None):
    """POST body (or GET when None) and return (status, parsed JSON or text)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"content-type": "application/json"}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read().decode()
            status = r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read().decode(errors="replace"), e.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def metrics(url):
    """The replica's /metrics as {name{labels}: value}."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def metric_sum(sample, name):
    """Sum of every series of one metric name (all label sets)."""
    return sum(v for k, v in sample.items() if k == name or k.startswith(name + "{"))


class Replica:
    """One `pagoda serve` process on its own port."""

    def __init__(self, name, pagoda, model, workdir, served_name="smollm2", extra_args=(), port=None, threads=1):
        self.name, self.pagoda, self.model = name, pagoda, model
        self.served_name, self.extra_args, self.threads = served_name, list(extra_args), threads
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.proc = None

    def start(self):
        log = open(self.log_path, "ab")
        cmd = [self.pagoda, "serve", self.model, "--port", str(self.port), "-t", str(self.threads),
               "--served-model-name", self.served_name] + self.extra_args
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return self

    def wait_ready(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready after {timeout} s; see {self.log_path}")

    def kill(self):
        """SIGKILL: the replica dies mid-work, as a crashed process or a lost machine does."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def requests_served(self):
        """Requests this replica finished (any reason) or failed, from its own /metrics."""
        m = metrics(self.url)
        return metric_sum(m, "pagoda:request_success_total") + metric_sum(m, "pagoda:request_failure_total")


class SmgRouter:
    """SGLang Model Gateway (`smg launch`) in front of the replicas, HTTP workers."""

    def __init__(self, smg, workdir, worker_urls, policy, extra_args=()):
        self.smg, self.policy = smg, policy
        self.worker_urls = list(worker_urls)
        self.port = free_port()
        self.metrics_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.extra_args = list(extra_args)
        self.log_path = os.path.join(workdir, f"smg-{policy}.log")
        self.proc = None

    def start(self):
        log = open(self.log_path, "ab")
        cmd = [self.smg, "launch", "--host", "127.0.0.1", "--port", str(self.port),
               "--prometheus-host", "127.0.0.1", "--prometheus-port", str(self.metrics_port),
               "--policy", self.policy, "--log-level", "warn", "--worker-urls"] + self.worker_urls + self.extra_args
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        return self

    def workers(self):
        status, body = http_json(self.url + "/workers", timeout=5)
        return body.get("workers", []) if status == 200 and isinstance(body, dict) else []

    def wait_ready(self, timeout=120):
        """Until every worker is registered, healthy and ready."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"smg exited with {self.proc.returncode}; see {self.log_path}")
            try:
                ws = self.workers()
                if len(ws) == len(self.worker_urls) and all(w.get("is_healthy") for w in ws):
                    return self
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.3)
        raise RuntimeError(f"smg: workers not ready after {timeout} s; see {self.log_path}")

    def healthy_urls(self):
        return sorted(w["url"] for w in self.workers() if w.get("is_healthy"))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def stream_completion(url, body, timeout=60):
    """One streamed request; returns a dict: ok, text, finish_reason, error, done ([DONE] seen), t_first, t_end.

    A reply is complete only with a finish_reason and the closing [DONE]; anything else is reported as an error
    naming what was missing, so a truncated stream can never pass for a complete one.
    """
    body = dict(body, stream=True)
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    out = {"ok": False, "text": "", "finish_reason": None, "error": None, "done": False, "t_first": None}
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            for raw in r:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    out["done"] = True
                    break
                event = json.loads(data)
                if "error" in event:
                    out["error"] = "error event: " + json.dumps(event["error"])[:200]
                    break
                for choice in event.get("choices", []):
                    piece = choice.get("text") or (choice.get("delta") or {}).get("content") or ""
                    if piece and out["t_first"] is None:
                        out["t_first"] = time.monotonic() - t0
                    out["text"] += piece
                    if choice.get("finish_reason"):
                        out["finish_reason"] = choice["finish_reason"]
    except urllib.error.HTTPError as e:
        out["error"] = f"HTTP {e.code}: {e.read().decode(errors='replace')[:200]}"
    except (urllib.error.URLError, OSError, ValueError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
    out["t_end"] = time.monotonic() - t0
    if out["error"] is None:
        if not out["done"]:
            out["error"] = "the stream ended without [DONE]"
        elif not out["finish_reason"]:
            out["error"] = "the stream ended without a finish_reason"
        else:
            out["ok"] = True
    return out
