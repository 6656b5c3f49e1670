#!/usr/bin/python3
"""How `suspects` (and so `validate`'s judging) scales with the hosts: simulated healthy
`--pattern rounds` files, one rank a host, every link at 3 sizes, with the noise of the
16-host emulated cluster (results/archive/20261204_sim-vs-cluster-quiet-noise-16h-mpi.json),
judged by suspects.analyze with validate's settings. Prints, per host count, the links a
size, the seconds analyze took, its comparisons, the hosts it named and the peak RSS.

  jobs/suspects_scale.py --hosts 32,64,128,256 [--package DIR]

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
    ap.add_argument("--noise", default=os.path.join(HERE, "..", "results", "archive",
                                                    "20261204_sim-vs-cluster-quiet-noise-16h-mpi.json"))
    a = ap.parse_args()
    sys.path.insert(0, a.package)
    import numpy as np
    from gdranalysis.schema import load_run
    from gdranalysis.sim_files import Fault, write_run
    from gdranalysis.sim_noise import NoiseModel
    from gdranalysis.suspects import analyze
    model = NoiseModel.from_json(a.noise)
    os.makedirs(a.files, exist_ok=True)
    print(f"# suspects.analyze ({os.path.abspath(a.package)}), validate's settings (z 5, 7 %, p0 0.01)")
    print("| hosts | links a size | analyze s | comparisons | hosts named | peak RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for H in (int(x) for x in a.hosts.split(",")):
        path = os.path.join(a.files, f"rounds-{H}.h5")
        if not os.path.exists(path):
            write_run(path, model, [f"h{i}" for i in range(H)], 1, Fault("healthy"), np.random.default_rng(H))
        run = load_run(path)
        t = time.monotonic()
        rep = analyze(run, z=5.0, min_slowdown_pct=7.0, p0=0.01)
        took = time.monotonic() - t
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"| {H} | {H * (H - 1)} | {took:.2f} | {rep.judged} | {len(rep.hosts)} | {rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
