"""Three pagoda replicas behind SGLang Model Gateway (smg): routing, streaming, counting, failover and recovery.

    /usr/bin/python3 scripts/fleet/smg_test.py --pagoda build/pagoda --model M.gguf --smg .cache/fleet/bin/smg

Checks, each printed as PASS/FAIL with what it saw:
  1. route + count: requests through the router complete, and the replicas' own counters add up to exactly the
     requests sent (none lost, none doubled by a retry); with the cache_aware policy, requests that share a long
     prefix land on one replica (its prefix cache then hits).
  2. stream: the streamed text through the router equals the non-streamed text (temperature 0), and both equal
     what the replica answers directly.
  3. failover: under a load of concurrent streams, one replica is killed (SIGKILL). Every request ends either
     complete (finish_reason and [DONE]) or with an error; no client waits out its timeout, and no truncated
     stream passes for complete. Only requests in flight when the replica died fail; requests sent after the kill
     complete on the others.
  4. recovery: the replica restarted on its port is taken back by the router's health checks and serves again.
Exit status 0 when all pass.
"""

import argparse
import os
import random
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet import Replica, SmgRouter, http_json, metrics, metric_sum, stream_completion  # noqa: E402

RESULTS = []


def check(name, ok, detail):
    RESULTS.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}: {name}: {detail}", flush=True)


def words(rng, n):
    vocab = ("river stone lantern market winter orchard copper signal harbor meadow engine candle ledger "
             "violet summit thread garden falcon marble compass").split()
    return " ".join(rng.choice(vocab) for _ in range(n))


def served_by(replicas, before):
    after = [r.requests_served() for r in replicas]
    return [r.name for r, a, b in zip(replicas, after, before) if a > b], after


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pagoda", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--smg", required=True)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="pagoda-fleet-")
    os.makedirs(workdir, exist_ok=True)
    print(f"logs in {workdir}", flush=True)
    rng = random.Random(7)
    t_start = time.monotonic()

    replicas = [Replica(n, args.pagoda, args.model, workdir) for n in ("replica-a", "replica-b", "replica-c")]
    router = None
    try:
        for r in replicas:
            r.start()
        for r in replicas:
            r.wait_ready()
        # Health probes every second; one failed probe is enough to stop routing to a dead replica, two good ones
        # bring it back.
        router = SmgRouter(args.smg, workdir, [r.url for r in replicas], "cache_aware",
                           ["--health-check-interval-secs", "1", "--health-failure-threshold", "1",
                            "--health-success-threshold", "2", "--health-check-timeout-secs", "2"]).start()
        router.wait_ready()
        print(f"fleet up in {time.monotonic() - t_start:.1f} s: router {router.url}, replicas "
              + ", ".join(f"{r.name} {r.url}" for r in replicas), flush=True)

        # 1. Route and count.
        prefixes = [words(rng, 250) for _ in range(3)]
        before = [r.requests_served() for r in replicas]
        placement = {k: [] for k in range(3)}
        ok_replies = 0
        sent = 12
        for i in range(sent):
            k = i % 3
            b0 = [r.requests_served() for r in replicas]
            status, reply = http_json(router.url + "/v1/completions",
                                      {"model": "smollm2", "prompt": prefixes[k] + f" question {i}?",
                                       "max_tokens": 4, "temperature": 0})
            ok_replies += status == 200 and reply["choices"][0]["finish_reason"] in ("length", "stop")
            names, _ = served_by(replicas, b0)
            placement[k] += names
        after = [r.requests_served() for r in replicas]
        counted = sum(after) - sum(before)
        check("route + count", ok_replies == sent and counted == sent,
              f"{ok_replies}/{sent} replies complete; replicas counted {counted:.0f} requests "
              f"({', '.join(f'{r.name} {a - b:.0f}' for r, a, b in zip(replicas, after, before))})")
        sticky = all(len(set(v[1:])) == 1 for v in placement.values())
        check("cache_aware keeps a prefix on one replica", sticky,
              "; ".join(f"prefix {k} -> {v}" for k, v in placement.items()))

        # 2. Stream.
        body = {"model": "smollm2", "messages": [{"role": "user", "content": "Name three colours of the rainbow."}],
                "max_tokens": 24, "temperature": 0}
        _, plain = http_json(router.url + "/v1/chat/completions", body)
        streamed = stream_completion(router.url + "/v1/chat/completions", body)
        _, direct = http_json(replicas[0].url + "/v1/chat/completions", body)
        text = plain["choices"][0]["message"]["content"]
        check("stream", streamed["ok"] and streamed["text"] == text == direct["choices"][0]["message"]["content"],
              f"streamed {streamed['text']!r} ({streamed['error'] or 'complete'}), non-streamed {text!r}")

        # 3. Failover: 6 client threads stream requests back to back; replica-b is killed after 4 s.
        victim = replicas[1]
        stop_at = time.monotonic() + 14
        kill_at = time.monotonic() + 4
        outcomes = []  # (start, end, result)
        lock = threading.Lock()

        def client(seed):
            crng = random.Random(seed)
            while time.monotonic() < stop_at:
                t0 = time.monotonic()
                res = stream_completion(router.url + "/v1/completions",
                                        {"model": "smollm2", "prompt": words(crng, 60), "max_tokens": 48,
                                         "temperature": 0, "ignore_eos": True}, timeout=60)
                with lock:
                    outcomes.append((t0, time.monotonic(), res))

        threads = [threading.Thread(target=client, args=(s,)) for s in range(6)]
        for t in threads:
            t.start()
        time.sleep(max(0.0, kill_at - time.monotonic()))
        m = metrics(victim.url)
        in_flight_on_victim = metric_sum(m, "pagoda:num_requests_running") + metric_sum(m, "pagoda:num_requests_waiting")
        t_kill = time.monotonic()
        victim.kill()
        for t in threads:
            t.join()
        failed = [(s, e, r) for s, e, r in outcomes if not r["ok"]]
        complete = [r for _, _, r in outcomes if r["ok"]]
        hung = [r for _, _, r in outcomes if r["t_end"] >= 59]
        after_kill = [r for s, _, r in outcomes if s > t_kill + 2]
        late_failures = [r for r in after_kill if not r["ok"]]
        truncated_as_complete = [r for r in complete if r["finish_reason"] is None or not r["done"]]
        errors = sorted({r["error"][:90] for _, _, r in failed})
        check("failover: no hang, nothing truncated passes as complete", not hung and not truncated_as_complete,
              f"{len(outcomes)} requests: {len(complete)} complete, {len(failed)} failed with an error, "
              f"{len(hung)} hung; errors seen: {errors}")
        # Which replica served a request is the router's secret, so the bound is checked as: every failure was in
        # flight when the replica died (sent before, ended after), and there were no more of them than requests in
        # flight through the router then; the victim's own count just before the kill is shown beside (a request can
        # reach it between that sample and the kill).
        in_flight_at_kill = [r for s, e, r in outcomes if s < t_kill <= e]
        only_in_flight = all(s < t_kill <= e for s, e, _ in failed)
        check("failover: only requests in flight at the kill fail",
              only_in_flight and len(failed) <= len(in_flight_at_kill),
              f"{len(failed)} failed, all in flight at the kill: {only_in_flight}; {len(in_flight_at_kill)} in flight "
              f"through the router, {in_flight_on_victim:.0f} running or waiting on {victim.name} just before")
        check("failover: requests sent 2 s after the kill complete", len(after_kill) > 0 and not late_failures,
              f"{len(after_kill) - len(late_failures)}/{len(after_kill)} complete")
        healthy = router.healthy_urls()
        check("failover: the router took the dead replica out", victim.url not in healthy, f"healthy: {healthy}")

        # 4. Recovery: restart on the same port; the router's probes bring it back; it serves again.
        t_restart = time.monotonic()
        victim.start().wait_ready()
        back = None
        while time.monotonic() - t_restart < 60:
            if victim.url in router.healthy_urls():
                back = time.monotonic() - t_restart
                break
            time.sleep(0.2)
        served_again = False
        if back is not None:
            b0 = victim.requests_served()
            for i in range(30):  # fresh prefixes: cache_aware sends a miss to the least loaded replica
                http_json(router.url + "/v1/completions",
                          {"model": "smollm2", "prompt": words(rng, 80), "max_tokens": 2, "temperature": 0})
                if victim.requests_served() > b0:
                    served_again = True
                    break
        check("recovery: the restarted replica is routed to again", back is not None and served_again,
              f"healthy in the router {back:.1f} s after restart" if back is not None else "never healthy again")
    finally:
        if router:
            router.stop()
        for r in replicas:
            r.stop()
    print(f"{sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed, {time.monotonic() - t_start:.1f} s",
          flush=True)
    return 0 if RESULTS and all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
