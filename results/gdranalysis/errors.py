"""The one error every analysis command turns into a line and exit 2.

Its own module, below everything that raises it: the environment reader
(env.py) and the file reader (schema.py) both need it, and schema reads its
timeout through env.
"""


class InputError(Exception):
    """A file or value the analysis cannot use; the message is one line."""
