"""A scripted supervisor for tests: answers from $FAKE_SUPERVISOR_ANSWERS in turn.

The answers file holds a JSON list of strings; the n-th call answers the n-th string
(the last one repeats). Each prompt is appended to $FAKE_SUPERVISOR_LOG as a JSON line.
An answer "!sleep N" sleeps N seconds first; "!exit N" exits with status N.
"""

import json
import os
import sys
import time


def main() -> int:
    prompt = sys.stdin.read()
    log = os.environ["FAKE_SUPERVISOR_LOG"]
    with open(log, "a") as f:
        f.write(json.dumps({"prompt": prompt}) + "\n")
    with open(log) as f:
        n = sum(1 for _ in f)
    with open(os.environ["FAKE_SUPERVISOR_ANSWERS"]) as f:
        answers = json.load(f)
    answer = answers[min(n, len(answers)) - 1]
    if answer.startswith("!sleep "):
        time.sleep(float(answer.split()[1]))
        answer = answers[-1] if answers[-1] != answer else "[COMPLETE] slept"
    if answer.startswith("!exit "):
        print("supervisor broke", file=sys.stderr)
        return int(answer.split()[1])
    sys.stdout.write(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
