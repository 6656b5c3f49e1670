# ReFrame checks for gdrbench (docs/reframe.md), beside a centre's OSU and
# nccl-tests checks. One check per test x transport x memory kind x path:
#   reframe -C jobs/reframe/config_local.py -c jobs/reframe/gdrbench_checks.py \
#       -n 'GdrbenchCheck%transport=mpi%mem=host' -r
# Sanity: the result file says `complete` and no element was wrong.
# Performance: busbw and the median time (latency) per size (GB/s, us), the best
# %peak, and direct/staged at the largest size when the run has both paths,
# read from `gdrbench export --openmetrics` of the run's HDF5 file, which is
# kept as an output. References per system and partition come from a JSON
# file written by make_references.py from an archived run.
import json
import os
import re

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, performance_function, run_after, run_before, sanity_function, variable

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = re.compile(r'^(\w+)\{(.*)\} (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def read_metrics(path):
    """The export's samples: [(name, {label: value}, float)]."""
    out = []
    with open(path) as f:
        for line in f:
            m = SAMPLE.match(line.strip())
            if m:
                out.append((m.group(1), dict(LABEL.findall(m.group(2))), float(m.group(3))))
    return out


def check_key(test, transport, mem, path):
    """How make_references.py names a check's references."""
    return f'{test}/{transport}/{mem}/{path}'


@rfm.simple_test
class GdrbenchCheck(rfm.RunOnlyRegressionTest):
    test = parameter(['allreduce', 'latency', 'bw', 'bibw'])
    transport = parameter(['mpi', 'ucx', 'verbs'])
    mem = parameter(['host', 'cuda'])
    path = parameter(['direct', 'staged', 'direct,staged'])

    valid_systems = ['*']
    valid_prog_environs = ['*']
    gdrbench = variable(str, value='gdrbench')        # -S gdrbench=/path/to/gdrbench
    ranks = variable(int, value=2)
    minbytes = variable(str, value='1K')
    maxbytes = variable(str, value='1M')
    stepfactor = variable(int, value=4)
    iters = variable(str, value='20')
    references_file = variable(str, value=os.path.join(HERE, 'references.json'))
    result = 'gdrbench.h5'
    metrics = 'gdrbench.prom'
    tags = {'gdrbench'}

    @run_after('init')
    def skip_meaningless(self):
        # A path is a way of moving device memory: host memory has only `direct`.
        self.skip_if(self.mem == 'host' and self.path != 'direct', 'host memory has only the direct path')

    @run_after('init')
    def set_command(self):
        self.num_tasks = self.ranks
        self.executable = self.gdrbench
        self.executable_opts = ['run', '-t', self.test, '-T', self.transport, '-m', self.mem, '--path', self.path,
                                '-b', self.minbytes, '-e', self.maxbytes, '-f', str(self.stepfactor),
                                '-n', self.iters, '--output', self.result, '--force']
        # gdrbench's exit status, then the file's metrics, even after a failure, so sanity can say why.
        self.postrun_cmds = ['echo "gdrbench_exit=$?"',
                             f'{self.gdrbench} export --openmetrics {self.result} -o {self.metrics} --force']
        self.keep_files = [self.result, self.metrics]

    def _samples(self, name):
        return [(lab, v) for n, lab, v in read_metrics(os.path.join(self.stagedir, self.metrics)) if n == name]

    @sanity_function
    def complete_and_correct(self):
        prom = os.path.join(self.stagedir, self.metrics)
        complete = sn.extractsingle(r'^gdrbench_run_complete\{[^}]*\} (\d+)', prom, 1, int)
        wrong = sn.sum(sn.extractall(r'^gdrbench_wrong_elements\{[^}]*\} (\d+)', prom, 1, int))
        return sn.all([sn.assert_eq(complete, 1, msg='result file not complete'),
                       sn.assert_eq(wrong, 0, msg='{0} wrong elements (expected {1})'),
                       sn.assert_found(r'^gdrbench_busbw_bytes_per_second', prom),
                       sn.assert_eq(sn.extractsingle(r'^gdrbench_exit=(\d+)', self.stdout, 1, int), 0,
                                    msg='gdrbench run exited {0}')])

    @run_before('performance')
    def set_perf_variables(self):
        pv = {}
        for lab, v in self._samples('gdrbench_busbw_bytes_per_second'):
            if lab.get('path') in self.path.split(',') and lab.get('reference') == '0':
                name = f"busbw_{lab['size']}" + ('' if ',' not in self.path else f"_{lab['path']}")
                pv[name] = sn.make_performance_function(sn.defer(v / 1e9), 'GB/s')
        for lab, v in self._samples('gdrbench_iteration_seconds'):
            if lab.get('path') in self.path.split(',') and lab.get('reference') == '0':
                name = f"time_us_{lab['size']}" + ('' if ',' not in self.path else f"_{lab['path']}")
                pv[name] = sn.make_performance_function(sn.defer(v * 1e6), 'us')
        peaks = [v for lab, v in self._samples('gdrbench_peak_percent') if lab.get('reference') == '0']
        if peaks:
            pv['pct_peak'] = sn.make_performance_function(sn.defer(max(peaks)), '%')
        ratios = sorted((int(lab['size']), v) for lab, v in self._samples('gdrbench_direct_over_staged_ratio'))
        if ratios:
            pv['direct_over_staged'] = sn.make_performance_function(sn.defer(ratios[-1][1]), 'x')
        self.perf_variables = pv

    @run_before('performance')
    def set_references(self):
        try:
            with open(self.references_file) as f:
                refs = json.load(f)
        except FileNotFoundError:
            return  # no references: the values are logged, not judged
        key = check_key(self.test, self.transport, self.mem, self.path)
        self.reference = {part: {k: tuple(v) for k, v in checks.get(key, {}).items()}
                          for part, checks in refs.get('references', {}).items()}
