"""What `simulate trials` (simulate.py) and `simulate fleet` (sim_fleet.py)
share: the fault cells and host counts of their command lines, the noise model
they draw from, and validate's wall time for a fleet. Below both, so that the
command (simulate) can register fleet's subcommand without fleet reaching back
up."""

from __future__ import annotations

from . import schedule
from .schema import InputError
from .sim_noise import NoiseModel, fit

CLASSES = ("healthy", "link", "nic-egress", "nic-ingress", "nic-both", "rank", "down", "flap", "tail", "stall")


def parse_cells(spec):
    out = []
    for c in filter(None, (x.strip() for x in spec.split(","))):
        cls, _, sev = c.partition(":")
        if cls not in CLASSES:
            raise InputError(f"--cells: '{c}': class must be one of {', '.join(CLASSES)}")
        if cls in ("healthy", "down"):
            if sev:
                raise InputError(f"--cells: '{c}': {cls} takes no severity")
            out.append((cls, 0.0))
            continue
        try:
            pct = float(sev)
        except ValueError:
            raise InputError(f"--cells: '{c}': give a severity in percent, e.g. {cls}:10") from None
        if not 0 < pct <= 1000:
            raise InputError(f"--cells: '{c}': severity must be in (0, 1000] percent")
        out.append((cls, pct))
    if not out:
        raise InputError("--cells: no cell given")
    return out


def parse_hosts(spec, least=3):
    try:
        hs = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--hosts {spec}: a comma-separated list of host counts") from None
    if not hs or min(hs) < least:
        raise InputError(f"--hosts {spec}: every count must be >= {least}")
    return hs


def load_model(a) -> NoiseModel:
    if a.noise:
        return NoiseModel.from_json(a.noise)
    return fit_files(a.noise_from)


def fit_files(specs) -> NoiseModel:
    paths, excl = [], {}
    for s in specs:
        p, _, hs = s.partition(":")
        paths.append(p)
        excl[p] = [h for h in hs.split(",") if h]
    return fit(paths, excl)


def wall_time_s(nhosts, rpg, nsizes, case_time):
    """validate's schedule: bw rounds over every rank, each case case_time plus its overhead."""
    return schedule.schedule_s(schedule.steps("rounds", nhosts * rpg) * nsizes, case_time)
