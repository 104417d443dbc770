"""A scripted supervisor for tests: answers from $FAKE_SUPERVISOR_ANSWERS in turn.

The answers file holds a JSON list of strings; the n-th call answers the n-th string
(the last one repeats). Each prompt is appended to $FAKE_SUPERVISOR_LOG as a JSON line.
Directives instead of an answer:
  "!sleep N"   sleep N seconds first, then answer the last string (or "[COMPLETE] slept")
  "!exit N"    print to stderr and exit with status N
  "!bytes N"   "[CONTINUE] " and then N bytes of words (a huge answer)
  "!binary N"  N random bytes (not text)
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
    if answer.startswith("!bytes "):
        size = int(answer.split()[1])
        words = b"step " * (size // 5 + 1)
        sys.stdout.buffer.write(b"[CONTINUE] " + words[:size])
        return 0
    if answer.startswith("!binary "):
        sys.stdout.buffer.write(os.urandom(int(answer.split()[1])))
        return 0
    sys.stdout.write(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
