"""Every analysis output against the paths it can be given (gdranalysis.outputs,
docs/operators/outputs.md), with real files: a real run, real links, FIFOs,
device nodes and /dev/full. Each refusal is one line and exit 2, and leaves
what was there as it was."""
import hashlib
import os
import stat
import subprocess
import unittest

from gdrtest import RESULTS, PYTHON, TempDirCase, analysis, make_run


def read(path):
    with open(path, "rb") as f:
        return f.read()


def digest(path):
    return hashlib.sha256(read(path)).hexdigest()


class OutputPaths(TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.run_file = make_run(os.path.join(cls.tmp, "run.h5"), "-t", "allreduce", "-b", "8", "-e", "64", "-n", "3")

    def writers(self, out):
        """Each command that writes a file, writing `out`, with --force."""
        r = self.run_file
        return {"export -o": ["export", "--openmetrics", r, "-o", out, "--force"],
                "report --html": ["report", r, "--html", out, "--force"],
                "history --plot": ["history", r, "--case", "test=allreduce", "--plot", out, "--force"],
                "simulate fit -o": ["simulate", "fit", r, "-o", out, "--force"]}

    def refused(self, r, what, words):
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertEqual(r.returncode, 2, f"{what}: exit {r.returncode}\n{r.stderr}")
        self.assertEqual(len(lines), 1, f"{what}: not one line: {lines}")
        self.assertIn(words, lines[0], what)

    def test_not_a_regular_file_refused(self):
        folder, fifo, dev = self.p("a-folder"), self.p("a-fifo"), self.p("a-device")
        os.mkdir(folder)
        os.mkfifo(fifo)
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers (root)
        for path, kind in ((folder, "a folder"), (fifo, "a FIFO"), (dev, "a device")):
            for what, args in self.writers(path).items():
                self.refused(analysis(*args), f"{what} {kind}", f"is {kind}, not a regular file")
                mode = os.lstat(path).st_mode
                self.assertTrue(stat.S_ISDIR(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode), f"{what}: {kind} replaced")

    def test_own_input_never_replaced(self):
        os.symlink(self.run_file, self.p("soft.h5"))
        os.link(self.run_file, self.p("hard.h5"))
        before = digest(self.run_file)
        for name in (self.run_file, self.p("soft.h5"), self.p("hard.h5")):
            for what, args in self.writers(name).items():
                self.refused(analysis(*args), f"{what} {name}", "own input")
                self.assertEqual(digest(self.run_file), before, f"{what} {name} changed the input")

    def test_existing_file_needs_force(self):
        out = self.p("old.prom")
        with open(out, "w") as f:
            f.write("an earlier file\n")
        args = self.writers(out)["export -o"]
        self.refused(analysis(*args[:-1]), "export -o without --force", "pass --force")
        self.assertEqual(read(out), b"an earlier file\n")
        r = analysis(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"gdrbench_", read(out))

    def test_written_atomically(self):
        """A new file renamed over the old one (a reader sees one or the other,
        never half): the inode changes, a link through which it was written
        stays a link, and no temporary file is left beside it."""
        for what, name in (("history --plot", "trend.png"), ("export -o", "m.prom"), ("report --html", "r.html")):
            target, link = self.p(name), self.p("link-" + name)
            with open(target, "w") as f:
                f.write("old\n")
            os.symlink(target, link)
            ino = os.stat(target).st_ino
            r = analysis(*self.writers(link)[what])
            self.assertEqual(r.returncode, 0, f"{what}: {r.stderr}")
            self.assertTrue(os.path.islink(link), f"{what}: the link was replaced by a file")
            self.assertNotEqual(os.stat(target).st_ino, ino, f"{what}: written in place, not renamed over")
            self.assertNotEqual(read(target), b"old\n", what)
        left = [n for n in os.listdir(self.tmp) if n.endswith(".tmp")]
        self.assertEqual(left, [], "temporary files left")

    def test_control_character_in_name_refused(self):
        for what, args in self.writers(self.p("two\nlines")).items():
            self.refused(analysis(*args), what, "control character")
        self.assertFalse([n for n in os.listdir(self.tmp) if "\n" in n], "a name with a newline was created")

    def test_full_stdout_fails(self):
        env = dict(os.environ, PYTHONPATH=RESULTS)
        for args in (["stragglers", self.run_file], ["export", "--openmetrics", self.run_file], ["compare", "--help"]):
            with open("/dev/full", "w") as full:
                r = subprocess.run([PYTHON, "-m", "gdranalysis", *args], stdout=full, stderr=subprocess.PIPE,
                                   text=True, env=env, timeout=120)
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            self.assertNotEqual(r.returncode, 0, f"{args}: exit 0 with its output lost")
            self.assertEqual(len(lines), 1, f"{args}: not one line: {lines}")
            self.assertIn("No space left on device", lines[0])


if __name__ == "__main__":
    unittest.main()
