#!/usr/bin/python3
"""How `suspects` (and so `validate`'s judging) scales with the hosts: simulated healthy
files at 3 sizes with the noise of the 16-host emulated cluster
(results/archive/20261204_sim-vs-cluster-quiet-noise-16h-mpi.json), judged by
suspects.analyze with validate's settings. Without --gpus: `--pattern rounds`, one rank a
host, every link; with --gpus G: `--pattern host-rounds` over hosts x G ranks (every host
pair, or --max-rounds N). Prints, per host count, the links a size, the file's size, the
seconds to read it and to judge it, its comparisons, the hosts named and the peak RSS of
the reader (a child process) and of the judge.

  jobs/suspects_scale.py --hosts 32,64,128,256 [--package DIR]
  jobs/suspects_scale.py --gpus 8 --hosts 64,128 [--max-rounds 64]

--package: the folder holding the gdranalysis to time (default this checkout's results/),
so that two versions can be timed on the same files (kept in --files, made once).
"""
import argparse
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", default="32,64,128")
    ap.add_argument("--package", default=os.path.join(HERE, "..", "results"))
    ap.add_argument("--files", default="/tmp/gdr-suspects-scale")
    ap.add_argument("--gpus", type=int, default=0, help="ranks a host, host-rounds (0: rounds, one a host)")
    ap.add_argument("--max-rounds", type=int, default=0)
    ap.add_argument("--noise", default=os.path.join(HERE, "..", "results", "archive",
                                                    "20261204_sim-vs-cluster-quiet-noise-16h-mpi.json"))
    a = ap.parse_args()
    sys.path.insert(0, a.package)
    import numpy as np
    from gdranalysis.schema import load_run
    import inspect
    from gdranalysis.sim_files import Fault, write_host_rounds_run, write_run
    from gdranalysis.sim_noise import NoiseModel
    from gdranalysis.suspects import analyze
    model = NoiseModel.from_json(a.noise)
    os.makedirs(a.files, exist_ok=True)
    summary = "summary" in inspect.signature(load_run).parameters  # older packages read every iteration
    print(f"# suspects.analyze ({os.path.abspath(a.package)}), validate's settings (z 5, 7 %, p0 0.01)"
          + (f"; host-rounds x {a.gpus} ranks a host" if a.gpus else "; rounds, one rank a host")
          + (f", --max-rounds {a.max_rounds}" if a.max_rounds else "") + (", read as a summary" if summary else ""))
    print("| hosts | links a size | file MB | read s | analyze s | comparisons | hosts named | peak RSS MiB: reader, judge |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for H in (int(x) for x in a.hosts.split(",")):
        tag = f"hr{a.gpus}-{H}-{a.max_rounds}" if a.gpus else f"rounds-{H}"
        path = os.path.join(a.files, f"{tag}.h5")
        if not os.path.exists(path):
            hosts, rng = [f"h{i}" for i in range(H)], np.random.default_rng(H)
            if a.gpus:
                write_host_rounds_run(path + ".part", model, hosts, a.gpus, Fault("healthy"), rng, a.max_rounds)
            else:
                write_run(path + ".part", model, hosts, 1, Fault("healthy"), rng)
            os.rename(path + ".part", path)
        t = time.monotonic()
        run = load_run(path, summary=True) if summary else load_run(path)
        read = time.monotonic() - t
        t = time.monotonic()
        rep = analyze(run, z=5.0, min_slowdown_pct=7.0, p0=0.01)
        took = time.monotonic() - t
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        links = sum(len(c.links()) for c in run.cases) // len({c.attrs["bytes"] for c in run.cases})
        print(f"| {H} | {links} | {os.path.getsize(path) / 1e6:.1f} | {read:.2f} | {took:.2f} | {rep.judged} | "
              f"{len(rep.hosts)} | {child:.0f}, {rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
