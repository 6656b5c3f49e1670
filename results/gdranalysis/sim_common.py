"""What `simulate trials` (simulate.py) and `simulate fleet` (sim_fleet.py)
share: the fault cells and host counts of their command lines, the noise model
they draw from, and validate's wall time for a fleet. Below both, so that the
command (simulate) can register fleet's subcommand without fleet reaching back
up."""

from __future__ import annotations

from . import numbers, schedule
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
        out.append((cls, numbers.check(sev, "simulate --cells severity", source=f"--cells {cls}:")))
    if not out:
        raise InputError("--cells: no cell given")
    return out


def parse_hosts(spec, name="simulate fleet --hosts"):
    """--hosts 4,8: each count checked against `name`'s bounds (numbers.BOUNDS)."""
    return numbers.int_list(spec, name, "--hosts")


def load_model(a) -> NoiseModel:
    if a.noise is not None:   # an empty name is a name given, refused as a file, not "no model"
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
