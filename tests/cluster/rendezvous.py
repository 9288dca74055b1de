#!/usr/bin/env python3
"""tests/cluster/rendezvous.py - an env:// rendezvous as torch.distributed does it, written here so
the test needs no PyTorch: rank 0 listens on MASTER_ADDR:MASTER_PORT, the other ranks connect and
say which job step they belong to. Two steps that got one port would meet each other (or rank 0
would fail to bind); each rank 0 prints whom it met, and a rank that meets another step exits 1."""
import os
import socket
import sys
import time

step = os.environ.get("SLURM_STEP_ID", "?")
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
deadline = time.time() + 20
if rank == 0:
    server = socket.create_server((addr, port))
    server.settimeout(20)
    met = []
    for _ in range(world - 1):
        conn, _peer = server.accept()
        met.append(conn.recv(64).decode())
        conn.sendall(step.encode())
        conn.close()
    ok = all(m == step for m in met)
    print(f"rendezvous: step {step} rank 0 on port {port} met {len(met)} peers of steps {','.join(met)}: "
          f"{'ok' if ok else 'CROSS-TALK'}", flush=True)
    sys.exit(0 if ok else 1)
while True:
    try:
        conn = socket.create_connection((addr, port), timeout=2)
        break
    except OSError:
        if time.time() > deadline:
            sys.exit(f"rendezvous: step {step} rank {rank}: no rank 0 on {addr}:{port}")
        time.sleep(0.1)
conn.sendall(step.encode())
theirs = conn.recv(64).decode()
sys.exit(0 if theirs == step else f"rendezvous: step {step} rank {rank} joined step {theirs}'s rank 0")
