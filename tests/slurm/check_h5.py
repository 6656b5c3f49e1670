#!/usr/bin/python3
"""Check a gdrbench result file written under Slurm (schema: results/README.md).

    check_h5.py FILE --ranks N --jobid ID [--host H ...] [--partition P]
    check_h5.py FILE --ranks N --no-slurm [--host H ...]     (mpirun runs)
    check_h5.py --selftest

Exit 0 when every check holds, 1 (listing every failed check) when one does
not, 2 on usage errors. Checks: schema_version 2 and status complete; N ranks
in the root attribute, in /ranks/host and /ranks/local_rank, and in every case;
hosts as expected; local ranks 0..k-1 on each host; /environment carries
SLURM_JOB_ID == ID, SLURM_JOB_NODELIST naming the hosts, and SLURM_JOB_PARTITION
(== P when given); at least one case, none with wrong elements.
--selftest builds a good file and broken variants and shows that the checker
passes the first and fails each of the others.
"""
import argparse
import os
import sys
import tempfile

import h5py


def s(v):
    if isinstance(v, bytes):
        return v.decode()
    if hasattr(v, "item") and not isinstance(v, str):
        v = v.item()
        return v.decode() if isinstance(v, bytes) else v
    return v


def check(path, ranks, jobid, hosts=None, partition=None):
    errors = []
    err = errors.append
    try:
        f = h5py.File(path, "r")
    except Exception as e:  # noqa: BLE001 - any reason to be unreadable is a failure
        return [f"cannot open {path}: {e}"]
    with f:
        a = f.attrs
        if s(a.get("schema_version")) != 2:
            err(f"schema_version is {s(a.get('schema_version'))!r}, want 2")
        if s(a.get("status")) != "complete":
            err(f"status is {s(a.get('status'))!r} (error {s(a.get('error'))!r}), want 'complete'")
        if s(a.get("ranks")) != ranks:
            err(f"root attribute ranks is {s(a.get('ranks'))!r}, want {ranks}")

        if "ranks/host" not in f or "ranks/local_rank" not in f:
            err("missing /ranks/host or /ranks/local_rank")
            rank_hosts, local = [], []
        else:
            rank_hosts = [s(h) for h in f["ranks/host"][()]]
            local = [int(x) for x in f["ranks/local_rank"][()]]
        if len(rank_hosts) != ranks or len(local) != ranks:
            err(f"/ranks has {len(rank_hosts)} hosts and {len(local)} local ranks, want {ranks}")
        if hosts is not None and sorted(set(rank_hosts)) != sorted(set(hosts)):
            err(f"hosts are {sorted(set(rank_hosts))}, want {sorted(set(hosts))}")
        by_host = {}
        for h, lr in zip(rank_hosts, local):
            by_host.setdefault(h, []).append(lr)
        for h, lrs in by_host.items():
            if sorted(lrs) != list(range(len(lrs))):
                err(f"local ranks on {h} are {sorted(lrs)}, want 0..{len(lrs) - 1}")

        env = {k: s(v) for k, v in f["environment"].attrs.items()} if "environment" in f else {}
        if not env:
            err("no /environment attributes")
        if jobid is not None:
            if env.get("SLURM_JOB_ID") != str(jobid):
                err(f"/environment SLURM_JOB_ID is {env.get('SLURM_JOB_ID')!r}, want {str(jobid)!r}")
            nodelist = env.get("SLURM_JOB_NODELIST")
            if not nodelist:
                err("/environment has no SLURM_JOB_NODELIST")
            elif hosts is not None and len(set(hosts)) == 1 and nodelist != hosts[0]:
                err(f"/environment SLURM_JOB_NODELIST is {nodelist!r}, want {hosts[0]!r}")
            if "SLURM_JOB_PARTITION" not in env:
                err("/environment has no SLURM_JOB_PARTITION")
            elif partition is not None and env["SLURM_JOB_PARTITION"] != partition:
                err(f"/environment SLURM_JOB_PARTITION is {env['SLURM_JOB_PARTITION']!r}, want {partition!r}")

        cases = f["cases"] if "cases" in f else {}
        if len(cases) < 1:
            err("no cases")
        if s(a.get("cases_completed")) != len(cases):
            err(f"cases_completed is {s(a.get('cases_completed'))!r} but /cases has {len(cases)}")
        for name, g in cases.items():
            if len(errors) > 20:
                err("... (further case errors not shown)")
                break
            if s(g.attrs.get("ranks")) != ranks:
                err(f"case {name}: ranks {s(g.attrs.get('ranks'))!r}, want {ranks}")
            if s(g.attrs.get("wrong", 0)) != 0:
                err(f"case {name}: {s(g.attrs.get('wrong'))} wrong elements")
            if "times" in g and g["times"].shape[0] != ranks:
                err(f"case {name}: times has {g['times'].shape[0]} rows, want {ranks}")
    return errors


def _write(path, *, ranks=2, hosts=("nodeA", "nodeA"), local=(0, 1), jobid="42",
           status="complete", ncases=1, wrong=0, env_extra=None, drop_env=()):
    with h5py.File(path, "w") as f:
        f.attrs["schema_version"] = 2
        f.attrs["status"] = status
        f.attrs["error"] = ""
        f.attrs["ranks"] = ranks
        f.attrs["cases_completed"] = ncases
        f.create_dataset("ranks/host", data=[h.encode() for h in hosts], dtype=h5py.string_dtype())
        f.create_dataset("ranks/local_rank", data=list(local), dtype="int32")
        env = f.create_group("environment")
        vals = {"SLURM_JOB_ID": jobid, "SLURM_JOB_NODELIST": "nodeA", "SLURM_JOB_PARTITION": "test"}
        vals.update(env_extra or {})
        for k, v in vals.items():
            if k not in drop_env:
                env.attrs[k] = v
        c = f.create_group("cases")
        for i in range(ncases):
            g = c.create_group(f"{i:05d}")
            g.attrs["ranks"] = ranks
            g.attrs["wrong"] = wrong
            g.create_dataset("times", data=[[1e-6] * 3] * ranks)


def selftest():
    bad = {
        "wrong job id": dict(jobid="43"),
        "one rank": dict(ranks=1, hosts=("nodeA",), local=(0,)),
        "other host": dict(hosts=("nodeA", "nodeB"), local=(0, 0)),
        "duplicate local rank": dict(local=(0, 0)),
        "not complete": dict(status="failed"),
        "no cases": dict(ncases=0),
        "wrong elements": dict(wrong=3),
        "no SLURM_JOB_ID": dict(drop_env=("SLURM_JOB_ID",)),
        "no SLURM_JOB_NODELIST": dict(drop_env=("SLURM_JOB_NODELIST",)),
        "other partition": dict(env_extra={"SLURM_JOB_PARTITION": "gpu"}),
    }
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "good.h5")
        _write(good)
        e = check(good, 2, 42, ["nodeA"], "test")
        if e:
            print(f"selftest: good file rejected: {e}")
            failures += 1
        for label, kw in bad.items():
            p = os.path.join(d, "bad.h5")
            _write(p, **kw)
            e = check(p, 2, 42, ["nodeA"], "test")
            if not e:
                print(f"selftest: broken file accepted: {label}")
                failures += 1
        if not check(os.path.join(d, "missing.h5"), 2, 42):
            print("selftest: missing file accepted")
            failures += 1
    n = len(bad) + 2
    print(f"{n - failures} passed, {failures} failed")
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", nargs="?")
    p.add_argument("--ranks", type=int)
    p.add_argument("--jobid")
    p.add_argument("--host", action="append", dest="hosts")
    p.add_argument("--partition")
    p.add_argument("--no-slurm", action="store_true", help="skip the SLURM_* checks")
    p.add_argument("--selftest", action="store_true")
    a = p.parse_args()
    if a.selftest:
        return selftest()
    if not a.file or a.ranks is None or not (a.jobid or a.no_slurm):
        p.error("FILE, --ranks and --jobid (or --no-slurm) are required")
    errors = check(a.file, a.ranks, None if a.no_slurm else a.jobid, a.hosts, a.partition)
    for e in errors:
        print(f"check_h5: {a.file}: {e}")
    if errors:
        return 1
    print(f"check_h5: {a.file}: ok ({a.ranks} ranks, {'no Slurm' if a.no_slurm else 'job ' + a.jobid})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
