#!/usr/bin/python3
"""make_corpus.py DIR [RUNS] - a scaling study as a Slurm cluster leaves it, for timing the analyzer.

RUNS runs (10,000 by default) of a sweep over 1-9 nodes x 1-4 GPUs per node on gn01..gn09:
  DIR/records.jsonl         one run record per run (formats/FORMAT.md), as dtrain-train --record writes
  DIR/logs/slurm-JOB.out    each run's output: srun --label'd rank-0 lines in the reference format
                            (Step every 10 steps, Epoch lines) among the trainer's other lines
Deterministic (seeded), so two machines time the same bytes.
"""
import json
import os
import random
import sys


def hostnames(rng, nodes):
    start = rng.randint(1, 10 - nodes)
    return ["gn%02d" % (start + i) for i in range(nodes)]


def fold(hosts):
    nums = [int(h[2:]) for h in hosts]
    if len(nums) == 1:
        return hosts[0]
    return "gn[%02d-%02d]" % (nums[0], nums[-1])


def record(rng, job, nodes, gpus, rate, steps, runtime):
    hosts = hostnames(rng, nodes)
    world = nodes * gpus
    epochs = [{"epoch": e, "seconds": runtime / 10, "test_accuracy": round(0.8 + 0.01 * e, 4)} for e in range(10)]
    return {
        "record_version": 1, "dtrain_version": "0.1.0", "job_id": str(job), "job_name": "sweep", "step_id": "0",
        "nodelist": fold(hosts), "nodes": nodes, "gpus_per_node": gpus, "world_size": world,
        "hostnames": [h for h in hosts for _ in range(gpus)], "model": "resnet18", "dataset": "bigmnist",
        "optimizer": "adam", "lr": 0.01, "batch_per_replica": 64, "epochs": 10, "steps_per_rank": steps,
        "comm": "allreduce", "backend": "cuda", "threads": 4, "runtime_seconds": runtime,
        "peak_data_per_sec": rate * 1.02, "final_data_per_sec": rate, "epochs_run": epochs,
        "start_time": "2026-11-21T09:00:00Z", "end_time": "2026-11-21T10:00:00Z", "exit_state": "completed",
        "error": "", "resumed": 0, "tag": "100gbit"}


def log_text(rng, rate, steps):
    out = ["0: dtrain-train: model resnet18 (11689512 parameters), dataset bigmnist, backend cuda\n"]
    per_epoch = steps // 10
    for step in range(10, steps + 1, 10):
        out.append("0: Step%d: %.2f data/sec\n" % (step, rate * (0.9 + 0.1 * rng.random())))
        if step % 500 == 0:
            out.append("0: dtrain-train: step %d of %d, ETA 0:%02d:%02d\n" % (step, steps, step % 60, step % 59))
        if step % per_epoch == 0:
            e = step // per_epoch - 1
            out.append("0: Epoch %d in %.2f sec, test time %.2f sec, test accuracy: %.5f\n"
                       % (e, 300 + rng.random(), 10 + rng.random(), 0.8 + 0.01 * e))
    return "".join(out)


def main():
    out_dir = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    rng = random.Random(1)
    os.makedirs(os.path.join(out_dir, "logs"), exist_ok=True)
    with open(os.path.join(out_dir, "records.jsonl"), "w") as records:
        for i in range(runs):
            nodes, gpus = 1 + i % 9, 1 + (i // 9) % 4
            world = nodes * gpus
            rate = 120.0 * world * (0.97 ** (world - 1)) * (0.95 + 0.1 * rng.random())
            steps = 18000
            runtime = 7_200_000 * 10 / rate / 100
            job = 100000 + i
            records.write(json.dumps(record(rng, job, nodes, gpus, rate, steps // world, runtime),
                                     separators=(",", ":")) + "\n")
            with open(os.path.join(out_dir, "logs", "slurm-%d.out" % job), "w") as log:
                log.write(log_text(rng, rate, steps // 10 * 10 if world == 1 else steps))


if __name__ == "__main__":
    main()
