"""`gdrbench simulate fleet`: not yet written (the next commit)."""


def add_parser(ss, common):
    """Registers nothing until the fleet judge exists."""
