"""Every file of corpus/hdf5_reader through the real command line
(`python3 -m gdranalysis stragglers FILE`, what `gdrbench stragglers` runs):
exit 0, or exit 2 with exactly one line on stderr; never a traceback (exit 3),
never a hang. The corpus holds the inputs that once hung or crashed the
reader (regress_*), so this replays them as the user would meet them."""
import glob
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
files = sorted(glob.glob(os.path.join(here, "corpus", "hdf5_reader", "*")))
env = dict(os.environ, GDR_READ_TIMEOUT="5")
bad = 0
for f in files:
    try:
        p = subprocess.run([sys.executable, "-m", "gdranalysis", "stragglers", f], env=env,
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        print(f"FAIL {os.path.basename(f)}: hung"); bad += 1; continue
    err = p.stderr.strip().splitlines()
    ok = p.returncode == 0 or (p.returncode == 2 and len(err) == 1)
    print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(f)}: exit {p.returncode}"
          + (f": {err[0][:160]}" if err and p.returncode else ""))
    if not ok:
        print(p.stderr[-3000:]); bad += 1
print(f"{len(files)} files, {bad} failures")
sys.exit(1 if bad or not files else 0)
