"""The stand-in MPS daemon (see nvidia-cuda-mps-control here). Answers every
command with 100.0; `quit` ends it unless STANDIN_MPS_IGNORE_QUIT=1 (a daemon
that hangs, which jobs/with_mps.sh must kill)."""
import os
import socket
import sys

path = os.path.join(os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"), "control")

if len(sys.argv) > 1 and sys.argv[1] == "client":
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
    except OSError as e:
        sys.exit(f"Cannot find MPS control daemon process ({e})")
    s.sendall(sys.stdin.read().encode())
    s.shutdown(socket.SHUT_WR)
    print(s.recv(4096).decode(), end="")
    sys.exit(0)

os.makedirs(os.path.dirname(path), exist_ok=True)
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(4)
srv.settimeout(600)  # never outlive a test run by much
while True:
    try:
        c, _ = srv.accept()
    except socket.timeout:
        break
    cmd = c.recv(4096).decode().strip()
    c.sendall(b"100.0\n")
    c.close()
    if cmd == "quit" and os.environ.get("STANDIN_MPS_IGNORE_QUIT") != "1":
        break
srv.close()
os.unlink(path)
