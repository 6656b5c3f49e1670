# ReFrame configuration for one machine: the local scheduler and the mpirun
# launcher (CI and a developer's workstation). A centre uses its own system
# entry instead (Slurm scheduler, srun launcher); the checks need nothing else.
site_configuration = {
    'systems': [
        {
            'name': 'local',
            'descr': 'this machine, mpirun',
            'hostnames': ['.*'],
            'partitions': [
                {
                    'name': 'default',
                    'scheduler': 'local',
                    'launcher': 'mpirun',
                    'environs': ['builtin'],
                    'max_jobs': 1,   # gdrbench times: never two runs at once
                }
            ],
        }
    ],
    'environments': [
        {'name': 'builtin', 'cc': 'cc', 'cxx': 'c++', 'ftn': ''},
    ],
}
